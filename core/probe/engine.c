/*
 * coll's own engine: the core's collectives on the communicator, in host
 * memory. Every op runs to its end inside start(), so wait() has nothing to do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "probe.h"

static void *
eng_alloc(struct probe_engine *e, size_t bytes)
{
	(void)e;
	return malloc(bytes ? bytes : 1);
}

static void
eng_release(struct probe_engine *e, void *buf)
{
	(void)e;
	free(buf);
}

static int
eng_copy(struct probe_engine *e, void *dst, const void *src, size_t len)
{
	(void)e;
	if (dst != src && len > 0)
		memmove(dst, src, len);
	return COLL_OK;
}

static int
eng_start(struct probe_engine *e, enum probe_coll k, const void *s, void *r, size_t count,
    enum dtype dt, enum redop op, int root)
{
	struct comm *c = e->ctx;

	switch (k) {
	case PROBE_ALLREDUCE: return coll_allreduce(c, s, r, count, dt, op);
	case PROBE_ALLGATHER: return coll_allgather(c, s, r, count, dt);
	case PROBE_REDUCE_SCATTER: return coll_reduce_scatter(c, s, r, count, dt, op);
	case PROBE_BROADCAST: return coll_broadcast(c, s, r, count, dt, root);
	case PROBE_REDUCE: return coll_reduce(c, s, r, count, dt, op, root);
	case PROBE_ALLTOALL: return coll_alltoall(c, s, r, count, dt);
	default: return COLL_EINVAL;
	}
}

static int
eng_wait(struct probe_engine *e)
{
	(void)e;
	return COLL_OK;
}

static const char *
eng_error(struct probe_engine *e)
{
	return comm_last_error(e->ctx);
}

static void
eng_close(struct probe_engine *e)
{
	(void)e;
}

void
probe_engine_coll(struct probe_engine *e, struct comm *c)
{
	int threads, lanes = comm_lanes(c, &threads);

	memset(e, 0, sizeof *e);
	e->name = "coll";
	snprintf(e->where, sizeof e->where, "host memory, tcp, %d connection%s per peer (%d "
	    "thread%s)", lanes, lanes == 1 ? "" : "s", threads, threads == 1 ? "" : "s");
	e->ctx = c;
	e->alloc = eng_alloc;
	e->release = eng_release;
	e->put = eng_copy;
	e->get = eng_copy;
	e->start = eng_start;
	e->wait = eng_wait;
	e->error = eng_error;
	e->close = eng_close;
	e->on_comm = 1;
	e->inplace_alltoall = 1;
}
