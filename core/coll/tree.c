/*
 * Rooted collectives. Broadcast: a binomial tree (log2 n hops) for small
 * messages, a pipelined chain for large ones (every link carries the message
 * once, streamed). Reduce: a pipelined chain ending at the root, each rank
 * adding its contribution as the partial sums stream through.
 */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "comm_impl.h"
#include "reduce.h"
#include "xfer.h"
#include "xmalloc.h"

enum { TREE_TAG_BCAST = 20, TREE_TAG_CHAIN = 21, TREE_TAG_REDUCE = 22 };

int
tree_broadcast(struct comm *c, void *buf, size_t bytes, int root)
{
	int n = c->nranks, v = (c->rank - root + n) % n, mask = 1, rc = COLL_OK;

	while (mask < n) {
		if (v & mask) {
			rc = xfer_sendrecv(c, TREE_TAG_BCAST, -1, NULL, 0,
			    (v - mask + root) % n, buf, bytes);
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0 && rc == COLL_OK; mask >>= 1)
		if (v + mask < n)
			rc = xfer_sendrecv(c, TREE_TAG_BCAST, (v + mask + root) % n, buf, bytes,
			    -1, NULL, 0);
	return rc;
}

int
tree_broadcast_chain(struct comm *c, void *buf, size_t bytes, int root)
{
	int n = c->nranks, v = (c->rank - root + n) % n;
	struct xfer_seg seg = { buf, NULL, bytes };
	struct xfer x = {
		.c = c, .seq = c->seq, .rseq = c->seq, .kind = c->kind, .tag = TREE_TAG_CHAIN,
		.send_peer = v + 1 < n ? (c->rank + 1) % n : -1,
		.recv_peer = v > 0 ? (c->rank + n - 1) % n : -1,
		.send = &seg, .recv = &seg, .nsend = 1, .nrecv = 1,
		.lag = 0, .dt = DT_UINT8, .op = OP_SUM,
	};

	return xfer_run(&x);
}

int
tree_reduce_chain(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op, int root)
{
	int n = c->nranks, v = (c->rank - root - 1 + 2 * n) % n, rc;
	size_t bytes = count * dtype_size(dt);
	char *acc = v == n - 1 ? recvbuf : (v > 0 ? xmalloc(bytes) : (char *)sendbuf);
	struct xfer_seg sseg = { acc, NULL, bytes }, rseg = { acc, sendbuf, bytes };
	struct xfer x = {
		.c = c, .seq = c->seq, .rseq = c->seq, .kind = c->kind, .tag = TREE_TAG_REDUCE,
		.send_peer = v < n - 1 ? (c->rank + 1) % n : -1,
		.recv_peer = v > 0 ? (c->rank + n - 1) % n : -1,
		.send = &sseg, .recv = &rseg, .nsend = 1, .nrecv = 1,
		.lag = 0, .dt = dt, .op = op,
	};

	rc = xfer_run(&x);
	if (v > 0 && v < n - 1)
		free(acc);
	if (rc == COLL_OK && v == n - 1 && op == OP_AVG)
		reduce_avg_finish(recvbuf, count, dt, n);
	return rc;
}
