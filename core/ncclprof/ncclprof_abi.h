/*
 * The NCCL profiler plugin ABI, versions 4 to 6, declared here from NCCL's
 * published layout (ext-profiler/README.md, src/include/plugin/profiler/)
 * so that the plugin builds without NCCL's headers. NCCL looks the newest
 * struct it knows up by name (ncclProfiler_v6 in 2.29 and 2.30, v5 in 2.27
 * and 2.28, v4 in 2.26) and calls through it. Only what this plugin reads
 * is named; the rest of each union member is there to keep the layout.
 *
 * The layouts differ: v4's event type is one byte and its init takes the
 * communicator's name before its hash; v5's type is 64 bits, its init takes
 * the hash first, and its collective descriptor ends with a parent group.
 * v6 is v5 with three more event types, for collectives NCCL runs on the
 * GPU's copy engines instead of a kernel (AllGather, AlltoAll, Gather,
 * Scatter over NVLink): the collective itself (its own descriptor, below),
 * and its peer sync and batches of copies, which this plugin does not ask
 * for. NCCL reports a copy-engine collective only as the host enqueues it
 * (start, then stop once its copies are on the stream): when the GPU gets
 * to it is the plugin's to find out. v7 (NCCL 2.31) is not declared: its
 * headers were not at hand, and a layout is never guessed.
 */
#ifndef COLL_NCCLPROF_ABI_H
#define COLL_NCCLPROF_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NPROF_OK 0			/* ncclSuccess */
#define NPROF_EINTERNAL 3		/* ncclInternalError: init refused */

/* Event types (bits of the activation mask). */
#define NPROF_EV_GROUP 0x1
#define NPROF_EV_COLL 0x2
#define NPROF_EV_P2P 0x4
#define NPROF_EV_KERNEL_CH 0x40
#define NPROF_EV_CE_COLL 0x1000		/* v6: a copy-engine collective */
#define NPROF_EV_CE_SYNC 0x2000		/* v6: its sync with the peers */
#define NPROF_EV_CE_BATCH 0x4000	/* v6: a batch of its copies */

/* NCCL's logger: level 2 is a warning, 3 information; flags 1 is its INIT subsystem. */
typedef void (*nprof_log_fn)(int level, unsigned long flags, const char *file, int line,
    const char *fmt, ...);
#define NPROF_LOG_WARN 2
#define NPROF_LOG_INFO 3
#define NPROF_LOG_INIT 1UL

struct nprof_coll_v4 {
	uint64_t seq;		/* NCCL's count of this op's kind in the communicator */
	const char *func;	/* "AllReduce", ... */
	const void *sendbuf;
	void *recvbuf;
	size_t count;
	int root;
	const char *datatype;	/* "ncclFloat32", ... */
	uint8_t nchannels;
	uint8_t nwarps;
	const char *algo;
	const char *proto;
};

struct nprof_coll_v5 {
	struct nprof_coll_v4 c;
	void *parent_group;
};

struct nprof_kernel_ch {
	uint8_t channel;
	uint64_t ptimer;	/* the GPU's global timer at the start */
};

/* The biggest union member of both versions, to keep the size. */
struct nprof_proxy_op {
	pid_t pid;
	uint8_t channel;
	int peer, nsteps, chunk, is_send;
};

struct nprof_descr_v4 {
	uint8_t type;
	void *parent;
	int rank;
	union {
		struct nprof_coll_v4 coll;
		struct nprof_kernel_ch kernel_ch;
		struct nprof_proxy_op proxy_op;
	};
};

struct nprof_descr_v5 {
	uint64_t type;
	void *parent;
	int rank;
	union {
		struct nprof_coll_v5 coll;
		struct nprof_kernel_ch kernel_ch;
		struct nprof_proxy_op proxy_op;
	};
};

/* v6's copy-engine collective; seq is NCCL's count of copy-engine collectives. */
struct nprof_ce_coll {
	uint64_t seq;
	const char *func;	/* "AllGather", "AllToAll", ... */
	const void *sendbuf;
	void *recvbuf;
	size_t count;
	int root;
	const char *datatype;
	const char *sync;	/* how ranks sync: "MC" (NVLink multicast) or "UC" */
	bool intra_batch_sync;
	uint32_t batch_size, nbatches, ce_seq;
	void *stream;		/* the CUDA stream its copies are enqueued on */
};

struct nprof_descr_v6 {
	uint64_t type;
	void *parent;
	int rank;
	union {
		struct nprof_coll_v5 coll;
		struct nprof_kernel_ch kernel_ch;
		struct nprof_proxy_op proxy_op;
		struct nprof_ce_coll ce_coll;
	};
};

/* The plugin's table as NCCL calls it; every call but init returns NPROF_OK. */
struct nprof_v4 {
	const char *name;
	int (*init)(void **ctx, int *mask, const char *comm_name, uint64_t comm_hash, int nnodes,
	    int nranks, int rank, nprof_log_fn log);
	int (*start)(void *ctx, void **handle, struct nprof_descr_v4 *d);
	int (*stop)(void *handle);
	int (*record)(void *handle, int state, void *args);
	int (*finalize)(void *ctx);
};

struct nprof_v5 {
	const char *name;
	int (*init)(void **ctx, uint64_t comm_hash, int *mask, const char *comm_name, int nnodes,
	    int nranks, int rank, nprof_log_fn log);
	int (*start)(void *ctx, void **handle, struct nprof_descr_v5 *d);
	int (*stop)(void *handle);
	int (*record)(void *handle, int state, void *args);
	int (*finalize)(void *ctx);
};

struct nprof_v6 {
	const char *name;
	int (*init)(void **ctx, uint64_t comm_hash, int *mask, const char *comm_name, int nnodes,
	    int nranks, int rank, nprof_log_fn log);
	int (*start)(void *ctx, void **handle, struct nprof_descr_v6 *d);
	int (*stop)(void *handle);
	int (*record)(void *handle, int state, void *args);
	int (*finalize)(void *ctx);
};

/* Where NCCL 2.26 to 2.30 find their fields: a shifted field would misread every event. */
_Static_assert(offsetof(struct nprof_descr_v4, rank) == 16, "profiler ABI v4");
_Static_assert(offsetof(struct nprof_descr_v4, coll) == 24, "profiler ABI v4");
_Static_assert(offsetof(struct nprof_descr_v4, coll.nchannels) == 24 + 56, "profiler ABI v4");
_Static_assert(offsetof(struct nprof_descr_v5, coll) == 24, "profiler ABI v5");
_Static_assert(offsetof(struct nprof_descr_v5, coll.parent_group) == 24 + 80, "profiler ABI v5");
_Static_assert(offsetof(struct nprof_descr_v5, kernel_ch.ptimer) == 32, "profiler ABI v5");
_Static_assert(offsetof(struct nprof_descr_v6, coll.parent_group) == 24 + 80, "profiler ABI v6");
_Static_assert(offsetof(struct nprof_descr_v6, kernel_ch.ptimer) == 32, "profiler ABI v6");
_Static_assert(offsetof(struct nprof_descr_v6, ce_coll.datatype) == 24 + 48, "profiler ABI v6");
_Static_assert(offsetof(struct nprof_descr_v6, ce_coll.sync) == 24 + 56, "profiler ABI v6");
_Static_assert(offsetof(struct nprof_descr_v6, ce_coll.batch_size) == 24 + 68, "profiler ABI v6");
_Static_assert(offsetof(struct nprof_descr_v6, ce_coll.stream) == 24 + 80, "profiler ABI v6");
_Static_assert(sizeof(struct nprof_descr_v6) == 24 + 88, "profiler ABI v6");

#endif
