/*
 * The NCCL engine. Every call that may wait (init, a collective returning
 * ncclInProgress, the stream at the end of a batch) polls with a deadline,
 * as NCCL's documentation says to for non-blocking communicators: check
 * ncclCommGetAsyncError between polls, and abort the communicator when the
 * deadline passes, so that the probe returns an error instead of hanging.
 *
 * The collectives themselves run on a blocking communicator split from the
 * non-blocking one: on a non-blocking communicator NCCL hands every launch
 * to a thread of its own, which costs tens of microseconds per op and would
 * make every small size read slower than nccl-tests measures it. A hang
 * inside a kernel is still caught: the wait polls the stream and NCCL's
 * errors and aborts at the deadline. COLL_NCCL_BLOCKING=0 keeps every op on
 * the non-blocking communicator.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>

#include "clock.h"
#include "coll.h"
#include "err.h"
#include "cu_dev.h"
#include "nccl_abi.h"
#include "nccl_engine.h"
#include "xmalloc.h"

#define NCCL_ENG_TIMEOUT_MS 300000
/*
 * Ops queued on the stream before start() waits for them itself. CUDA's
 * launch queue holds about a thousand kernels; past that a launch blocks the
 * host inside NCCL, where no deadline can be checked while a peer is stuck.
 */
#define NCCL_ENG_MAX_QUEUED 128

struct nccl_eng {
	struct nccl_api api;
	nccl_comm_t comm;	/* the ops' */
	nccl_comm_t parent;	/* the non-blocking one it was split from, or NULL */
	nccl_comm_t volatile child;	/* where ncclCommSplit stores the new one */
	struct nccl_config split_cfg;
	struct cu_dev d;	/* the GPU, its context and the ops' stream */
	int rank, nranks;
	int dead;		/* aborted: every later call fails at once */
	int queued;		/* ops started since the last wait */
	int timeout_ms;
	char err[256];
};

/* coll's datatypes and ops in NCCL's numbering (ncclDataType_t, ncclRedOp_t). */
static const int nccl_dt[DT_COUNT] = {
	[DT_INT8] = 0, [DT_UINT8] = 1, [DT_INT32] = 2, [DT_UINT32] = 3, [DT_INT64] = 4,
	[DT_UINT64] = 5, [DT_FLOAT16] = 6, [DT_FLOAT32] = 7, [DT_FLOAT64] = 8, [DT_BFLOAT16] = 9,
};
static const int nccl_op[OP_COUNT] = {
	[OP_SUM] = 0, [OP_PROD] = 1, [OP_MAX] = 2, [OP_MIN] = 3, [OP_AVG] = 4,
};

static int
eng_fail(struct nccl_eng *n, int code, const char *what, int res)
{
	const char *last = n->comm != NULL ? n->api.get_last_error(n->comm) : NULL;

	snprintf(n->err, sizeof n->err, "%s: %s%s%s", what, n->api.get_error_string(res),
	    last != NULL && *last ? ": " : "", last != NULL ? last : "");
	return code;
}

static void
eng_abort(struct nccl_eng *n)
{
	if (n->comm != NULL && !n->dead)
		n->api.comm_abort(n->comm);
	/* Until the split has given a new one, parent and comm are the same communicator. */
	if (n->parent != NULL && n->parent != n->comm && !n->dead)
		n->api.comm_abort(n->parent);
	n->dead = 1;
}

/* Poll the communicator until it leaves ncclInProgress, within the deadline. */
static int
eng_settle(struct nccl_eng *n, int res, const char *what)
{
	uint64_t end = clock_now_ns() + (uint64_t)n->timeout_ms * 1000000ull;

	while (res == NCCL_INPROGRESS) {
		if (n->api.comm_get_async_error(n->comm, &res) != NCCL_OK)
			break;
		if (res == NCCL_INPROGRESS && clock_now_ns() > end) {
			eng_abort(n);
			snprintf(n->err, sizeof n->err, "%s did not finish in %d ms: the NCCL "
			    "communicator was aborted; see which rank is behind with collstack",
			    what, n->timeout_ms);
			return COLL_ETIMEDOUT;
		}
		sched_yield();
	}
	if (res != NCCL_OK) {
		eng_fail(n, COLL_EPEER, what, res);
		eng_abort(n);
		return COLL_EPEER;
	}
	return COLL_OK;
}

