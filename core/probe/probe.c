/*
 * Probe data is chosen so that the exact result is known: small integers whose
 * sums and products are exact in every type (for rank counts where they fit),
 * so #wrong means a wrong byte, not rounding. The expected result is computed
 * with the same typed kernels, rank by rank, for the part this rank receives.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "probe.h"
#include "reduce.h"
#include "xmalloc.h"

double
probe_busbw_factor(int nranks)
{
	return probe_bw_factor(PROBE_ALLREDUCE, nranks);
}

void
probe_fill_at(void *buf, size_t first, size_t count, enum dtype dt, enum redop op, int rank)
{
	int sgn = dt == DT_INT8 || dt == DT_INT32 || dt == DT_INT64 || dtype_is_float(dt);

	for (size_t j = 0; j < count; j++) {
		size_t i = first + j, k = i + (size_t)rank * 7;
		double v;

		if (op == OP_PROD)
			v = (k % 11 == 0) ? 2 : ((sgn && k % 13 == 0) ? -1 : 1);
		else if (op == OP_MIN || op == OP_MAX)
			v = (double)((i * 13 + (size_t)rank * 7) % 17) - (sgn ? 8 : 0);
		else
			v = (double)(k % 5) - (sgn ? 2 : 0);
		dtype_set(buf, j, dt, v);
	}
}

void
probe_fill(void *buf, size_t count, enum dtype dt, enum redop op, int rank)
{
	probe_fill_at(buf, 0, count, dt, op, rank);
}

int
probe_init(struct probe *p, struct comm *c, const struct probe_opts *o, size_t max_bytes)
{
	memset(p, 0, sizeof *p);
	p->c = c;
	p->o = *o;
	if (o->engine != NULL) {
		p->e = o->engine;
	} else {
		probe_engine_coll(&p->own, c);
		p->e = &p->own;
	}
	p->cap = max_bytes ? max_bytes : 1;
	p->send = p->e->alloc(p->e, p->cap);
	p->recv = p->e->alloc(p->e, p->cap);
	p->host = malloc(p->cap);
	if (p->send == NULL || p->recv == NULL || p->host == NULL) {
		if (!p->e->on_comm && (p->send == NULL || p->recv == NULL))
			snprintf(p->err, sizeof p->err, "%s", p->e->error(p->e));
		probe_free(p);
		return COLL_ENOMEM;
	}
	/* Touch the pages now so the first timed op does not pay for faults. */
	memset(p->host, 0, p->cap);
	if (p->e->put(p->e, p->send, p->host, p->cap) != COLL_OK ||
	    p->e->put(p->e, p->recv, p->host, p->cap) != COLL_OK) {
		snprintf(p->err, sizeof p->err, "%s", p->e->error(p->e));
		probe_free(p);
		return COLL_ESYS;
	}
	if (o->check) {
		p->expect = malloc(p->cap);
		p->tmp = malloc(p->cap);
		if (p->expect == NULL || p->tmp == NULL) {
			probe_free(p);
			return COLL_ENOMEM;
		}
	}
	return COLL_OK;
}

void
probe_free(struct probe *p)
{
	if (p->e != NULL) {
		if (p->send != NULL)
			p->e->release(p->e, p->send);
		if (p->recv != NULL)
			p->e->release(p->e, p->recv);
	}
	free(p->host);
	free(p->expect);
	free(p->tmp);
	/* Keep the reason: the caller may print it after freeing. */
	{
		char err[sizeof p->err];

		memcpy(err, p->err, sizeof err);
		memset(p, 0, sizeof *p);
		memcpy(p->err, err, sizeof err);
	}
}

void
probe_set_comm(struct probe *p, struct comm *c)
{
	p->c = c;
	if (p->e == &p->own)
		p->own.ctx = c;
	memset(&p->pos, 0, sizeof p->pos);
}

const char *
probe_error(const struct probe *p)
{
	return p->err[0] != '\0' ? p->err : comm_last_error(p->c);
}

/* Note the next op: where it is, and one more on the communicator when it is one of its. */
static void
probe_at(struct probe *p, enum probe_phase phase, int iter, int on_comm)
{
	p->pos.phase = phase;
	p->pos.iter = iter;
	if (on_comm)
		p->pos.ops++;
}

/* The engine's reason, kept: the communicator knows nothing of an engine's failure. */
static int
probe_engine_rc(struct probe *p, int rc)
{
	if (rc != COLL_OK && !p->e->on_comm && p->err[0] == '\0')
		snprintf(p->err, sizeof p->err, "%s engine: %s", p->e->name, p->e->error(p->e));
	return rc;
}

static int
probe_start(struct probe *p, enum probe_phase phase, int iter, const void *src, void *dst,
    size_t count)
{
	probe_at(p, phase, iter, p->e->on_comm);
	return probe_engine_rc(p, p->e->start(p->e, p->o.coll, src, dst, count, p->o.dt, p->o.op,
	    p->o.root));
}

static int
probe_wait(struct probe *p)
{
	return probe_engine_rc(p, p->e->wait(p->e));
}

