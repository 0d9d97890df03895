/*
 * Waits followed across communicators (process groups). A job has many:
 * the world, and data, tensor and pipeline parallel groups. A rank behind
 * in the world's all-reduce may itself wait in a group's op for another
 * rank: it is a link, not a culprit, and the ranks of the world wait,
 * through it, for whatever the group waits for. The verdict names the root
 * causes only and prints each chain as one line:
 *
 *   ranks 2-3 wait in allreduce seq 9 of comm W for ranks 0-1; rank 0 (group
 *   rank 0) waits in allreduce seq 2 of comm G for rank 1 (group rank 1);
 *   rank 1 is in save_checkpoint (x.py:12)
 *
 * The communicators are the nodes of a graph, each link an edge from the
 * communicator it is behind in to the one whose op it is in. Communicators
 * that wait on each other round a cycle (found as the graph's strongly
 * connected components, Tarjan's, without recursion) are a deadlock: ranks
 * that call their groups' collectives in different orders.
 *
 * Every step is linear in the pages (a job of 80,000 ranks with a page per
 * group it is in): each communicator is expanded once, each edge followed
 * once, rank sets are folded from sorted lists.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collstack.h"
#include "rankset.h"
#include "xmalloc.h"

#define CHAIN_STEPS_MAX 8	/* communicators said in one line */
#define CHAIN_ROOTS_MAX 4	/* root causes said by where they are */

struct chain_comm {
	int a, n;		/* its members: m[a..a+n) */
	uint64_t top;		/* the op its most advanced ranks are in */
	unsigned kind;
	int waiting, behind;
	double idle;		/* since any of its members progressed */
	int edge0, nedges;	/* the communicators its links wait in: edge[edge0..) */
	int indeg, scc, cyclic, seen;
};

struct stk_chain {
	const struct stk_member *m;
	int nm, ncomms, ntasks;
	struct chain_comm *c;
	int *comm_of;		/* per member, its communicator */
	int *wait_comm;		/* per task, the communicator whose op it waits in; -1 */
	int *edge;
	int *stamp;		/* per task, the last line that named it */
	long work;		/* steps taken: the tests count them */
};

static int
chain_waiting(const struct stk_page *pg, uint64_t top)
{
	return pg->state == 3 && pg->seq_started == top;
}

static int
chain_behind(const struct stk_page *pg, uint64_t top)
{
	return top > 0 && !chain_waiting(pg, top) && pg->seq_done < top;
}

static int
chain_stalled(const struct chain_comm *c)
{
	return c->idle >= STK_STALL_S;
}

/* The communicator m[a..a+n): its op, who waits and who is behind, its last progress. */
static void
chain_comm_fill(struct stk_chain *ch, struct chain_comm *c)
{
	const struct stk_member *m = ch->m + c->a;

	c->idle = -1;
	for (int i = 0; i < c->n; i++) {
		if (m[i].pg->seq_started > c->top) {
			c->top = m[i].pg->seq_started;
			c->kind = m[i].pg->kind_started;
		}
		if (c->idle < 0 || m[i].pg->idle_s < c->idle)
			c->idle = m[i].pg->idle_s;
	}
	for (int i = 0; i < c->n; i++) {
		c->waiting += chain_waiting(m[i].pg, c->top);
		c->behind += chain_behind(m[i].pg, c->top);
	}
	ch->work += 2L * c->n;
}

/* Each task's op: where it waits (a stalled communicator first: that is where it hangs). */
static void
chain_wait_comms(struct stk_chain *ch)
{
	for (int i = 0; i < ch->ntasks; i++)
		ch->wait_comm[i] = -1;
	for (int i = 0; i < ch->nm; i++) {
		const struct chain_comm *c = &ch->c[ch->comm_of[i]];
		int *w = &ch->wait_comm[ch->m[i].task];

		if (!chain_waiting(ch->m[i].pg, c->top))
			continue;
		if (*w < 0 || (!chain_stalled(&ch->c[*w]) && chain_stalled(c)))
			*w = ch->comm_of[i];
	}
	ch->work += ch->nm;
}

int
stk_chain_link(const struct stk_chain *ch, const struct stk_member *mi)
{
	int i = (int)(mi - ch->m), c = ch->comm_of[i], w = ch->wait_comm[mi->task];

	return chain_behind(mi->pg, ch->c[c].top) && w >= 0 && w != c;
}

