/* One listener's handshakes: a thread each, a cap, the oldest cut off, a rest (hspool.h). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "hspool.h"
#include "log.h"
#include "loop.h"
#include "net.h"
#include "xmalloc.h"

struct hspool_job {
	struct hspool *hp;
	int fd;
	uint64_t id;		/* its slot's, while it holds one */
};

int
hspool_init(struct hspool *hp, int listen_fd, int cap, hspool_fn fn, void *arg,
    int grace_ms, const char *name)
{
	*hp = (struct hspool){ .listen_fd = listen_fd, .cap = cap > 0 ? cap : 1, .fn = fn,
	    .arg = arg, .grace_ms = grace_ms > 0 ? grace_ms : 0, .name = name, .loop_fd = -1 };
	hp->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (hp->wake_fd == -1)
		return COLL_ESYS;
	hp->slot = xcalloc((size_t)hp->cap, sizeof *hp->slot);
	for (int i = 0; i < hp->cap; i++)
		hp->slot[i].fd = -1;
	pthread_mutex_init(&hp->lock, NULL);
	pthread_cond_init(&hp->cond, NULL);
	hp->inited = 1;
	return COLL_OK;
}

/* Under lock: the owner waits on wake_fd for a slot or thread to come free; tell it. */
static void
hspool_wake(struct hspool *hp)
{
	uint64_t one = 1;

	if (!hp->blocked)
		return;
	hp->blocked = 0;
	(void)!write(hp->wake_fd, &one, sizeof one);
}

/* Under lock: give up the slot of handshake id (if it still holds one); 1 if it did. */
static int
hspool_release(struct hspool *hp, uint64_t id)
{
	for (int i = 0; i < hp->cap; i++)
		if (hp->slot[i].fd >= 0 && hp->slot[i].id == id) {
			hp->slot[i].fd = -1;
			hspool_wake(hp);
			return 1;
		}
	return 0;
}

int
hspool_settle(struct hspool *hp, int fd)
{
	int held = 0;

	/* fd is open (ours) until we return: no other slot can hold its number. */
	pthread_mutex_lock(&hp->lock);
	for (int i = 0; i < hp->cap && !held; i++)
		if (hp->slot[i].fd == fd) {
			hp->slot[i].fd = -1;
			hspool_wake(hp);
			held = 1;
		}
	pthread_mutex_unlock(&hp->lock);
	return held;
}

static void *
hspool_thread(void *arg)
{
	struct hspool_job *job = arg;
	struct hspool *hp = job->hp;

	hp->fn(hp->arg, job->fd);
	/* Under the lock: once busy reads 0, hspool_free may close wake_fd. */
	pthread_mutex_lock(&hp->lock);
	hspool_release(hp, job->id);	/* settled already, unless fn forgot */
	hp->busy--;
	hspool_wake(hp);
	pthread_cond_broadcast(&hp->cond);
	pthread_mutex_unlock(&hp->lock);
	free(job);
	return NULL;
}

int
hspool_busy(struct hspool *hp)
{
	int n;

	pthread_mutex_lock(&hp->lock);
	n = hp->busy;
	pthread_mutex_unlock(&hp->lock);
	return n;
}

/*
 * Under lock: the slot a newcomer would take, or -1 when it must wait; at
 * *ready_at the oldest handshake may be cut off (0 when there is no cap on
 * threads to wait for either).
 */
static int
hspool_pick(struct hspool *hp, uint64_t *ready_at)
{
	int k = 0;

	*ready_at = 0;
	if (hp->busy >= 2 * hp->cap)
		return -1;	/* cut handshakes still ending: wait for one */
	for (int i = 0; i < hp->cap; i++) {
		if (hp->slot[i].fd < 0)
			return i;
		if (hp->slot[i].since < hp->slot[k].since)
			k = i;
	}
	*ready_at = hp->slot[k].since + (uint64_t)hp->grace_ms;
	return k;
}

/* 1 when a newcomer may be taken now; else *wait_ms lowered to when one may. */
static int
hspool_room(struct hspool *hp, uint64_t now, int *wait_ms)
{
	uint64_t ready_at;
	int k;

	pthread_mutex_lock(&hp->lock);
	k = hspool_pick(hp, &ready_at);
	if (k >= 0 && now >= ready_at) {
		pthread_mutex_unlock(&hp->lock);
		return 1;
	}
	hp->blocked = 1;
	pthread_mutex_unlock(&hp->lock);
	if (k >= 0 && wait_ms != NULL && (*wait_ms < 0 || (uint64_t)*wait_ms > ready_at - now))
		*wait_ms = (int)(ready_at - now);
	return 0;
}

int
hspool_pollfd(struct hspool *hp, uint64_t now, int *timeout_ms)
{
	if (now < hp->rest_until) {
		uint64_t left = hp->rest_until - now;

		if (*timeout_ms < 0 || (uint64_t)*timeout_ms > left)
			*timeout_ms = (int)left;
		return -1;
	}
	return hspool_room(hp, now, timeout_ms) ? hp->listen_fd : hp->wake_fd;
}

