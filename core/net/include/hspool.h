/*
 * The handshakes of one listener. Each accepted connection goes to a
 * short-lived thread of its own that runs the owner's handshake (which has
 * its own deadline), so a silent or slow stranger stalls nothing; at most
 * cap run at once, and the rest wait in the listen backlog, so a crowd of
 * strangers costs at most cap threads and fds. When accept finds no fd left
 * (EMFILE, ENFILE) or no thread can start, the listener rests for
 * HSPOOL_BACKOFF_MS instead of waking the owner's loop over and over.
 *
 * The owner's loop watches one fd for the pool: the listener while a slot is
 * free, else a wake-up that a finishing handshake fires, or none (with a
 * bounded poll timeout) while resting:
 *
 *	fd = hspool_pollfd(&hp, now, &timeout);
 *	... poll ...
 *	if (revents of fd)
 *		hspool_serve(&hp, clock_now_ms());
 *
 * The handshake hands its result back to the owner itself (a pipe, a slot
 * under the owner's lock) and owns the fd it is given.
 */
#ifndef COLL_HSPOOL_H
#define COLL_HSPOOL_H

#include <pthread.h>
#include <stdint.h>

/* How long the listener rests after accept ran out of fds or threads. */
#define HSPOOL_BACKOFF_MS 100

/* One handshake, in its own thread: it owns fd (closes it or hands it on). */
typedef void (*hspool_fn)(void *arg, int fd);

struct hspool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int inited;
	int listen_fd;
	int wake_fd;		/* eventfd: a slot came free while all were taken */
	int cap;
	int busy;		/* handshake threads running, under lock */
	uint64_t rest_until;	/* the owner's thread only */
	int rested;		/* a rest was logged (once per pool) */
	hspool_fn fn;
	void *arg;
	const char *name;	/* for the log: "rank", "root relay" */
};

/* Serve listen_fd (non-blocking, the caller's) with at most cap handshakes at once. */
int hspool_init(struct hspool *hp, int listen_fd, int cap, hspool_fn fn, void *arg,
    const char *name);
/* The fd the owner polls for POLLIN (or -1), and *timeout_ms lowered to the rest's end. */
int hspool_pollfd(struct hspool *hp, uint64_t now, int *timeout_ms);
/* The polled fd was readable: accept newcomers up to the free slots. */
void hspool_serve(struct hspool *hp, uint64_t now);
/* Handshake threads running now. */
int hspool_busy(struct hspool *hp);
/* Wait for every handshake thread to end (after the owner told them to stop). */
void hspool_drain(struct hspool *hp);
/* Drain, then free what the pool holds; the listener stays the caller's. */
void hspool_free(struct hspool *hp);

#endif
