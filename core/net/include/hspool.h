/*
 * The handshakes of one listener. Each accepted connection goes to a
 * short-lived thread of its own that runs the owner's handshake (which has
 * its own deadline), so a silent or slow stranger stalls nothing; at most
 * cap are in flight at once. When all cap are and a newcomer waits, the
 * oldest, if older than a grace time, is cut off (shutdown: its handshake
 * fails at once and its thread closes the fd) and the newcomer takes its
 * place, so strangers that hold silent connections for the whole handshake
 * deadline cannot keep an honest peer out for long: its handshake takes
 * milliseconds, theirs are the oldest. Cut
 * handshakes still ending count too, up to cap more, so a crowd of strangers
 * costs at most 2 * cap threads and fds. When accept finds no fd left
 * (EMFILE, ENFILE) or no thread can start, the listener rests for
 * HSPOOL_BACKOFF_MS instead of waking the owner's loop over and over.
 *
 * The owner's loop watches one fd for the pool: the listener while a
 * newcomer may be taken, else a wake-up that a finishing handshake fires
 * (with the poll timeout lowered to when the oldest may be cut off), or none
 * (with a bounded poll timeout) while resting:
 *
 *	fd = hspool_pollfd(&hp, now, &timeout);
 *	... poll ...
 *	if (revents of fd)
 *		hspool_serve(&hp, clock_now_ms());
 *
 * or, on an event loop (loop.h), hspool_watch from the loop's before-hook:
 * it keeps that one fd watched (and a timer for the rest's end) itself.
 *
 * The handshake hands its result back to the owner itself (a pipe, a slot
 * under the owner's lock) and owns the fd it is given: the pool only ever
 * shuts it down, never closes it. So that a shutdown never hits an fd the
 * handshake has handed on or closed (its number reused), the handshake calls
 * hspool_settle before it does either.
 */
#ifndef COLL_HSPOOL_H
#define COLL_HSPOOL_H

#include <pthread.h>
#include <stdint.h>

/* How long the listener rests after accept ran out of fds or threads. */
#define HSPOOL_BACKOFF_MS 100

/* One handshake, in its own thread: it owns fd (settles, then closes it or hands it on). */
typedef void (*hspool_fn)(void *arg, int fd);

/* A handshake in flight that may still be cut off (under lock). */
struct hspool_slot {
	int fd;			/* -1: free */
	uint64_t since;		/* when it started (ms): the smallest is the oldest */
	uint64_t id;		/* its job's, to find it again */
};

struct loop;

struct hspool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int inited;
	int listen_fd;
	int wake_fd;		/* eventfd: a slot came free while all were taken */
	int cap;
	int busy;		/* handshake threads running (at most 2 * cap), under lock */
	struct hspool_slot *slot;	/* cap of them, under lock */
	uint64_t admitted;	/* handshakes started, under lock */
	int cut;		/* a cut was logged (once per pool) */
	int grace_ms;		/* no handshake is cut off younger than this */
	int blocked;		/* the owner waits on wake_fd, under lock */
	uint64_t rest_until;	/* the owner's thread only */
	int rested;		/* a rest was logged (once per pool) */
	hspool_fn fn;
	void *arg;
	const char *name;	/* for the log: "rank", "root proxy" */
	/* The loop form (hspool_watch), the owner's thread only. */
	struct loop *loop;
	int loop_fd;		/* the fd watched there, or -1 */
	uint64_t loop_tm;	/* the timer that ends a rest or a wait for a cut, or 0 */
};

/*
 * Serve listen_fd (non-blocking, the caller's) with at most cap handshakes at
 * once; one is cut off for a newcomer only after grace_ms, well above what an
 * honest handshake takes even on a loaded host (a burst of honest peers
 * waits its turn), well below the handshake's own deadline.
 */
int hspool_init(struct hspool *hp, int listen_fd, int cap, hspool_fn fn, void *arg,
    int grace_ms, const char *name);
/* The fd the owner polls for POLLIN (or -1), and *timeout_ms lowered to the rest's end. */
int hspool_pollfd(struct hspool *hp, uint64_t now, int *timeout_ms);
/*
 * On loop l: watch the fd hspool_pollfd would give (its callback serves
 * the pool), and time the end of a rest or of a wait to cut one off. Call it
 * before each wait (the loop's before-hook); the loop must outlive the pool's
 * use of it, and the pool is left by hspool_unwatch.
 */
int hspool_watch(struct hspool *hp, struct loop *l, uint64_t now);
/* Take the pool's fd and timer off its loop (harmless if none). */
void hspool_unwatch(struct hspool *hp);
/* The polled fd was readable: accept newcomers, cutting off the oldest when all slots are taken. */
void hspool_serve(struct hspool *hp, uint64_t now);
/*
 * The handshake of fd is past the stranger's part (it failed or the peer
 * proved itself): the pool no longer cuts it off. Call it before fd is
 * closed or handed on; 0 when the pool had cut it off already.
 */
int hspool_settle(struct hspool *hp, int fd);
/* Handshake threads running now. */
int hspool_busy(struct hspool *hp);
/* Wait for every handshake thread to end (after the owner told them to stop). */
void hspool_drain(struct hspool *hp);
/* Drain, then free what the pool holds; the listener stays the caller's. */
void hspool_free(struct hspool *hp);

#endif
