/*
 * libnccl-profiler-coll.so: NCCL's profiler plugin that publishes coll's
 * status page for every NCCL communicator of a process, so that collstack
 * (and colltop) see a PyTorch or nccl-tests job's collective sequence
 * numbers the way they see a coll job's.
 *
 *   NCCL_PROFILER_PLUGIN=coll (with the library on the loader's path), or
 *   NCCL_PROFILER_PLUGIN=/path/to/libnccl-profiler-coll.so
 *
 * One page per communicator and rank, named from $COLL_JOBID (collrun sets
 * it; 0 otherwise) and NCCL's communicator hash, the one NCCL's RAS reports.
 *
 * What NCCL tells a plugin, and what the page says of it:
 *   - a collective event starts when the op is enqueued (the host has called
 *     ncclAllReduce and the group has ended): seq_queued, its kind, bytes,
 *     datatype, NCCL's algorithm and protocol for it, state RUNNING. seq is this plugin's count of the communicator's
 *     collectives, 1 for the first, so that ranks compare by one number
 *     (NCCL's own seqNumber counts each kind apart).
 *   - a kernel channel event starts and stops as NCCL's proxy thread sees
 *     the GPU kernel begin and end on one channel of the op: the first start
 *     is the op's seq_started, the stop of its last channel its seq_done.
 *   - a copy-engine collective (ABI v6, NCCL 2.29 on: ncclprof_ce.c) takes
 *     the next seq as a kernel op does, algorithm "CE"; its begin and end
 *     are when its stream gets to it and past it.
 * A rank that never enqueued the op the others run is behind: its
 * seq_queued is lower. Point-to-point ops are not counted: in a pipeline
 * ranks run different ones, and one count per communicator would differ
 * with no rank at fault.
 *
 * The event calls sit on NCCL's launch path and its proxy thread, so they do
 * not allocate: each op takes a slot of a ring per communicator, and the
 * page is written three times an op (queued, begun, done), under a lock
 * because the launching thread and the proxy thread both write it. A fault
 * here must never stop NCCL: a page that cannot be made leaves that
 * communicator without one (its events go nowhere), and says why in NCCL's
 * log. NCCL keeps one activation mask for all communicators of a process,
 * so init always sets the same, final value: lowering it for one
 * communicator would silence the others.
 *
 * COLL_NCCL_KERNEL_EVENTS=0 asks for enqueue events only. Then ops captured
 * in a CUDA graph are counted when captured, not when the graph runs, and
 * ranks that capture differently count differently: use the kernel events
 * (the default) with CUDA graphs.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "err.h"
#include "kind.h"
#include "ncclprof_abi.h"
#include "ncclprof_impl.h"
#include "status.h"

#define NPROF_EXPORT __attribute__((visibility("default")))

static const struct {
	const char *name;
	uint32_t kind;
} nprof_kinds[] = {
	{ "AllReduce", KIND_ALLREDUCE }, { "Broadcast", KIND_BROADCAST },
	{ "Reduce", KIND_REDUCE }, { "AllGather", KIND_ALLGATHER },
	{ "ReduceScatter", KIND_REDUCE_SCATTER }, { "AllToAll", KIND_ALLTOALL },
	{ "Gather", KIND_GATHER }, { "Scatter", KIND_SCATTER },
	{ "SendRecv", KIND_SENDRECV }, { "Send", KIND_SEND }, { "Recv", KIND_RECV },
};

uint32_t
nprof_kind(const char *func)
{
	for (size_t i = 0; func != NULL && i < sizeof nprof_kinds / sizeof nprof_kinds[0]; i++)
		if (strcasecmp(func, nprof_kinds[i].name) == 0)
			return nprof_kinds[i].kind;
	return KIND_NONE;
}

/* Bytes of one element from NCCL's type name: the bits in it ("ncclFloat32", "ncclBfloat16"). */
size_t
nprof_type_size(const char *type)
{
	const char *p = type;

	if (p == NULL)
		return 0;
	while (*p != '\0' && (*p < '0' || *p > '9'))
		p++;
	switch (atoi(p)) {
	case 8: return 1;
	case 16: return 2;
	case 32: return 4;
	case 64: return 8;
	default: return 0;
	}
}

static uint64_t
nprof_jobid(void)
{
	const char *s = getenv("COLL_JOBID");
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 16);
	return errno == 0 && *end == '\0' ? (uint64_t)v : 0;
}

/* dl_iterate_phdr's step: the NCCL library loaded in this process, by its file name. */
static int
nprof_find_nccl(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *base = info->dlpi_name != NULL ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	base = base != NULL ? base + 1 : info->dlpi_name;
	if (base == NULL || strncmp(base, "libnccl.so", 10) != 0)
		return 0;
	snprintf(arg, 512, "%s", info->dlpi_name);
	return 1;
}

/*
 * NCCL's version, from its own ncclGetVersion: the verdict names it. NCCL
 * is the process's library, already loaded (often RTLD_LOCAL, under
 * PyTorch): found by name among the loaded objects, never loaded here.
 */
