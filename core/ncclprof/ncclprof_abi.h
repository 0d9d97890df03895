/*
 * The NCCL profiler plugin ABI, versions 4 and 5, declared here from NCCL's
 * published layout (ext-profiler/README.md, src/include/plugin/profiler/)
 * so that the plugin builds without NCCL's headers. NCCL looks the newest
 * struct it knows up by name (ncclProfiler_v5 in 2.27 and 2.28, v4 in 2.26)
 * and calls through it. Only what this plugin reads is named; the rest of
 * each union member is there to keep the layout.
 *
 * The layouts differ: v4's event type is one byte and its init takes the
 * communicator's name before its hash; v5's type is 64 bits, its init takes
 * the hash first, and its collective descriptor ends with a parent group.
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

/* Where NCCL 2.26 to 2.28 find their fields: a shifted field would misread every event. */
_Static_assert(offsetof(struct nprof_descr_v4, rank) == 16, "profiler ABI v4");
_Static_assert(offsetof(struct nprof_descr_v4, coll) == 24, "profiler ABI v4");
_Static_assert(offsetof(struct nprof_descr_v4, coll.nchannels) == 24 + 56, "profiler ABI v4");
_Static_assert(offsetof(struct nprof_descr_v5, coll) == 24, "profiler ABI v5");
_Static_assert(offsetof(struct nprof_descr_v5, coll.parent_group) == 24 + 80, "profiler ABI v5");
_Static_assert(offsetof(struct nprof_descr_v5, kernel_ch.ptimer) == 32, "profiler ABI v5");

#endif
