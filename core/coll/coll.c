/*
 * The collective entry points: check arguments, open the op (next sequence
 * number, status page), pick the algorithm by size, close the op. A
 * communicator that failed stays failed: later ops return its error at once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "coll.h"
#include "clock.h"
#include "comm_impl.h"
#include "envword.h"
#include "log.h"
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

/* COLL_ALLREDUCE_ALGO: ring, doubling or halving for every size (every rank alike), else 0. */
static int
coll_ar_forced(void)
{
	static _Atomic int forced = -1;
	int i;

	if (atomic_load(&forced) < 0)
		atomic_store(&forced, envword_get("COLL_ALLREDUCE_ALGO", comm_allreduce_algos,
		    &i) == COLL_OK ? COLL_AR_RING + i : 0);
	return atomic_load(&forced);
}

/*
 * Recursive doubling takes log2(n) steps of the whole vector, the ring 2(n-1)
 * steps of a 1/n block, halving 2 log2(n) steps moving the ring's bytes. Up
 * to COLL_RD_MAX_BYTES doubling's few steps win. Above, where the ring's
 * blocks would be at most RD_BLOCK_MAX (and the vector at most
 * RD_SMALL_BLOCKS_MAX), the ring pays more in steps than it saves in bytes,
 * and halving moves less than doubling; from two 64 KiB slices the ring
 * also runs on several lanes (lanes.c), which halving does not. Measured on
 * 64 cores, loopback, medians of 7, us (doubling / halving / ring): 4 ranks
 * at 64 KiB 95 / 67 / 89, at 128 KiB 173 / 117 / 110, at 256 KiB 334 / 209 /
 * 132; 8 ranks at 64 KiB 153 / 91 / 172, at 128 KiB 288 / 150 / 210, at
 * 256 KiB 520 / 262 / 241. Measured on one host: across hosts, several
 * ranks of a host at once share its NIC, which may move the balance.
 */
#define RD_BLOCK_MAX (16u << 10)
#define RD_SMALL_BLOCKS_MAX (256u << 10)

int
coll_allreduce_algo(size_t bytes, int nranks)
{
	int forced = coll_ar_forced();

	if (forced != 0)
		return forced;
	if (bytes <= coll_rd_max())
		return COLL_AR_DOUBLING;
	if (nranks > 0 && bytes <= RD_SMALL_BLOCKS_MAX && bytes / (size_t)nranks <= RD_BLOCK_MAX)
		return COLL_AR_HALVING;
	return COLL_AR_RING;
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

	if (st == COLL_OK && atomic_load(&c->finalized))
		return comm_fail(c, COLL_EINVAL, "rank %d: %s after comm_finalize: the communicator "
		    "takes no more ops", c->rank, coll_kind_name(kind));
	if (st != COLL_OK) {
		char why[COLL_ERR_LEN];
		int have;

		pthread_mutex_lock(&c->lock);
		have = c->async_msg[0] != '\0';
		snprintf(why, sizeof why, "%s", have ? c->async_msg : coll_strerror(st));
		pthread_mutex_unlock(&c->lock);
		/* The root's verdict first, as when it comes in the middle of an op. */
		if (c->err[0] == '\0' && have)
			comm_fail(c, st, "%s; rank %d was about to start %s seq %" PRIu64, why,
			    c->rank, coll_kind_name(kind), c->seq + 1);
		else if (c->err[0] == '\0')
			comm_fail(c, st, "rank %d: communicator unusable before %s seq %" PRIu64
			    ": %s", c->rank, coll_kind_name(kind), c->seq + 1, why);
		return st;
	}
	pthread_mutex_lock(&c->lock);
	c->seq++;
	c->kind = kind;
	c->in_op = 1;
	pthread_mutex_unlock(&c->lock);
	c->op_recv_bytes = 0;
	c->op_retries = 0;
	c->link_peer = -1;
	status_begin(&c->status, c->seq, kind, bytes);
	fault_at_begin(c);
	c->op_begin_ns = clock_now_ns();
	return COLL_OK;
}

