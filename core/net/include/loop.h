/*
 * One event loop for every owner of many fds (the root, the proxy, a rank's
 * service thread, the launchers, collrun's agent): fd watchers with read and
 * write masks, one-shot or repeating timers, a wake-up any thread may fire,
 * a hook run before each wait, and signals turned into events through a
 * self-pipe. It is poll(2) underneath, as every loop it replaces was: the
 * sets are a few hundred fds at most, and poll keeps the loop free of
 * per-platform code. One thread runs a loop; only loop_wake may be called
 * from others.
 *
 *	struct loop *l = loop_new();
 *	loop_watch(l, fd, LOOP_READ, on_conn, conn);
 *	loop_timer(l, 100, on_tick, NULL);
 *	while (!done)
 *		loop_once(l, -1);
 *	loop_free(l);
 *
 * Callbacks may watch, unwatch, close and reopen fds, add and cancel timers:
 * an fd unwatched during a round gets no more of that round's events, even
 * if its number is reused by a watcher added in the same round.
 */
#ifndef COLL_LOOP_H
#define COLL_LOOP_H

#include <stdint.h>

#define LOOP_READ 1		/* readable, or the peer hung up (read to find out) */
#define LOOP_WRITE 2		/* writable */
#define LOOP_ERROR 4		/* error or hang-up, given with the mask's bits */

struct loop;

/* The fd-ready callback: events is a set of LOOP_* bits. */
typedef void (*loop_fd_fn)(struct loop *l, int fd, int events, void *arg);
/* A timer fired: return the next delay in ms to fire again, or -1 to end it. */
typedef int (*loop_timer_fn)(struct loop *l, uint64_t id, void *arg);
/* A signal arrived (outside the handler: any code may run here); once per signal. */
typedef void (*loop_signal_fn)(struct loop *l, int signo, void *arg);
/* Runs before each wait (e.g. flush what callbacks queued). */
typedef void (*loop_hook_fn)(struct loop *l, void *arg);

/* A loop, or NULL with errno set. */
struct loop *loop_new(void);
/* Frees the loop and puts back the signal actions it took; closes none of the watched fds. */
void loop_free(struct loop *l);

/* Watch fd with mask (LOOP_READ | LOOP_WRITE), or change fn/arg/mask of its watcher. */
int loop_watch(struct loop *l, int fd, int mask, loop_fd_fn fn, void *arg);
/* Change only the mask of a watched fd (0: keep it but report nothing, not even errors). */
int loop_mask(struct loop *l, int fd, int mask);
/* Forget fd (before closing it); harmless if not watched. */
void loop_unwatch(struct loop *l, int fd);
/* How many fds are watched. */
int loop_count(const struct loop *l);

/* Fire fn after ms (0: on the next round); an id > 0 for loop_cancel, or 0 with errno. */
uint64_t loop_timer(struct loop *l, int ms, loop_timer_fn fn, void *arg);
/* Cancel a timer; harmless if it has ended. */
void loop_cancel(struct loop *l, uint64_t id);

/*
 * Take signo for this loop: its handler only writes to a pipe the loop
 * watches, and fn runs in the loop. A signal is taken by one loop at a time
 * in a process; COLL_EINVAL if another has it.
 */
int loop_signal(struct loop *l, int signo, loop_signal_fn fn, void *arg);

/* Run hook before each wait (NULL: none). */
void loop_before(struct loop *l, loop_hook_fn hook, void *arg);

/* Wake the loop's wait from any thread (async-signal-safe). */
void loop_wake(struct loop *l);

/*
 * One round: wait up to max_ms (-1: until an event or the next timer), then
 * run the callbacks of what is ready and the timers that are due. The number
 * of callbacks run, or COLL_ESYS with errno set (EINTR is not an error).
 */
int loop_once(struct loop *l, int max_ms);

#endif
