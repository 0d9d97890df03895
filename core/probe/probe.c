/*
 * Probe data is chosen so that the exact result is known: small integers whose
 * sums and products are exact in every type (for rank counts where they fit),
 * so #wrong means a wrong byte, not rounding. The expected result is computed
 * with the same typed kernels, rank by rank.
 */
#include <math.h>
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
	return nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0.0;
}

void
probe_fill(void *buf, size_t count, enum dtype dt, enum redop op, int rank)
{
	int sgn = dt == DT_INT8 || dt == DT_INT32 || dt == DT_INT64 || dtype_is_float(dt);

	for (size_t i = 0; i < count; i++) {
		size_t k = i + (size_t)rank * 7;
		double v;

		if (op == OP_PROD)
			v = (k % 11 == 0) ? 2 : ((sgn && k % 13 == 0) ? -1 : 1);
		else if (op == OP_MIN || op == OP_MAX)
			v = (double)((i * 13 + (size_t)rank * 7) % 17) - (sgn ? 8 : 0);
		else
			v = (double)(k % 5) - (sgn ? 2 : 0);
		dtype_set(buf, i, dt, v);
	}
}

int
probe_init(struct probe *p, struct comm *c, const struct probe_opts *o, size_t max_bytes)
{
	memset(p, 0, sizeof *p);
	p->c = c;
	p->o = *o;
	p->cap = max_bytes ? max_bytes : 1;
	p->send = malloc(p->cap);
	p->recv = malloc(p->cap);
	if (p->send == NULL || p->recv == NULL) {
		probe_free(p);
		return COLL_ENOMEM;
	}
	/* Touch the pages now so the first timed op does not pay for faults. */
	memset(p->send, 0, p->cap);
	memset(p->recv, 0, p->cap);
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
	free(p->send);
	free(p->recv);
	free(p->expect);
	free(p->tmp);
	memset(p, 0, sizeof *p);
}

void
probe_set_comm(struct probe *p, struct comm *c)
{
	p->c = c;
	memset(&p->pos, 0, sizeof p->pos);
}

/* Note the next collective: where it is, and one more op on the communicator. */
static void
probe_at(struct probe *p, enum probe_phase phase, int iter)
{
	p->pos.phase = phase;
	p->pos.iter = iter;
	p->pos.ops++;
}

static int
probe_op(struct probe *p, enum probe_phase phase, int iter, const void *src, void *dst,
    size_t count, enum dtype dt, enum redop op)
{
	probe_at(p, phase, iter);
	return coll_allreduce(p->c, src, dst, count, dt, op);
}

static void
probe_expected(struct probe *p, size_t count)
{
	int n = comm_size(p->c);

	probe_fill(p->expect, count, p->o.dt, p->o.op, 0);
	for (int r = 1; r < n; r++) {
		probe_fill(p->tmp, count, p->o.dt, p->o.op, r);
		reduce_apply(p->expect, p->expect, p->tmp, count, p->o.dt,
		    p->o.op == OP_AVG ? OP_SUM : p->o.op);
	}
	if (p->o.op == OP_AVG)
		reduce_avg_finish(p->expect, count, p->o.dt, n);
}

/* Relative tolerance only where sums of our small integers stop being exact. */
static double
probe_tolerance(enum dtype dt, int n)
{
	switch (dt) {
	case DT_FLOAT16: return n > 256 ? 1e-2 : 0;
	case DT_BFLOAT16: return n > 32 ? 5e-2 : 0;
	default: return 0;
	}
}

static int64_t
probe_count_wrong(struct probe *p, const uint8_t *got, size_t count)
{
	size_t esz = dtype_size(p->o.dt);
	double tol = probe_tolerance(p->o.dt, comm_size(p->c));
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

static int
probe_check(struct probe *p, size_t count, int inplace, int64_t *wrong)
{
	size_t bytes = count * dtype_size(p->o.dt);
	uint8_t *src = inplace ? p->recv : p->send;
	uint64_t h[2], hmin, hmax;
	int rc;

	probe_fill(src, count, p->o.dt, p->o.op, comm_rank(p->c));
	if ((rc = probe_op(p, PROBE_CHECK, 0, src, p->recv, count, p->o.dt, p->o.op)) != COLL_OK)
		return rc;
	*wrong = probe_count_wrong(p, p->recv, count);
	h[0] = h[1] = probe_hash(p->recv, bytes);
	if ((rc = probe_op(p, PROBE_CHECK, 0, &h[0], &hmin, 1, DT_UINT64, OP_MIN)) != COLL_OK ||
	    (rc = probe_op(p, PROBE_CHECK, 0, &h[1], &hmax, 1, DT_UINT64, OP_MAX)) != COLL_OK)
		return rc;
	if (hmin != hmax && *wrong == 0)
		*wrong = (int64_t)count;	/* ranks disagree: nobody can be trusted */
	return probe_op(p, PROBE_CHECK, 0, wrong, wrong, 1, DT_INT64, OP_SUM);
}

static int
probe_time(struct probe *p, size_t count, int inplace, double *us)
{
	uint8_t *src = inplace ? p->recv : p->send;
	uint64_t t0;
	int rc = COLL_OK;

	for (int i = 0; i < p->o.warmup && rc == COLL_OK; i++)
		rc = probe_op(p, PROBE_WARMUP, i + 1, src, p->recv, count, p->o.dt, p->o.op);
	if (rc == COLL_OK) {
		probe_at(p, PROBE_BARRIER, 0);
		rc = coll_barrier(p->c);
	}
	t0 = clock_now_ns();
	for (int i = 0; i < p->o.iters && rc == COLL_OK; i++)
		rc = probe_op(p, PROBE_TIMED, i + 1, src, p->recv, count, p->o.dt, p->o.op);
	*us = (double)(clock_now_ns() - t0) / 1e3 / (p->o.iters > 0 ? p->o.iters : 1);
	return rc;
}

/* Gather every rank's time: mean, and the slowest rank with its time. */
static int
probe_combine(struct probe *p, double us, size_t bytes, struct probe_meas *m)
{
	int n = comm_size(p->c), rc;
	double *all = xcalloc((size_t)n, sizeof *all), sum = 0;

	probe_at(p, PROBE_COMBINE, 0);
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
		m->algbw = m->time_us > 0 ? (double)bytes / (m->time_us * 1e3) : 0;
		m->busbw = m->algbw * probe_busbw_factor(n);
	}
	free(all);
	return rc;
}

int
probe_allreduce(struct probe *p, size_t bytes, struct probe_result *res)
{
	size_t count = bytes / dtype_size(p->o.dt);
	double us;
	int rc = COLL_OK;

	memset(res, 0, sizeof *res);
	res->count = count;
	res->bytes = count * dtype_size(p->o.dt);
	if (res->bytes > p->cap)
		return COLL_EINVAL;
	if (p->o.check)
		probe_expected(p, count);
	for (int inplace = 0; inplace < 2 && rc == COLL_OK; inplace++) {
		struct probe_meas *m = &res->m[inplace];

		p->pos.inplace = inplace;
		m->wrong = -1;
		if (p->o.check && (rc = probe_check(p, count, inplace, &m->wrong)) != COLL_OK)
			break;
		if ((rc = probe_time(p, count, inplace, &us)) == COLL_OK)
			rc = probe_combine(p, us, res->bytes, m);
	}
	return rc;
}
