/*
 * The collective entry points: check arguments, open the op (next sequence
 * number, status page), pick the algorithm by size, close the op. A
 * communicator that failed stays failed: later ops return its error at once.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "coll.h"
#include "comm_impl.h"
#include "p2p.h"
#include "ring.h"

/* Largest all-reduce for recursive doubling: COLL_RD_MAX_BYTES, else the built-in default. */
static size_t
coll_rd_max(void)
{
	static _Atomic long max = -1;
	const char *e;

	if (atomic_load(&max) < 0) {
		e = getenv("COLL_RD_MAX_BYTES");
		atomic_store(&max, e && *e ? atol(e) : (long)COLL_RD_MAX_BYTES);
	}
	return (size_t)atomic_load(&max);
}

static int
coll_check(struct comm *c, size_t count, enum dtype dt, enum redop op, int root)
{
	if ((unsigned)dt >= DT_COUNT || (unsigned)op >= OP_COUNT)
		return comm_fail(c, COLL_EINVAL, "%s: unknown datatype %d or op %d",
		    coll_kind_name(c->kind), (int)dt, (int)op);
	if (count > (SIZE_MAX / 2) / dtype_size(dt) / (size_t)c->nranks)
		return comm_fail(c, COLL_EINVAL, "%s: count %zu is too large",
		    coll_kind_name(c->kind), count);
	if (root < 0 || root >= c->nranks)
		return comm_fail(c, COLL_EINVAL, "%s: rank %d is not in 0..%d",
		    coll_kind_name(c->kind), root, c->nranks - 1);
	return COLL_OK;
}

static int
coll_begin(struct comm *c, uint32_t kind, uint64_t bytes)
{
	int st = atomic_load(&c->state);

	if (st != COLL_OK) {
		if (c->err[0] == '\0')
			comm_fail(c, st, "rank %d: communicator unusable: %s", c->rank,
			    coll_strerror(st));
		return st;
	}
	c->seq++;
	c->kind = kind;
	status_begin(&c->status, c->seq, kind, bytes);
	return COLL_OK;
}

static int
coll_end(struct comm *c, int rc)
{
	if (rc == COLL_OK) {
		status_end(&c->status, c->seq, c->kind);
		return rc;
	}
	/* A failed op leaves peers mid-stream: the communicator cannot be used again. */
	{
		int expect = COLL_OK;
		atomic_compare_exchange_strong(&c->state, &expect, rc);
	}
	return rc;
}

int
coll_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op)
{
	size_t bytes;
	int rc;

	if ((rc = coll_begin(c, KIND_ALLREDUCE, count * ((unsigned)dt < DT_COUNT ? dtype_size(dt) : 0))) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, count, dt, op, 0)) != COLL_OK)
		return coll_end(c, rc);
	bytes = count * dtype_size(dt);
	if (c->nranks == 1) {
		if (sendbuf != recvbuf)
			memcpy(recvbuf, sendbuf, bytes);
	} else if (bytes <= coll_rd_max()) {
		rc = rd_allreduce(c, sendbuf, recvbuf, count, dt, op);
	} else {
		rc = ring_allreduce(c, sendbuf, recvbuf, count, dt, op);
	}
	return coll_end(c, rc);
}

int
coll_broadcast(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, int root)
{
	size_t bytes;
	int rc;

	if ((rc = coll_begin(c, KIND_BROADCAST, 0)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, count, dt, OP_SUM, root)) != COLL_OK)
		return coll_end(c, rc);
	bytes = count * dtype_size(dt);
	if (c->rank == root && sendbuf != recvbuf)
		memcpy(recvbuf, sendbuf, bytes);
	if (c->nranks == 1)
		rc = COLL_OK;
	else if (bytes <= COLL_RD_MAX_BYTES)
		rc = tree_broadcast(c, recvbuf, bytes, root);
	else
		rc = tree_broadcast_chain(c, recvbuf, bytes, root);
	return coll_end(c, rc);
}

int
coll_reduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op, int root)
{
	size_t bytes;
	void *tmp;
	int rc;

	if ((rc = coll_begin(c, KIND_REDUCE, 0)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, count, dt, op, root)) != COLL_OK)
		return coll_end(c, rc);
	bytes = count * dtype_size(dt);
	if (c->nranks == 1) {
		if (sendbuf != recvbuf)
			memcpy(recvbuf, sendbuf, bytes);
	} else if (bytes <= COLL_RD_MAX_BYTES) {
		/* Small: everyone computes it in log2(n) rounds, the root keeps it. */
		tmp = c->rank == root ? recvbuf : malloc(bytes ? bytes : 1);
		rc = tmp ? rd_allreduce(c, sendbuf, tmp, count, dt, op) : COLL_ENOMEM;
		if (tmp != recvbuf)
			free(tmp);
	} else {
		rc = tree_reduce_chain(c, sendbuf, recvbuf, count, dt, op, root);
	}
	return coll_end(c, rc);
}

