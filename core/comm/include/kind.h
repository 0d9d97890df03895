/*
 * The kinds of op a communicator runs. They live with the communicator, not
 * with the algorithms, because the communicator names the op in every error
 * and status page while the algorithms sit above it.
 */
#ifndef COLL_KIND_H
#define COLL_KIND_H

#include <stdint.h>

enum coll_kind {
	KIND_NONE = 0,
	KIND_ALLREDUCE, KIND_BROADCAST, KIND_REDUCE, KIND_ALLGATHER, KIND_REDUCE_SCATTER,
	KIND_GATHERV, KIND_BARRIER, KIND_SEND, KIND_RECV, KIND_SENDRECV, KIND_ALLTOALL,
	/* Ops coll's core does not run, named in status pages that NCCL's plugin writes. */
	KIND_GATHER, KIND_SCATTER,
	/* Blobs merged up a tree (coll_fold); after the NCCL kinds, whose numbers are on disk. */
	KIND_FOLD,
	KIND_MAX
};

/* "allreduce", "broadcast", ...; "unknown" for a kind out of range. */
const char *coll_kind_name(uint32_t kind);

#endif
