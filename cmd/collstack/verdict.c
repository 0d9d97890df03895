/*
 * The verdict, printed above the tree: which ranks the others wait for.
 *
 * Per communicator (from the status pages), the op the most advanced ranks
 * are in is the one everyone should reach: ranks in it are waiting; a rank at
 * a lower sequence number (outside any collective, or still in an older op)
 * is behind, and is named with where its main thread is. Whatever the
 * sequence numbers say, a rank whose process is stopped, a zombie, gone, or
 * missing altogether (no process carries it) holds the others up too.
 *
 * Every step is linear in the tasks (or n log n): a job of 80,000 ranks,
 * half of them behind, is judged in moments, where a search of every task
 * for every task took hours.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collstack.h"
#include "kind.h"
#include "msg.h"
#include "xmalloc.h"

#define STK_IDLE_S 1.0	/* no progress for this long: the job is stuck, not busy */
/* Every rank outside communication this long, none late: a problem, not a compute phase. */
#define STK_QUIET_S 10.0

const char *
stk_kind_name(unsigned kind)
{
	const char *n = coll_kind_name((enum coll_kind)kind);

	return n != NULL ? n : "op";
}

/* A line's kind until stk_fact says: what its source is, by the words it begins with. */
static const char *
stk_fact_kind(const char *line)
{
	static const struct { const char *start, *kind; } k[] = {
		{ "NCCL RAS:", "ras" }, { "flight recorder:", "flight_recorder" },
		{ "GPUs on ", "gpus" }, { "comm ", "comm" },
	};

	for (size_t i = 0; i < sizeof k / sizeof *k; i++)
		if (strncmp(line, k[i].start, strlen(k[i].start)) == 0)
			return k[i].kind;
	return "note";
}

void
stk_say(struct stk_verdict *v, const char *fmt, ...)
{
	va_list ap;
	char buf[1024];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (v->n == v->line_cap) {
		v->line_cap = v->line_cap ? v->line_cap * 2 : 16;
		v->line = xreallocarray(v->line, (size_t)v->line_cap, sizeof *v->line);
		v->fact = xreallocarray(v->fact, (size_t)v->line_cap, sizeof *v->fact);
	}
	v->fact[v->n] = (struct stk_fact){ .kind = stk_fact_kind(buf), .task = -1, .seq = -1 };
	/* A line about one communicator begins "comm ID:": its id, until stk_fact says more. */
	if (strncmp(buf, "comm ", 5) == 0 && strchr(buf, ':') != NULL)
		snprintf(v->fact[v->n].comm, sizeof v->fact[v->n].comm, "%.*s",
		    (int)(strchr(buf, ':') - buf - 5), buf + 5);
	v->line[v->n++] = xstrdup(buf);
}

void
stk_fact(struct stk_verdict *v, const char *kind, int task, const char *comm, const char *op,
    long long seq)
{
	struct stk_fact *f = &v->fact[v->n - 1];

	f->kind = kind;
	f->task = task;
	snprintf(f->comm, sizeof f->comm, "%s", comm != NULL ? comm : "");
	f->op = op;
	f->seq = seq;
}

void
stk_fact_ranks(struct stk_verdict *v, const char *ranks)
{
	free(v->fact[v->n - 1].ranks);
	v->fact[v->n - 1].ranks = xstrdup(ranks);
}

/* Task is one the others wait for, says source src; op is what it is behind in, if known. */
void
stk_blame(struct stk_verdict *v, int task, unsigned src, const char *op)
{
	int i = v->slot[task] - 1;

	v->code = EXIT_PROBLEMS;
	if (i < 0) {
		if (v->nculprits == v->culprit_cap) {
			size_t cap = v->culprit_cap ? (size_t)v->culprit_cap * 2 : 16;

			v->culprits = xreallocarray(v->culprits, cap, sizeof *v->culprits);
			v->sources = xreallocarray(v->sources, cap, sizeof *v->sources);
			v->op = xreallocarray(v->op, cap, sizeof *v->op);
			v->culprit_cap = (int)cap;
		}
		i = v->nculprits++;
		v->culprits[i] = task;
		v->sources[i] = 0;
		v->op[i] = NULL;
		v->slot[task] = i + 1;
	}
	v->sources[i] |= src;
	if (v->op[i] == NULL && op != NULL)
		v->op[i] = xstrdup(op);
}

const char *
stk_label(const struct stk_result *r)
{
	return r->by_rank ? "rank" : "task";
}