/* Under lock: cut off the handshake of slot k, the oldest; its thread closes the fd. */
static void
hspool_cut(struct hspool *hp, int k)
{
	shutdown(hp->slot[k].fd, SHUT_RDWR);
	hp->slot[k].fd = -1;
	if (!hp->cut)
		log_warn("%s listener: all %d handshakes in flight, the oldest for over %d ms, "
		    "and more connections waiting: cutting off the oldest each time (a crowd "
		    "of silent connections?)", hp->name, hp->cap, hp->grace_ms);
	hp->cut = 1;
}

/* Out of fds or threads: leave the listener alone a while; say so once. */
static void
hspool_rest(struct hspool *hp, uint64_t now, int e)
{
	hp->rest_until = now + HSPOOL_BACKOFF_MS;
	if (!hp->rested)
		log_warn("%s listener: cannot take a connection (%s): pausing it %d ms at a time; "
		    "raise the limit (ulimit -n, ulimit -u)", hp->name, strerror(e),
		    HSPOOL_BACKOFF_MS);
	hp->rested = 1;
}

/* Start fd's handshake in a slot, the oldest cut off if need be; 0: no thread (fd closed). */
static int
hspool_start(struct hspool *hp, int fd, uint64_t now)
{
	struct hspool_job *job = xmalloc(sizeof *job);
	pthread_attr_t attr;
	uint64_t ready_at;
	pthread_t t;
	int r, k;

	pthread_mutex_lock(&hp->lock);
	k = hspool_pick(hp, &ready_at);	/* >= 0: hspool_room said so, and only we take */
	if (hp->slot[k].fd >= 0)
		hspool_cut(hp, k);
	*job = (struct hspool_job){ hp, fd, hp->admitted++ };
	hp->slot[k] = (struct hspool_slot){ fd, now, job->id };
	hp->busy++;
	pthread_mutex_unlock(&hp->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, hspool_thread, job);
	pthread_attr_destroy(&attr);
	if (r == 0)
		return 1;
	pthread_mutex_lock(&hp->lock);
	hspool_release(hp, job->id);
	hp->busy--;
	pthread_cond_broadcast(&hp->cond);
	pthread_mutex_unlock(&hp->lock);
	close(fd);
	free(job);
	errno = r;
	return 0;
}

void
hspool_serve(struct hspool *hp, uint64_t now)
{
	uint64_t v;
	int fd;

	while (read(hp->wake_fd, &v, sizeof v) == (ssize_t)sizeof v)
		;
	/* Every waiting newcomer now, while there is room; the rest stay queued. */
	while (now >= hp->rest_until && hspool_room(hp, now, NULL)) {
		fd = accept4(hp->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				hspool_rest(hp, now, errno);
			break;	/* EAGAIN: none waiting; anything else: that one is gone */
		}
		net_tune(fd);
		if (!hspool_start(hp, fd, now))
			hspool_rest(hp, now, errno);
	}
}

static void
hspool_on_ready(struct loop *l, int fd, int events, void *arg)
{
	(void)l;
	(void)fd;
	(void)events;
	hspool_serve(arg, clock_now_ms());
}

/* Only wakes the loop: the next hspool_watch looks again. */
static int
hspool_on_timer(struct loop *l, uint64_t id, void *arg)
{
	struct hspool *hp = arg;

	(void)l;
	if (hp->loop_tm == id)
		hp->loop_tm = 0;
	return -1;
}

int
hspool_watch(struct hspool *hp, struct loop *l, uint64_t now)
{
	int timeout = -1, fd = hspool_pollfd(hp, now, &timeout), r = COLL_OK;

	if (hp->loop != l)
		hspool_unwatch(hp);
	hp->loop = l;
	if (fd != hp->loop_fd && hp->loop_fd >= 0)
		loop_unwatch(l, hp->loop_fd);
	if (fd != hp->loop_fd && fd >= 0)
		r = loop_watch(l, fd, LOOP_READ, hspool_on_ready, hp);
	hp->loop_fd = r == COLL_OK ? fd : -1;
	if (hp->loop_tm != 0)
		loop_cancel(l, hp->loop_tm);
	hp->loop_tm = timeout >= 0 ? loop_timer(l, timeout, hspool_on_timer, hp) : 0;
	return r;
}

void
hspool_unwatch(struct hspool *hp)
{
	if (hp->loop == NULL)
		return;
	if (hp->loop_fd >= 0)
		loop_unwatch(hp->loop, hp->loop_fd);
	if (hp->loop_tm != 0)
		loop_cancel(hp->loop, hp->loop_tm);
	hp->loop_fd = -1;
	hp->loop_tm = 0;
	hp->loop = NULL;
}

void
hspool_drain(struct hspool *hp)
{
	if (!hp->inited)
		return;
	pthread_mutex_lock(&hp->lock);
	while (hp->busy > 0)
		pthread_cond_wait(&hp->cond, &hp->lock);
	pthread_mutex_unlock(&hp->lock);
}

void
hspool_free(struct hspool *hp)
{
	if (!hp->inited)
		return;
	hspool_drain(hp);
	close(hp->wake_fd);
	free(hp->slot);
	pthread_mutex_destroy(&hp->lock);
	pthread_cond_destroy(&hp->cond);
	hp->inited = 0;
}
