/*
 * The event loop (loop.h): watchers in an array indexed by fd, as redis's ae
 * keeps them, so a lookup is one index; timers in a small unsorted array,
 * since a loop has a handful; one pipe for wake-ups and signals.
 */
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"

struct loop_watcher {
	int mask;		/* -1: not watched */
	uint32_t gen;		/* which watch of this fd number it is */
	loop_fd_fn fn;
	void *arg;
};

struct loop_tm {
	uint64_t id;		/* 0: cancelled */
	uint64_t due;
	loop_timer_fn fn;
	void *arg;
};

struct loop {
	struct loop_watcher *w;	/* indexed by fd, wcap of them */
	int wcap;
	int nwatch;
	uint32_t gen;
	struct pollfd *pfd;	/* this round's set: [0] is the pipe */
	uint32_t *pgen;		/* the watcher generation each entry was made for */
	int pcap;
	struct loop_tm *tm;
	int ntm, tmcap;
	uint64_t next_id;
	int pipe[2];		/* wake-ups and signals */
	loop_hook_fn hook;
	void *hook_arg;
	loop_signal_fn sigfn[NSIG];
	void *sigarg[NSIG];
	struct sigaction sigold[NSIG];
};

/* The loop that took each signal; the handler sees only the pipe and a flag. */
static pthread_mutex_t loop_sig_lock = PTHREAD_MUTEX_INITIALIZER;
static struct loop *loop_sig_owner[NSIG];
static volatile sig_atomic_t loop_sig_fd[NSIG];	/* the owner's pipe + 1; 0: none */
/* How many of each came since the loop last looked: each one runs the callback. */
static atomic_int loop_sig_pending[NSIG];

struct loop *
loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	if (pipe2(l->pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
		free(l);
		return NULL;
	}
	l->next_id = 1;
	return l;
}

void
loop_free(struct loop *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&loop_sig_lock);
	for (int s = 1; s < NSIG; s++) {
		if (loop_sig_owner[s] != l)
			continue;
		sigaction(s, &l->sigold[s], NULL);
		loop_sig_fd[s] = 0;
		atomic_store(&loop_sig_pending[s], 0);
		loop_sig_owner[s] = NULL;
	}
	pthread_mutex_unlock(&loop_sig_lock);
	close(l->pipe[0]);
	close(l->pipe[1]);
	free(l->w);
	free(l->pfd);
	free(l->pgen);
	free(l->tm);
	free(l);
}

/* Room for fd in the watcher array; new slots are unwatched. */
static int
loop_grow(struct loop *l, int fd)
{
	int cap = l->wcap ? l->wcap : 64;
	struct loop_watcher *w;

	while (cap <= fd)
		cap *= 2;
	if (cap == l->wcap)
		return COLL_OK;
	if ((w = realloc(l->w, (size_t)cap * sizeof(*w))) == NULL)
		return COLL_ENOMEM;
	for (int i = l->wcap; i < cap; i++)
		w[i] = (struct loop_watcher){ .mask = -1 };
	l->w = w;
	l->wcap = cap;
	return COLL_OK;
}

int
loop_watch(struct loop *l, int fd, int mask, loop_fd_fn fn, void *arg)
{
	struct loop_watcher *w;

	if (fd < 0 || fn == NULL || (mask & ~(LOOP_READ | LOOP_WRITE)) != 0)
		return COLL_EINVAL;
	if (loop_grow(l, fd) != COLL_OK)
		return COLL_ENOMEM;
	w = &l->w[fd];
	if (w->mask < 0) {
		w->gen = ++l->gen;
		l->nwatch++;
	}
	w->mask = mask;
	w->fn = fn;
	w->arg = arg;
	return COLL_OK;
}

int
loop_mask(struct loop *l, int fd, int mask)
{
	if (fd < 0 || fd >= l->wcap || l->w[fd].mask < 0 ||
	    (mask & ~(LOOP_READ | LOOP_WRITE)) != 0)
		return COLL_EINVAL;
	l->w[fd].mask = mask;
	return COLL_OK;
}

