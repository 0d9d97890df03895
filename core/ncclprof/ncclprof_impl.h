/*
 * The plugin's own state, shared by its files: ncclprof.c (the tables NCCL
 * calls, kernel collectives) and ncclprof_ce.c (copy-engine collectives).
 */
#ifndef COLL_NCCLPROF_IMPL_H
#define COLL_NCCLPROF_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ncclprof_abi.h"
#include "status.h"

/*
 * Ops in flight per communicator. A slot is reused 4096 ops later whether or
 * not its kernel was seen to end (the host may run far ahead of a stalled
 * GPU): a late kernel event of the old op then counts for the new one, at
 * worst moving seq_started/seq_done of an op that long since passed.
 */
#define NPROF_RING 4096

/* A handle's low bits say what it is (slots are 8-byte aligned). */
#define NPROF_H_KERNEL 1	/* a kernel channel of the op */
#define NPROF_H_CE 2		/* a copy-engine collective */

struct nprof_ctx;

struct nprof_op {
	struct nprof_ctx *ctx;
	uint64_t seq;
	uint32_t kind;
	uint32_t nch;		/* channels the op runs on; its kernel events */
	atomic_uint kbegun, kended;
	void *stream;		/* a copy-engine op's CUDA stream */
};

/* CUDA's driver entry points a copy-engine op needs (libcuda, loaded by NCCL). */
struct nprof_cuda {
	void *lib;
	int (*host_fn)(void *stream, void (*fn)(void *), void *arg);	/* cuLaunchHostFunc */
	int (*capturing)(void *stream, int *status);			/* cuStreamIsCapturing */
};

struct nprof_ctx {
	struct status st;
	pthread_mutex_t mu;	/* one writer of the page at a time */
	uint64_t queued;	/* collectives enqueued so far */
	uint32_t version;	/* NCCL's version code; 0 unknown */
	/*
	 * NCCL's hold on the context (until finalize) and one per CUDA host
	 * function not yet run: those run on CUDA's thread, perhaps after
	 * finalize, and the last one out frees the context.
	 */
	atomic_int refs;
	struct nprof_cuda cu;
	struct nprof_op ring[NPROF_RING];
};

uint32_t nprof_kind(const char *func);
size_t nprof_type_size(const char *type);
/* Drop a hold on c; the last frees it. */
void nprof_ctx_unref(struct nprof_ctx *c);

/* ncclprof_ce.c: CUDA's entry points, if NCCL has loaded CUDA (else all NULL). */
void nprof_ce_init(struct nprof_cuda *cu);
void nprof_ce_fini(struct nprof_cuda *cu);
/* A copy-engine collective enqueued: its handle, NULL when it is not counted. */
void *nprof_ce_start(struct nprof_ctx *c, const struct nprof_ce_coll *d);
/* Its copies are all on the stream: its end follows them. */
void nprof_ce_stop(struct nprof_op *op);

#endif
