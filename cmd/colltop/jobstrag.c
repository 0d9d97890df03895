/*
 * A job's own straggler and its retries, from its ranks' status pages.
 *
 * Each page keeps its last TOP_RING ops' times. An op seen complete on two
 * or more of the job's ranks (same job and communicator, any host) is
 * compared across them: a rank's wait is end - begin (NCCL's pages without
 * kernel events: end - queued), a difference of its own clock, so hosts'
 * clocks need not agree. The rank that comes last waits least: its
 * lateness to the op is the median of the others' waits less its own. A
 * rank's lateness for the interval is its median over the ops new since the
 * last one judged, and the probe's rule (rule.c) names the straggler. An
 * interval with no new ops keeps what the last found: a job that stopped is
 * the stall test's (model.c), not this one's.
 *
 * Only ops up to the newest every rank has finished are compared: a page
 * read a moment before another would otherwise be missing the last op, and
 * the rank it belongs to would escape that op's judgement.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "msg.h"
#include "top.h"
#include "xmalloc.h"

#define JOBSTRAG_MAX_WAIT_NS (3600ull * 1000000000ull)	/* longer: not a time */

static uint64_t
jobstrag_u64(json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/*
 * An op with a root (broadcast, reduce, gather, scatter) or between two
 * ranks: its ranks' waits differ by design (the root of a broadcast leaves
 * first), so it says nothing of who comes late. An op whose page does not
 * say its kind (0, or none) is compared.
 */
static int
jobstrag_rooted(json_t *kind)
{
	json_int_t k = json_is_integer(kind) ? json_integer_value(kind) : 0;

	return k == KIND_BROADCAST || k == KIND_REDUCE || k == KIND_GATHERV || k == KIND_GATHER ||
	    k == KIND_SCATTER || k == KIND_SEND || k == KIND_RECV || k == KIND_SENDRECV;
}

void
jobstrag_page(struct top_jobrank *x, json_t *page)
{
	json_t *ops = json_object_get(page, "ops"), *o, *v;
	size_t i;

	x->retries = jobstrag_u64(json_object_get(page, "retries"));
	v = json_object_get(page, "retry_peer");
	x->retry_peer = json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) < (1 << 24) ? (int)json_integer_value(v) : -1;
	v = json_object_get(page, "retry_age_s");
	x->retry_age_s = json_is_number(v) && json_number_value(v) >= 0 &&
	    x->retries > 0 ? json_number_value(v) : -1;
	v = json_object_get(page, "gpu");
	x->gpu = json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) < 4096 ? (int)json_integer_value(v) : -1;
	v = json_object_get(page, "gpu_bus");
	snprintf(x->gpu_bus, sizeof x->gpu_bus, "%s", json_is_string(v) ? json_string_value(v) : "");
	msg_clean(x->gpu_bus);
	memset(x->ops, 0, sizeof x->ops);
	json_array_foreach(ops, i, o) {
		uint64_t seq = jobstrag_u64(json_array_get(o, 0));
		struct top_op *op = &x->ops[seq % TOP_RING];

		if (i >= TOP_RING)
			break;
		if (seq == 0 || json_array_size(o) < 4 || json_array_size(o) > 5 ||
		    jobstrag_rooted(json_array_get(o, 4)))
			continue;
		*op = (struct top_op){ seq, jobstrag_u64(json_array_get(o, 1)),
		    jobstrag_u64(json_array_get(o, 2)), jobstrag_u64(json_array_get(o, 3)) };
	}
}

/* How long rank x waited in op seq (ns), -1 when its page does not say. */
static double
jobstrag_wait(const struct top_jobrank *x, uint64_t seq)
{
	const struct top_op *op = &x->ops[seq % TOP_RING];
	uint64_t from = op->begin_ns != 0 ? op->begin_ns : op->queued_ns;

	if (seq == 0 || op->seq != seq || from == 0 || op->end_ns < from ||
	    op->end_ns - from > JOBSTRAG_MAX_WAIT_NS)
		return -1;
	return (double)(op->end_ns - from);
}

