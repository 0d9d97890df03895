/*
 * The path between hosts (and, with COLL_CUDA_P2P=0, on one): device memory
 * is copied to pinned host slots, coll's own collectives run on them over
 * TCP, and the results are copied back. The reduction is coll's host ring's,
 * not a kernel's. An op goes in chunks through two slots, so that the copy
 * of chunk i+1 down from the GPU and of chunk i-1 back up overlap the
 * network's work on chunk i: down on the ops' stream, up on a second one.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "cuda_int.h"
#include "err.h"

/* Bytes per pinned slot (COLL_CUDA_CHUNK): large enough that TCP runs at speed. */
#define STAGED_SLOT (8u << 20)

/*
 * How a collective's buffers split into chunks of c elements: nin pieces of
 * the input (count apart on the device), nout of the output, chunk i of
 * piece j at element j * count + i * c.
 */
struct staged_op {
	enum probe_coll k;
	cu_ptr_t s, r;
	size_t count, esz, c;
	int nin, nout;
	int down, up;		/* whether this rank copies in and out */
	enum dtype dt;
	enum redop op;
	int root;
};

int
cuda_staged_open(struct cuda_eng *g)
{
	const char *e = getenv("COLL_CUDA_CHUNK");
	int r;

	g->slot = e != NULL && atol(e) >= 4096 ? (size_t)atol(e) : STAGED_SLOT;
	for (int i = 0; i < 2; i++) {
		if ((r = g->d.api.mem_host_alloc(&g->hin[i], g->slot, CU_MEMHOSTALLOC_PORTABLE)) !=
		    CU_OK || (r = g->d.api.mem_host_alloc(&g->hout[i], g->slot,
		    CU_MEMHOSTALLOC_PORTABLE)) != CU_OK)
			return cuda__cu(g, r, "cannot allocate pinned host memory");
		if ((r = g->d.api.event_create(&g->ev_in[i], CU_EVENT_DISABLE_TIMING)) != CU_OK ||
		    (r = g->d.api.event_create(&g->ev_out[i], CU_EVENT_DISABLE_TIMING)) != CU_OK)
			return cuda__cu(g, r, "cannot make an event");
	}
	if ((r = g->d.api.event_create(&g->ev_h2d, CU_EVENT_DISABLE_TIMING)) != CU_OK ||
	    (r = g->d.api.stream_create(&g->h2d, CU_STREAM_NON_BLOCKING)) != CU_OK)
		return cuda__cu(g, r, "cannot make a stream");
	return COLL_OK;
}

void
cuda_staged_close(struct cuda_eng *g)
{
	for (int i = 0; i < 2; i++) {
		if (g->hin[i] != NULL)
			g->d.api.mem_free_host(g->hin[i]);
		if (g->hout[i] != NULL)
			g->d.api.mem_free_host(g->hout[i]);
		if (g->ev_in[i] != NULL)
			g->d.api.event_destroy(g->ev_in[i]);
		if (g->ev_out[i] != NULL)
			g->d.api.event_destroy(g->ev_out[i]);
		g->hin[i] = g->hout[i] = NULL;
		g->ev_in[i] = g->ev_out[i] = NULL;
	}
	if (g->ev_h2d != NULL)
		g->d.api.event_destroy(g->ev_h2d);
	if (g->h2d != NULL)
		g->d.api.stream_destroy(g->h2d);
	g->ev_h2d = NULL;
	g->h2d = NULL;
}

static void
staged_plan(struct cuda_eng *g, struct staged_op *o)
{
	int n = g->nranks, most;

	o->nin = o->nout = 1;
	o->down = o->up = 1;
	switch (o->k) {
	case PROBE_ALLGATHER: o->nout = n; break;
	case PROBE_REDUCE_SCATTER: o->nin = n; break;
	case PROBE_ALLTOALL: o->nin = o->nout = n; break;
	case PROBE_BROADCAST: o->down = g->rank == o->root; break;
	case PROBE_REDUCE: o->up = g->rank == o->root; break;
	default: break;
	}
	most = o->nin > o->nout ? o->nin : o->nout;
	o->c = g->slot / ((size_t)most * o->esz);
	if (o->c == 0)
		o->c = 1;
}