static uint32_t
nprof_nccl_version(void)
{
	int (*get)(int *) = NULL;
	char path[512] = "";
	void *h = NULL;
	int v = 0;

	*(void **)&get = dlsym(RTLD_DEFAULT, "ncclGetVersion");
	if (get == NULL && dl_iterate_phdr(nprof_find_nccl, path) != 0 &&
	    (h = dlopen(path, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL)) != NULL)
		*(void **)&get = dlsym(h, "ncclGetVersion");
	if (get == NULL || get(&v) != 0 || v < 0)
		v = 0;
	if (h != NULL)
		dlclose(h);
	return (uint32_t)v;
}

/*
 * The PCI address of the GPU this communicator's rank drives: NCCL sets
 * its device before it starts the profiler, so the current context's is
 * it. From CUDA's driver library, already loaded by then (never loaded
 * here); "" when anything is missing.
 */
static void
nprof_gpu_bus(char *bus, size_t len)
{
	int (*ctx_dev)(int *) = NULL, (*bus_id)(char *, int, int) = NULL;
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_LOCAL);
	int dev;

	bus[0] = '\0';
	if (h == NULL)
		return;
	*(void **)&ctx_dev = dlsym(h, "cuCtxGetDevice");
	*(void **)&bus_id = dlsym(h, "cuDeviceGetPCIBusId");
	if (ctx_dev == NULL || bus_id == NULL || ctx_dev(&dev) != 0 ||
	    bus_id(bus, (int)len, dev) != 0)
		bus[0] = '\0';
	bus[len - 1] = '\0';
	dlclose(h);
}

/* ce: NCCL's table is v6 or newer, so copy-engine collectives are asked for too. */
static int
nprof_init(void **ctxp, int *mask, uint64_t hash, int nranks, int rank, nprof_log_fn log, int ce)
{
	struct nprof_ctx *c = calloc(1, sizeof *c);
	const char *k = getenv("COLL_NCCL_KERNEL_EVENTS");
	char host[64] = "", bus[16];
	int r;

	/* One mask for the whole process (see above): the same value every time. */
	*mask = NPROF_EV_COLL | (k != NULL && strcmp(k, "0") == 0 ? 0 : NPROF_EV_KERNEL_CH) |
	    (ce ? NPROF_EV_CE_COLL : 0);
	*ctxp = c;
	if (c == NULL)
		return NPROF_EINTERNAL;
	pthread_mutex_init(&c->mu, NULL);
	atomic_init(&c->refs, 1);
	c->version = nprof_nccl_version();
	nprof_ce_init(&c->cu);
	for (int i = 0; i < NPROF_RING; i++)
		c->ring[i].ctx = c;
	gethostname(host, sizeof host - 1);
	if ((r = status_open(&c->st, nprof_jobid(), hash, rank, nranks, host)) != COLL_OK) {
		/* NCCL goes on without us for this communicator. */
		if (log != NULL)
			log(NPROF_LOG_WARN, NPROF_LOG_INIT, __FILE__, __LINE__,
			    "coll profiler: no status page in %s for communicator %016llx rank %d: "
			    "%s; set COLL_STATUS_DIR to a directory of your own",
			    status_dir(), (unsigned long long)hash, rank, coll_strerror(r));
		return NPROF_OK;
	}
	status_set_source(&c->st, STATUS_SRC_NCCL);
	nprof_gpu_bus(bus, sizeof bus);
	status_set_gpu(&c->st, bus);
	status_set_state(&c->st, STATUS_IDLE, NULL);
	if (log != NULL)
		log(NPROF_LOG_INFO, NPROF_LOG_INIT, __FILE__, __LINE__,
		    "coll profiler: communicator %016llx rank %d of %d: status page %s",
		    (unsigned long long)hash, rank, nranks, c->st.path);
	return NPROF_OK;
}

static struct nprof_op *
nprof_coll_start(struct nprof_ctx *c, const struct nprof_coll_v4 *d)
{
	struct nprof_op *op;
	uint64_t seq;

	pthread_mutex_lock(&c->mu);
	seq = ++c->queued;
	op = &c->ring[seq % NPROF_RING];
	op->seq = seq;
	op->kind = nprof_kind(d->func);
	op->nch = d->nchannels;
	atomic_store(&op->kbegun, 0);
	atomic_store(&op->kended, 0);
	status_queue_op(&c->st, seq, op->kind, (uint64_t)d->count * nprof_type_size(d->datatype),
	    d->datatype, d->algo, d->proto, c->version);
	pthread_mutex_unlock(&c->mu);
	return op;
}

/* A kernel channel's handle is its op's slot, tagged: stop tells the two apart. */
static void *
nprof_kernel_start(struct nprof_ctx *c, void *parent)
{
	struct nprof_op *op = parent;

	/* NCCL hands back what we gave it; anything else (a P2p op's NULL) is not ours. */
	if ((char *)op < (char *)c->ring || op >= c->ring + NPROF_RING ||
	    ((char *)op - (char *)c->ring) % sizeof *op != 0)
		return NULL;
	if (atomic_fetch_add(&op->kbegun, 1) == 0) {
		/* Under the lock: the launching thread rewrites a slot it reuses under it. */
		pthread_mutex_lock(&c->mu);
		status_kernel_begin(&c->st, op->seq, op->kind);
		pthread_mutex_unlock(&c->mu);
	}
	return (char *)op + NPROF_H_KERNEL;
}

