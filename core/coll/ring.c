#include <stdlib.h>
#include <string.h>

#include "comm_impl.h"
#include "lanes.h"
#include "reduce.h"
#include "ring.h"
#include "xfer.h"
#include "xmalloc.h"

static int
ring_mod(int a, int n)
{
	return ((a % n) + n) % n;
}

static struct xfer
ring_xfer(struct comm *c, int nsteps, enum dtype dt, enum redop op, int lane)
{
	struct xfer x = {
		.c = c, .seq = c->seq, .rseq = c->seq, .kind = c->kind,
		/* A lane's streams carry its number: crossed connections fail the header check. */
		.tag = (uint8_t)(1 + lane),
		.send_peer = (c->rank + 1) % c->nranks,
		.recv_peer = (c->rank + c->nranks - 1) % c->nranks,
		.send = xcalloc((size_t)nsteps, sizeof(struct xfer_seg)),
		.recv = xcalloc((size_t)nsteps, sizeof(struct xfer_seg)),
		.nsend = nsteps, .nrecv = nsteps, .lag = 1, .dt = dt, .op = op, .lane = lane,
	};
	return x;
}

/* Run the lanes' rings side by side (one lane: on this thread alone). */
static int
ring_finish(struct comm *c, struct xfer *xs, int nl)
{
	int r = lanes_run(c, xs, nl);

	for (int l = 0; l < nl; l++) {
		free(xs[l].send);
		free(xs[l].recv);
	}
	free(xs);
	return r;
}

/* One lane's all-reduce: count elements at sb and rb, the lane's slice of the op's. */
static void
ring_allreduce_segs(struct xfer *x, const char *sb, char *rb, size_t count, size_t esz)
{
	int n = x->c->nranks, r = x->c->rank;

	for (int s = 0; s < n - 1; s++) {
		int sblk = ring_mod(r - s, n), rblk = ring_mod(r - s - 1, n);
		size_t so = ring_block_off(count, n, sblk) * esz;
		size_t ro = ring_block_off(count, n, rblk) * esz;

		/* Reduce-scatter: the first send is our own input, later ones what we reduced. */
		x->send[s] = (struct xfer_seg){ (char *)(s == 0 ? sb : rb) + so, NULL,
		    ring_block_len(count, n, sblk) * esz };
		x->recv[s] = (struct xfer_seg){ rb + ro, sb + ro, ring_block_len(count, n, rblk) * esz };
	}
	for (int s = 0; s < n - 1; s++) {
		int sblk = ring_mod(r + 1 - s, n), rblk = ring_mod(r - s, n);
		size_t so = ring_block_off(count, n, sblk) * esz;
		size_t ro = ring_block_off(count, n, rblk) * esz;

		/* All-gather: pass on the finished blocks. */
		x->send[n - 1 + s] = (struct xfer_seg){ rb + so, NULL, ring_block_len(count, n, sblk) * esz };
		x->recv[n - 1 + s] = (struct xfer_seg){ rb + ro, NULL, ring_block_len(count, n, rblk) * esz };
	}
}

int
ring_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op)
{
	size_t esz = dtype_size(dt);
	int nl = lanes_for(c, count * esz, count / (size_t)c->nranks), rc;
	struct xfer *xs = xcalloc((size_t)nl, sizeof *xs);

	/* Lane l: a ring of its own over slice l of the vector. */
	for (int l = 0; l < nl; l++) {
		size_t off = ring_block_off(count, nl, l) * esz;

		xs[l] = ring_xfer(c, 2 * (c->nranks - 1), dt, op, l);
		ring_allreduce_segs(&xs[l], (const char *)sendbuf + off, (char *)recvbuf + off,
		    ring_block_len(count, nl, l), esz);
	}
	rc = ring_finish(c, xs, nl);
	if (rc == 0 && op == OP_AVG)
		reduce_avg_finish(recvbuf, count, dt, c->nranks);
	return rc;
}

int
ring_reduce_scatter(struct comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
    enum dtype dt, enum redop op)
{
	int n = c->nranks, r = c->rank, rc;
	size_t esz = dtype_size(dt), blen = recvcount * esz;
	int nl = lanes_for(c, blen * (size_t)n, recvcount);
	const char *sb = sendbuf;
	/*
	 * One staging block per step: the receiving side of the engine may run
	 * ahead of the sending side, so a block may not be reused while an
	 * earlier step could still be sending from it.
	 */
	char *tmp = xmalloc((size_t)(n > 2 ? n - 2 : 1) * blen);
	struct xfer *xs = xcalloc((size_t)nl, sizeof *xs);

	/* Lane l: the same ring over slice l of every block. */
	for (int l = 0; l < nl; l++) {
		size_t lo = ring_block_off(recvcount, nl, l) * esz;
		size_t len = ring_block_len(recvcount, nl, l) * esz;
		struct xfer *x = &xs[l];

		*x = ring_xfer(c, n - 1, dt, op, l);
		for (int s = 0; s < n - 1; s++) {
			size_t so = (size_t)ring_mod(r - s - 1, n) * blen + lo;
			size_t ro = (size_t)ring_mod(r - s - 2, n) * blen + lo;
			char *dst = s == n - 2 ? (char *)recvbuf + lo : tmp + (size_t)s * blen + lo;

			x->send[s] = (struct xfer_seg){ s == 0 ? (char *)sb + so :
			    tmp + (size_t)(s - 1) * blen + lo, NULL, len };
			x->recv[s] = (struct xfer_seg){ dst, sb + ro, len };
		}
	}
	rc = ring_finish(c, xs, nl);
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
	size_t esz = dtype_size(dt), blen = sendcount * esz;
	int nl = lanes_for(c, blen * (size_t)n, sendcount);
	char *rb = recvbuf;
	struct xfer *xs = xcalloc((size_t)nl, sizeof *xs);

	if (sendbuf != rb + (size_t)r * blen)
		memmove(rb + (size_t)r * blen, sendbuf, blen);
	for (int l = 0; l < nl; l++) {
		size_t lo = ring_block_off(sendcount, nl, l) * esz;
		size_t len = ring_block_len(sendcount, nl, l) * esz;
		struct xfer *x = &xs[l];

		*x = ring_xfer(c, n - 1, dt, OP_SUM, l);
		for (int s = 0; s < n - 1; s++) {
			x->send[s] = (struct xfer_seg){ rb + (size_t)ring_mod(r - s, n) * blen + lo,
			    NULL, len };
			x->recv[s] = (struct xfer_seg){ rb + (size_t)ring_mod(r - s - 1, n) * blen + lo,
			    NULL, len };
		}
	}
	return ring_finish(c, xs, nl);
}
