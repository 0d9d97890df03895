/*
 * All-to-all by pairwise exchange: in round s every rank sends its block for
 * rank + s and receives the block of rank - s, so each round is n disjoint
 * one-way streams and no link carries two blocks at once. In place, the input
 * is copied first: a block still to be sent may be the one a round overwrites.
 */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "comm_impl.h"
#include "xfer.h"
#include "xmalloc.h"

/* Tags cycle: they check that both sides are in the same round, not which op. */
enum { A2A_TAG_BASE = 32, A2A_TAG_SPAN = 192 };

int
alltoall_pairwise(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt)
{
	int n = c->nranks, r = c->rank, rc = COLL_OK;
	size_t blk = count * dtype_size(dt);
	const char *sb = sendbuf;
	char *rb = recvbuf, *copy = NULL;

	if (sendbuf == recvbuf && n > 1) {
		copy = xmalloc(blk * (size_t)n);
		memcpy(copy, sendbuf, blk * (size_t)n);
		sb = copy;
	}
	if (sb != rb)
		memcpy(rb + (size_t)r * blk, sb + (size_t)r * blk, blk);
	for (int s = 1; s < n && rc == COLL_OK; s++) {
		int to = (r + s) % n, from = (r - s + n) % n;

		rc = xfer_sendrecv(c, (uint8_t)(A2A_TAG_BASE + s % A2A_TAG_SPAN), to,
		    sb + (size_t)to * blk, blk, from, rb + (size_t)from * blk, blk);
	}
	free(copy);
	return rc;
}