void
loop_unwatch(struct loop *l, int fd)
{
	if (fd < 0 || fd >= l->wcap || l->w[fd].mask < 0)
		return;
	l->w[fd].mask = -1;
	l->nwatch--;
}

int
loop_count(const struct loop *l)
{
	return l->nwatch;
}

uint64_t
loop_timer(struct loop *l, int ms, loop_timer_fn fn, void *arg)
{
	if (fn == NULL || ms < 0) {
		errno = EINVAL;
		return 0;
	}
	if (l->ntm == l->tmcap) {
		int cap = l->tmcap ? 2 * l->tmcap : 8;
		struct loop_tm *t = realloc(l->tm, (size_t)cap * sizeof(*t));

		if (t == NULL)
			return 0;
		l->tm = t;
		l->tmcap = cap;
	}
	l->tm[l->ntm++] = (struct loop_tm){ l->next_id, clock_now_ms() + (uint64_t)ms, fn, arg };
	return l->next_id++;
}

void
loop_cancel(struct loop *l, uint64_t id)
{
	for (int i = 0; i < l->ntm; i++)
		if (l->tm[i].id == id)
			l->tm[i].id = 0;
}

static void
loop_sig_handler(int signo)
{
	int saved = errno, fd = (int)loop_sig_fd[signo] - 1;
	unsigned char b = 1;

	atomic_fetch_add(&loop_sig_pending[signo], 1);
	if (fd >= 0 && write(fd, &b, 1) < 0) {
		/* The pipe is full: a wake-up is already pending. */
	}
	errno = saved;
}

int
loop_signal(struct loop *l, int signo, loop_signal_fn fn, void *arg)
{
	struct sigaction sa = { .sa_handler = loop_sig_handler, .sa_flags = SA_RESTART };
	int rc = COLL_OK;

	if (signo <= 0 || signo >= NSIG || fn == NULL)
		return COLL_EINVAL;
	sigemptyset(&sa.sa_mask);
	pthread_mutex_lock(&loop_sig_lock);
	if (loop_sig_owner[signo] != NULL && loop_sig_owner[signo] != l) {
		rc = COLL_EINVAL;
	} else {
		l->sigfn[signo] = fn;
		l->sigarg[signo] = arg;
		if (loop_sig_owner[signo] == NULL) {
			loop_sig_fd[signo] = l->pipe[1] + 1;
			loop_sig_owner[signo] = l;
			if (sigaction(signo, &sa, &l->sigold[signo]) != 0) {
				loop_sig_fd[signo] = 0;
				loop_sig_owner[signo] = NULL;
				rc = COLL_ESYS;
			}
		}
	}
	pthread_mutex_unlock(&loop_sig_lock);
	return rc;
}

void
loop_before(struct loop *l, loop_hook_fn hook, void *arg)
{
	l->hook = hook;
	l->hook_arg = arg;
}

void
loop_wake(struct loop *l)
{
	unsigned char b = 0;

	if (write(l->pipe[1], &b, 1) < 0) {
		/* Full: the loop wakes anyway. */
	}
}

/* Empty the pipe, then run the callbacks of the signals that came. */
static int
loop_drain(struct loop *l)
{
	unsigned char buf[256];
	int ran = 0;

	while (read(l->pipe[0], buf, sizeof(buf)) > 0)
		;
	for (int s = 1; s < NSIG; s++) {
		int n;

		if (loop_sig_owner[s] != l || (n = atomic_exchange(&loop_sig_pending[s], 0)) == 0)
			continue;
		/* Each signal counts: a second SIGTERM means more than the first. */
		for (; n > 0; n--, ran++)
			l->sigfn[s](l, s, l->sigarg[s]);
	}
	return ran;
}

