/*
 * The NCCL engine: the probes' collectives run by NCCL on GPU memory, so a
 * probe tests what training jobs use. libnccl and the CUDA driver are loaded
 * at run time; the NCCL unique id travels through the coll communicator, and
 * the NCCL communicator is non-blocking, so that no wait can outlast the
 * timeout: a stuck op is aborted (ncclCommAbort) and named.
 */
#ifndef COLL_NCCL_ENGINE_H
#define COLL_NCCL_ENGINE_H

#include "comm.h"
#include "probe.h"

struct nccl_engine_opts {
	int device;		/* -1: this rank's index among its host's ranks, modulo the GPUs */
	int timeout_ms;		/* for init and each wait; 0: 300 s */
};

/*
 * Every rank of c calls it. COLL_OK: e runs on NCCL. Otherwise every rank
 * gets the same code; err says why on this rank, or which ranks could not.
 */
int nccl_engine_open(struct probe_engine *e, struct comm *c, const struct nccl_engine_opts *o,
    char *err, size_t len);

#endif