static void *
eng_alloc(struct probe_engine *e, size_t bytes)
{
	struct nccl_eng *n = e->ctx;
	cu_ptr_t p = 0;
	char b[96];
	int r;

	if ((r = n->d.api.mem_alloc(&p, bytes ? bytes : 1)) != CU_OK) {
		snprintf(n->err, sizeof n->err, "cannot allocate %zu bytes on GPU %d: %s", bytes,
		    n->d.dev, cu_api_error(&n->d.api, r, b, sizeof b));
		return NULL;
	}
	return (void *)(uintptr_t)p;
}

static void
eng_release(struct probe_engine *e, void *buf)
{
	struct nccl_eng *n = e->ctx;

	n->d.api.mem_free((cu_ptr_t)(uintptr_t)buf);
}

static int
eng_cu(struct nccl_eng *n, int r, const char *what)
{
	return cu_dev_check(&n->d, r, what, n->err, sizeof n->err);
}

static int
eng_put(struct probe_engine *e, void *dst, const void *src, size_t len)
{
	struct nccl_eng *n = e->ctx;

	return cu_dev_put(&n->d, (cu_ptr_t)(uintptr_t)dst, src, len, n->err, sizeof n->err);
}

static int
eng_get(struct probe_engine *e, void *dst, const void *src, size_t len)
{
	struct nccl_eng *n = e->ctx;

	return cu_dev_get(&n->d, dst, (cu_ptr_t)(uintptr_t)src, len, n->err, sizeof n->err);
}

/* All-to-all as NCCL's own call where the library has it, else grouped sends and receives. */
static int
eng_alltoall(struct nccl_eng *n, const void *s, void *r, size_t count, int dt, size_t esz)
{
	int res;

	if (n->api.alltoall != NULL)
		return n->api.alltoall(s, r, count, dt, n->comm, n->d.stream);
	if ((res = n->api.group_start()) != NCCL_OK)
		return res;
	for (int j = 0; j < n->nranks; j++) {
		size_t off = (size_t)j * count * esz;

		if ((res = n->api.send((const char *)s + off, count, dt, j, n->comm, n->d.stream)) !=
		    NCCL_OK && res != NCCL_INPROGRESS)
			break;
		if ((res = n->api.recv((char *)r + off, count, dt, j, n->comm, n->d.stream)) !=
		    NCCL_OK && res != NCCL_INPROGRESS)
			break;
	}
	/* The group is closed whatever happened inside it. */
	{
		int end = n->api.group_end();

		return res == NCCL_OK || res == NCCL_INPROGRESS ? end : res;
	}
}

static int
eng_start(struct probe_engine *e, enum probe_coll k, const void *s, void *r, size_t count,
    enum dtype dt, enum redop op, int root)
{
	struct nccl_eng *n = e->ctx;
	int d = nccl_dt[dt], o = nccl_op[op], res;
	char what[64];

	if (n->dead)
		return COLL_EABORTED;
	if (n->queued >= NCCL_ENG_MAX_QUEUED && (res = e->wait(e)) != COLL_OK)
		return res;
	n->queued++;
	switch (k) {
	case PROBE_ALLREDUCE: res = n->api.all_reduce(s, r, count, d, o, n->comm, n->d.stream); break;
	case PROBE_ALLGATHER: res = n->api.all_gather(s, r, count, d, n->comm, n->d.stream); break;
	case PROBE_REDUCE_SCATTER:
		res = n->api.reduce_scatter(s, r, count, d, o, n->comm, n->d.stream);
		break;
	case PROBE_BROADCAST: res = n->api.broadcast(s, r, count, d, root, n->comm, n->d.stream); break;
	case PROBE_REDUCE: res = n->api.reduce(s, r, count, d, o, root, n->comm, n->d.stream); break;
	case PROBE_ALLTOALL: res = eng_alltoall(n, s, r, count, d, dtype_size(dt)); break;
	default: return COLL_EINVAL;
	}
	snprintf(what, sizeof what, "NCCL %s of %zu elements", probe_coll_name(k), count);
	return eng_settle(n, res, what);
}