/* A control op on the communicator: checks, barriers, timings. */
static int
probe_ctl(struct probe *p, const void *src, void *dst, size_t count, enum dtype dt,
    enum redop op)
{
	probe_at(p, PROBE_CHECK, 0, 1);
	return coll_allreduce(p->c, src, dst, count, dt, op);
}

/* The reduction over every rank of elements first .. first + count - 1 of their patterns. */
static void
probe_expect_reduced(struct probe *p, size_t first, size_t count)
{
	int n = comm_size(p->c);
	enum redop op = p->o.op == OP_AVG ? OP_SUM : p->o.op;

	probe_fill_at(p->expect, first, count, p->o.dt, p->o.op, 0);
	for (int r = 1; r < n; r++) {
		probe_fill_at(p->tmp, first, count, p->o.dt, p->o.op, r);
		reduce_apply(p->expect, p->expect, p->tmp, count, p->o.dt, op);
	}
	if (p->o.op == OP_AVG)
		reduce_avg_finish(p->expect, count, p->o.dt, n);
}

/* What this rank must receive: recv elements of the shape. */
static void
probe_expected(struct probe *p, const struct probe_shape *sh)
{
	int n = comm_size(p->c), me = comm_rank(p->c);
	size_t blk = sh->param * dtype_size(p->o.dt);

	switch (p->o.coll) {
	case PROBE_REDUCE_SCATTER:
		probe_expect_reduced(p, (size_t)me * sh->param, sh->param);
		break;
	case PROBE_BROADCAST:
		probe_fill_at(p->expect, 0, sh->param, p->o.dt, p->o.op, p->o.root);
		break;
	case PROBE_ALLGATHER:
		for (int j = 0; j < n; j++)
			probe_fill_at(p->expect + (size_t)j * blk, 0, sh->param, p->o.dt, p->o.op, j);
		break;
	case PROBE_ALLTOALL:
		for (int j = 0; j < n; j++)
			probe_fill_at(p->expect + (size_t)j * blk, (size_t)me * sh->param, sh->param,
			    p->o.dt, p->o.op, j);
		break;
	default:
		probe_expect_reduced(p, 0, sh->param);
		break;
	}
}
/*
 * Relative tolerance only where sums of our small integers stop being exact,
 * and for a floating average, which NCCL computes as a sum of x * (1/n): a
 * last-place difference from sum / n when n is not a power of two.
 */
static double
probe_tolerance(enum dtype dt, enum redop op, int n)
{
	int avg = op == OP_AVG && (n & (n - 1)) != 0;

	switch (dt) {
	case DT_FLOAT16: return n > 256 ? 1e-2 : avg ? 2e-3 : 0;
	case DT_BFLOAT16: return n > 32 ? 5e-2 : avg ? 2e-2 : 0;
	case DT_FLOAT32: return avg ? 1e-6 : 0;
	case DT_FLOAT64: return avg ? 1e-14 : 0;
	default: return 0;
	}
}

static int64_t
probe_count_wrong(struct probe *p, const uint8_t *got, size_t count)
{
	size_t esz = dtype_size(p->o.dt);
	double tol = probe_tolerance(p->o.dt, p->o.op, comm_size(p->c));
	int64_t wrong = 0;

	for (size_t i = 0; i < count; i++) {
		if (memcmp(got + i * esz, p->expect + i * esz, esz) == 0)
			continue;
		if (tol > 0) {
			double a = dtype_get(got, i, p->o.dt), b = dtype_get(p->expect, i, p->o.dt);
			if (fabs(a - b) <= tol * fmax(1.0, fabs(b)))
				continue;
		}
		wrong++;
	}
	return wrong;
}

