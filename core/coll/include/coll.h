/*
 * Collectives over a communicator, on host memory. Every call is blocking,
 * takes the next sequence number of its communicator (shown in the status
 * page), and gives every rank bit-identical results. In place means
 * sendbuf == recvbuf, except for reduce-scatter (recvbuf = sendbuf + rank *
 * recvcount) and all-gather (sendbuf = recvbuf + rank * sendcount), as in NCCL.
 *
 * Algorithms: all-reduce uses recursive doubling up to COLL_RD_MAX_BYTES,
 * Rabenseifner's halving up to 256 KiB where the ring's blocks would be at
 * most 16 KiB (see coll_allreduce_algo), and a chunked, pipelined ring
 * (reduce-scatter then all-gather) above; broadcast a binomial tree for small and a pipelined
 * chain for large messages; reduce a pipelined chain; all-gather and
 * reduce-scatter the ring.
 */
#ifndef COLL_COLL_H
#define COLL_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "dtype.h"
#include "kind.h"

#define COLL_RD_MAX_BYTES (32u << 10)
#define COLL_GATHERV_MAX (1u << 30)

/* Blobs gathered at the root: blob i is data + off[i], len[i] bytes. */
struct coll_blobs {
	int n;
	uint8_t *data;
	size_t *off;
	size_t *len;
};

enum { COLL_AR_RING = 1, COLL_AR_DOUBLING, COLL_AR_HALVING };
/* How an all-reduce of bytes over nranks runs: COLL_AR_*. */
int coll_allreduce_algo(size_t bytes, int nranks);
int coll_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op);
int coll_broadcast(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, int root);
/* recvbuf is used on the root only. */
int coll_reduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op, int root);
/* recvbuf holds size * sendcount elements, rank r's at offset r * sendcount. */
int coll_allgather(struct comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
    enum dtype dt);
/* sendbuf holds size * recvcount elements; rank r gets block r reduced. */
int coll_reduce_scatter(struct comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
    enum dtype dt, enum redop op);
/* Block i of sendbuf (count elements) goes to rank i; block j of recvbuf comes from rank j. */
int coll_alltoall(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt);
/* Every rank gives a blob of any length (up to COLL_GATHERV_MAX); the root gets all of them. */
int coll_gatherv(struct comm *c, const void *buf, size_t len, int root, struct coll_blobs *out);
void coll_blobs_free(struct coll_blobs *b);

/*
 * A reduction of blobs that a merge folds together (facts across hosts,
 * stack trees): what a rank holds, and how it takes in a child's.
 */
struct coll_fold_ops {
	/* What this rank holds now, malloc'ed; *len 0 for nothing. */
	void *(*pack)(void *arg, size_t *len);
	/* Take in the blob of rank from; COLL_OK or COLL_EPROTO (it does not parse). */
	int (*merge)(void *arg, const void *buf, size_t len, int from);
	void *arg;
};

/*
 * Fold every rank's blob into the root's up a binomial tree: log2(n) steps,
 * each rank receives at most log2(n) blobs (each as large as its subtree's
 * merge, up to COLL_GATHERV_MAX) and every rank but the root sends one. The
 * blob from rank r, at v = (r - root) mod n, holds the subtree of relative
 * ranks v .. v + (v & -v) - 1 (below n), which a merge may check. Only the
 * root's holding is the whole; ops (and what it points at) must live until
 * the op ends.
 */
int coll_fold(struct comm *c, int root, const struct coll_fold_ops *ops);
int coll_barrier(struct comm *c);
int coll_send(struct comm *c, const void *buf, size_t count, enum dtype dt, int peer);
int coll_recv(struct comm *c, void *buf, size_t count, enum dtype dt, int peer);
/* Send to one peer while receiving from another (or the same), without deadlock. */
int coll_sendrecv(struct comm *c, const void *sendbuf, size_t sendcount, int dst,
    void *recvbuf, size_t recvcount, int src, enum dtype dt);

#endif