int
coll_allgather(struct comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
    enum dtype dt)
{
	int rc;

	if ((rc = coll_begin(c, KIND_ALLGATHER, 0)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, sendcount, dt, OP_SUM, 0)) != COLL_OK)
		return coll_end(c, rc);
	if (c->nranks == 1) {
		if (sendbuf != recvbuf)
			memmove(recvbuf, sendbuf, sendcount * dtype_size(dt));
		return coll_end(c, COLL_OK);
	}
	return coll_end(c, ring_allgather(c, sendbuf, recvbuf, sendcount, dt));
}

int
coll_reduce_scatter(struct comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
    enum dtype dt, enum redop op)
{
	size_t bytes;
	int rc;

	if ((rc = coll_begin(c, KIND_REDUCE_SCATTER, 0)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, recvcount, dt, op, 0)) != COLL_OK)
		return coll_end(c, rc);
	bytes = recvcount * dtype_size(dt);
	if (c->nranks == 1) {
		if (sendbuf != recvbuf)
			memmove(recvbuf, sendbuf, bytes);
		return coll_end(c, COLL_OK);
	}
	return coll_end(c, ring_reduce_scatter(c, sendbuf, recvbuf, recvcount, dt, op));
}

int
coll_gatherv(struct comm *c, const void *buf, size_t len, int root, struct coll_blobs *out)
{
	int rc;

	memset(out, 0, sizeof *out);
	if ((rc = coll_begin(c, KIND_GATHERV, len)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, 0, DT_UINT8, OP_SUM, root)) != COLL_OK)
		return coll_end(c, rc);
	if (len > COLL_GATHERV_MAX)
		return coll_end(c, comm_fail(c, COLL_ETOOBIG, "gatherv: %zu bytes is over the "
		    "%u-byte bound", len, COLL_GATHERV_MAX));
	return coll_end(c, gatherv_tree(c, buf, len, root, out));
}

void
coll_blobs_free(struct coll_blobs *b)
{
	free(b->data);
	free(b->off);
	free(b->len);
	memset(b, 0, sizeof *b);
}

int
coll_barrier(struct comm *c)
{
	uint8_t token = 0;
	int rc;

	if ((rc = coll_begin(c, KIND_BARRIER, 0)) != COLL_OK)
		return rc;
	if (c->nranks > 1)
		rc = rd_allreduce(c, &token, &token, 1, DT_UINT8, OP_MAX);
	return coll_end(c, rc);
}

static int
coll_p2p(struct comm *c, uint32_t kind, const void *sbuf, size_t scount, int dst, void *rbuf,
    size_t rcount, int src, enum dtype dt)
{
	int rc;

	if ((rc = coll_begin(c, kind, 0)) != COLL_OK)
		return rc;
	if ((dst >= 0 && (rc = coll_check(c, scount, dt, OP_SUM, dst)) != COLL_OK) ||
	    (src >= 0 && (rc = coll_check(c, rcount, dt, OP_SUM, src)) != COLL_OK))
		return coll_end(c, rc);
	if (dst == c->rank || src == c->rank)
		return coll_end(c, comm_fail(c, COLL_EINVAL, "%s: rank %d cannot message itself",
		    coll_kind_name(kind), c->rank));
	return coll_end(c, p2p_run(c, sbuf, scount * dtype_size(dt), dst, rbuf,
	    rcount * dtype_size(dt), src));
}

int
coll_send(struct comm *c, const void *buf, size_t count, enum dtype dt, int peer)
{
	return coll_p2p(c, KIND_SEND, buf, count, peer < 0 ? INT32_MAX : peer, NULL, 0, -1, dt);
}

int
coll_recv(struct comm *c, void *buf, size_t count, enum dtype dt, int peer)
{
	return coll_p2p(c, KIND_RECV, NULL, 0, -1, buf, count, peer < 0 ? INT32_MAX : peer, dt);
}

int
coll_sendrecv(struct comm *c, const void *sendbuf, size_t sendcount, int dst,
    void *recvbuf, size_t recvcount, int src, enum dtype dt)
{
	return coll_p2p(c, KIND_SENDRECV, sendbuf, sendcount, dst < 0 ? INT32_MAX : dst,
	    recvbuf, recvcount, src < 0 ? INT32_MAX : src, dt);
}