static int
jobstrag_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The newest op every rank with ops has finished; 0 when fewer than two ranks have ops. */
static uint64_t
jobstrag_hi(const struct top_job *j)
{
	uint64_t hi = UINT64_MAX;
	int with = 0;

	for (int k = 0; k < j->nr; k++) {
		uint64_t top = 0;

		for (int s = 0; s < TOP_RING; s++)
			if (jobstrag_wait(&j->r[k], j->r[k].ops[s].seq) >= 0 && j->r[k].ops[s].seq > top)
				top = j->r[k].ops[s].seq;
		if (top > 0) {
			hi = top < hi ? top : hi;
			with++;
		}
	}
	return with < 2 ? 0 : hi;
}

/*
 * The ops to compare: new since j->judged_seq, up to hi (jobstrag_hi),
 * ascending (repeats left in), into seqs (room for nr * TOP_RING); their
 * count.
 */
static int
jobstrag_seqs(const struct top_job *j, uint64_t hi, uint64_t *seqs)
{
	int n = 0;

	if (hi == 0)
		return 0;
	for (int k = 0; k < j->nr; k++)
		for (int s = 0; s < TOP_RING; s++) {
			uint64_t q = j->r[k].ops[s].seq;

			if (q > j->judged_seq && q <= hi && jobstrag_wait(&j->r[k], q) >= 0)
				seqs[n++] = q;
		}
	if (n > 0)
		qsort(seqs, (size_t)n, sizeof *seqs, jobstrag_cmp_u64);
	return n;
}

/* Sorted, without repeats: the count left. */
static int
jobstrag_unique(uint64_t *v, int n)
{
	int w = 0;

	for (int i = 0; i < n; i++)
		if (w == 0 || v[i] != v[w - 1])
			v[w++] = v[i];
	return w;
}

/*
 * Each rank's lateness to op seq into late[k * TOP_RING + nlate[k]]: the
 * median of the others' waits less its own, never below 0 (early is not
 * late). 1 when two ranks or more had it, else 0.
 */
static int
jobstrag_op(const struct top_job *j, uint64_t seq, double *wait, double *sorted, double *late,
    int *nlate)
{
	int c = 0;

	for (int k = 0; k < j->nr; k++)
		if ((wait[k] = jobstrag_wait(&j->r[k], seq)) >= 0)
			sorted[c++] = wait[k];
	if (c < 2)
		return 0;
	rule_median(sorted, c);
	for (int k = 0; k < j->nr; k++)
		if (wait[k] >= 0 && nlate[k] < TOP_RING)
			late[k * TOP_RING + nlate[k]++] =
			    fmax(rule_median_others(sorted, c, wait[k]) - wait[k], 0) / 1e6;
	return 1;
}

struct jobstrag_key {
	int rank, pid, at;	/* at: index into the last frame's ranks */
};

