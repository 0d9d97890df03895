#include <stdlib.h>
#include <string.h>

#include "comm_impl.h"
#include "reduce.h"
#include "ring.h"
#include "xfer.h"
#include "xmalloc.h"

/* Block b of count elements split n ways: the first count % n blocks get one more. */
static size_t
ring_block_off(size_t count, int n, int b)
{
	size_t q = count / (size_t)n, rem = count % (size_t)n;

	return (size_t)b * q + ((size_t)b < rem ? (size_t)b : rem);
}

static size_t
ring_block_len(size_t count, int n, int b)
{
	return count / (size_t)n + ((size_t)b < count % (size_t)n);
}

static int
ring_mod(int a, int n)
{
	return ((a % n) + n) % n;
}

static struct xfer
ring_xfer(struct comm *c, int nsteps, enum dtype dt, enum redop op)
{
	struct xfer x = {
		.c = c, .seq = c->seq, .rseq = c->seq, .kind = c->kind, .tag = 1,
		.send_peer = (c->rank + 1) % c->nranks,
		.recv_peer = (c->rank + c->nranks - 1) % c->nranks,
		.send = xcalloc((size_t)nsteps, sizeof(struct xfer_seg)),
		.recv = xcalloc((size_t)nsteps, sizeof(struct xfer_seg)),
		.nsend = nsteps, .nrecv = nsteps, .lag = 1, .dt = dt, .op = op,
	};
	return x;
}

static int
ring_finish(struct xfer *x)
{
	int r = xfer_run(x);

	free(x->send);
	free(x->recv);
	return r;
}

int
ring_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op)
{
	int n = c->nranks, r = c->rank, steps = 2 * (n - 1);
	size_t esz = dtype_size(dt);
	const char *sb = sendbuf;
	char *rb = recvbuf;
	struct xfer x = ring_xfer(c, steps, dt, op);
	int rc;

	for (int s = 0; s < n - 1; s++) {
		int sblk = ring_mod(r - s, n), rblk = ring_mod(r - s - 1, n);
		size_t so = ring_block_off(count, n, sblk) * esz;
		size_t ro = ring_block_off(count, n, rblk) * esz;

		/* Reduce-scatter: the first send is our own input, later ones what we reduced. */
		x.send[s] = (struct xfer_seg){ (char *)(s == 0 ? sb : rb) + so, NULL,
		    ring_block_len(count, n, sblk) * esz };
		x.recv[s] = (struct xfer_seg){ rb + ro, sb + ro, ring_block_len(count, n, rblk) * esz };
	}
	for (int s = 0; s < n - 1; s++) {
		int sblk = ring_mod(r + 1 - s, n), rblk = ring_mod(r - s, n);
		size_t so = ring_block_off(count, n, sblk) * esz;
		size_t ro = ring_block_off(count, n, rblk) * esz;

		/* All-gather: pass on the finished blocks. */
		x.send[n - 1 + s] = (struct xfer_seg){ rb + so, NULL, ring_block_len(count, n, sblk) * esz };
		x.recv[n - 1 + s] = (struct xfer_seg){ rb + ro, NULL, ring_block_len(count, n, rblk) * esz };
	}
	rc = ring_finish(&x);
	if (rc == 0 && op == OP_AVG)
		reduce_avg_finish(recvbuf, count, dt, n);
	return rc;
}

int
ring_reduce_scatter(struct comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
    enum dtype dt, enum redop op)
{
	int n = c->nranks, r = c->rank;
	size_t blen = recvcount * dtype_size(dt);
	const char *sb = sendbuf;
	/*
	 * One staging block per step: the receiving side of the engine may run
	 * ahead of the sending side, so a block may not be reused while an
	 * earlier step could still be sending from it.
	 */
	char *tmp = xmalloc((size_t)(n > 2 ? n - 2 : 1) * blen);
	struct xfer x = ring_xfer(c, n - 1, dt, op);
	int rc;

	for (int s = 0; s < n - 1; s++) {
		size_t so = (size_t)ring_mod(r - s - 1, n) * blen;
		size_t ro = (size_t)ring_mod(r - s - 2, n) * blen;
		char *dst = s == n - 2 ? recvbuf : tmp + (size_t)s * blen;

		x.send[s] = (struct xfer_seg){ s == 0 ? (char *)sb + so :
		    tmp + (size_t)(s - 1) * blen, NULL, blen };
		x.recv[s] = (struct xfer_seg){ dst, sb + ro, blen };
	}
	rc = ring_finish(&x);
	free(tmp);
	if (rc == 0 && op == OP_AVG)
		reduce_avg_finish(recvbuf, recvcount, dt, n);
	return rc;
}

int
ring_allgather(struct comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
    enum dtype dt)
{
	int n = c->nranks, r = c->rank;
	size_t blen = sendcount * dtype_size(dt);
	char *rb = recvbuf;
	struct xfer x = ring_xfer(c, n - 1, dt, OP_SUM);

	if (sendbuf != rb + (size_t)r * blen)
		memmove(rb + (size_t)r * blen, sendbuf, blen);
	for (int s = 0; s < n - 1; s++) {
		x.send[s] = (struct xfer_seg){ rb + (size_t)ring_mod(r - s, n) * blen, NULL, blen };
		x.recv[s] = (struct xfer_seg){ rb + (size_t)ring_mod(r - s - 1, n) * blen, NULL, blen };
	}
	return ring_finish(&x);
}
