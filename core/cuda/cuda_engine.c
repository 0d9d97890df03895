/*
 * coll's CUDA engine: the probe engine over the GPU, ops on one stream.
 * Which path runs is settled at open, by every rank together: ipc where all
 * ranks share a host (and COLL_CUDA_P2P is not 0) and every rank could map
 * every peer's memory, else staged. Every wait polls with the -T deadline;
 * past it the kernels are told to stop (the abort word) and the engine is
 * dead, so the probe reports instead of hanging.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coll.h"
#include "cuda_engine.h"
#include "cuda_int.h"
#include "err.h"
#include "xmalloc.h"

#define CUDA_ENG_TIMEOUT_MS 300000
/* Ops queued before start() waits itself: a full launch queue would block the host. */
#define CUDA_ENG_MAX_QUEUED 128

int
cuda__fail(struct cuda_eng *g, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->err, sizeof g->err, fmt, ap);
	va_end(ap);
	return rc;
}

int
cuda__cu(struct cuda_eng *g, int r, const char *what)
{
	return cu_dev_check(&g->d, r, what, g->err, sizeof g->err);
}

int
cuda__sync(struct cuda_eng *g, int (*query)(void *), void *what, const char *doing)
{
	uint64_t end = clock_now_ns() + (uint64_t)g->timeout_ms * 1000000ull;
	unsigned spins = 0;
	int q;

	/* The clock is read now and then: the wait is the latency being measured. */
	while ((q = query(what)) == CU_NOT_READY) {
		if ((++spins & 1023) == 0 && clock_now_ns() > end) {
			if (g->abort_host != NULL)
				*g->abort_host = 1;
			g->dead = 1;
			return cuda__fail(g, COLL_ETIMEDOUT, "CUDA ops on rank %d (GPU %d) did not "
			    "finish %s in %d ms: a peer is stuck or gone, see which with collstack",
			    g->rank, g->d.dev, doing, g->timeout_ms);
		}
	}
	return cuda__cu(g, q, doing);
}

struct cuda_buf *
cuda__buf(struct cuda_eng *g, cu_ptr_t p)
{
	for (struct cuda_buf *b = g->bufs; b != NULL; b = b->next)
		if (p >= b->base && p < b->base + b->size)
			return b;
	return NULL;
}

static void *
eng_alloc(struct probe_engine *e, size_t bytes)
{
	struct cuda_eng *g = e->ctx;
	struct cuda_buf *b = xcalloc(1, sizeof *b);
	int r;

	b->size = bytes ? bytes : 1;
	if ((r = g->d.api.mem_alloc(&b->base, b->size)) != CU_OK) {
		char what[64];

		snprintf(what, sizeof what, "cannot allocate %zu bytes", bytes);
		cuda__cu(g, r, what);
		free(b);
		return NULL;
	}
	/* peer[] holds the ipc path's ranks only; the staged path (any count) needs none. */
	if (g->rank < CK_MAXR)
		b->peer[g->rank] = b->base;
	b->next = g->bufs;
	g->bufs = b;
	return (void *)(uintptr_t)b->base;
}

static void
eng_release(struct probe_engine *e, void *buf)
{
	struct cuda_eng *g = e->ctx;
	struct cuda_buf **pp = &g->bufs, *b;

	while ((b = *pp) != NULL && b->base != (cu_ptr_t)(uintptr_t)buf)
		pp = &b->next;
	if (b == NULL)
		return;
	*pp = b->next;
	cuda_ipc_unmap(g, b);
	g->d.api.mem_free(b->base);
	free(b);
}

static int
eng_put(struct probe_engine *e, void *dst, const void *src, size_t len)
{
	struct cuda_eng *g = e->ctx;

	return cu_dev_put(&g->d, (cu_ptr_t)(uintptr_t)dst, src, len, g->err, sizeof g->err);
}

static int
eng_get(struct probe_engine *e, void *dst, const void *src, size_t len)
{
	struct cuda_eng *g = e->ctx;

	return cu_dev_get(&g->d, dst, (cu_ptr_t)(uintptr_t)src, len, g->err, sizeof g->err);
}

static int
eng_wait(struct probe_engine *e)
{
	struct cuda_eng *g = e->ctx;

	if (g->dead)
		return COLL_EABORTED;
	g->queued = 0;
	if (g->path == CUDA_PATH_STAGED)
		return cuda_staged_wait(g);
	return cuda__sync(g, g->d.api.stream_query, g->d.stream, "the collectives");
}

static int
eng_start(struct probe_engine *e, enum probe_coll k, const void *s, void *r, size_t count,
    enum dtype dt, enum redop op, int root)
{
	struct cuda_eng *g = e->ctx;
	cu_ptr_t sp = (cu_ptr_t)(uintptr_t)s, rp = (cu_ptr_t)(uintptr_t)r;
	int rc;