/* Processes that cannot take part: stopped, zombie, gone, unreadable. */
static void
stk_states(const struct stk_result *r, struct stk_verdict *v)
{
	for (int i = 0; i < r->ntasks; i++) {
		const struct stk_task *t = &r->tasks[i];
		const char *what = NULL, *kind = NULL;

		if (t->state == 'T')
			what = "is stopped (SIGSTOP or SIGTSTP: send SIGCONT to resume it)", kind = "stopped";
		else if (t->state == 't')
			what = "is stopped by a debugger", kind = "traced";
		else if (t->state == 'Z')
			what = "is a zombie: it exited and was not reaped", kind = "zombie";
		else if (t->state == 'G')
			what = "is gone", kind = "gone";
		if (what != NULL) {
			stk_say(v, "%s %d (%s, pid %d) %s%s%s", stk_label(r), t->id, t->host, t->pid,
			    what, (t->state == 'G' || t->state == 'Z') && t->err ? ": " : "",
			    (t->state == 'G' || t->state == 'Z') && t->err ? t->err : "");
			stk_fact(v, kind, i, NULL, NULL, -1);
			stk_blame(v, i, STK_SRC_PROC, NULL);
		}
		if (t->err != NULL && t->state != 'Z' && t->state != 'G') {
			stk_say(v, "%s %d (%s, pid %d): no stacks: %s", stk_label(r), t->id, t->host,
			    t->pid, t->err);
			stk_fact(v, "unreadable", i, NULL, NULL, -1);
		}
	}
}

static void
stk_missing(const struct stk_result *r, struct stk_verdict *v)
{
	struct rankset miss = { 0 };
	char buf[256];
	int k = 0;

	if (!r->by_rank || r->size <= 0)
		return;
	for (int rank = 0; rank < r->size; rank++) {
		while (k < r->ntasks && r->tasks[k].id < rank)
			k++;
		if (k == r->ntasks || r->tasks[k].id != rank)
			rankset_add(&miss, rank);
	}
	if (miss.n > 0) {
		rankset_fold(&miss, buf, sizeof buf);
		stk_say(v, "rank%s %s of %d %s missing: no process carries %s on the hosts searched",
		    rankset_count(&miss) > 1 ? "s" : "", buf, r->size,
		    rankset_count(&miss) > 1 ? "are" : "is",
		    rankset_count(&miss) > 1 ? "them" : "it");
		stk_fact(v, "missing", -1, NULL, NULL, -1);
		stk_fact_ranks(v, buf);
		v->code = EXIT_PROBLEMS;
	}
	rankset_free(&miss);
}

/* Where a behind rank is: its op, or outside any. */
static void
stk_behind_line(const struct stk_result *r, struct stk_verdict *v, const struct stk_member *m,
    const char *comm, const char *tail)
{
	const struct stk_task *t = &r->tasks[m->task];
	const struct stk_page *p = m->pg;
	char at[320];

	if (p->nccl && p->state != 4 && p->state != 5)
		snprintf(at, sizeof at, "enqueued collectives up to seq %llu and not the next",
		    (unsigned long long)p->seq_started);
	else if (p->state == 3)
		snprintf(at, sizeof at, "is in %s seq %llu", stk_kind_name(p->kind_started),
		    (unsigned long long)p->seq_started);
	else if (p->state == 4 || p->state == 5)
		snprintf(at, sizeof at, "%s at seq %llu: %s", p->state == 4 ? "failed" : "aborted",
		    (unsigned long long)p->seq_done, p->error);
	else
		snprintf(at, sizeof at, "is at seq %llu outside any collective",
		    (unsigned long long)p->seq_done);
	stk_say(v, "%s %d (%s, pid %d) %s%s%s; %s", stk_label(r), t->id, t->host, t->pid, at,
	    t->where ? ", in " : "", t->where ? t->where : "", tail);
	stk_fact(v, "behind", m->task, comm, p->state == 3 ? stk_kind_name(p->kind_started) :
	    NULL, (long long)(p->state == 3 || p->nccl ? p->seq_started : p->seq_done));
}

/* A waiting rank's peer, or -1. */
static int
stk_waits_on(const struct stk_page *pg, uint64_t seq)
{
	return pg->state == 3 && pg->seq_started == seq && pg->wait_peer >= 0 ?
	    pg->wait_peer : -1;
}

static int
stk_key_cmp(const void *a, const void *b)
{
	const struct stk_key *x = a, *y = b;

	if (x->key != y->key)
		return (x->key > y->key) - (x->key < y->key);
	return (x->task > y->task) - (x->task < y->task);
}