static void
nprof_kernel_stop(struct nprof_op *op)
{
	struct nprof_ctx *c = op->ctx;
	unsigned ended = atomic_fetch_add(&op->kended, 1) + 1;

	pthread_mutex_lock(&c->mu);
	/* Done when every channel it runs on has ended (all that began, if NCCL gave no count). */
	if (ended == (op->nch > 0 ? op->nch : atomic_load(&op->kbegun)))
		status_kernel_end(&c->st, op->seq, op->kind);
	pthread_mutex_unlock(&c->mu);
}

static int
nprof_stop(void *handle)
{
	uintptr_t h = (uintptr_t)handle;

	/* A collective's own stop says only that it was enqueued: already on the page. */
	if ((h & 7) == NPROF_H_KERNEL)
		nprof_kernel_stop((struct nprof_op *)(h - NPROF_H_KERNEL));
	else if ((h & 7) == NPROF_H_CE)
		nprof_ce_stop((struct nprof_op *)(h - NPROF_H_CE));
	return NPROF_OK;
}

static int
nprof_record(void *handle, int state, void *args)
{
	(void)handle;
	(void)state;
	(void)args;
	return NPROF_OK;
}

static int
nprof_finalize(void *ctx)
{
	struct nprof_ctx *c = ctx;

	if (c == NULL)
		return NPROF_OK;
	pthread_mutex_lock(&c->mu);
	status_close(&c->st);	/* a host function still to run writes nowhere */
	pthread_mutex_unlock(&c->mu);
	nprof_ctx_unref(c);
	return NPROF_OK;
}

void
nprof_ctx_unref(struct nprof_ctx *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	nprof_ce_fini(&c->cu);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static int
nprof_init_v5(void **ctx, uint64_t hash, int *mask, const char *name, int nnodes, int nranks,
    int rank, nprof_log_fn log)
{
	(void)name;
	(void)nnodes;
	return nprof_init(ctx, mask, hash, nranks, rank, log, 0);
}

static int
nprof_start_v5(void *ctx, void **handle, struct nprof_descr_v5 *d)
{
	*handle = NULL;
	if (ctx == NULL || d == NULL)
		return NPROF_OK;
	if (d->type == NPROF_EV_COLL)
		*handle = nprof_coll_start(ctx, &d->coll.c);
	else if (d->type == NPROF_EV_KERNEL_CH)
		*handle = nprof_kernel_start(ctx, d->parent);
	return NPROF_OK;
}

static int
nprof_init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes, int nranks,
    int rank, nprof_log_fn log)
{
	(void)name;
	(void)nnodes;
	return nprof_init(ctx, mask, hash, nranks, rank, log, 0);
}

static int
nprof_start_v4(void *ctx, void **handle, struct nprof_descr_v4 *d)
{
	*handle = NULL;
	if (ctx == NULL || d == NULL)
		return NPROF_OK;
	if (d->type == NPROF_EV_COLL)
		*handle = nprof_coll_start(ctx, &d->coll);
	else if (d->type == NPROF_EV_KERNEL_CH)
		*handle = nprof_kernel_start(ctx, d->parent);
	return NPROF_OK;
}

static int
nprof_init_v6(void **ctx, uint64_t hash, int *mask, const char *name, int nnodes, int nranks,
    int rank, nprof_log_fn log)
{
	(void)name;
	(void)nnodes;
	return nprof_init(ctx, mask, hash, nranks, rank, log, 1);
}

static int
nprof_start_v6(void *ctx, void **handle, struct nprof_descr_v6 *d)
{
	*handle = NULL;
	if (ctx == NULL || d == NULL)
		return NPROF_OK;
	if (d->type == NPROF_EV_COLL)
		*handle = nprof_coll_start(ctx, &d->coll.c);
	else if (d->type == NPROF_EV_KERNEL_CH)
		*handle = nprof_kernel_start(ctx, d->parent);
	else if (d->type == NPROF_EV_CE_COLL)
		*handle = nprof_ce_start(ctx, &d->ce_coll);
	return NPROF_OK;
}

/* Each NCCL takes the newest it knows: 2.29 on v6, 2.27 and 2.28 v5, 2.26 v4. */
NPROF_EXPORT const struct nprof_v6 ncclProfiler_v6 = {
	"coll", nprof_init_v6, nprof_start_v6, nprof_stop, nprof_record, nprof_finalize,
};

NPROF_EXPORT const struct nprof_v5 ncclProfiler_v5 = {
	"coll", nprof_init_v5, nprof_start_v5, nprof_stop, nprof_record, nprof_finalize,
};

NPROF_EXPORT const struct nprof_v4 ncclProfiler_v4 = {
	"coll", nprof_init_v4, nprof_start_v4, nprof_stop, nprof_record, nprof_finalize,
};