	if (g->dead)
		return COLL_EABORTED;
	if ((unsigned)k >= PROBE_NCOLL || (unsigned)dt >= DT_COUNT || (unsigned)op >= OP_COUNT)
		return cuda__fail(g, COLL_EINVAL, "unknown collective, datatype or op");
	if (g->queued >= CUDA_ENG_MAX_QUEUED && (rc = eng_wait(e)) != COLL_OK)
		return rc;
	g->queued++;
	if (g->path == CUDA_PATH_STAGED)
		rc = cuda_staged_start(g, k, sp, rp, count, dt, op, root);
	else
		rc = cuda_ipc_start(g, k, sp, rp, count, dt, op, root);
	/* Arguments were checked above: any failure now (a peer's mapping too) is fatal. */
	if (rc != COLL_OK)
		g->dead = 1;
	return rc;
}

static const char *
eng_error(struct probe_engine *e)
{
	return ((struct cuda_eng *)e->ctx)->err;
}

static void
eng_close(struct probe_engine *e)
{
	struct cuda_eng *g = e->ctx;

	if (g == NULL)
		return;
	/* Nothing may still run on memory about to be freed; aborted kernels end soon. */
	if (g->d.stream != NULL) {
		if (g->abort_host != NULL && g->dead)
			*g->abort_host = 1;
		g->dead = 0;
		if (cuda__sync(g, g->d.api.stream_query, g->d.stream, "before closing") != COLL_OK)
			g->d.api.ctx_synchronize();
		/* The staged path's copies up run on a stream of their own, from pinned memory. */
		g->dead = 0;
		if (g->h2d != NULL &&
		    cuda__sync(g, g->d.api.stream_query, g->h2d, "before closing") != COLL_OK)
			g->d.api.ctx_synchronize();
	}
	while (g->bufs != NULL)
		eng_release(e, (void *)(uintptr_t)g->bufs->base);
	cuda_staged_close(g);
	cuda_ipc_close(g);
	cu_dev_close(&g->d);
	free(g);
	e->ctx = NULL;
}

int
cuda_engine_built(void)
{
	size_t len;

	return cuda__fatbin(&len) != NULL && len > 0;
}

/* Whether every rank shares this rank's host: then peers can map each other's memory. */
static int
eng_one_host(struct comm *c)
{
	for (int r = 0; r < comm_size(c); r++)
		if (strcmp(comm_host(c, r), comm_host(c, comm_rank(c))) != 0)
			return 0;
	return 1;
}

/* The path every rank takes: ipc if all can, staged otherwise; *why when not ipc. */
static int
eng_path(struct cuda_eng *g, const char **why)
{
	const char *p2p = getenv("COLL_CUDA_P2P");
	char who[256];
	int ok, rc;

	*why = NULL;
	if (p2p != NULL && strcmp(p2p, "0") == 0)
		*why = "COLL_CUDA_P2P=0";
	else if (!eng_one_host(g->c))
		*why = "ranks on several hosts";
	else if (g->nranks > CK_MAXR)
		*why = "more ranks than one host maps (8)";
	if (*why != NULL)
		return CUDA_PATH_STAGED;
	ok = cuda_ipc_open(g) == COLL_OK;
	rc = cu_dev_agree(g->c, ok, "mapping peers' GPU memory", who, sizeof who);
	if (rc == COLL_OK)
		return CUDA_PATH_IPC;
	if (comm_get_async_error(g->c) != COLL_OK)
		return -1;
	*why = "a rank could not map its peers' memory";
	cuda_ipc_close(g);
	return CUDA_PATH_STAGED;
}

static void
eng_where(struct probe_engine *e, struct cuda_eng *g, const char *why)
{
	char dev[128];
	/* Only among 3 or more, and spread's broadcast not with COLL_CUDA_SYNC=comm. */
	int rooted = g->nranks >= 3 && !(g->rooted == CUDA_ROOTED_SPREAD && g->host_sync);

	cu_dev_where(&g->d, dev, sizeof dev);
	/* A forced choice that applies is named, so that a run (and the GPU tests) shows it. */
	if (g->path == CUDA_PATH_IPC)
		snprintf(e->where, sizeof e->where, "%.72s, ipc: coll kernels on peers' memory "
		    "(P2P), %d blocks%s%s", dev, g->max_blocks,
		    !rooted ? "" : g->rooted == CUDA_ROOTED_SPREAD ? ", rooted spread" :
		    g->rooted == CUDA_ROOTED_DIRECT ? ", rooted direct" : "",
		    g->copy == CUDA_COPY_PUSH ? ", copy push" :
		    g->copy == CUDA_COPY_PULL ? ", copy pull" : "");
	else
		snprintf(e->where, sizeof e->where, "%.72s, staged: pinned host memory, coll over "
		    "tcp (%.32s)", dev, why);
}