static int
coll_end(struct comm *c, int rc)
{
	pthread_mutex_lock(&c->lock);
	c->in_op = 0;
	pthread_mutex_unlock(&c->lock);
	if (rc == COLL_OK) {
		status_end(&c->status, c->seq, c->kind);
		return rc;
	}
	/* A broken link in an op that is not retried (gatherv, point-to-point): name it. */
	if (rc == COLL_EPEER && c->link_peer >= 0)
		rc = comm_fail_peer(c, c->link_peer, rc, "exchanging with");
	/* A failed op leaves peers mid-stream: the communicator cannot be used again. */
	{
		int expect = COLL_OK;
		atomic_compare_exchange_strong(&c->state, &expect, rc);
	}
	return rc;
}

/* The root asked every rank to stop at this seq before we even started it. */
static int
coll_retry_asked(struct comm *c)
{
	int asked;

	/* Or it was already refused, before this rank got there: it fails with the reason. */
	pthread_mutex_lock(&c->lock);
	asked = (c->rt.query_seq == c->seq && !c->rt.answered) ||
	    (c->rt.verdict == 2 && c->rt.verdict_seq == c->seq);
	pthread_mutex_unlock(&c->lock);
	return asked;
}

/*
 * Run an op, and run it again after a broken link when retry.c and the root
 * agree. An in-place input is kept (up to COLL_RETRY_SAVE_BYTES) so the rerun
 * starts from it; a larger one is intact only while nothing was received.
 */
static int
coll_run(struct comm *c, int (*run)(struct comm *, void *), void *arg, void *inplace,
    size_t len)
{
	void *saved = NULL;
	int rc, r;

	if (inplace != NULL && len > 0 && len <= c->retry_save && c->retry_max > 0 &&
	    (saved = malloc(len)) != NULL)
		memcpy(saved, inplace, len);
	rc = coll_retry_asked(c) ? COLL_ERETRY : run(c, arg);
	while (rc == COLL_ERETRY || (rc == COLL_EPEER && c->link_peer >= 0)) {
		int intact = inplace == NULL || saved != NULL || len == 0 || c->op_recv_bytes == 0;

		if ((r = retry_op(c, rc, intact)) != COLL_OK) {
			rc = r;
			break;
		}
		if (saved != NULL)
			memcpy(inplace, saved, len);
		rc = run(c, arg);
	}
	free(saved);
	return coll_end(c, rc);
}

struct coll_args {
	const void *sbuf;
	void *rbuf;
	size_t count;
	enum dtype dt;
	enum redop op;
	int root;
};

static int
coll_run_allreduce(struct comm *c, void *arg)
{
	struct coll_args *a = arg;
	size_t bytes = a->count * dtype_size(a->dt);
	int algo, k;

	if (c->nranks == 1) {
		if (a->sbuf != a->rbuf)
			memcpy(a->rbuf, a->sbuf, bytes);
		return COLL_OK;
	}
	algo = coll_allreduce_algo(bytes, c->nranks);
	k = algo - COLL_AR_RING;
	/* Once per algorithm and communicator: which one ran is otherwise not seen. */
	if (!(c->ar_algos_logged & 1u << k)) {
		c->ar_algos_logged |= 1u << k;
		log_info("rank %d: allreduce seq %" PRIu64 " of %zu bytes is the first by %s",
		    c->rank, c->seq, bytes, comm_allreduce_algos[k]);
	}
	switch (algo) {
	case COLL_AR_DOUBLING:
		return rd_allreduce(c, a->sbuf, a->rbuf, a->count, a->dt, a->op, 0);
	case COLL_AR_HALVING:
		return rd_allreduce(c, a->sbuf, a->rbuf, a->count, a->dt, a->op, 1);
	default:
		return ring_allreduce(c, a->sbuf, a->rbuf, a->count, a->dt, a->op);
	}
}

/*
 * Non-blocking communicators: every call below first hands a copy of its
 * arguments to the communicator's worker (comm_defer) and returns
 * COLL_EINPROGRESS; the worker makes the same call, which then runs.
 */