/* Wait for the stream, watching for NCCL's errors and the deadline. */
static int
eng_wait(struct probe_engine *e)
{
	struct nccl_eng *n = e->ctx;
	uint64_t end = clock_now_ns() + (uint64_t)n->timeout_ms * 1000000ull;
	unsigned spins = 0;
	int q, st;

	if (n->dead)
		return COLL_EABORTED;
	n->queued = 0;
	while ((q = n->d.api.stream_query(n->d.stream)) == CU_NOT_READY) {
		if (n->api.comm_get_async_error(n->comm, &st) == NCCL_OK && st != NCCL_OK &&
		    st != NCCL_INPROGRESS) {
			eng_fail(n, COLL_EPEER, "NCCL reported an error while the op ran", st);
			eng_abort(n);
			return COLL_EPEER;
		}
		/* The clock is read now and then: the wait is the latency being measured. */
		if ((++spins & 1023) == 0 && clock_now_ns() > end) {
			eng_abort(n);
			snprintf(n->err, sizeof n->err, "NCCL ops on rank %d (GPU %d) did not finish in "
			    "%d ms: the NCCL communicator was aborted; a peer is stuck or gone, "
			    "see which with collstack", n->rank, n->d.dev, n->timeout_ms);
			return COLL_ETIMEDOUT;
		}
	}
	return eng_cu(n, q, "waiting for the stream");
}

static const char *
eng_error(struct probe_engine *e)
{
	return ((struct nccl_eng *)e->ctx)->err;
}

static void
eng_close(struct probe_engine *e)
{
	struct nccl_eng *n = e->ctx;

	if (n == NULL)
		return;
	if (n->comm != NULL && !n->dead) {
		/* Finalize flushes what is queued; a failure there aborts (eng_settle). */
		if (eng_settle(n, n->api.comm_finalize(n->comm), "ncclCommFinalize") == COLL_OK)
			n->api.comm_destroy(n->comm);
	}
	if (n->parent != NULL && n->parent != n->comm && !n->dead) {
		n->comm = n->parent;
		n->parent = NULL;
		if (eng_settle(n, n->api.comm_finalize(n->comm), "ncclCommFinalize") == COLL_OK)
			n->api.comm_destroy(n->comm);
	}
	nccl_api_unload(&n->api);
	cu_dev_close(&n->d);
	free(n);
	e->ctx = NULL;
}

/* Take the GPU and make the stream, then load NCCL: what each rank can do alone. */
static int
eng_local(struct nccl_eng *n, struct comm *c, const struct nccl_engine_opts *o)
{
	int rc;

	if ((rc = cu_dev_open(&n->d, c, o->device, "the NCCL engine", n->err,
	    sizeof n->err)) != COLL_OK)
		return rc;
	return nccl_api_load(&n->api, n->err, sizeof n->err) == 0 ? COLL_OK : COLL_ESYS;
}

/*
 * The blocking communicator the ops run on, split from the non-blocking one
 * (which the split itself keeps pollable); the parent is kept for close.
 */
static int
eng_split(struct nccl_eng *n)
{
	const char *e = getenv("COLL_NCCL_BLOCKING");
	uint64_t end = clock_now_ns() + (uint64_t)n->timeout_ms * 1000000ull;
	int res, st;

	if ((e != NULL && strcmp(e, "0") == 0) || n->api.comm_split == NULL)
		return COLL_OK;
	/*
	 * Both live in n, not on the stack: under a non-blocking parent NCCL may
	 * finish the split in a thread of its own and store the new comm later.
	 */
	n->split_cfg = (struct nccl_config){ sizeof n->split_cfg, NCCL_CONFIG_MAGIC,
	    NCCL_CONFIG_VERSION, 1, NCCL_UNDEF_INT, NCCL_UNDEF_INT, NCCL_UNDEF_INT, NULL,
	    NCCL_UNDEF_INT };
	res = n->api.comm_split(n->comm, 0, n->rank, (nccl_comm_t *)&n->child, &n->split_cfg);
	if (res != NCCL_OK && res != NCCL_INPROGRESS)
		return eng_fail(n, COLL_ESYS, "ncclCommSplit", res);
	n->parent = n->comm;
	while (n->child == NULL) {
		if (n->api.comm_get_async_error(n->parent, &st) == NCCL_OK && st != NCCL_OK &&
		    st != NCCL_INPROGRESS) {
			eng_fail(n, COLL_ESYS, "ncclCommSplit", st);
			eng_abort(n);
			return COLL_ESYS;
		}
		if (clock_now_ns() > end) {
			eng_abort(n);
			snprintf(n->err, sizeof n->err, "ncclCommSplit gave no communicator in %d ms: "
			    "the NCCL communicator was aborted", n->timeout_ms);
			return COLL_ETIMEDOUT;
		}
		sched_yield();
	}
	n->comm = n->child;
	return eng_settle(n, res, "ncclCommSplit");
}

