/* One listener's handshakes: a thread each, a cap, a rest when out of fds (hspool.h). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "err.h"
#include "hspool.h"
#include "log.h"
#include "net.h"
#include "xmalloc.h"

struct hspool_job {
	struct hspool *hp;
	int fd;
};

int
hspool_init(struct hspool *hp, int listen_fd, int cap, hspool_fn fn, void *arg,
    const char *name)
{
	*hp = (struct hspool){ .listen_fd = listen_fd, .cap = cap > 0 ? cap : 1, .fn = fn,
	    .arg = arg, .name = name };
	hp->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (hp->wake_fd == -1)
		return COLL_ESYS;
	pthread_mutex_init(&hp->lock, NULL);
	pthread_cond_init(&hp->cond, NULL);
	hp->inited = 1;
	return COLL_OK;
}

static void *
hspool_thread(void *arg)
{
	struct hspool_job *job = arg;
	struct hspool *hp = job->hp;
	uint64_t one = 1;

	hp->fn(hp->arg, job->fd);
	free(job);
	/* Under the lock: once busy reads 0, hspool_free may close wake_fd. */
	pthread_mutex_lock(&hp->lock);
	if (hp->busy-- == hp->cap)
		(void)!write(hp->wake_fd, &one, sizeof one);
	pthread_cond_broadcast(&hp->cond);
	pthread_mutex_unlock(&hp->lock);
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

int
hspool_pollfd(struct hspool *hp, uint64_t now, int *timeout_ms)
{
	if (now < hp->rest_until) {
		uint64_t left = hp->rest_until - now;

		if (*timeout_ms < 0 || (uint64_t)*timeout_ms > left)
			*timeout_ms = (int)left;
		return -1;
	}
	return hspool_busy(hp) >= hp->cap ? hp->wake_fd : hp->listen_fd;
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

/* Start fd's handshake; 0 when no thread could start (fd closed). */
static int
hspool_start(struct hspool *hp, int fd)
{
	struct hspool_job *job = xmalloc(sizeof *job);
	pthread_attr_t attr;
	pthread_t t;
	int r;

	*job = (struct hspool_job){ hp, fd };
	pthread_mutex_lock(&hp->lock);
	hp->busy++;
	pthread_mutex_unlock(&hp->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, hspool_thread, job);
	pthread_attr_destroy(&attr);
	if (r == 0)
		return 1;
	close(fd);
	free(job);
	pthread_mutex_lock(&hp->lock);
	hp->busy--;
	pthread_cond_broadcast(&hp->cond);
	pthread_mutex_unlock(&hp->lock);
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
	/* Every waiting newcomer now, up to the free slots; the rest stay queued. */
	while (now >= hp->rest_until && hspool_busy(hp) < hp->cap) {
		fd = accept4(hp->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				hspool_rest(hp, now, errno);
			break;	/* EAGAIN: none waiting; anything else: that one is gone */
		}
		net_tune(fd);
		if (!hspool_start(hp, fd))
			hspool_rest(hp, now, errno);
	}
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
	pthread_mutex_destroy(&hp->lock);
	pthread_cond_destroy(&hp->cond);
	hp->inited = 0;
}