struct coll_job {
	int (*call)(struct comm *, struct coll_job *);
	const void *sbuf;
	void *rbuf;
	size_t count;
	size_t count2;
	enum dtype dt;
	enum redop op;
	int root;
	int peer2;
	uint32_t kind;		/* send, recv or sendrecv */
	struct coll_blobs *out;
};

static int
coll_job_run(struct comm *c, void *arg)
{
	struct coll_job *j = arg;

	return j->call(c, j);
}

static int
coll_defer(struct comm *c, const struct coll_job *tmpl)
{
	struct coll_job *j = malloc(sizeof *j);

	if (j == NULL)
		return COLL_ENOMEM;
	*j = *tmpl;
	return comm_defer(c, coll_job_run, j);
}

static int job_allreduce(struct comm *c, struct coll_job *j);
static int job_broadcast(struct comm *c, struct coll_job *j);
static int job_reduce(struct comm *c, struct coll_job *j);
static int job_allgather(struct comm *c, struct coll_job *j);
static int job_reduce_scatter(struct comm *c, struct coll_job *j);
static int job_alltoall(struct comm *c, struct coll_job *j);
static int job_gatherv(struct comm *c, struct coll_job *j);
static int job_fold(struct comm *c, struct coll_job *j);
static int job_barrier(struct comm *c, struct coll_job *j);
static int job_p2p(struct comm *c, struct coll_job *j);

int
coll_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op)
{
	struct coll_args a = { sendbuf, recvbuf, count, dt, op, 0 };
	size_t bytes = count * ((unsigned)dt < DT_COUNT ? dtype_size(dt) : 0);
	int rc;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_allreduce, .sbuf = sendbuf,
		    .rbuf = recvbuf, .count = count, .dt = dt, .op = op });
	if ((rc = coll_begin(c, KIND_ALLREDUCE, bytes)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, count, dt, op, 0)) != COLL_OK)
		return coll_end(c, rc);
	return coll_run(c, coll_run_allreduce, &a, sendbuf == recvbuf ? recvbuf : NULL, bytes);
}

static int
coll_run_broadcast(struct comm *c, void *arg)
{
	struct coll_args *a = arg;
	size_t bytes = a->count * dtype_size(a->dt);

	if (c->nranks == 1)
		return COLL_OK;
	if (bytes <= COLL_RD_MAX_BYTES)
		return tree_broadcast(c, a->rbuf, bytes, a->root);
	return tree_broadcast_chain(c, a->rbuf, bytes, a->root);
}

int
coll_broadcast(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, int root)
{
	struct coll_args a = { sendbuf, recvbuf, count, dt, OP_SUM, root };
	int rc;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_broadcast, .sbuf = sendbuf,
		    .rbuf = recvbuf, .count = count, .dt = dt, .root = root });
	if ((rc = coll_begin(c, KIND_BROADCAST, 0)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, count, dt, OP_SUM, root)) != COLL_OK)
		return coll_end(c, rc);
	if (c->rank == root && sendbuf != recvbuf)
		memcpy(recvbuf, sendbuf, count * dtype_size(dt));
	/* The root's buffer is only read: a rerun always starts from it. */
	return coll_run(c, coll_run_broadcast, &a, NULL, 0);
}

static int
coll_run_reduce(struct comm *c, void *arg)
{
	struct coll_args *a = arg;
	size_t bytes = a->count * dtype_size(a->dt);
	void *tmp;
	int rc;

	if (c->nranks == 1) {
		if (a->sbuf != a->rbuf)
			memcpy(a->rbuf, a->sbuf, bytes);
		return COLL_OK;
	}
	if (bytes > COLL_RD_MAX_BYTES)
		return tree_reduce_chain(c, a->sbuf, a->rbuf, a->count, a->dt, a->op, a->root);
	/* Small: everyone computes it in log2(n) rounds, the root keeps it. */
	tmp = c->rank == a->root ? a->rbuf : malloc(bytes ? bytes : 1);
	rc = tmp ? rd_allreduce(c, a->sbuf, tmp, a->count, a->dt, a->op, 0) : COLL_ENOMEM;
	if (tmp != a->rbuf)
		free(tmp);
	return rc;
}

