/*
 * Copy-engine collectives (profiler ABI v6, NCCL 2.29 on): counted as the
 * kernel ones are, in the communicator's one sequence, with the page's
 * queued, begun and ended times, so that collstack and colltop compare
 * ranks by them whichever engine ran an op.
 *
 * NCCL says only when the host enqueues the op (start) and when its copies
 * are all on the stream (stop); no proxy thread watches copy engines. So
 * the plugin puts a CUDA host function on the op's stream at each: CUDA runs
 * the first when the stream reaches the op (begun) and the second when its
 * copies and its wait for the peers are done (ended). Each costs the stream
 * a round trip to a CUDA thread (microseconds), small beside the large
 * transfers NCCL gives copy engines.
 *
 * An op is counted only if both can be placed: not when CUDA's driver is not
 * loaded, nor while the stream is being captured into a CUDA graph (a graph
 * replays the capture's host functions with the capture's numbers, and its
 * replays are not reported to the plugin). A host function may run after
 * NCCL finalizes the communicator: each holds a reference to the context,
 * and the library is linked -z nodelete, since NCCL dlcloses its plugin at
 * the last finalize while CUDA may still hold calls into this code. Each
 * call carries its op's seq and kind by value: a stalled stream's late call
 * must not read a ring slot that a later op has taken.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

#include "ncclprof_impl.h"

void
nprof_ce_init(struct nprof_cuda *cu)
{
	cu->host_fn = NULL;
	cu->capturing = NULL;
	/* NCCL has loaded it by the time it starts a profiler; never loaded here. */
	cu->lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_LOCAL);
	if (cu->lib == NULL)
		return;
	*(void **)&cu->host_fn = dlsym(cu->lib, "cuLaunchHostFunc");
	*(void **)&cu->capturing = dlsym(cu->lib, "cuStreamIsCapturing");
	if (cu->host_fn == NULL || cu->capturing == NULL)
		cu->host_fn = NULL;
}

void
nprof_ce_fini(struct nprof_cuda *cu)
{
	if (cu->lib != NULL)
		dlclose(cu->lib);
	cu->lib = NULL;
}

/* What a host function is told: its own copy, freed by it. */
struct nprof_ce_arg {
	struct nprof_ctx *ctx;
	uint64_t seq;
	int kind;
};

/* CUDA's thread: the stream reached the op. Not a CUDA call in here (CUDA forbids it). */
static void
nprof_ce_began(void *arg)
{
	struct nprof_ce_arg *a = arg;
	struct nprof_ctx *c = a->ctx;

	pthread_mutex_lock(&c->mu);
	status_kernel_begin(&c->st, a->seq, a->kind);
	pthread_mutex_unlock(&c->mu);
	nprof_ctx_unref(c);
	free(a);
}

/* CUDA's thread: the op's copies are done. */
static void
nprof_ce_ended(void *arg)
{
	struct nprof_ce_arg *a = arg;
	struct nprof_ctx *c = a->ctx;

	pthread_mutex_lock(&c->mu);
	status_kernel_end(&c->st, a->seq, a->kind);
	pthread_mutex_unlock(&c->mu);
	nprof_ctx_unref(c);
	free(a);
}

/* Place fn on stream; 0 done. The reference it holds is taken first: it may run at once. */
static int
nprof_ce_place(struct nprof_ctx *c, void *stream, void (*fn)(void *), const struct nprof_op *op)
{
	struct nprof_ce_arg *a = malloc(sizeof *a);

	if (a == NULL)
		return -1;
	a->ctx = c;
	a->seq = op->seq;
	a->kind = op->kind;
	atomic_fetch_add(&c->refs, 1);
	if (c->cu.host_fn(stream, fn, a) == 0)
		return 0;
	atomic_fetch_sub(&c->refs, 1);	/* NCCL's own hold remains: never the last */
	free(a);
	return -1;
}

void *
nprof_ce_start(struct nprof_ctx *c, const struct nprof_ce_coll *d)
{
	struct nprof_op *op;
	int capture = 1;
	uint64_t seq;

	if (c->cu.host_fn == NULL || c->cu.capturing(d->stream, &capture) != 0 || capture != 0)
		return NULL;
	pthread_mutex_lock(&c->mu);
	seq = ++c->queued;
	op = &c->ring[seq % NPROF_RING];
	op->seq = seq;
	op->kind = nprof_kind(d->func);
	op->nch = 0;
	op->stream = d->stream;
	atomic_store(&op->kbegun, 0);
	atomic_store(&op->kended, 0);
	/* "CE" where a kernel op names its algorithm; the sync strategy as its protocol. */
	status_queue_op(&c->st, seq, op->kind, (uint64_t)d->count * nprof_type_size(d->datatype),
	    d->datatype, "CE", d->sync, c->version);
	pthread_mutex_unlock(&c->mu);
	/*
	 * Not under the lock: CUDA's thread may be waiting on it in a host
	 * function of ours. A begin that cannot be placed leaves the op queued
	 * (the next op's end moves the page on), and no end is placed for it.
	 */
	if (nprof_ce_place(c, op->stream, nprof_ce_began, op) != 0)
		return NULL;
	return (char *)op + NPROF_H_CE;
}

void
nprof_ce_stop(struct nprof_op *op)
{
	(void)nprof_ce_place(op->ctx, op->stream, nprof_ce_ended, op);
}
