/*
 * Recursive doubling all-reduce for small messages: log2(n) exchange rounds
 * instead of the ring's 2(n-1) steps. A non-power-of-two size folds the first
 * 2*rem ranks in pairs first and hands them the result at the end. Both sides
 * of an exchange compute a op b from the same two values; the ops are
 * commutative bit for bit, so all ranks agree exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "comm_impl.h"
#include "reduce.h"
#include "xfer.h"
#include "xmalloc.h"

enum { RD_TAG_FOLD = 2, RD_TAG_UNFOLD = 3, RD_TAG_ROUND = 8 };

static int
rd_real_rank(int newrank, int rem)
{
	return newrank < rem ? newrank * 2 + 1 : newrank + rem;
}

static int
rd_rounds(struct comm *c, char *buf, char *tmp, size_t count, enum dtype dt, enum redop op,
    int newrank, int p, int rem)
{
	size_t bytes = count * dtype_size(dt);
	int rc = COLL_OK, round = 0;

	for (int mask = 1; mask < p && rc == COLL_OK; mask <<= 1, round++) {
		int partner = rd_real_rank(newrank ^ mask, rem);

		rc = xfer_sendrecv(c, (uint8_t)(RD_TAG_ROUND + round), partner, buf, bytes,
		    partner, tmp, bytes);
		if (rc == COLL_OK)
			reduce_apply(buf, buf, tmp, count, dt, op);
	}
	return rc;
}

int
rd_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op)
{
	int n = c->nranks, r = c->rank, p = 1, rem, newrank, rc = COLL_OK;
	size_t bytes = count * dtype_size(dt);
	char *buf = recvbuf, *tmp = bytes <= c->scratch_len ? (char *)c->scratch : xmalloc(bytes);

	while (p * 2 <= n)
		p *= 2;
	rem = n - p;
	if (sendbuf != recvbuf)
		memcpy(recvbuf, sendbuf, bytes);
	if (r < 2 * rem && r % 2 == 0) {
		rc = xfer_sendrecv(c, RD_TAG_FOLD, r + 1, buf, bytes, -1, NULL, 0);
		newrank = -1;
	} else if (r < 2 * rem) {
		rc = xfer_sendrecv(c, RD_TAG_FOLD, -1, NULL, 0, r - 1, tmp, bytes);
		if (rc == COLL_OK)
			reduce_apply(buf, buf, tmp, count, dt, op);
		newrank = r / 2;
	} else {
		newrank = r - rem;
	}
	if (rc == COLL_OK && newrank >= 0)
		rc = rd_rounds(c, buf, tmp, count, dt, op, newrank, p, rem);
	if (rc == COLL_OK && r < 2 * rem)
		rc = r % 2 ? xfer_sendrecv(c, RD_TAG_UNFOLD, r - 1, buf, bytes, -1, NULL, 0) :
		    xfer_sendrecv(c, RD_TAG_UNFOLD, -1, NULL, 0, r + 1, buf, bytes);
	if (rc == COLL_OK && op == OP_AVG)
		reduce_avg_finish(recvbuf, count, dt, n);
	if (tmp != (char *)c->scratch)
		free(tmp);
	return rc;
}