/* Every task under its key (its pid or rank), sorted: a lookup is a binary search. */
static struct stk_key *
stk_keys(const struct stk_result *r, int by_pid)
{
	struct stk_key *k = xcalloc((size_t)r->ntasks + 1, sizeof *k);

	for (int i = 0; i < r->ntasks; i++)
		k[i] = (struct stk_key){ by_pid ? r->tasks[i].pid : r->tasks[i].rank, i };
	qsort(k, (size_t)r->ntasks, sizeof *k, stk_key_cmp);
	return k;
}

/* The first of the sorted k[0..n) under key or above (above: past key). */
static int
stk_keys_bound(const struct stk_key *k, int n, long key, int above)
{
	int lo = 0, hi = n;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (k[mid].key < key || (above && k[mid].key == key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first of the sorted k[0..n) under key, and how many there are (0: none). */
static int
stk_keys_find(const struct stk_key *k, int n, long key, int *count)
{
	int first = stk_keys_bound(k, n, key, 0);

	*count = stk_keys_bound(k, n, key, 1) - first;
	return first;
}

/*
 * The peer most of the waiting ranks wait on (the first such, on a tie),
 * counted in the sorted list of their peers: any peer a page names counts,
 * however large.
 */
static int
stk_common_peer(const struct stk_member *m, int n, uint64_t seq, int *count)
{
	struct stk_key *peers = xcalloc((size_t)n + 1, sizeof *peers);
	int best = -1, bestn = 0, np = 0;

	for (int i = 0; i < n; i++)
		if (stk_waits_on(m[i].pg, seq) >= 0)
			peers[np++] = (struct stk_key){ stk_waits_on(m[i].pg, seq), i };
	qsort(peers, (size_t)np, sizeof *peers, stk_key_cmp);
	for (int i = 0; i < n; i++) {
		int p = stk_waits_on(m[i].pg, seq), c;

		if (p < 0 || p == best)
			continue;
		(void)stk_keys_find(peers, np, p, &c);
		if (c > bestn) {
			bestn = c;
			best = p;
		}
	}
	free(peers);
	*count = bestn;
	return best;
}

/* Each member's index by its comm rank (the first, if two claim one); -1 none. */
static int *
stk_members_by_rank(const struct stk_member *m, int n, int *len)
{
	int top = -1, *at;

	for (int i = 0; i < n; i++)
		if (m[i].pg->rank >= 0 && m[i].pg->rank < STACK_RANK_MAX && m[i].pg->rank > top)
			top = m[i].pg->rank;
	at = xmalloc(((size_t)top + 2) * sizeof *at);
	for (int k = 0; k <= top; k++)
		at[k] = -1;
	for (int i = 0; i < n; i++)
		if (m[i].pg->rank >= 0 && m[i].pg->rank <= top && at[m[i].pg->rank] < 0)
			at[m[i].pg->rank] = i;
	*len = top + 1;
	return at;
}

/*
 * Where each member's chain of waits ends: the first member down it that
 * waits on no peer, or -1 (a cycle, or a peer with no page here). Each
 * member is walked once: a chain's members all end where it does.
 */
static int *
stk_wait_ends(const struct stk_member *m, int n)
{
	enum { UNKNOWN = -2, ON_PATH = -3 };
	int len, *at = stk_members_by_rank(m, n, &len), *end = xmalloc(((size_t)n + 1) *
	    sizeof *end), *path = xmalloc(((size_t)n + 1) * sizeof *path);

	for (int i = 0; i < n; i++)
		end[i] = UNKNOWN;
	for (int i = 0; i < n; i++) {
		int k = i, np = 0, e;

		for (;;) {
			int p = m[k].pg->wait_peer;

			if (end[k] != UNKNOWN) {
				e = end[k] == ON_PATH ? -1 : end[k];
				break;
			}
			path[np++] = k;
			if (p < 0) {
				e = k;
				break;
			}
			end[k] = ON_PATH;
			if (p >= len || at[p] < 0) {
				e = -1;
				break;
			}
			k = at[p];
		}
		while (np > 0)
			end[path[--np]] = e;
	}
	free(at);
	free(path);
	return end;
}

/*
 * Inside the op all are in, follow who waits on whom: a rank the others
 * wait on, directly or down a chain, that itself waits on no peer is stuck
 * outside communication (computing, or hung) while everyone waits for it.
 * Only once the op has made no progress for a while: a running job's waits
 * come and go.
 */
static int
stk_sinks(const struct stk_result *r, struct stk_verdict *v, const struct stk_member *m, int n,
    uint64_t top, const char *comm)
{
	double idle = 0;
	char op[96];
	int *end, *waiters, named = 0;

	for (int i = 0; i < n; i++)
		idle = m[i].pg->idle_s > idle ? m[i].pg->idle_s : idle;
	if (idle < STK_IDLE_S)
		return 0;
	end = stk_wait_ends(m, n);
	waiters = xcalloc((size_t)n + 1, sizeof *waiters);
	for (int i = 0; i < n; i++)
		if (end[i] >= 0 && end[i] != i)
			waiters[end[i]]++;
	for (int s = 0; s < n; s++) {
		const struct stk_task *t = &r->tasks[m[s].task];

		if (m[s].pg->state != 3 || m[s].pg->seq_started != top || m[s].pg->wait_peer >= 0)
			continue;
		if (waiters[s] == 0)
			continue;
		stk_say(v, "%s %d (%s, pid %d) is in %s seq %llu but waits on no peer: it is stuck "
		    "outside communication%s%s; %d rank%s wait on it (comm %s)", stk_label(r), t->id,
		    t->host, t->pid, stk_kind_name(m[s].pg->kind_started),
		    (unsigned long long)top, t->where ? ", in " : "", t->where ? t->where : "",
		    waiters[s], waiters[s] == 1 ? "" : "s", comm);
		stk_fact(v, "stuck_outside", m[s].task, comm, stk_kind_name(m[s].pg->kind_started),
		    (long long)top);
		snprintf(op, sizeof op, "%s seq %llu of comm %s", stk_kind_name(m[s].pg->kind_started),
		    (unsigned long long)top, comm);
		stk_blame(v, m[s].task, m[s].pg->nccl ? STK_SRC_PLUGIN : STK_SRC_PAGE, op);
		named++;
	}
	free(end);
	free(waiters);
	return named;
}

/* Judged on the GPU side (verdict_gpu.c): a few communicators, looked up one by one. */
static int
stk_gpu_judged(const struct stk_verdict *v, const char *commid)
{
	for (int i = 0; i < v->ngpu_comms; i++)
		if (strcmp(v->gpu_comms[i], commid) == 0)
			return 1;
	return 0;
}

/*
 * One communicator. A rank behind that waits in another communicator's op
 * is a link of a chain (chain.c says it), not a culprit; while the
 * communicator still advances, ranks at different ops are a running job's,
 * and only a failed one is named.
 */
static void
stk_comm(const struct stk_result *r, struct stk_verdict *v, struct stk_chain *ch,
    const struct stk_member *m, int n)
{
	uint64_t top = 0;
	int waiting = 0, behind = 0, peer, npeer, nranks = m[0].pg->nranks, named = 0;
	double idle = stk_chain_idle(ch, &m[0]);
	unsigned kind = 0;
	char tail[256], comm[40], op[96];

	for (int i = 0; i < n; i++)
		if (m[i].pg->seq_started > top) {
			top = m[i].pg->seq_started;
			kind = m[i].pg->kind_started;
		}
	/* Ranks that finished the op already (a root, a sender) are neither waiting nor behind. */
	for (int i = 0; i < n; i++) {
		waiting += m[i].pg->state == 3 && m[i].pg->seq_started == top;
		behind += !(m[i].pg->state == 3 && m[i].pg->seq_started == top) &&
		    m[i].pg->seq_done < top;
	}
	/* An NCCL communicator is named as NCCL's RAS names it. */
	snprintf(comm, sizeof comm, "%s%s", m[0].pg->nccl ? "NCCL 0x" : "", m[0].pg->commid);
	snprintf(op, sizeof op, "%s seq %llu of comm %s", stk_kind_name(kind),
	    (unsigned long long)top, comm);
	peer = stk_common_peer(m, n, top, &npeer);
	snprintf(tail, sizeof tail, "%d rank%s wait%s in %s seq %llu (comm %s)", waiting,
	    waiting == 1 ? "" : "s", waiting == 1 ? "s" : "", stk_kind_name(kind),
	    (unsigned long long)top, comm);
	for (int i = 0; i < n && top > 0; i++)
		if (!(m[i].pg->state == 3 && m[i].pg->seq_started == top) &&
		    m[i].pg->seq_done < top && !stk_chain_link(ch, &m[i]) &&
		    (idle >= STK_STALL_S || m[i].pg->state == 4 || m[i].pg->state == 5)) {
			stk_behind_line(r, v, &m[i], comm, tail);
			stk_blame(v, m[i].task, m[i].pg->nccl ? STK_SRC_PLUGIN : STK_SRC_PAGE, op);
		}
	if (n < nranks)
	{
		stk_say(v, "comm %s: %d of its %d ranks have no status page here", comm, nranks - n,
		    nranks);
		stk_fact(v, "pages_missing", -1, comm, NULL, -1);
	}
	if (waiting > 0)
		named = stk_sinks(r, v, m, n, top, comm);
	/*
	 * Every rank in the op and none late: a hang inside it, once it has
	 * stopped moving; of an NCCL communicator with kernel events, the GPU
	 * side says which (verdict_gpu.c: a GPU that never began it, a desync).
	 */
	if (behind == 0 && waiting > 0 && named == 0 &&
	    idle >= (m[0].pg->nccl ? STK_GPU_IDLE_S : STK_STALL_S) &&
	    !stk_gpu_judged(v, m[0].pg->commid)) {
		stk_say(v, "comm %s: all %d ranks seen are in %s seq %llu and none has progressed "
		    "for %.1f s: no rank is late; the hang is inside the collective (its library, "
		    "the device or the network)", comm, n, stk_kind_name(kind),
		    (unsigned long long)top, idle);
		stk_fact(v, "hung_inside", -1, comm, stk_kind_name(kind), (long long)top);
		v->code = EXIT_PROBLEMS;
	}
	if (peer >= 0 && npeer > 1) {
		stk_say(v, "comm %s: %d of the waiting ranks wait on comm rank %d", comm, npeer,
		    peer);
		stk_fact(v, "waits_on", -1, comm, stk_kind_name(kind), (long long)top);
	}
}

/* The task of pid, where exactly one has it; -1 otherwise. */
static int
stk_task_of_pid(const struct stk_result *r, const struct stk_verdict *v, json_int_t pid)
{
	int count, at = stk_keys_find(v->by_pid, r->ntasks, (long)pid, &count);

	/* Two hosts, one pid: RAS's host is an address, so neither is named. */
	return count == 1 ? v->by_pid[at].task : -1;
}

/* Task waits in a stalled communicator other than RAS's hash ("0x" and the page's id). */
static int
stk_ras_link(const struct stk_chain *ch, int task, const char *hash)
{
	const char *in = stk_chain_waits_in(ch, task);

	/* Numbers, not text: RAS may leave out the leading zeros the page's id keeps. */
	return in != NULL && strtoull(in, NULL, 16) != strtoull(hash, NULL, 16);
}

/* One op of one communicator: the ranks whose count is below the newest are behind. */
static int
stk_ras_op(const struct stk_result *r, struct stk_verdict *v, const struct stk_chain *ch,
    json_t *c, const char *hash, const char *op)
{
	json_t *ranks = json_object_get(c, "ranks"), *x;
	json_int_t top = -1;
	int ahead = 0, behind = 0;
	size_t i;

	json_array_foreach(ranks, i, x) {
		json_t *n = json_object_get(json_object_get(x, "counts"), op);

		if (json_is_integer(n) && json_integer_value(n) > top)
			top = json_integer_value(n);
	}
	json_array_foreach(ranks, i, x)
		ahead += json_integer_value(json_object_get(json_object_get(x, "counts"), op)) == top;
	json_array_foreach(ranks, i, x) {
		json_t *n = json_object_get(json_object_get(x, "counts"), op);
		json_int_t pid = json_integer_value(json_object_get(x, "pid"));
		int t;

		if (!json_is_integer(n) || json_integer_value(n) == top)
			continue;
		t = stk_task_of_pid(r, v, pid);
		stk_say(v, "NCCL RAS: communicator %s: rank %lld (pid %lld) launched %s up to "
		    "%lld while %d other%s %s at %lld: it is behind%s%s", hash,
		    (long long)json_integer_value(json_object_get(x, "rank")), (long long)pid, op,
		    (long long)json_integer_value(n), ahead, ahead == 1 ? "" : "s",
		    ahead == 1 ? "is" : "are", (long long)top,
		    t >= 0 && r->tasks[t].where ? ", in " : "",
		    t >= 0 && r->tasks[t].where ? r->tasks[t].where : "");
		if (t >= 0 && stk_ras_link(ch, t, hash)) {
			stk_say(v, "NCCL RAS: communicator %s: rank %lld waits in communicator 0x%s: "
			    "a link of the chain above, not its cause", hash,
			    (long long)json_integer_value(json_object_get(x, "rank")),
			    stk_chain_waits_in(ch, t));
		} else if (t >= 0) {
			char what[160];

			snprintf(what, sizeof what, "%s %lld of NCCL %s", op, (long long)top, hash);
			stk_blame(v, t, STK_SRC_RAS, what);
		}
		v->code = EXIT_PROBLEMS;
		behind++;
	}
	return behind;
}

/* NCCL RAS's view: ranks behind in an op's count, missing ranks, errors. */
static void
stk_ras(const struct stk_result *r, struct stk_verdict *v, const struct stk_chain *ch)
{
	json_t *c, *x, *v1;
	size_t i, k;
	int behind = 0, ncomm = 0;
	const char *op;

	json_array_foreach(json_object_get(r->ras, "comms"), i, c) {
		const char *hash = json_string_value(json_object_get(c, "hash"));
		json_t *ops = json_object();

		if (hash == NULL)
			hash = "?";

		ncomm++;
		json_array_foreach(json_object_get(c, "ranks"), k, x) {
			json_object_foreach(json_object_get(x, "counts"), op, v1)
				json_object_set_new(ops, op, json_true());
			if (json_integer_value(json_object_get(x, "async_error")) != 0 ||
			    json_is_true(json_object_get(x, "abort")))
				stk_say(v, "NCCL RAS: communicator %s: rank %lld (pid %lld) has async "
				    "error %lld%s", hash,
				    (long long)json_integer_value(json_object_get(x, "rank")),
				    (long long)json_integer_value(json_object_get(x, "pid")),
				    (long long)json_integer_value(json_object_get(x, "async_error")),
				    json_is_true(json_object_get(x, "abort")) ? ", aborted" : "");
		}
		json_object_foreach(ops, op, v1)
			behind += stk_ras_op(r, v, ch, c, hash, op);
		json_decref(ops);
		if (json_array_size(json_object_get(c, "missing")) > 0) {
			struct rankset miss = { 0 };
			char buf[256];

			json_array_foreach(json_object_get(c, "missing"), k, x)
				if (json_integer_value(x) >= 0 && json_integer_value(x) < STACK_RANK_MAX)
					rankset_add(&miss, (int)json_integer_value(x));
			rankset_fold(&miss, buf, sizeof buf);
			stk_say(v, "NCCL RAS: communicator %s: rank%s %s did not answer it (their "
			    "process or host is gone or unreachable)", hash,
			    rankset_count(&miss) == 1 ? "" : "s", buf);
			rankset_free(&miss);
			v->code = EXIT_PROBLEMS;
		}
	}
	if (behind == 0 && ncomm > 0)
		stk_say(v, "NCCL RAS: in each of its %d communicator%s every rank launched as many "
		    "collectives", ncomm, ncomm == 1 ? "" : "s");
}

/* The flight recorder's findings (live dumps): ranks that did not join, or disagree. */
static void
stk_fr_blame(const struct stk_result *r, struct stk_verdict *v)
{
	json_t *x;
	size_t i;

	json_array_foreach(r->fr_lines, i, x)
		stk_say(v, "flight recorder: %s", json_string_value(x));
	json_array_foreach(r->fr_findings, i, x) {
		const char *kind = json_string_value(json_object_get(x, "kind"));
		json_int_t rank = json_integer_value(json_object_get(x, "rank"));
		char what[224];

		/* A mismatch is said, not blamed: the odd one out may be the rank compared with. */
		if (kind == NULL || strcmp(kind, "not_joined") != 0)
			continue;
		const char *op = json_string_value(json_object_get(x, "op"));
		const char *pg = json_string_value(json_object_get(x, "pg"));
		const char *thread = json_string_value(json_object_get(x, "thread"));

		/* The thread (format 2.10) that made the rank's newest entry: whose stack to read. */
		snprintf(what, sizeof what, "%.48s seq %lld of process group %.32s%s%.40s%s",
		    op ? op : "op", (long long)json_integer_value(json_object_get(x, "seq")),
		    pg ? pg : "?", thread ? " on thread '" : "", thread ? thread : "",
		    thread ? "'" : "");
		msg_clean(what);	/* names from the dumps */
		int count, at = stk_keys_find(v->by_rank, r->ntasks, (long)rank, &count);

		for (int k = at; k < at + count; k++)
			stk_blame(v, v->by_rank[k].task, STK_SRC_FR, what);
	}
}

/*
 * No culprit from the pages: "no rank is behind" only where the job
 * advances; a job that has made no progress for a while is a problem even
 * when no rank is behind (every rank outside communication, stuck or
 * computing: the stacks show which).
 */
static void
stk_progress(struct stk_verdict *v, double idle)
{
	if (idle < STK_STALL_S) {
		stk_say(v, "no rank is behind: the job advances (its last progress %.2f s ago)", idle);
		stk_fact(v, "advances", -1, NULL, NULL, -1);
		return;
	}
	/* A forward pass or an optimizer step runs seconds without a collective. */
	if (idle < STK_QUIET_S) {
		stk_say(v, "no rank is behind: no collective has moved for %.1f s, none waits for "
		    "another (computing, by the stacks below); run again to see it move", idle);
		stk_fact(v, "computing", -1, NULL, NULL, -1);
		return;
	}
	stk_say(v, "no progress for %.1f s, and no rank is late by the status pages: the stacks "
	    "below show where each is", idle);
	stk_fact(v, "no_progress", -1, NULL, NULL, -1);
	v->code = EXIT_PROBLEMS;
}

/*
 * A job without status pages (an MPI job, gloo's): the stacks alone. The
 * ranks whose main threads are outside communication, where at least as
 * many are inside it, are what those wait for. One look cannot tell a hang
 * from a passing moment: the line says so.
 */
static void
stk_stacks_alone(const struct stk_result *r, struct stk_verdict *v)
{
	int out = 0, in = 0;

	for (int k = 0; k < r->ntasks; k++) {
		out += r->tasks[k].in_comm == 0;
		in += r->tasks[k].in_comm == 1;
	}
	if (out == 0 || in < out)
		return;
	for (int k = 0; k < r->ntasks; k++) {
		const struct stk_task *t = &r->tasks[k];

		if (t->in_comm != 0)
			continue;
		stk_say(v, "%s %d (%s, pid %d) is outside communication%s%s while %d other%s %s in "
		    "a collective (MPI, NCCL, gloo, coll, c10d or torch.distributed frames); from one "
		    "look at the stacks: run collstack again to see it stays", stk_label(r), t->id,
		    t->host, t->pid, t->where ? ", in " : "", t->where ? t->where : "", in,
		    in == 1 ? "" : "s", in == 1 ? "is" : "are");
		stk_fact(v, "outside_communication", k, NULL, NULL, -1);
		stk_blame(v, k, STK_SRC_STACKS, NULL);
	}
}

/*
 * The stacks as a source of their own: a culprit whose main thread is
 * outside any collective or device wait while every other rank's is inside
 * one (worker.c says which frames count); without pages, the stacks alone.
 */
static void
stk_stacks(const struct stk_result *r, struct stk_verdict *v, int pages)
{
	int others = 0, inside = 0;

	if (pages == 0 && v->nculprits == 0)
		stk_stacks_alone(r, v);

	for (int k = 0; k < r->ntasks; k++) {
		if (v->slot[k] != 0 || r->tasks[k].in_comm < 0)
			continue;
		others++;
		inside += r->tasks[k].in_comm == 1;
	}
	for (int i = 0; i < v->nculprits; i++)
		if (r->tasks[v->culprits[i]].in_comm == 0 && others > 0 && inside == others)
			v->sources[i] |= STK_SRC_STACKS;
}

static const char *const stk_source_names[] = {
	"its process state", "coll status pages", "NCCL profiler plugin", "NCCL RAS",
	"flight recorder", "stacks",
};

/* The sources that named culprit i, ", " between, into names; their count. */
static int
stk_source_list(const struct stk_verdict *v, int i, char *names, size_t size)
{
	size_t len = 0;
	int count = 0;

	names[0] = '\0';
	for (int b = 0; b < 6; b++)
		if (v->sources[i] & (1u << b)) {
			len += (size_t)snprintf(names + len, size - len, "%s%s", count ? ", " : "",
			    stk_source_names[b]);
			len = len < size ? len : size - 1;
			count++;
		}
	return count;
}

/* One line per culprit, first: who, in what, how many sources agree, and its stack. */
static void
stk_summary(const struct stk_result *r, struct stk_verdict *v)
{
	/* Two lines per culprit at most, then the others: one allocation, not one per culprit. */
	size_t cap = (size_t)v->nculprits * 2 + (size_t)v->n + 1;
	char **top = xcalloc(cap, sizeof *top), names[256];
	struct stk_fact *facts = xcalloc(cap, sizeof *facts);
	int n = 0;

	for (int i = 0; i < v->nculprits; i++) {
		const struct stk_task *t = &r->tasks[v->culprits[i]];
		int count = stk_source_list(v, i, names, sizeof names);

		facts[n] = (struct stk_fact){ .kind = "culprit", .task = v->culprits[i], .seq = -1 };
		top[n++] = xasprintf("=> %s %d (%s, pid %d) holds the others up%s%s: named by %d "
		    "source%s (%s)", stk_label(r), t->id, t->host, t->pid,
		    v->op[i] ? ", behind in " : "", v->op[i] ? v->op[i] : "", count,
		    count == 1 ? "" : "s", names);
		if (t->stack == NULL)
			continue;
		facts[n] = (struct stk_fact){ .kind = "culprit_stack", .task = v->culprits[i],
			.seq = -1 };
		top[n++] = xasprintf("   its main thread, innermost first: %s", t->stack);
	}
	if (n == 0) {
		free(top);
		free(facts);
		return;
	}
	memcpy(top + n, v->line, (size_t)v->n * sizeof *top);
	memcpy(facts + n, v->fact, (size_t)v->n * sizeof *facts);
	free(v->line);
	free(v->fact);
	v->line = top;
	v->fact = facts;
	v->n += n;
	v->line_cap = (int)cap;
}

/* Culprit i's sources, by name (render.c's --json). */
json_t *
stk_sources_json(const struct stk_verdict *v, int i)
{
	json_t *a = json_array();

	for (int b = 0; b < 6; b++)
		if (v->sources[i] & (1u << b))
			json_array_append_new(a, json_string(stk_source_names[b]));
	return a;
}

static int
stk_member_cmp(const void *a, const void *b)
{
	const struct stk_member *x = a, *y = b;
	int c = strcmp(x->pg->commid, y->pg->commid);

	return c != 0 ? c : (x->pg->rank > y->pg->rank) - (x->pg->rank < y->pg->rank);
}

void
stk_verdict(const struct stk_result *r, struct stk_verdict *v)
{
	struct stk_member *m;
	struct stk_chain *ch;
	size_t pages = 0;
	int n = 0, unread = 0;

	memset(v, 0, sizeof *v);
	v->slot = xcalloc((size_t)r->ntasks + 1, sizeof *v->slot);
	v->by_pid = stk_keys(r, 1);
	v->by_rank = stk_keys(r, 0);
	for (int i = 0; i < r->ntasks; i++)
		pages += (size_t)r->tasks[i].npages;
	m = xcalloc(pages + 1, sizeof *m);
	for (int i = 0; i < r->ntasks; i++)
		for (int k = 0; k < r->tasks[i].npages; k++)
			m[n++] = (struct stk_member){ i, &r->tasks[i].pages[k] };
	if (r->ntasks == 0) {
		stk_say(v, "no process of the job was found on the hosts searched");
		stk_fact(v, "no_process", -1, NULL, NULL, -1);
		v->code = EXIT_CANNOT;
	}
	stk_states(r, v);
	stk_missing(r, v);
	stk_verdict_gpu(r, v);
	if (n > 1)
		qsort(m, (size_t)n, sizeof *m, stk_member_cmp);
	ch = stk_chain_new(r, m, n);
	for (int a = 0, b; a < n; a = b) {
		for (b = a; b < n && strcmp(m[b].pg->commid, m[a].pg->commid) == 0; b++)
			;
		stk_comm(r, v, ch, &m[a], b - a);
	}
	stk_chain_say(ch, r, v);
	if (r->ras != NULL)
		stk_ras(r, v, ch);
	if (r->fr_lines != NULL)
		stk_fr_blame(r, v);
	if (n == 0 && r->ntasks > 0 && r->ras == NULL && r->fr_lines == NULL) {
		stk_say(v, "no status pages: these processes publish no collective sequence "
		    "numbers; the stacks below are all there is");
		stk_fact(v, "no_pages", -1, NULL, NULL, -1);
	}
	/* Ranks that could not be read leave no verdict, unless a culprit was named anyway. */
	for (int i = 0; i < r->ntasks; i++)
		unread += r->tasks[i].err != NULL && r->tasks[i].state != 'Z' &&
		    r->tasks[i].state != 'G';
	if (v->code == 0 && n > 0 && unread == 0)
		stk_progress(v, stk_chain_job_idle(ch));
	if (unread > 0 && v->code == EXIT_OK)
		v->code = EXIT_CANNOT;
	stk_stacks(r, v, n);
	for (int i = 0; i < r->ntasks; i++) {
		const struct stk_task *t = &r->tasks[i];

		if (t->kernels != NULL)
			stk_say(v, "%s %d (%s, pid %d) GPU kernels: %s", stk_label(r), t->id, t->host,
			    t->pid, t->kernels);
		else if (t->kernels_err != NULL)
			stk_say(v, "%s %d (%s, pid %d) GPU kernels not listed: %s", stk_label(r), t->id,
			    t->host, t->pid, t->kernels_err);
		if (t->kernels != NULL || t->kernels_err != NULL)
			stk_fact(v, "gpu_kernels", i, NULL, NULL, -1);
	}
	stk_summary(r, v);
	stk_chain_free(ch);
	free(m);
}

void
stk_verdict_free(struct stk_verdict *v)
{
	for (int i = 0; i < v->n; i++) {
		free(v->line[i]);
		free(v->fact[i].ranks);
	}
	free(v->line);
	free(v->fact);
	for (int i = 0; i < v->nculprits; i++)
		free(v->op[i]);
	free(v->op);
	free(v->sources);
	free(v->culprits);
	free(v->slot);
	free(v->by_pid);
	free(v->by_rank);
	free(v->gpu_comms);
	memset(v, 0, sizeof *v);
}
