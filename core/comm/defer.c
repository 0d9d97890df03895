/*
 * Non-blocking mode for the calls that wait (the collectives, finalize): the
 * call hands its work to the communicator's worker thread and returns
 * COLL_EINPROGRESS; comm_get_async_error() says COLL_EINPROGRESS until the
 * worker is done, then COLL_OK or the error (as NCCL's non-blocking
 * communicators do). One call in flight at a time: another one while it runs
 * gets COLL_EBUSY, and the caller polls first.
 */
#include <stdio.h>
#include <stdlib.h>

#include "comm_impl.h"
#include "log.h"

static void *
defer_main(void *arg)
{
	struct comm *c = arg;
	int (*fn)(struct comm *, void *);
	int rc, ok = COLL_OK;
	void *job;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (c->job_fn == NULL && !c->worker_stop)
			pthread_cond_wait(&c->cond, &c->lock);
		if (c->job_fn == NULL)
			break;
		fn = c->job_fn;
		job = c->job_arg;
		pthread_mutex_unlock(&c->lock);
		rc = fn(c, job);
		free(job);
		/* What failed before it ran (misuse) must still show in comm_get_async_error. */
		if (rc != COLL_OK)
			atomic_compare_exchange_strong(&c->state, &ok, rc);
		ok = COLL_OK;
		pthread_mutex_lock(&c->lock);
		if (c->finalize_after) {
			pthread_mutex_unlock(&c->lock);
			comm_finalize(c);
			pthread_mutex_lock(&c->lock);
			c->finalize_after = 0;
		}
		c->job_fn = NULL;
		c->job_arg = NULL;
		atomic_store(&c->job_pending, 0);
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int
comm_defer(struct comm *c, int (*fn)(struct comm *, void *), void *job)
{
	int r = COLL_EINPROGRESS;

	pthread_mutex_lock(&c->lock);
	if (atomic_load(&c->state) == COLL_EINPROGRESS) {
		r = COLL_EBUSY;
		snprintf(c->err, sizeof c->err, "rank %d: the communicator is still joining: poll "
		    "comm_get_async_error until it is COLL_OK", c->rank);
	} else if (atomic_load(&c->state) != COLL_OK) {
		r = atomic_load(&c->state);	/* failed: nothing to run */
	} else if (atomic_load(&c->finalized)) {
		r = COLL_EINVAL;
	} else if (atomic_load(&c->job_pending)) {
		r = COLL_EBUSY;
		snprintf(c->err, sizeof c->err, "rank %d: a call is still in flight on this "
		    "non-blocking communicator: poll comm_get_async_error until it is no longer "
		    "COLL_EINPROGRESS", c->rank);
	} else if (!c->worker_started) {
		if (pthread_create(&c->worker, NULL, defer_main, c) == 0)
			c->worker_started = 1;
		else
			r = COLL_ESYS;
	}
	if (r == COLL_EINPROGRESS) {
		c->job_fn = fn;
		c->job_arg = job;
		atomic_store(&c->job_pending, 1);
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	if (r != COLL_EINPROGRESS)
		free(job);
	return r;
}

int
comm_deferring(struct comm *c)
{
	return !c->blocking && !(c->worker_started && pthread_equal(pthread_self(), c->worker));
}

void
comm_defer_stop(struct comm *c)
{
	if (!c->worker_started)
		return;
	pthread_mutex_lock(&c->lock);
	c->worker_stop = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->worker, NULL);
	c->worker_started = 0;
}