/* This round's pollfd set; the number of entries, or COLL_ENOMEM. */
static int
loop_build(struct loop *l)
{
	int n = 1, need = l->nwatch + 1;

	if (need > l->pcap) {
		struct pollfd *p = realloc(l->pfd, (size_t)need * sizeof(*p));
		uint32_t *g;

		if (p == NULL)
			return COLL_ENOMEM;
		l->pfd = p;
		if ((g = realloc(l->pgen, (size_t)need * sizeof(*g))) == NULL)
			return COLL_ENOMEM;
		l->pgen = g;
		l->pcap = need;
	}
	l->pfd[0] = (struct pollfd){ l->pipe[0], POLLIN, 0 };
	for (int fd = 0; fd < l->wcap && n < need; fd++) {
		const struct loop_watcher *w = &l->w[fd];

		if (w->mask < 0)
			continue;
		l->pfd[n] = (struct pollfd){ w->mask ? fd : -1,
			(short)(((w->mask & LOOP_READ) ? POLLIN : 0) |
			    ((w->mask & LOOP_WRITE) ? POLLOUT : 0)), 0 };
		l->pgen[n++] = w->gen;
	}
	return n;
}

/* The wait: up to max_ms, and no later than the first timer. */
static int
loop_timeout(const struct loop *l, int max_ms, uint64_t now)
{
	int t = max_ms;

	for (int i = 0; i < l->ntm; i++) {
		int left;

		if (l->tm[i].id == 0)
			continue;
		left = l->tm[i].due <= now ? 0 :
		    (l->tm[i].due - now > INT32_MAX ? INT32_MAX : (int)(l->tm[i].due - now));
		if (t < 0 || left < t)
			t = left;
	}
	return t;
}

static int
loop_events(short re, int mask)
{
	int ev = 0;

	if ((re & POLLIN) || ((re & POLLHUP) && (mask & LOOP_READ)))
		ev |= LOOP_READ;
	if (re & POLLOUT)
		ev |= LOOP_WRITE;
	if (re & (POLLERR | POLLHUP | POLLNVAL))
		ev |= LOOP_ERROR;
	return ev;
}

/* Run the callbacks of the ready fds still watched as they were when polled. */
static int
loop_dispatch(struct loop *l, int n)
{
	int ran = 0;

	for (int i = 1; i < n; i++) {
		int fd = l->pfd[i].fd;
		struct loop_watcher *w;

		if (fd < 0 || l->pfd[i].revents == 0 || fd >= l->wcap)
			continue;
		w = &l->w[fd];
		if (w->mask <= 0 || w->gen != l->pgen[i])
			continue;
		w->fn(l, fd, loop_events(l->pfd[i].revents, w->mask), w->arg);
		ran++;
	}
	return ran;
}

/* Run the due timers (those added meanwhile wait a round), then drop the ended. */
static int
loop_timers(struct loop *l)
{
	uint64_t now = clock_now_ms();
	int ran = 0, n = l->ntm, k = 0;

	for (int i = 0; i < n; i++) {
		struct loop_tm t = l->tm[i];
		int again;

		if (t.id == 0 || t.due > now)
			continue;
		again = t.fn(l, t.id, t.arg);
		ran++;
		if (l->tm[i].id == 0)	/* cancelled by its own callback */
			continue;
		if (again < 0)
			l->tm[i].id = 0;
		else
			l->tm[i].due = clock_now_ms() + (uint64_t)again;
	}
	for (int i = 0; i < l->ntm; i++)
		if (l->tm[i].id != 0)
			l->tm[k++] = l->tm[i];
	l->ntm = k;
	return ran;
}

int
loop_once(struct loop *l, int max_ms)
{
	int n, r, ran;

	if (l->hook != NULL)
		l->hook(l, l->hook_arg);
	if ((n = loop_build(l)) < 0)
		return n;
	r = poll(l->pfd, (nfds_t)n, loop_timeout(l, max_ms, clock_now_ms()));
	if (r < 0)
		return errno == EINTR ? 0 : COLL_ESYS;
	ran = l->pfd[0].revents ? loop_drain(l) : 0;
	if (r > 0)
		ran += loop_dispatch(l, n);
	return ran + loop_timers(l);
}
