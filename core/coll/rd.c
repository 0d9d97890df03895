/*
 * Recursive doubling all-reduce for small messages: log2(n) exchange rounds
 * instead of the ring's 2(n-1) steps. A non-power-of-two size folds the first
 * 2*rem ranks in pairs first and hands them the result at the end. Both sides
 * of an exchange compute a op b from the same two values; the ops are
 * commutative bit for bit, so all ranks agree exactly.
 *
 * Halving (Rabenseifner's all-reduce) for the middle sizes: the same pairs,
 * but a reduce-scatter by recursive halving (each round keeps half of what
 * is left and sends the other half) and an all-gather by recursive doubling
 * back: 2 log2(n) rounds moving 2(p-1)/p of the vector, the ring's bytes,
 * where doubling moves log2(n) whole vectors. Each block is reduced by one
 * rank and copied to the others, so all agree exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "comm_impl.h"
#include "reduce.h"
#include "xfer.h"
#include "xmalloc.h"

enum { RD_TAG_FOLD = 2, RD_TAG_UNFOLD = 3, RD_TAG_ROUND = 8, RD_TAG_HALVE = 40,
	RD_TAG_GATHER = 72 };

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

/* Element offset of block b of p: blocks differ by at most one element. */
static size_t
rd_block(size_t count, int b, int p)
{
	return count / (size_t)p * (size_t)b + (count % (size_t)p < (size_t)b ?
	    count % (size_t)p : (size_t)b);
}

/*
 * Reduce-scatter by recursive halving over the p ranks of newrank's world,
 * then all-gather by recursive doubling: rank newrank ends the first part
 * owning block newrank, reduced from every rank's.
 */
static int
rd_halve(struct comm *c, char *buf, char *tmp, size_t count, enum dtype dt, enum redop op,
    int newrank, int p, int rem)
{
	size_t esz = dtype_size(dt);
	int lo = 0, hi = p, rc = COLL_OK, round = 0;

	for (int mask = p / 2; mask >= 1 && rc == COLL_OK; mask >>= 1, round++) {
		int partner = rd_real_rank(newrank ^ mask, rem), mid = (lo + hi) / 2;
		int klo = newrank & mask ? mid : lo, khi = newrank & mask ? hi : mid;
		int slo = newrank & mask ? lo : mid, shi = newrank & mask ? mid : hi;
		size_t ko = rd_block(count, klo, p), kn = rd_block(count, khi, p) - ko;
		size_t so = rd_block(count, slo, p), sn = rd_block(count, shi, p) - so;

		rc = xfer_sendrecv(c, (uint8_t)(RD_TAG_HALVE + round), partner, buf + so * esz,
		    sn * esz, partner, tmp, kn * esz);
		if (rc == COLL_OK)
			reduce_apply(buf + ko * esz, buf + ko * esz, tmp, kn, dt, op);
		lo = klo;
		hi = khi;
	}
	round = 0;
	for (int mask = 1; mask < p && rc == COLL_OK; mask <<= 1, round++) {
		int partner = rd_real_rank(newrank ^ mask, rem);
		int plo = lo ^ mask, olo = lo < plo ? lo : plo;
		size_t mo = rd_block(count, lo, p), mn = rd_block(count, lo + mask, p) - mo;
		size_t po = rd_block(count, plo, p), pn = rd_block(count, plo + mask, p) - po;

		rc = xfer_sendrecv(c, (uint8_t)(RD_TAG_GATHER + round), partner, buf + mo * esz,
		    mn * esz, partner, buf + po * esz, pn * esz);
		lo = olo;
	}
	return rc;
}

int
rd_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op, int halve)
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
		rc = halve ? rd_halve(c, buf, tmp, count, dt, op, newrank, p, rem) :
		    rd_rounds(c, buf, tmp, count, dt, op, newrank, p, rem);
	if (rc == COLL_OK && r < 2 * rem)
		rc = r % 2 ? xfer_sendrecv(c, RD_TAG_UNFOLD, r - 1, buf, bytes, -1, NULL, 0) :
		    xfer_sendrecv(c, RD_TAG_UNFOLD, -1, NULL, 0, r + 1, buf, bytes);
	if (rc == COLL_OK && op == OP_AVG)
		reduce_avg_finish(recvbuf, count, dt, n);
	if (tmp != (char *)c->scratch)
		free(tmp);
	return rc;
}
