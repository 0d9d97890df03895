/*
 * The one-host path: every rank maps its peers' buffers (CUDA IPC handles
 * exchanged through coll's communicator, peer access enabled by the driver
 * as it opens them) and coll's kernels read and write them directly:
 *
 *   all-reduce      each rank reduces its 1/n slice of every rank's input and
 *                   writes it into every rank's output (reduce-scatter and
 *                   all-gather in one pass);
 *   reduce          the same slices, written into the root's output only;
 *                   among 3 or more ranks the slices are the other ranks'
 *                   alone, so the root's link carries each byte once;
 *   reduce-scatter  each rank reduces its block of every rank's input;
 *   all-gather      each rank writes its input into every rank's output;
 *   broadcast       each rank reads the root's input into its output; from
 *                   4 MiB among 3 or more ranks a pipeline (coll_bcast):
 *                   each rank reads a slice from the root and the rest from
 *                   the ranks that read them;
 *   all-to-all      each rank writes block j of its input into rank j's.
 *
 * Synchronisation is in the kernels (barrier slots in device memory, see
 * cuda_kernels.cu): an op costs one launch, and the host waits only where
 * the probe does. COLL_CUDA_SYNC=comm puts coll_barrier on the communicator
 * around each op instead, to compare.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "cuda_int.h"
#include "envword.h"
#include "err.h"
#include "xmalloc.h"

static const char *const ipc_dt[DT_COUNT] = {
	[DT_INT8] = "i8", [DT_UINT8] = "u8", [DT_INT32] = "i32", [DT_UINT32] = "u32",
	[DT_INT64] = "i64", [DT_UINT64] = "u64", [DT_FLOAT16] = "f16", [DT_BFLOAT16] = "bf16",
	[DT_FLOAT32] = "f32", [DT_FLOAT64] = "f64",
};
/* Indexed by enum redop; avg is a sum divided at the end. */
static const char *const ipc_op[4] = { "sum", "prod", "min", "max" };