int
coll_reduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op, int root)
{
	struct coll_args a = { sendbuf, recvbuf, count, dt, op, root };
	int rc, inplace;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_reduce, .sbuf = sendbuf,
		    .rbuf = recvbuf, .count = count, .dt = dt, .op = op, .root = root });
	if ((rc = coll_begin(c, KIND_REDUCE, 0)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, count, dt, op, root)) != COLL_OK)
		return coll_end(c, rc);
	inplace = c->rank == root && sendbuf == recvbuf;
	return coll_run(c, coll_run_reduce, &a, inplace ? recvbuf : NULL,
	    count * dtype_size(dt));
}

static int
coll_run_allgather(struct comm *c, void *arg)
{
	struct coll_args *a = arg;

	if (c->nranks == 1) {
		if (a->sbuf != a->rbuf)
			memmove(a->rbuf, a->sbuf, a->count * dtype_size(a->dt));
		return COLL_OK;
	}
	return ring_allgather(c, a->sbuf, a->rbuf, a->count, a->dt);
}

static int
coll_run_reduce_scatter(struct comm *c, void *arg)
{
	struct coll_args *a = arg;

	if (c->nranks == 1) {
		if (a->sbuf != a->rbuf)
			memmove(a->rbuf, a->sbuf, a->count * dtype_size(a->dt));
		return COLL_OK;
	}
	return ring_reduce_scatter(c, a->sbuf, a->rbuf, a->count, a->dt, a->op);
}

int
coll_allgather(struct comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
    enum dtype dt)
{
	struct coll_args a = { sendbuf, recvbuf, sendcount, dt, OP_SUM, 0 };
	int rc;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_allgather, .sbuf = sendbuf,
		    .rbuf = recvbuf, .count = sendcount, .dt = dt });
	if ((rc = coll_begin(c, KIND_ALLGATHER, 0)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, sendcount, dt, OP_SUM, 0)) != COLL_OK)
		return coll_end(c, rc);
	/* In place, this rank's own block is never written: the input stays intact. */
	return coll_run(c, coll_run_allgather, &a, NULL, 0);
}

int
coll_reduce_scatter(struct comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
    enum dtype dt, enum redop op)
{
	struct coll_args a = { sendbuf, recvbuf, recvcount, dt, op, 0 };
	size_t esz;
	int rc;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_reduce_scatter, .sbuf = sendbuf,
		    .rbuf = recvbuf, .count = recvcount, .dt = dt, .op = op });
	if ((rc = coll_begin(c, KIND_REDUCE_SCATTER, 0)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, recvcount, dt, op, 0)) != COLL_OK)
		return coll_end(c, rc);
	esz = dtype_size(dt);
	/* In place the result lands inside the input: keep all of it for a rerun. */
	if ((const char *)recvbuf == (const char *)sendbuf + (size_t)c->rank * recvcount * esz)
		return coll_run(c, coll_run_reduce_scatter, &a, (void *)sendbuf,
		    (size_t)c->nranks * recvcount * esz);
	return coll_run(c, coll_run_reduce_scatter, &a, NULL, 0);
}

static int
coll_run_alltoall(struct comm *c, void *arg)
{
	struct coll_args *a = arg;

	return alltoall_pairwise(c, a->sbuf, a->rbuf, a->count, a->dt);
}

int
coll_alltoall(struct comm *c, const void *sendbuf, void *recvbuf, size_t count, enum dtype dt)
{
	struct coll_args a = { sendbuf, recvbuf, count, dt, OP_SUM, 0 };
	int rc;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_alltoall, .sbuf = sendbuf,
		    .rbuf = recvbuf, .count = count, .dt = dt });
	if ((rc = coll_begin(c, KIND_ALLTOALL, (uint64_t)c->nranks * count *
	    ((unsigned)dt < DT_COUNT ? dtype_size(dt) : 0))) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, count, dt, OP_SUM, 0)) != COLL_OK)
		return coll_end(c, rc);
	/* In place a failed run leaves some blocks received: keep the input for a rerun. */
	return coll_run(c, coll_run_alltoall, &a, sendbuf == recvbuf ? recvbuf : NULL,
	    (size_t)c->nranks * count * dtype_size(dt));
}