/* FNV-1a of the result: ranks compare it to prove they hold identical bytes. */
static uint64_t
probe_hash(const uint8_t *b, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* Where the op reads and writes, out of place or in place (inside recv, as nccl-tests). */
static void
probe_bufs(struct probe *p, const struct probe_shape *sh, int inplace, uint8_t **src,
    uint8_t **dst)
{
	size_t esz = dtype_size(p->o.dt), me = (size_t)comm_rank(p->c);

	*src = inplace ? p->recv + sh->soff * me * esz : p->send;
	*dst = p->recv + (inplace ? sh->roff * me * esz : 0);
}

/* Every rank holds the same result, so they must agree on its bytes. */
static int
probe_coll_same(enum probe_coll k)
{
	return k == PROBE_ALLREDUCE || k == PROBE_ALLGATHER || k == PROBE_BROADCAST;
}

static int
probe_check(struct probe *p, const struct probe_shape *sh, int inplace, int64_t *wrong)
{
	size_t esz = dtype_size(p->o.dt), rbytes = sh->recv * esz;
	int me = comm_rank(p->c), rc;
	uint8_t *src, *dst;
	uint64_t h[2], hmin, hmax;

	probe_bufs(p, sh, inplace, &src, &dst);
	probe_fill(p->host, sh->send, p->o.dt, p->o.op, me);
	if ((rc = probe_engine_rc(p, p->e->put(p->e, src, p->host, sh->send * esz))) != COLL_OK ||
	    (rc = probe_start(p, PROBE_CHECK, 0, src, dst, sh->param)) != COLL_OK ||
	    (rc = probe_wait(p)) != COLL_OK ||
	    (rc = probe_engine_rc(p, p->e->get(p->e, p->host, dst, rbytes))) != COLL_OK)
		return rc;
	/* A reduce's result is the root's alone; the others' buffers hold nothing defined. */
	*wrong = p->o.coll == PROBE_REDUCE && me != p->o.root ? 0 :
	    probe_count_wrong(p, p->host, sh->recv);
	if (probe_coll_same(p->o.coll)) {
		h[0] = h[1] = probe_hash(p->host, rbytes);
		if ((rc = probe_ctl(p, &h[0], &hmin, 1, DT_UINT64, OP_MIN)) != COLL_OK ||
		    (rc = probe_ctl(p, &h[1], &hmax, 1, DT_UINT64, OP_MAX)) != COLL_OK)
			return rc;
		if (hmin != hmax && *wrong == 0)
			*wrong = (int64_t)sh->recv;	/* ranks disagree: nobody can be trusted */
	}
	return probe_ctl(p, wrong, wrong, 1, DT_INT64, OP_SUM);
}

static int
probe_time(struct probe *p, const struct probe_shape *sh, int inplace, double *us)
{
	uint8_t *src, *dst;
	uint64_t t0;
	int rc = COLL_OK;

	probe_bufs(p, sh, inplace, &src, &dst);
	for (int i = 0; i < p->o.warmup && rc == COLL_OK; i++)
		rc = probe_start(p, PROBE_WARMUP, i + 1, src, dst, sh->param);
	if (rc == COLL_OK)
		rc = probe_wait(p);
	if (rc == COLL_OK) {
		probe_at(p, PROBE_BARRIER, 0, 1);
		rc = coll_barrier(p->c);
	}
	t0 = clock_now_ns();
	for (int i = 0; i < p->o.iters && rc == COLL_OK; i++)
		rc = probe_start(p, PROBE_TIMED, i + 1, src, dst, sh->param);
	if (rc == COLL_OK)
		rc = probe_wait(p);
	*us = (double)(clock_now_ns() - t0) / 1e3 / (p->o.iters > 0 ? p->o.iters : 1);
	return rc;
}

/* Gather every rank's time: mean, and the slowest rank with its time. */
static int
probe_combine(struct probe *p, double us, const struct probe_shape *sh, struct probe_meas *m)
{
	int n = comm_size(p->c), rc;
	double *all = xcalloc((size_t)n, sizeof *all), sum = 0;

	probe_at(p, PROBE_COMBINE, 0, 1);
	rc = coll_allgather(p->c, &us, all, 1, DT_FLOAT64);
	if (rc == COLL_OK) {
		m->slow_rank = 0;
		for (int i = 0; i < n; i++) {
			sum += all[i];
			if (all[i] > all[m->slow_rank])
				m->slow_rank = i;
		}
		m->slow_us = all[m->slow_rank];
		m->time_us = sum / n;
		m->algbw = probe_algbw(p->o.coll, sh->param, dtype_size(p->o.dt), n, m->time_us);
		m->busbw = m->algbw * probe_bw_factor(p->o.coll, n);
	}
	free(all);
	return rc;
}

int
probe_run(struct probe *p, size_t bytes, struct probe_result *res)
{
	size_t esz = dtype_size(p->o.dt);
	struct probe_shape sh;
	double us;
	int rc = COLL_OK;

	memset(res, 0, sizeof *res);
	probe_shape(p->o.coll, bytes, esz, comm_size(p->c), &sh);
	res->count = sh.param;
	res->bytes = (sh.send > sh.recv ? sh.send : sh.recv) * esz;
	if (res->bytes > p->cap || (unsigned)p->o.coll >= PROBE_NCOLL ||
	    (probe_coll_rooted(p->o.coll) && (p->o.root < 0 || p->o.root >= comm_size(p->c))))
		return COLL_EINVAL;
	if (p->o.check)
		probe_expected(p, &sh);
	for (int inplace = 0; inplace < 2 && rc == COLL_OK; inplace++) {
		struct probe_meas *m = &res->m[inplace];

		p->pos.inplace = inplace;
		m->wrong = -1;
		/* NCCL does not run all-to-all in place; nccl-tests times it unchecked too. */
		if (p->o.check && !(inplace && p->o.coll == PROBE_ALLTOALL &&
		    !p->e->inplace_alltoall) && (rc = probe_check(p, &sh, inplace, &m->wrong)) !=
		    COLL_OK)
			break;
		if ((rc = probe_time(p, &sh, inplace, &us)) == COLL_OK)
			rc = probe_combine(p, us, &sh, m);
	}
	return rc;
}

int
probe_allreduce(struct probe *p, size_t bytes, struct probe_result *res)
{
	enum probe_coll k = p->o.coll;
	int rc;

	p->o.coll = PROBE_ALLREDUCE;
	rc = probe_run(p, bytes, res);
	p->o.coll = k;
	return rc;
}