const char *
stk_chain_waits_in(const struct stk_chain *ch, int task)
{
	int w = task >= 0 && task < ch->ntasks ? ch->wait_comm[task] : -1;

	return w >= 0 && chain_stalled(&ch->c[w]) ? ch->m[ch->c[w].a].pg->commid : NULL;
}

/* The edges, as lists per communicator: a link's communicator, once per link. */
static void
chain_edges(struct stk_chain *ch)
{
	int total = 0;

	for (int i = 0; i < ch->nm; i++)
		if (chain_stalled(&ch->c[ch->comm_of[i]]) && stk_chain_link(ch, &ch->m[i]))
			ch->c[ch->comm_of[i]].nedges++;
	for (int k = 0; k < ch->ncomms; k++) {
		ch->c[k].edge0 = total;
		total += ch->c[k].nedges;
		ch->c[k].nedges = 0;
	}
	ch->edge = xcalloc((size_t)total + 1, sizeof *ch->edge);
	for (int i = 0; i < ch->nm; i++) {
		struct chain_comm *c = &ch->c[ch->comm_of[i]];
		int w = ch->wait_comm[ch->m[i].task];

		if (chain_stalled(c) && stk_chain_link(ch, &ch->m[i])) {
			ch->edge[c->edge0 + c->nedges++] = w;
			ch->c[w].indeg++;
		}
	}
	ch->work += 2L * ch->nm + ch->ncomms;
}

struct chain_tarjan {
	int *index, *low, *onstk, *stack, *call, *it;
	int next, sp, cs, nscc;
};

static void
chain_tarjan_push(struct chain_tarjan *t, int v)
{
	t->index[v] = t->low[v] = t->next++;
	t->stack[t->sp++] = v;
	t->onstk[v] = 1;
	t->it[v] = 0;
	t->call[t->cs++] = v;
}

/* v's component is complete: pop it; two or more communicators in it wait round a cycle. */
static void
chain_tarjan_pop(struct stk_chain *ch, struct chain_tarjan *t, int v)
{
	int from = t->sp, w;

	do {
		w = t->stack[--t->sp];
		t->onstk[w] = 0;
		ch->c[w].scc = t->nscc;
	} while (w != v);
	for (int k = t->sp; k < from && from - t->sp > 1; k++)
		ch->c[t->stack[k]].cyclic = 1;
	t->nscc++;
	ch->work += from - t->sp;
}

static void
chain_tarjan_from(struct stk_chain *ch, struct chain_tarjan *t, int s)
{
	chain_tarjan_push(t, s);
	while (t->cs > 0) {
		int v = t->call[t->cs - 1];
		const struct chain_comm *c = &ch->c[v];

		ch->work++;
		if (t->it[v] < c->nedges) {
			int w = ch->edge[c->edge0 + t->it[v]++];

			if (t->index[w] < 0)
				chain_tarjan_push(t, w);
			else if (t->onstk[w] && t->index[w] < t->low[v])
				t->low[v] = t->index[w];
			continue;
		}
		t->cs--;
		if (t->cs > 0 && t->low[v] < t->low[t->call[t->cs - 1]])
			t->low[t->call[t->cs - 1]] = t->low[v];
		if (t->low[v] == t->index[v])
			chain_tarjan_pop(ch, t, v);
	}
}

static void
chain_cycles(struct stk_chain *ch)
{
	size_t n = (size_t)ch->ncomms + 1;
	struct chain_tarjan t = { .index = xmalloc(n * sizeof(int)), .low = xmalloc(n * sizeof(int)),
		.onstk = xcalloc(n, sizeof(int)), .stack = xmalloc(n * sizeof(int)),
		.call = xmalloc(n * sizeof(int)), .it = xmalloc(n * sizeof(int)) };

	for (int k = 0; k < ch->ncomms; k++)
		t.index[k] = -1;
	for (int k = 0; k < ch->ncomms; k++)
		if (t.index[k] < 0)
			chain_tarjan_from(ch, &t, k);
	free(t.index);
	free(t.low);
	free(t.onstk);
	free(t.stack);
	free(t.call);
	free(t.it);
}