int
coll_gatherv(struct comm *c, const void *buf, size_t len, int root, struct coll_blobs *out)
{
	int rc;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_gatherv, .sbuf = buf,
		    .count = len, .root = root, .out = out });
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

int
coll_fold(struct comm *c, int root, const struct coll_fold_ops *ops)
{
	int rc;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_fold, .sbuf = ops,
		    .root = root });
	if ((rc = coll_begin(c, KIND_FOLD, 0)) != COLL_OK)
		return rc;
	if ((rc = coll_check(c, 0, DT_UINT8, OP_SUM, root)) != COLL_OK)
		return coll_end(c, rc);
	return coll_end(c, fold_tree(c, root, ops));
}

void
coll_blobs_free(struct coll_blobs *b)
{
	free(b->data);
	free(b->off);
	free(b->len);
	memset(b, 0, sizeof *b);
}

static int
coll_run_barrier(struct comm *c, void *arg)
{
	uint8_t token = 0;

	(void)arg;
	return c->nranks > 1 ? rd_allreduce(c, &token, &token, 1, DT_UINT8, OP_MAX, 0) : COLL_OK;
}

int
coll_barrier(struct comm *c)
{
	int rc;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_barrier });
	if ((rc = coll_begin(c, KIND_BARRIER, 0)) != COLL_OK)
		return rc;
	return coll_run(c, coll_run_barrier, NULL, NULL, 0);
}

static int
coll_p2p(struct comm *c, uint32_t kind, const void *sbuf, size_t scount, int dst, void *rbuf,
    size_t rcount, int src, enum dtype dt)
{
	int rc;

	if (comm_deferring(c))
		return coll_defer(c, &(struct coll_job){ .call = job_p2p, .sbuf = sbuf, .rbuf = rbuf,
		    .count = scount, .count2 = rcount, .dt = dt, .root = dst, .peer2 = src,
		    .kind = kind });
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

static int
job_allreduce(struct comm *c, struct coll_job *j)
{
	return coll_allreduce(c, j->sbuf, j->rbuf, j->count, j->dt, j->op);
}

static int
job_broadcast(struct comm *c, struct coll_job *j)
{
	return coll_broadcast(c, j->sbuf, j->rbuf, j->count, j->dt, j->root);
}

static int
job_reduce(struct comm *c, struct coll_job *j)
{
	return coll_reduce(c, j->sbuf, j->rbuf, j->count, j->dt, j->op, j->root);
}

static int
job_allgather(struct comm *c, struct coll_job *j)
{
	return coll_allgather(c, j->sbuf, j->rbuf, j->count, j->dt);
}

static int
job_reduce_scatter(struct comm *c, struct coll_job *j)
{
	return coll_reduce_scatter(c, j->sbuf, j->rbuf, j->count, j->dt, j->op);
}

static int
job_alltoall(struct comm *c, struct coll_job *j)
{
	return coll_alltoall(c, j->sbuf, j->rbuf, j->count, j->dt);
}

static int
job_gatherv(struct comm *c, struct coll_job *j)
{
	return coll_gatherv(c, j->sbuf, j->count, j->root, j->out);
}

static int
job_fold(struct comm *c, struct coll_job *j)
{
	return coll_fold(c, j->root, j->sbuf);
}

static int
job_barrier(struct comm *c, struct coll_job *j)
{
	(void)j;
	return coll_barrier(c);
}

static int
job_p2p(struct comm *c, struct coll_job *j)
{
	return coll_p2p(c, j->kind, j->sbuf, j->count, j->root, j->rbuf, j->count2,
	    j->peer2, j->dt);
}
