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
#include "lanes.h"
#include "reduce.h"
#include "ring.h"
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

static int
tree_lanes_finish(struct comm *c, struct xfer *xs, struct xfer_seg *segs, int nl)
{
	int rc = lanes_run(c, xs, nl);

	free(xs);
	free(segs);
	return rc;
}

/* Large ones are striped: each lane streams its slice down the chain on its own connection. */
int
tree_broadcast_chain(struct comm *c, void *buf, size_t bytes, int root)
{
	int n = c->nranks, v = (c->rank - root + n) % n, nl = lanes_for(c, bytes, bytes);
	struct xfer_seg *seg = xcalloc((size_t)nl, sizeof *seg);
	struct xfer *xs = xcalloc((size_t)nl, sizeof *xs);

	for (int l = 0; l < nl; l++) {
		size_t off = ring_block_off(bytes, nl, l), len = ring_block_len(bytes, nl, l);

		seg[l] = (struct xfer_seg){ (char *)buf + off, NULL, len };
		xs[l] = (struct xfer){
			.c = c, .seq = c->seq, .rseq = c->seq, .kind = c->kind,
			.tag = (uint8_t)(TREE_TAG_CHAIN + 2 * l),
			.send_peer = v + 1 < n ? (c->rank + 1) % n : -1,
			.recv_peer = v > 0 ? (c->rank + n - 1) % n : -1,
			.send = &seg[l], .recv = &seg[l], .nsend = 1, .nrecv = 1,
			.lag = 0, .dt = DT_UINT8, .op = OP_SUM, .lane = l,
		};
	}
	return tree_lanes_finish(c, xs, seg, nl);
}

int
tree_reduce_chain(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op, int root)
{
	int n = c->nranks, v = (c->rank - root - 1 + 2 * n) % n, rc;
	size_t esz = dtype_size(dt), bytes = count * esz;
	int nl = lanes_for(c, bytes, count);
	/* The chain starts after the root and ends there: v is the place in it. */
	char *acc = v == n - 1 ? recvbuf : (v > 0 ? xmalloc(bytes) : (char *)sendbuf);
	struct xfer_seg *seg = xcalloc(2 * (size_t)nl, sizeof *seg);
	struct xfer *xs = xcalloc((size_t)nl, sizeof *xs);

	for (int l = 0; l < nl; l++) {
		size_t off = ring_block_off(count, nl, l) * esz;
		size_t len = ring_block_len(count, nl, l) * esz;

		seg[2 * l] = (struct xfer_seg){ acc + off, NULL, len };
		seg[2 * l + 1] = (struct xfer_seg){ acc + off, (const char *)sendbuf + off, len };
		xs[l] = (struct xfer){
			.c = c, .seq = c->seq, .rseq = c->seq, .kind = c->kind,
			.tag = (uint8_t)(TREE_TAG_REDUCE + 2 * l),
			.send_peer = v < n - 1 ? (c->rank + 1) % n : -1,
			.recv_peer = v > 0 ? (c->rank + n - 1) % n : -1,
			.send = &seg[2 * l], .recv = &seg[2 * l + 1], .nsend = 1, .nrecv = 1,
			.lag = 0, .dt = dt, .op = op, .lane = l,
		};
	}
	rc = tree_lanes_finish(c, xs, seg, nl);
	if (v > 0 && v < n - 1)
		free(acc);
	if (rc == COLL_OK && v == n - 1 && op == OP_AVG)
		reduce_avg_finish(recvbuf, count, dt, n);
	return rc;
}