struct stk_chain *
stk_chain_new(const struct stk_result *r, const struct stk_member *m, int n)
{
	struct stk_chain *ch = xcalloc(1, sizeof *ch);

	ch->m = m;
	ch->nm = n;
	ch->ntasks = r->ntasks;
	ch->comm_of = xcalloc((size_t)n + 1, sizeof *ch->comm_of);
	ch->wait_comm = xcalloc((size_t)r->ntasks + 1, sizeof *ch->wait_comm);
	ch->stamp = xcalloc((size_t)r->ntasks + 1, sizeof *ch->stamp);
	ch->c = xcalloc((size_t)n + 1, sizeof *ch->c);	/* at most a communicator per page */
	for (int a = 0, b; a < n; a = b) {
		for (b = a; b < n && strcmp(m[b].pg->commid, m[a].pg->commid) == 0; b++)
			ch->comm_of[b] = ch->ncomms;
		ch->c[ch->ncomms] = (struct chain_comm){ .a = a, .n = b - a };
		chain_comm_fill(ch, &ch->c[ch->ncomms++]);
	}
	chain_wait_comms(ch);
	chain_edges(ch);
	chain_cycles(ch);
	return ch;
}

double
stk_chain_idle(const struct stk_chain *ch, const struct stk_member *mi)
{
	return ch->c[ch->comm_of[mi - ch->m]].idle;
}

/* Since the job's last progress in any communicator; -1 without pages. */
double
stk_chain_job_idle(const struct stk_chain *ch)
{
	double idle = -1;

	for (int k = 0; k < ch->ncomms; k++)
		if (idle < 0 || ch->c[k].idle < idle)
			idle = ch->c[k].idle;
	return idle;
}

long
stk_chain_work(const struct stk_chain *ch)
{
	return ch->work;
}

/* A line being built, cut at its size (stk_say's own bound). */
struct chain_line {
	char s[1024];
	size_t len;
};

static void __attribute__((format(printf, 2, 3)))
chain_cat(struct chain_line *l, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (l->len >= sizeof l->s - 1)
		return;
	va_start(ap, fmt);
	w = vsnprintf(l->s + l->len, sizeof l->s - l->len, fmt, ap);
	va_end(ap);
	l->len += w > 0 ? (size_t)w : 0;
	if (l->len > sizeof l->s - 1)
		l->len = sizeof l->s - 1;
}

static int
chain_int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Ranks v[0..n) folded ("0-3,7"), sorted first so that each is added at the end. */
static void
chain_fold(int *v, int n, char *buf, size_t len)
{
	struct rankset s = { 0 };

	qsort(v, (size_t)n, sizeof *v, chain_int_cmp);
	for (int i = 0; i < n; i++)
		if (v[i] >= 0 && v[i] < STACK_RANK_MAX)
			rankset_add(&s, v[i]);
	rankset_fold(&s, buf, len);
	rankset_free(&s);
}

/* The members of c that are waiting (want 1) or behind (want 0): "ranks 2-3 (group ranks 0-1)". */
static int
chain_who(struct stk_chain *ch, const struct stk_result *r, const struct chain_comm *c,
    int want, struct chain_line *l)
{
	int *id = xcalloc((size_t)c->n + 1, sizeof *id), *gr = xcalloc((size_t)c->n + 1,
	    sizeof *gr), k = 0, world = r->size > 0 ? r->size : r->ntasks;
	const struct stk_member *m = ch->m + c->a;
	char ids[256], grs[256];

	for (int i = 0; i < c->n; i++)
		if (want ? chain_waiting(m[i].pg, c->top) : chain_behind(m[i].pg, c->top)) {
			id[k] = r->tasks[m[i].task].id;
			gr[k++] = m[i].pg->rank;
		}
	ch->work += c->n;
	chain_fold(id, k, ids, sizeof ids);
	chain_cat(l, "%s%s %s", stk_label(r), k == 1 ? "" : "s", ids);
	if (m[0].pg->nranks != world) {
		chain_fold(gr, k, grs, sizeof grs);
		chain_cat(l, " (group rank%s %s)", k == 1 ? "" : "s", grs);
	}
	free(id);
	free(gr);
	return k;
}

/* One communicator's step: who waits in what, for whom. */
static void
chain_step(struct stk_chain *ch, const struct stk_result *r, const struct chain_comm *c,
    struct chain_line *l)
{
	const struct stk_page *pg = ch->m[c->a].pg;
	int k = chain_who(ch, r, c, 1, l);