static void
eng_where(struct probe_engine *e, struct nccl_eng *n)
{
	char dev[128];

	cu_dev_where(&n->d, dev, sizeof dev);
	snprintf(e->where, sizeof e->where, "%.60s, NCCL %d.%d.%d %.60s", dev, n->api.version / 10000,
	    n->api.version / 100 % 100, n->api.version % 100, n->api.path);
}

int
nccl_engine_open(struct probe_engine *e, struct comm *c, const struct nccl_engine_opts *o,
    char *err, size_t len)
{
	struct nccl_eng *n = xcalloc(1, sizeof *n);
	struct nccl_config cfg = { sizeof cfg, NCCL_CONFIG_MAGIC, NCCL_CONFIG_VERSION, 0,
	    NCCL_UNDEF_INT, NCCL_UNDEF_INT, NCCL_UNDEF_INT, NULL, NCCL_UNDEF_INT };
	nccl_uid_t uid;
	char who[256];
	int rc, res;

	memset(e, 0, sizeof *e);
	memset(&uid, 0, sizeof uid);
	n->rank = comm_rank(c);
	n->nranks = comm_size(c);
	n->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : NCCL_ENG_TIMEOUT_MS;
	/*
	 * Connections made in init, under its deadline: made lazily (NCCL 2.22's
	 * default) they would be made inside a blocking op, where none is checked.
	 */
	setenv("NCCL_RUNTIME_CONNECT", "0", 0);
	rc = eng_local(n, c, o);
	if (rc == COLL_OK && n->rank == 0 && (res = n->api.get_unique_id(&uid)) != NCCL_OK)
		rc = eng_fail(n, COLL_ESYS, "ncclGetUniqueId", res);
	/* One rank without a GPU must not leave the others in NCCL's init until the timeout. */
	if ((res = cu_dev_agree(c, rc == COLL_OK, "setting up the NCCL engine", who,
	    sizeof who)) != COLL_OK || rc != COLL_OK)
		goto fail;
	if ((res = coll_broadcast(c, &uid, &uid, sizeof uid, DT_UINT8, 0)) != COLL_OK) {
		snprintf(who, sizeof who, "%s", comm_last_error(c));
		goto fail;
	}
	res = n->api.comm_init_rank_config(&n->comm, n->nranks, uid, n->rank, &cfg);
	if (res != NCCL_OK && res != NCCL_INPROGRESS)
		rc = eng_fail(n, COLL_ESYS, "ncclCommInitRankConfig", res);
	else
		rc = eng_settle(n, res, "ncclCommInitRankConfig");
	if (rc == COLL_OK)
		rc = eng_split(n);
	if ((res = cu_dev_agree(c, rc == COLL_OK, "NCCL's init", who, sizeof who)) != COLL_OK ||
	    rc != COLL_OK)
		goto fail;
	e->name = "nccl";
	e->ctx = n;
	e->alloc = eng_alloc;
	e->release = eng_release;
	e->put = eng_put;
	e->get = eng_get;
	e->start = eng_start;
	e->wait = eng_wait;
	e->error = eng_error;
	e->close = eng_close;
	e->on_comm = 0;
	eng_where(e, n);
	return COLL_OK;
fail:
	if (rc != COLL_OK)
		snprintf(err, len, "rank %d: %s", n->rank, n->err);
	else
		snprintf(err, len, "%s", who);
	e->ctx = n;
	eng_abort(n);
	eng_close(e);
	return rc != COLL_OK ? rc : res;
}