static int
ipc_env(const char *name, int def, int lo, int hi)
{
	const char *e = getenv(name);
	int v = e != NULL && *e != '\0' ? atoi(e) : def;

	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * COLL_CUDA_COPY and COLL_CUDA_ROOTED, read before any path is chosen: a value
 * the engine does not know fails the run rather than the ipc path alone,
 * which would fall back to the staged path and hide the mistake.
 */
int
cuda_ipc_choices(struct cuda_eng *g)
{
	/* In the order of the enums' values, auto first. */
	static const char *const copy[] = { "auto", "push", "pull", NULL };
	static const char *const rooted[] = { "auto", "spread", "direct", NULL };
	int v;

	_Static_assert(CUDA_COPY_PUSH == 1 && CUDA_COPY_PULL == 2 && CUDA_ROOTED_SPREAD == 1 &&
	    CUDA_ROOTED_DIRECT == 2, "the word tables follow the enums");
	switch (envword_get("COLL_CUDA_COPY", copy, &v)) {
	case COLL_OK:
		g->copy = v;
		break;
	case COLL_EINVAL:
		return cuda__fail(g, COLL_EINVAL, "COLL_CUDA_COPY=%.32s: use push, pull or auto",
		    getenv("COLL_CUDA_COPY"));
	}
	switch (envword_get("COLL_CUDA_ROOTED", rooted, &v)) {
	case COLL_OK:
		g->rooted = v;
		break;
	case COLL_EINVAL:
		return cuda__fail(g, COLL_EINVAL, "COLL_CUDA_ROOTED=%.32s: use spread, direct or "
		    "auto", getenv("COLL_CUDA_ROOTED"));
	}
	return COLL_OK;
}

static int
ipc_load(struct cuda_eng *g)
{
	size_t len;
	const void *fb = cuda__fatbin(&len);
	char name[48];
	int r;

	if ((r = g->d.api.module_load_data(&g->mod, fb)) != CU_OK)
		return cuda__cu(g, r, "cannot load coll's CUDA kernels");
	if ((r = g->d.api.module_get_function(&g->fn_copy, g->mod, "coll_copy")) != CU_OK)
		return cuda__cu(g, r, "no kernel coll_copy");
	if ((r = g->d.api.module_get_function(&g->fn_bcast, g->mod, "coll_bcast")) != CU_OK)
		return cuda__cu(g, r, "no kernel coll_bcast");
	for (int d = 0; d < DT_COUNT; d++) {
		for (int o = 0; o < 4; o++) {
			snprintf(name, sizeof name, "coll_reduce_%s_%s", ipc_dt[d], ipc_op[o]);
			if ((r = g->d.api.module_get_function(&g->fn_reduce[d][o], g->mod, name)) !=
			    CU_OK)
				return cuda__cu(g, r, name);
		}
	}
	g->threads = ipc_env("COLL_CUDA_THREADS", 512, 64, 1024) & ~31;
	g->max_blocks = ipc_env("COLL_CUDA_BLOCKS", 64, 1, CK_MAXBLOCKS);
	g->host_sync = getenv("COLL_CUDA_SYNC") != NULL && strcmp(getenv("COLL_CUDA_SYNC"),
	    "comm") == 0;
	return COLL_OK;
}

/* Barrier slots (zeroed), their handle, and the host word that stops the waits. */
static int
ipc_local(struct cuda_eng *g, struct cu_ipc_handle *h)
{
	size_t bytes = CK_MAXBLOCKS * CK_MAXR * sizeof(uint64_t);
	void *zero, *host = NULL;
	int r, rc;

	if ((rc = ipc_load(g)) != COLL_OK)
		return rc;
	if ((r = g->d.api.mem_alloc(&g->flags, bytes)) != CU_OK)
		return cuda__cu(g, r, "cannot allocate barrier slots");
	zero = xcalloc(1, bytes);
	r = g->d.api.memcpy_htod(g->flags, zero, bytes);
	free(zero);
	if (r != CU_OK || (r = g->d.api.ctx_synchronize()) != CU_OK)
		return cuda__cu(g, r, "cannot clear barrier slots");
	if ((r = g->d.api.ipc_get_mem_handle(h, g->flags)) != CU_OK)
		return cuda__cu(g, r, "cuIpcGetMemHandle");
	if ((r = g->d.api.mem_host_alloc(&host, 64, CU_MEMHOSTALLOC_PORTABLE |
	    CU_MEMHOSTALLOC_DEVICEMAP)) != CU_OK)
		return cuda__cu(g, r, "cannot allocate pinned host memory");
	g->abort_host = host;
	*g->abort_host = 0;
	if ((r = g->d.api.mem_host_get_device_pointer(&g->abort_dev, host, 0)) != CU_OK)
		return cuda__cu(g, r, "cuMemHostGetDevicePointer");
	return COLL_OK;
}

struct ipc_offer {
	int32_t ok;
	int32_t pad;
	struct cu_ipc_handle h;
};

/* Open every peer's handle of offers; peer[rank] is left to the caller. */
static int
ipc_open_peers(struct cuda_eng *g, const struct ipc_offer *all, size_t stride, size_t at,
    cu_ptr_t *peer)
{
	for (int j = 0; j < g->nranks; j++) {
		const struct ipc_offer *o = (const struct ipc_offer *)((const char *)all +
		    (size_t)j * stride) + at;
		int r;

		if (j == g->rank)
			continue;
		if ((r = g->d.api.ipc_open_mem_handle(&peer[j], o->h,
		    CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) != CU_OK) {
			peer[j] = 0;
			return cuda__cu(g, r, "cannot map a peer's memory (cuIpcOpenMemHandle)");
		}
	}
	return COLL_OK;
}

int
cuda_ipc_open(struct cuda_eng *g)
{
	struct ipc_offer mine = { 0 }, *all = xcalloc((size_t)g->nranks, sizeof *all);
	int rc;

	mine.ok = ipc_local(g, &mine.h) == COLL_OK;
	if ((rc = coll_allgather(g->c, &mine, all, sizeof mine, DT_UINT8)) != COLL_OK) {
		free(all);
		return cuda__fail(g, rc, "%s", comm_last_error(g->c));
	}
	for (int j = 0; j < g->nranks && rc == COLL_OK; j++)
		if (!all[j].ok)
			rc = j == g->rank ? COLL_ESYS : cuda__fail(g, COLL_EINVAL,
			    "rank %d could not set up its side", j);
	if (rc == COLL_OK)
		rc = ipc_open_peers(g, all, sizeof *all, 0, g->peer_flags);
	g->peer_flags[g->rank] = g->flags;
	free(all);
	return rc;
}

/* The engine's unmapped buffers, oldest first: the order every rank allocated them in. */
static int
ipc_unmapped(struct cuda_eng *g, struct cuda_buf ***out)
{
	int n = 0, i;

	for (struct cuda_buf *b = g->bufs; b != NULL; b = b->next)
		n += !b->mapped;
	*out = xcalloc((size_t)n + 1, sizeof **out);
	i = n;
	for (struct cuda_buf *b = g->bufs; b != NULL; b = b->next)
		if (!b->mapped)
			(*out)[--i] = b;
	return n;
}

/* Each rank's handles of its new buffers, opened by every other rank. */
static int
ipc_map_exchange(struct cuda_eng *g, struct cuda_buf **nb, int n)
{
	struct ipc_offer *mine = xcalloc((size_t)n, sizeof *mine);
	struct ipc_offer *all = xcalloc((size_t)n * (size_t)g->nranks, sizeof *all);
	int rc = COLL_OK, r;

	for (int i = 0; i < n; i++) {
		mine[i].ok = (r = g->d.api.ipc_get_mem_handle(&mine[i].h, nb[i]->base)) == CU_OK;
		if (!mine[i].ok)
			rc = cuda__cu(g, r, "cuIpcGetMemHandle");
	}
	if ((r = coll_allgather(g->c, mine, all, (size_t)n * sizeof *mine, DT_UINT8)) !=
	    COLL_OK) {
		rc = cuda__fail(g, r, "%s", comm_last_error(g->c));
		goto out;
	}
	for (int i = 0; i < n && rc == COLL_OK; i++) {
		for (int j = 0; j < g->nranks; j++)
			if (!all[(size_t)j * (size_t)n + (size_t)i].ok)
				rc = cuda__fail(g, COLL_ESYS, "rank %d cannot share its buffers", j);
		if (rc == COLL_OK)
			rc = ipc_open_peers(g, all, (size_t)n * sizeof *all, (size_t)i, nb[i]->peer);
		nb[i]->mapped = 1;
	}
out:
	free(mine);
	free(all);
	return rc;
}

/*
 * Map every rank's new buffers: a collective, run at the first op after
 * allocations, which every rank reaches with the same ones.
 */
static int
ipc_map(struct cuda_eng *g)
{
	struct cuda_buf **nb = NULL;
	int n = ipc_unmapped(g, &nb), *counts = xcalloc((size_t)g->nranks, sizeof *counts);
	int rc, ok;
	char who[256];

	if ((rc = coll_allgather(g->c, &n, counts, 1, DT_INT32)) != COLL_OK) {
		rc = cuda__fail(g, rc, "%s", comm_last_error(g->c));
		goto out;
	}
	for (int j = 0; j < g->nranks; j++)
		if (counts[j] != n) {
			rc = cuda__fail(g, COLL_EINVAL, "rank %d has %d new buffers, rank %d %d: "
			    "ranks must allocate alike", j, counts[j], g->rank, n);
			goto out;
		}
	ok = ipc_map_exchange(g, nb, n) == COLL_OK;
	if ((rc = cu_dev_agree(g->c, ok, "mapping peers' buffers", who, sizeof who)) !=
	    COLL_OK && ok)
		cuda__fail(g, rc, "%s", who);
out:
	free(nb);
	free(counts);
	return rc;
}

void
cuda_ipc_unmap(struct cuda_eng *g, struct cuda_buf *b)
{
	for (int j = 0; j < g->nranks && j < CK_MAXR; j++)
		if (j != g->rank && b->peer[j] != 0)
			g->d.api.ipc_close_mem_handle(b->peer[j]);
	memset(b->peer, 0, sizeof b->peer);
	b->mapped = 0;
}

void
cuda_ipc_close(struct cuda_eng *g)
{
	for (int j = 0; j < g->nranks && j < CK_MAXR; j++)
		if (j != g->rank && g->peer_flags[j] != 0)
			g->d.api.ipc_close_mem_handle(g->peer_flags[j]);
	memset(g->peer_flags, 0, sizeof g->peer_flags);
	if (g->flags != 0)
		g->d.api.mem_free(g->flags);
	if (g->abort_host != NULL)
		g->d.api.mem_free_host((void *)g->abort_host);
	if (g->mod != NULL)
		g->d.api.module_unload(g->mod);
	g->flags = 0;
	g->abort_host = NULL;
	g->abort_dev = 0;
	g->mod = NULL;
}

/* Rank j's address of what p is in this rank's buffer b: the same offset in its copy. */
static cu_ptr_t
ipc_at(const struct cuda_buf *b, cu_ptr_t p, int j)
{
	return b->peer[j] + (p - b->base);
}

/* Each rank's slice of count elements for a reduction: whole 16-byte vectors but the last. */
static size_t
ipc_slice(size_t count, size_t esz, int n)
{
	size_t v = 16 / esz, per = (count + (size_t)n - 1) / (size_t)n;

	return (per + v - 1) / v * v;
}

/* Blocks for bytes of work per rank: the same on every rank, as the barriers need. */
static unsigned
ipc_blocks(const struct cuda_eng *g, size_t bytes)
{
	size_t per = (size_t)g->threads * 16 * CK_UNROLL, b = (bytes + per - 1) / per;

	return b < 1 ? 1 : b > (size_t)g->max_blocks ? (unsigned)g->max_blocks : (unsigned)b;
}

static int
ipc_aligned(const struct ck_args *a)
{
	for (int i = 0; i < a->nsrc; i++)
		if (a->src[i] % 16 != 0)
			return 0;
	for (int i = 0; i < a->ndst; i++)
		if (a->dst[i] % 16 != 0)
			return 0;
	return 1;
}

/*
 * Reduce among 3 or more ranks: the slices are the non-root ranks' alone
 * (COLL_CUDA_ROOTED=direct gives the root one too). With a slice of its own
 * the root's link carried 2(n-1)/n of the bytes inward (its peers' inputs
 * and their results); without, once.
 */
static int
ipc_reduce_spread(const struct cuda_eng *g, enum probe_coll k)
{
	return k == PROBE_REDUCE && g->nranks >= 3 && g->rooted != CUDA_ROOTED_DIRECT;
}

/* All-reduce, reduce and reduce-scatter: one reduction over every rank's input. */
static void
ipc_reduce_args(struct cuda_eng *g, enum probe_coll k, const struct cuda_buf *bs,
    const struct cuda_buf *br, cu_ptr_t s, cu_ptr_t r, size_t count, size_t esz, int root,
    struct ck_args *a, size_t *work)
{
	int spread = ipc_reduce_spread(g, k), slot = g->rank;
	size_t per, first, len;

	if (spread)
		slot = g->rank == root ? g->nranks : g->rank < root ? g->rank : g->rank - 1;
	per = ipc_slice(count, esz, spread ? g->nranks - 1 : g->nranks);
	first = per * (size_t)slot;
	if (k == PROBE_REDUCE_SCATTER) {
		first = count * (size_t)g->rank;
		len = per = count;
	} else {
		first = first < count ? first : count;
		len = count - first < per ? count - first : per;
	}
	a->nsrc = g->nranks;
	for (int j = 0; j < g->nranks; j++)
		a->src[j] = ipc_at(bs, s, j) + first * esz;
	if (k == PROBE_REDUCE_SCATTER) {
		a->dst[a->ndst++] = r;
	} else if (k == PROBE_REDUCE) {
		a->dst[a->ndst++] = ipc_at(br, r, root) + first * esz;
	} else {
		for (int j = 0; j < g->nranks; j++)
			a->dst[a->ndst++] = ipc_at(br, r, j) + first * esz;
	}
	a->count = len;
	*work = per * esz;
}

/* Rank j's input of an all-gather: in place it is rank j's own block of its output. */
static cu_ptr_t
ipc_gather_src(struct cuda_eng *g, const struct cuda_buf *bs, const struct cuda_buf *br,
    cu_ptr_t s, cu_ptr_t r, size_t bytes, int j)
{
	if (s == r + bytes * (size_t)g->rank)
		return ipc_at(br, r, j) + bytes * (size_t)j;
	return ipc_at(bs, s, j);
}

/*
 * All-gather, broadcast and all-to-all: pairs of copies. Measured on H200
 * NV18 (bench/gpu/README.md), NVLink carried more as writes where both
 * directions are busy (all-gather, all-to-all: each rank writes into its
 * peers' outputs) and more as reads where one is (broadcast: each rank reads
 * the root's input); COLL_CUDA_COPY=push or pull forces one for all.
 */
static void
ipc_copy_args(struct cuda_eng *g, enum probe_coll k, const struct cuda_buf *bs,
    const struct cuda_buf *br, cu_ptr_t s, cu_ptr_t r, size_t count, size_t esz, int root,
    struct ck_args *a, size_t *work)
{
	size_t bytes = count * esz, me = (size_t)g->rank;
	int push = g->copy == CUDA_COPY_PUSH || (g->copy == CUDA_COPY_AUTO &&
	    k != PROBE_BROADCAST);

	for (int j = 0; j < g->nranks; j++) {
		if (push && k == PROBE_BROADCAST && g->rank != root)
			break;
		if (!push && k == PROBE_BROADCAST && j > 0)
			break;
		if (push) {
			a->src[a->nsrc] = s + (k == PROBE_ALLTOALL ? bytes * (size_t)j : 0);
			a->dst[a->ndst] = ipc_at(br, r, j) + (k == PROBE_BROADCAST ? 0 : bytes * me);
		} else if (k == PROBE_BROADCAST) {
			a->src[a->nsrc] = ipc_at(bs, s, root);
			a->dst[a->ndst] = r;
		} else {
			a->src[a->nsrc] = k == PROBE_ALLTOALL ? ipc_at(bs, s, j) + bytes * me :
			    ipc_gather_src(g, bs, br, s, r, bytes, j);
			a->dst[a->ndst] = r + bytes * (size_t)j;
		}
		a->nsrc++;
		a->ndst++;
	}
	a->count = bytes;
	*work = bytes * (size_t)g->nranks;
}

/*
 * Broadcast's pipeline (coll_bcast), from 4 MiB among 3 or more ranks
 * (COLL_CUDA_ROOTED=spread from any size, direct never): every rank decides
 * alike from the size and the settings, which eng_same_settings compares.
 * Not with COLL_CUDA_SYNC=comm, whose kernels have no barriers to pace steps.
 * Below 4 MiB the root's reads by every rank cost less than the pipeline's
 * extra barrier (4 x H100, 1 MiB: 26 us read from the root, 36 piped).
 */
#define IPC_PIPE_MIN ((size_t)4 << 20)
_Static_assert(CK_MAXPIPE + 2 < CK_STEPS, "a pipeline's barriers must fit in one op's values");
#define IPC_PIPE_UNIT ((size_t)4 << 20)

static int
ipc_bcast_pipe(const struct cuda_eng *g, enum probe_coll k, size_t bytes)
{
	if (k != PROBE_BROADCAST || g->nranks < 3 || g->host_sync ||
	    g->rooted == CUDA_ROOTED_DIRECT)
		return 0;
	return g->rooted == CUDA_ROOTED_SPREAD || bytes >= IPC_PIPE_MIN;
}

/*
 * sqrt(bytes / 4 MiB) steps, 1 to CK_MAXPIPE: the pipeline's filling and
 * draining cost a step's time, each step a barrier (about 10 us), and the
 * sum is least near that many. Measured on 4 x H100 with steps of 2 MiB:
 * 64 MiB in 32 steps ran at 129 GB/s, barriers dominating.
 */
static void
ipc_bcast_args(struct cuda_eng *g, const struct cuda_buf *bs, const struct cuda_buf *br,
    cu_ptr_t s, cu_ptr_t r, size_t bytes, int root, struct ck_args *a, size_t *work)
{
	size_t m = (size_t)g->nranks - 1, steps = 1, sl;

	while (steps < CK_MAXPIPE && (steps + 1) * (steps + 1) <= bytes / IPC_PIPE_UNIT)
		steps++;
	sl = (bytes + steps * m - 1) / (steps * m);
	sl = sl < 16 ? 16 : (sl + 15) & ~(size_t)15;
	a->src[a->nsrc++] = ipc_at(bs, s, root);
	for (int j = 0; j < g->nranks; j++)
		a->dst[a->ndst++] = ipc_at(br, r, j);
	a->count = bytes;
	a->slice = sl;
	a->root = root;
	*work = bytes;
}

static int
ipc_launch(struct cuda_eng *g, cu_function_t fn, struct ck_args *a, size_t work)
{
	void *params[] = { a };
	int r;

	a->vec = ipc_aligned(a);
	a->abort = g->abort_dev;
	a->rank = g->rank;
	a->nranks = g->host_sync ? 1 : g->nranks;
	a->seq = ++g->seq;
	for (int j = 0; j < g->nranks; j++)
		a->flags[j] = g->peer_flags[j];
	r = g->d.api.launch_kernel(fn, ipc_blocks(g, work), 1, 1, (unsigned)g->threads, 1, 1, 0,
	    g->d.stream, params, NULL);
	return cuda__cu(g, r, "cannot launch a kernel");
}

/* COLL_CUDA_SYNC=comm: every rank's stream idle, then the ranks together. */
static int
ipc_host_barrier(struct cuda_eng *g)
{
	int rc = cuda__sync(g, g->d.api.stream_query, g->d.stream, "the collectives");

	if (rc == COLL_OK && (rc = coll_barrier(g->c)) != COLL_OK)
		cuda__fail(g, rc, "%s", comm_last_error(g->c));
	return rc;
}

int
cuda_ipc_start(struct cuda_eng *g, enum probe_coll k, cu_ptr_t s, cu_ptr_t r, size_t count,
    enum dtype dt, enum redop op, int root)
{
	struct cuda_buf *bs, *br;
	struct ck_args a;
	size_t esz = dtype_size(dt), work = 0;
	cu_function_t fn = g->fn_copy;
	int rc;

	for (struct cuda_buf *b = g->bufs; b != NULL; b = b->next)
		if (!b->mapped && (rc = ipc_map(g)) != COLL_OK)
			return rc;
	if ((bs = cuda__buf(g, s)) == NULL || (br = cuda__buf(g, r)) == NULL)
		return cuda__fail(g, COLL_EINVAL, "a buffer of the op is not the CUDA engine's");
	if (probe_coll_rooted(k) && (root < 0 || root >= g->nranks))
		return cuda__fail(g, COLL_EINVAL, "root %d is not a rank", root);
	memset(&a, 0, sizeof a);
	if (probe_coll_reduces(k)) {
		ipc_reduce_args(g, k, bs, br, s, r, count, esz, root, &a, &work);
		a.avg_n = op == OP_AVG ? g->nranks : 0;
		fn = g->fn_reduce[dt][op == OP_AVG ? OP_SUM : op];
	} else if (ipc_bcast_pipe(g, k, count * esz)) {
		ipc_bcast_args(g, bs, br, s, r, count * esz, root, &a, &work);
		fn = g->fn_bcast;
	} else {
		ipc_copy_args(g, k, bs, br, s, r, count, esz, root, &a, &work);
	}
	if (g->host_sync && (rc = ipc_host_barrier(g)) != COLL_OK)
		return rc;
	if ((rc = ipc_launch(g, fn, &a, work)) != COLL_OK)
		return rc;
	return g->host_sync ? ipc_host_barrier(g) : COLL_OK;
}