	chain_cat(l, " wait%s in %s seq %llu of comm %s%s", k == 1 ? "s" : "",
	    stk_kind_name(c->kind), (unsigned long long)c->top, pg->nccl ? "NCCL 0x" : "",
	    pg->commid);
	if (c->behind > 0 && chain_stalled(c)) {
		chain_cat(l, " for ");
		(void)chain_who(ch, r, c, 0, l);
	} else if (c->n < pg->nranks) {
		chain_cat(l, " for the %d of its ranks with no status page here", pg->nranks - c->n);
	} else if (!chain_stalled(c)) {
		chain_cat(l, ", which advances");
	} else {
		chain_cat(l, ", where all %d ranks seen are in it", c->n);
	}
}

/* Where a root cause is: the frame its main thread is in, or its state. */
static void
chain_root(const struct stk_result *r, const struct stk_member *mi, struct chain_line *l)
{
	const struct stk_task *t = &r->tasks[mi->task];
	const struct stk_page *pg = mi->pg;

	chain_cat(l, "; %s %d ", stk_label(r), t->id);
	if (t->state == 'T' || t->state == 't')
		chain_cat(l, "is stopped");
	else if (t->state == 'Z' || t->state == 'G')
		chain_cat(l, "is gone");
	else if (pg->state == 4 || pg->state == 5)
		chain_cat(l, "%s at seq %llu", pg->state == 4 ? "failed" : "aborted",
		    (unsigned long long)pg->seq_done);
	else if (pg->state == 3)
		chain_cat(l, "is still in %s seq %llu", stk_kind_name(pg->kind_started),
		    (unsigned long long)pg->seq_started);
	else {
		chain_cat(l, "is %s", t->where != NULL ? "in " : "outside any collective");
		if (t->where != NULL)
			chain_cat(l, "%s", t->where);
		return;
	}
	if (t->where != NULL)
		chain_cat(l, ", in %s", t->where);
}

/* The root causes of the communicators q[0..nq): their members behind that are no links. */
static void
chain_roots(struct stk_chain *ch, const struct stk_result *r, const int *q, int nq, int line,
    struct chain_line *l)
{
	int said = 0, more = 0;

	for (int j = 0; j < nq; j++) {
		const struct chain_comm *c = &ch->c[q[j]];

		for (int i = c->a; i < c->a + c->n && chain_stalled(c); i++) {
			const struct stk_member *mi = &ch->m[i];

			ch->work++;
			if (!chain_behind(mi->pg, c->top) || stk_chain_link(ch, mi) ||
			    ch->stamp[mi->task] == line)
				continue;
			ch->stamp[mi->task] = line;
			if (said++ < CHAIN_ROOTS_MAX)
				chain_root(r, mi, l);
			else
				more++;
		}
	}
	if (more > 0)
		chain_cat(l, "; and %d more %s%s", more, stk_label(r), more == 1 ? "" : "s");
}

/* One chain, from a communicator no other's link waits in: each communicator said once. */
static void
chain_from(struct stk_chain *ch, const struct stk_result *r, struct stk_verdict *v, int head,
    int line, int *q)
{
	struct chain_line l = { .len = 0 };
	int nq = 0, cyclic = 0;

	q[nq++] = head;
	ch->c[head].seen = 1;
	for (int j = 0; j < nq; j++) {
		const struct chain_comm *c = &ch->c[q[j]];

		if (j < CHAIN_STEPS_MAX) {
			chain_cat(&l, "%s", j > 0 ? "; " : "");
			chain_step(ch, r, c, &l);
		}
		cyclic |= c->cyclic;
		for (int e = 0; e < c->nedges && !c->cyclic; e++) {
			int w = ch->edge[c->edge0 + e];

			ch->work++;
			if (!ch->c[w].seen) {
				ch->c[w].seen = 1;
				q[nq++] = w;
			}
		}
	}
	if (nq > CHAIN_STEPS_MAX)
		chain_cat(&l, "; and %d more communicators", nq - CHAIN_STEPS_MAX);
	chain_roots(ch, r, q, nq, line, &l);
	if (cyclic)
		chain_cat(&l, "; and a deadlock between communicators (below)");
	stk_say(v, "%s", l.s);
	stk_fact(v, "chain", -1, NULL, NULL, -1);
}