static int
jobstrag_cmp_key(const void *a, const void *b)
{
	const struct jobstrag_key *x = a, *y = b;

	if (x->rank != y->rank)
		return (x->rank > y->rank) - (x->rank < y->rank);
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The last frame's rank that is x (the same rank, process and host); NULL none. */
static const struct top_jobrank *
jobstrag_was(const struct top_jobrank *x, const struct top_jobrank *was,
    const struct jobstrag_key *keys, int nwas)
{
	struct jobstrag_key want = { x->rank, x->pid, 0 };
	const struct jobstrag_key *e = bsearch(&want, keys, (size_t)nwas, sizeof *keys,
	    jobstrag_cmp_key);

	if (e == NULL)
		return NULL;
	while (e > keys && jobstrag_cmp_key(e - 1, &want) == 0)
		e--;
	for (; e < keys + nwas && jobstrag_cmp_key(e, &want) == 0; e++)
		if (strcmp(was[e->at].host, x->host) == 0)
			return &was[e->at];
	return NULL;
}

/*
 * This frame's ranks take what the last frame's knew of them: a search of
 * the last frame's ranks by (rank, pid), not a walk of them for each.
 */
static void
jobstrag_carry(struct top_job *j, const struct top_jobrank *was, int nwas)
{
	struct jobstrag_key *keys = xcalloc((size_t)nwas + 1, sizeof *keys);

	for (int i = 0; i < nwas; i++)
		keys[i] = (struct jobstrag_key){ was[i].rank, was[i].pid, i };
	if (nwas > 0)
		qsort(keys, (size_t)nwas, sizeof *keys, jobstrag_cmp_key);
	for (int k = 0; k < j->nr; k++) {
		struct top_jobrank *x = &j->r[k];
		const struct top_jobrank *w = jobstrag_was(x, was, keys, nwas);

		x->late_ms = w != NULL ? w->late_ms : -1;
		x->slow_run = w != NULL ? w->slow_run : 0;
		x->straggler = w != NULL ? w->straggler : 0;
		j->retrying |= w != NULL && x->retries > w->retries;
	}
	free(keys);
}

/* The rule over the ranks that came to this interval's ops. */
static void
jobstrag_rule(const struct top_model *m, struct top_job *j, const double *late, const int *nlate)
{
	double *lm = xcalloc((size_t)j->nr + 1, sizeof *lm), v[TOP_RING];
	int *slow = xcalloc((size_t)j->nr + 1, sizeof *slow);
	int *strag = xcalloc((size_t)j->nr + 1, sizeof *strag);
	int *idx = xcalloc((size_t)j->nr + 1, sizeof *idx), n = 0;

	for (int k = 0; k < j->nr; k++) {
		if (nlate[k] == 0)
			continue;
		memcpy(v, &late[k * TOP_RING], (size_t)nlate[k] * sizeof *v);
		j->r[k].late_ms = rule_median(v, nlate[k]);
		idx[n] = k;
		slow[n] = j->r[k].slow_run;
		lm[n++] = j->r[k].late_ms;
	}
	rule_judge(m->a, m->a->min_late_ms, m->frames > (uint64_t)m->a->warmup, lm, n, slow, strag);
	for (int i = 0; i < n; i++) {
		j->r[idx[i]].slow_run = slow[i];
		j->r[idx[i]].straggler = strag[i];
	}
	free(lm);
	free(slow);
	free(strag);
	free(idx);
}

/* Lateness over the new ops and the rule; nothing new: nothing changes. */
static void
jobstrag_late(const struct top_model *m, struct top_job *j)
{
	uint64_t *seqs = xcalloc((size_t)j->nr * TOP_RING + 1, sizeof *seqs);
	double *late = xcalloc((size_t)j->nr * TOP_RING + 1, sizeof *late);
	double *wait = xcalloc((size_t)j->nr + 1, sizeof *wait);
	double *sorted = xcalloc((size_t)j->nr + 1, sizeof *sorted);
	int *nlate = xcalloc((size_t)j->nr + 1, sizeof *nlate);
	uint64_t hi = jobstrag_hi(j);
	int n, compared = 0, from;

	/*
	 * Every rank finished only ops below the last judged: the job made its
	 * communicator again with the same ids and counts from 1 anew. Judge
	 * from there, or it would never be judged again.
	 */
	if (hi > 0 && hi < j->judged_seq)
		j->judged_seq = 0;
	n = jobstrag_unique(seqs, jobstrag_seqs(j, hi, seqs));

	/*
	 * The newest TOP_RING at most: a page's ring holds no more, and pages
	 * that each claim other ops must not make this a walk of ranks x ops.
	 */
	from = n > TOP_RING ? n - TOP_RING : 0;

	for (int i = from; i < n; i++)
		compared += jobstrag_op(j, seqs[i], wait, sorted, late, nlate);
	if (compared > 0) {
		j->nops = compared;
		j->judged_seq = seqs[n - 1];
		jobstrag_rule(m, j, late, nlate);
	}
	free(seqs);
	free(late);
	free(wait);
	free(sorted);
	free(nlate);
}

/* The job's retries: the most any rank counts, and whether one came lately. */
static void
jobstrag_retries(const struct top_model *m, struct top_job *j)
{
	double recent = fmax(m->a->stall_s, 2 * m->interval_s);

	j->retries = 0;
	for (int k = 0; k < j->nr; k++) {
		const struct top_jobrank *x = &j->r[k];

		j->retries = x->retries > j->retries ? x->retries : j->retries;
		j->retrying |= x->retry_age_s >= 0 && x->retry_age_s <= recent;
	}
}

void
jobstrag_judge(const struct top_model *m, struct top_job *j, const struct top_jobrank *was,
    int nwas)
{
	j->retrying = 0;
	jobstrag_carry(j, was, nwas);
	jobstrag_late(m, j);
	jobstrag_retries(m, j);
	j->straggler = -1;
	for (int k = 0; k < j->nr; k++)
		if (j->r[k].straggler && (j->straggler < 0 ||
		    j->r[k].late_ms > j->r[j->straggler].late_ms))
			j->straggler = k;
}
