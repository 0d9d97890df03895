/*
 * Latency-oriented algorithms (rd.c, tree.c) and the blob gather (gatherv.c):
 * recursive-doubling all-reduce, binomial-tree and chain broadcast, chain
 * reduce. They are called by coll.c after it has opened the op.
 */
#ifndef COLL_ALGO_H
#define COLL_ALGO_H

#include <stddef.h>

#include "coll.h"

/* halve: Rabenseifner's (reduce-scatter by halving, all-gather by doubling). */
int rd_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op, int halve);
int tree_broadcast(struct comm *c, void *buf, size_t bytes, int root);
int tree_broadcast_chain(struct comm *c, void *buf, size_t bytes, int root);
int tree_reduce_chain(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op, int root);
int alltoall_pairwise(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt);
int gatherv_tree(struct comm *c, const void *buf, size_t len, int root, struct coll_blobs *out);
int fold_tree(struct comm *c, int root, const struct coll_fold_ops *ops);

#endif