/* Chunk i (cc elements) of every piece, down into slot sl or up out of it. */
static int
staged_copy(struct cuda_eng *g, const struct staged_op *o, size_t i, size_t cc, int down)
{
	int sl = (int)(i & 1), np = down ? o->nin : o->nout, r = CU_OK;
	size_t bytes = cc * o->esz;

	for (int j = 0; j < np && r == CU_OK; j++) {
		cu_ptr_t dev = (down ? o->s : o->r) + ((size_t)j * o->count + i * o->c) * o->esz;
		char *host = (char *)(down ? g->hin[sl] : g->hout[sl]) + (size_t)j * bytes;

		r = down ? g->d.api.memcpy_dtoh_async(host, dev, bytes, g->d.stream) :
		    g->d.api.memcpy_htod_async(dev, host, bytes, g->h2d);
	}
	if (r == CU_OK)
		r = g->d.api.event_record(down ? g->ev_in[sl] : g->ev_out[sl],
		    down ? g->d.stream : g->h2d);
	return cuda__cu(g, r, down ? "copy from GPU to pinned memory" :
	    "copy from pinned memory to GPU");
}

/* coll's own collective on one chunk, in the pinned slots. */
static int
staged_host_op(struct cuda_eng *g, const struct staged_op *o, int sl, size_t cc)
{
	const void *in = g->hin[sl];
	void *out = g->hout[sl];
	int rc;

	switch (o->k) {
	case PROBE_ALLREDUCE: rc = coll_allreduce(g->c, in, out, cc, o->dt, o->op); break;
	case PROBE_ALLGATHER: rc = coll_allgather(g->c, in, out, cc, o->dt); break;
	case PROBE_REDUCE_SCATTER: rc = coll_reduce_scatter(g->c, in, out, cc, o->dt, o->op); break;
	case PROBE_BROADCAST: rc = coll_broadcast(g->c, in, out, cc, o->dt, o->root); break;
	case PROBE_REDUCE: rc = coll_reduce(g->c, in, out, cc, o->dt, o->op, o->root); break;
	default: rc = coll_alltoall(g->c, in, out, cc, o->dt); break;
	}
	return rc == COLL_OK ? COLL_OK : cuda__fail(g, rc, "%s", comm_last_error(g->c));
}

static size_t
staged_len(const struct staged_op *o, size_t i)
{
	size_t left = o->count - i * o->c;

	return left < o->c ? left : o->c;
}

/* Chunk i: its input landed, its output slot free, the network's turn, then up. */
static int
staged_chunk(struct cuda_eng *g, const struct staged_op *o, size_t i, size_t nch)
{
	int sl = (int)(i & 1), rc;
	size_t cc = staged_len(o, i);

	if ((rc = cuda__sync(g, g->d.api.event_query, g->ev_in[sl], "a copy from the GPU")) !=
	    COLL_OK || (rc = cuda__sync(g, g->d.api.event_query, g->ev_out[sl],
	    "a copy to the GPU")) != COLL_OK || (rc = staged_host_op(g, o, sl, cc)) != COLL_OK)
		return rc;
	if (o->up && (rc = staged_copy(g, o, i, cc, 0)) != COLL_OK)
		return rc;
	if (i + 2 < nch && o->down)
		return staged_copy(g, o, i + 2, staged_len(o, i + 2), 1);
	return COLL_OK;
}

int
cuda_staged_start(struct cuda_eng *g, enum probe_coll k, cu_ptr_t s, cu_ptr_t r,
    size_t count, enum dtype dt, enum redop op, int root)
{
	struct staged_op o = { .k = k, .s = s, .r = r, .count = count, .esz = dtype_size(dt),
	    .dt = dt, .op = op, .root = root };
	size_t nch;
	int rc;

	staged_plan(g, &o);
	nch = (count + o.c - 1) / o.c;
	/* This op's copies down start after the last op's copies up have landed. */
	if ((rc = cuda__cu(g, g->d.api.stream_wait_event(g->d.stream, g->ev_h2d, 0),
	    "cuStreamWaitEvent")) != COLL_OK)
		return rc;
	for (size_t i = 0; i < nch && i < 2 && o.down; i++)
		if ((rc = staged_copy(g, &o, i, staged_len(&o, i), 1)) != COLL_OK)
			return rc;
	for (size_t i = 0; i < nch; i++)
		if ((rc = staged_chunk(g, &o, i, nch)) != COLL_OK)
			return rc;
	return cuda__cu(g, g->d.api.event_record(g->ev_h2d, g->h2d), "cuEventRecord");
}

int
cuda_staged_wait(struct cuda_eng *g)
{
	int rc = cuda__sync(g, g->d.api.stream_query, g->d.stream, "copies from the GPU");

	return rc == COLL_OK ? cuda__sync(g, g->d.api.stream_query, g->h2d,
	    "copies to the GPU") : rc;
}
