/*
 * coll's own CUDA engine: the probes' collectives on GPU memory without
 * NCCL. Ranks of one host map each other's buffers (CUDA IPC, peer access
 * over NVLink or PCIe) and coll's kernels reduce and copy across them; ranks
 * on several hosts (or COLL_CUDA_P2P=0) stage through pinned host memory and
 * coll's own collectives over TCP. The kernels are built into libcoll by nvcc
 * (COLL_CUDA); the driver is loaded at run time, so nothing of CUDA is needed
 * to build or to run the rest of coll.
 */
#ifndef COLL_CUDA_ENGINE_H
#define COLL_CUDA_ENGINE_H

#include <stddef.h>

#include "comm.h"
#include "probe.h"

struct cuda_engine_opts {
	int device;		/* -1: this rank's index among its host's ranks, modulo the GPUs */
	int timeout_ms;		/* for each wait; 0: 300 s */
};

/* Whether kernels were built in: without them cuda_engine_open() always fails. */
int cuda_engine_built(void);

/*
 * Every rank of c calls it. COLL_OK: e runs on coll's CUDA kernels (e->where
 * says which GPU and which path: ipc or staged). Otherwise every rank gets
 * the same code; err says why on this rank, or which ranks could not.
 *
 * Buffers must come from e->alloc, in the same order on every rank, and a
 * collective's buffers sit at the same offsets of the same allocations on
 * every rank (the in-place part of a gather or scatter aside, which is this
 * rank's own), as nccl-tests lays them out: peers address them by offset.
 */
int cuda_engine_open(struct probe_engine *e, struct comm *c, const struct cuda_engine_opts *o,
    char *err, size_t len);

#endif