/* The ranks of a deadlock: links of the component's communicators that wait in it. */
static void
chain_deadlock(struct stk_chain *ch, const struct stk_result *r, struct stk_verdict *v,
    const int *comms, int n)
{
	struct chain_line l = { .len = 0 };
	int *ids, k = 0;
	size_t all = 1;
	char buf[256], op[96];

	for (int j = 0; j < n; j++)
		all += (size_t)ch->c[comms[j]].n;
	ids = xcalloc(all, sizeof *ids);
	chain_cat(&l, "deadlock between %d communicators: ", n);
	for (int j = 0; j < n; j++) {
		const struct chain_comm *c = &ch->c[comms[j]];

		if (j < CHAIN_STEPS_MAX) {
			chain_cat(&l, "%s", j > 0 ? "; " : "");
			chain_step(ch, r, c, &l);
		}
		snprintf(op, sizeof op, "%s seq %llu of comm %s%s, a deadlock",
		    stk_kind_name(c->kind), (unsigned long long)c->top,
		    ch->m[c->a].pg->nccl ? "NCCL 0x" : "", ch->m[c->a].pg->commid);
		for (int i = c->a; i < c->a + c->n; i++) {
			int w = ch->wait_comm[ch->m[i].task];

			ch->work++;
			if (!stk_chain_link(ch, &ch->m[i]) || ch->c[w].scc != c->scc)
				continue;
			ids[k++] = r->tasks[ch->m[i].task].id;
			stk_blame(v, ch->m[i].task, ch->m[i].pg->nccl ? STK_SRC_PLUGIN : STK_SRC_PAGE, op);
		}
	}
	chain_fold(ids, k, buf, sizeof buf);
	chain_cat(&l, ": %s%s %s wait on each other round the cycle (they call these "
	    "communicators' collectives in different orders)", stk_label(r), k == 1 ? "" : "s", buf);
	stk_say(v, "%s", l.s);
	stk_fact(v, "deadlock", -1, NULL, NULL, -1);
	stk_fact_ranks(v, buf);
	v->code = EXIT_PROBLEMS;
	free(ids);
}

/* The communicators of each cycle together (a counting sort by component), each said once. */
static void
chain_deadlocks(struct stk_chain *ch, const struct stk_result *r, struct stk_verdict *v)
{
	int nscc = 0, *start, *order;

	for (int k = 0; k < ch->ncomms; k++)
		nscc = ch->c[k].scc + 1 > nscc ? ch->c[k].scc + 1 : nscc;
	start = xcalloc((size_t)nscc + 2, sizeof *start);
	order = xcalloc((size_t)ch->ncomms + 1, sizeof *order);
	for (int k = 0; k < ch->ncomms; k++)
		start[ch->c[k].scc + 1]++;
	for (int s = 0; s < nscc; s++)
		start[s + 1] += start[s];
	for (int k = 0; k < ch->ncomms; k++)
		order[start[ch->c[k].scc]++] = k;
	for (int a = 0, b; a < ch->ncomms; a = b) {
		for (b = a; b < ch->ncomms && ch->c[order[b]].scc == ch->c[order[a]].scc; b++)
			;
		if (ch->c[order[a]].cyclic)
			chain_deadlock(ch, r, v, order + a, b - a);
	}
	ch->work += 3L * ch->ncomms + nscc;
	free(start);
	free(order);
}

void
stk_chain_say(struct stk_chain *ch, const struct stk_result *r, struct stk_verdict *v)
{
	int *q = xcalloc((size_t)ch->ncomms + 1, sizeof *q), line = 0;

	/* Heads first; then what only a cycle leads to. */
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < ch->ncomms; k++) {
			const struct chain_comm *c = &ch->c[k];

			if (c->nedges > 0 && !c->cyclic && !c->seen && (pass == 1 || c->indeg == 0))
				chain_from(ch, r, v, k, ++line, q);
		}
	chain_deadlocks(ch, r, v);
	free(q);
}

void
stk_chain_free(struct stk_chain *ch)
{
	if (ch == NULL)
		return;
	free(ch->c);
	free(ch->comm_of);
	free(ch->wait_comm);
	free(ch->edge);
	free(ch->stamp);
	free(ch);
}