static void
eng_fill(struct probe_engine *e, struct cuda_eng *g)
{
	e->name = "cuda";
	e->ctx = g;
	e->alloc = eng_alloc;
	e->release = eng_release;
	e->put = eng_put;
	e->get = eng_get;
	e->start = eng_start;
	e->wait = eng_wait;
	e->error = eng_error;
	e->close = eng_close;
	e->on_comm = 0;
	/* Peers write into each other's receive buffers as they go: not in place. */
	e->inplace_alltoall = 0;
}

/*
 * The tuning variables shape every rank's kernels and chunks, which must
 * pair with their peers': a rank set apart would wait for partners that
 * never come. Every rank compares a hash of its settings with the others'.
 */
static int
eng_same_settings(struct cuda_eng *g, char *who, size_t len)
{
	static const char *const vars[] = { "COLL_CUDA_P2P", "COLL_CUDA_BLOCKS",
	    "COLL_CUDA_THREADS", "COLL_CUDA_SYNC", "COLL_CUDA_COPY", "COLL_CUDA_CHUNK",
	    "COLL_CUDA_ROOTED" };
	uint64_t h = 1469598103934665603ull, *all = xcalloc((size_t)g->nranks, sizeof *all);
	int rc, odd = -1;

	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);

		for (const char *p = v != NULL ? v : ""; ; p++) {
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
			if (*p == '\0')
				break;
		}
	}
	if ((rc = coll_allgather(g->c, &h, all, 1, DT_UINT64)) != COLL_OK)
		snprintf(who, len, "%s", comm_last_error(g->c));
	for (int r = 1; r < g->nranks && rc == COLL_OK && odd < 0; r++)
		if (all[r] != all[0])
			odd = r;
	free(all);
	if (odd >= 0) {
		snprintf(who, len, "rank %d (%s) has other COLL_CUDA_* settings than rank 0: set "
		    "COLL_CUDA_P2P, _BLOCKS, _THREADS, _SYNC, _COPY, _CHUNK and _ROOTED alike on "
		    "every rank",
		    odd, comm_host(g->c, odd));
		return COLL_EINVAL;
	}
	return rc;
}

/*
 * What each rank can do alone: kernels built in, its COLL_CUDA_COPY and
 * COLL_CUDA_ROOTED, the driver, its GPU.
 */
static int
eng_local(struct cuda_eng *g, const struct cuda_engine_opts *o)
{
	int rc;

	if (!cuda_engine_built())
		return cuda__fail(g, COLL_ESYS, "coll was built without the CUDA toolkit "
		    "(nvcc): rebuild with it (cmake -DCOLL_CUDA=ON) to use --engine cuda");
	if ((rc = cuda_ipc_choices(g)) != COLL_OK)
		return rc;
	if ((rc = cu_dev_open(&g->d, g->c, o->device, "the CUDA engine", g->err,
	    sizeof g->err)) != COLL_OK)
		return rc;
	if (!cu_api_has_engine(&g->d.api))
		return cuda__fail(g, COLL_ESYS, "libcuda.so.1 lacks what the CUDA engine "
		    "calls (IPC, kernels): a CUDA 11 driver or newer is needed");
	return COLL_OK;
}

int
cuda_engine_open(struct probe_engine *e, struct comm *c, const struct cuda_engine_opts *o,
    char *err, size_t len)
{
	struct cuda_eng *g = xcalloc(1, sizeof *g);
	const char *why = NULL;
	char who[256];
	int rc, res, path;

	memset(e, 0, sizeof *e);
	g->c = c;
	g->rank = comm_rank(c);
	g->nranks = comm_size(c);
	g->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : CUDA_ENG_TIMEOUT_MS;
	rc = eng_local(g, o);
	/* One rank without a GPU must not leave the others mapping memory it never offers. */
	if ((res = cu_dev_agree(c, rc == COLL_OK, "setting up the CUDA engine", who,
	    sizeof who)) != COLL_OK || rc != COLL_OK)
		goto fail;
	if ((res = eng_same_settings(g, who, sizeof who)) != COLL_OK)
		goto fail;
	if ((path = eng_path(g, &why)) < 0) {
		snprintf(who, sizeof who, "%s", comm_last_error(c));
		res = COLL_EPEER;
		goto fail;
	}
	g->path = (enum cuda_path)path;
	if (g->path == CUDA_PATH_STAGED)
		rc = cuda_staged_open(g);
	if ((res = cu_dev_agree(c, rc == COLL_OK, "setting up the staged path", who,
	    sizeof who)) != COLL_OK || rc != COLL_OK)
		goto fail;
	eng_fill(e, g);
	eng_where(e, g, why);
	return COLL_OK;
fail:
	if (rc != COLL_OK)
		snprintf(err, len, "rank %d: %s", g->rank, g->err);
	else
		snprintf(err, len, "%s", who);
	e->ctx = g;
	e->close = eng_close;
	g->dead = 1;
	eng_close(e);
	memset(e, 0, sizeof *e);
	return rc != COLL_OK ? rc : res;
}
