/*
 * The verdict below the host, from the NCCL profiler plugin's pages: every
 * rank enqueued the op the GPUs are in (the host is not behind; it may have
 * enqueued more), so whoever holds the others up is on the GPU side. Per
 * NCCL communicator, once no page has moved for STK_GPU_IDLE_S:
 *
 *   - ranks at the same seq disagree on the op (kind, bytes, datatype): a
 *     desync every rank enters and that hangs inside the kernel; the odd
 *     ranks (the minority) are blamed. Said at once, idle or not: one seq
 *     is one op on every rank.
 *   - some ranks' kernels for the op began, others' did not: those GPUs are
 *     busy with earlier work on their stream, and are blamed.
 *   - every rank's kernel began and none ended: the hang is inside the
 *     collective, no rank is late (the library or the fabric): exit 1 with
 *     nobody blamed, and what is known of the kernel.
 *   - every kernel ended, yet main threads still wait on the device: the
 *     host never saw the op complete.
 *
 * PyTorch's flight recorder finds a desync of its own (fr.c): its findings
 * compare each rank with the lowest, so the odd one is the side with fewer
 * ranks, found here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collstack.h"
#include "rankset.h"
#include "xmalloc.h"


struct stk_gm {
	int task;
	const struct stk_page *pg;
};

/* One communicator's pages, and what the verdict names it by. */
struct stk_gcomm {
	struct stk_gm *m;
	int n;
	uint64_t top;		/* the newest op enqueued */
	uint64_t kseq;		/* the newest op whose kernel began, on any rank */
	unsigned kkind;		/* its kind */
	char name[40], op[96];	/* the comm as NCCL's RAS names it; op kseq in it */
};

static int
stk_gm_cmp(const void *a, const void *b)
{
	const struct stk_gm *x = a, *y = b;
	int c = strcmp(x->pg->commid, y->pg->commid);

	return c != 0 ? c : (x->pg->rank > y->pg->rank) - (x->pg->rank < y->pg->rank);
}

/* Ops at one seq that must be the same op on every rank: kind, bytes, datatype. */
static int
stk_gm_op_cmp(const void *a, const void *b)
{
	const struct stk_page *x = ((const struct stk_gm *)a)->pg, *y = ((const struct stk_gm *)b)->pg;

	if (x->kind_started != y->kind_started)
		return x->kind_started < y->kind_started ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return strcmp(x->dtype, y->dtype);
}

/* "allreduce of 4194304 bytes (ncclFloat32)" */
static void
stk_gpu_op_text(const struct stk_page *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s of %llu bytes%s%s%s", stk_kind_name(p->kind_started),
	    (unsigned long long)p->bytes, p->dtype[0] ? " (" : "", p->dtype, p->dtype[0] ? ")" : "");
}

static void
stk_gpu_ranks(const struct stk_result *r, const struct stk_gm *m, int n, char *buf, size_t len)
{
	struct rankset s = { 0 };

	for (int i = 0; i < n; i++)
		rankset_add(&s, r->tasks[m[i].task].id);
	snprintf(buf, len, "%s%s ", stk_label(r), rankset_count(&s) == 1 ? "" : "s");
	rankset_fold(&s, buf + strlen(buf), len - strlen(buf));
	rankset_free(&s);
}

/* One odd group of a desync: named, the op each side calls, blamed. */
static void
stk_gpu_odd(const struct stk_result *r, struct stk_verdict *v, const struct stk_gcomm *c,
    const struct stk_gm *odd, int nodd, const struct stk_gm *most, int nmost)
{
	char who[160], others[160], mine[96], theirs[96], what[128];

	stk_gpu_ranks(r, odd, nodd, who, sizeof who);
	stk_gpu_ranks(r, most, nmost, others, sizeof others);
	stk_gpu_op_text(odd[0].pg, mine, sizeof mine);
	stk_gpu_op_text(most[0].pg, theirs, sizeof theirs);
	if (nodd == 1) {
		const struct stk_task *t = &r->tasks[odd[0].task];

		snprintf(who, sizeof who, "%s %d (%s, pid %d)", stk_label(r), t->id, t->host, t->pid);
	}
	stk_say(v, "comm %s: desync at seq %llu: %s call%s %s where %s call %s: every rank enters "
	    "it and it hangs inside the kernel", c->name, (unsigned long long)c->top, who,
	    nodd == 1 ? "s" : "", mine, others, theirs);
	stk_fact(v, "desync", nodd == 1 ? odd[0].task : -1, c->name, NULL, (long long)c->top);
	snprintf(what, sizeof what, "%s (a desync)", c->op);
	for (int i = 0; i < nodd; i++)
		stk_blame(v, odd[i].task, STK_SRC_PLUGIN, what);
}

/* Ranks at the newest seq that call different ops; 1 if there was a desync. */
static int
stk_gpu_desync(const struct stk_result *r, struct stk_verdict *v, const struct stk_gcomm *c)
{
	struct stk_gm *s = xmalloc(((size_t)c->n + 1) * sizeof *s);
	int best = 0, bestn = 0, ties = 0, runs = 0;

	memcpy(s, c->m, (size_t)c->n * sizeof *s);
	qsort(s, (size_t)c->n, sizeof *s, stk_gm_op_cmp);
	for (int a = 0, b; a < c->n; a = b, runs++) {
		for (b = a; b < c->n && stk_gm_op_cmp(&s[a], &s[b]) == 0; b++)
			;
		ties = b - a == bestn ? ties + 1 : b - a > bestn ? 0 : ties;
		if (b - a > bestn) {
			best = a;
			bestn = b - a;
		}
	}
	if (runs > 1 && ties > 0) {
		stk_say(v, "comm %s: desync at seq %llu: the ranks call %d different ops, no one "
		    "of them by most ranks: every rank enters it and it hangs inside the kernel",
		    c->name, (unsigned long long)c->top, runs);
		stk_fact(v, "desync", -1, c->name, NULL, (long long)c->top);
		v->code = EXIT_PROBLEMS;
	}
	for (int a = 0, b; runs > 1 && ties == 0 && a < c->n; a = b) {
		for (b = a; b < c->n && stk_gm_op_cmp(&s[a], &s[b]) == 0; b++)
			;
		if (a != best)
			stk_gpu_odd(r, v, c, &s[a], b - a, &s[best], bestn);
	}
	free(s);
	return runs > 1;
}

/*
 * A page of t's in another NCCL communicator whose kernel began and has not
 * ended: what its stream is busy with, a wait of its own (then the rank is
 * a link, and that communicator names the cause); NULL none.
 */
static const struct stk_page *
stk_gpu_busy_elsewhere(const struct stk_task *t, const char *commid)
{
	for (int k = 0; k < t->npages; k++) {
		const struct stk_page *p = &t->pages[k];

		if (p->nccl && p->kernel && p->seq_kernel > p->seq_done &&
		    strcmp(p->commid, commid) != 0)
			return p;
	}
	return NULL;
}

/* (a) Ranks whose kernel for the op never began while the others' did. */
static void
stk_gpu_not_begun(const struct stk_result *r, struct stk_verdict *v, const struct stk_gcomm *c)
{
	struct stk_gm *began = xmalloc(((size_t)c->n + 1) * sizeof *began);
	char others[160];
	int nb = 0;

	for (int i = 0; i < c->n; i++)
		if (c->m[i].pg->seq_kernel >= c->kseq)
			began[nb++] = c->m[i];
	stk_gpu_ranks(r, began, nb, others, sizeof others);
	for (int i = 0; i < c->n; i++) {
		const struct stk_task *t = &r->tasks[c->m[i].task];

		const struct stk_page *busy;

		if (c->m[i].pg->seq_kernel >= c->kseq)
			continue;
		if ((busy = stk_gpu_busy_elsewhere(t, c->m[i].pg->commid)) != NULL) {
			stk_say(v, "%s %d (%s, pid %d): its GPU has not started %s seq %llu of comm %s: "
			    "it runs %s seq %llu of comm NCCL 0x%s, which waits in turn: a link, not the "
			    "cause", stk_label(r), t->id, t->host, t->pid, stk_kind_name(c->kkind),
			    (unsigned long long)c->kseq, c->name, stk_kind_name(busy->kind_kernel),
			    (unsigned long long)busy->seq_kernel, busy->commid);
			stk_fact(v, "gpu_link", c->m[i].task, c->name, stk_kind_name(c->kkind),
			    (long long)c->kseq);
			continue;
		}
		stk_say(v, "%s %d (%s, pid %d): its GPU has not started %s seq %llu: its stream is "
		    "busy with earlier work; %s run%s its kernel and wait%s for it (comm %s)%s%s",
		    stk_label(r), t->id, t->host, t->pid, stk_kind_name(c->kkind),
		    (unsigned long long)c->kseq, others, nb == 1 ? "s" : "", nb == 1 ? "s" : "",
		    c->name,
		    t->kernels ? "; --cuda: its GPU runs " : "; collstack --cuda lists what it runs",
		    t->kernels ? t->kernels : "");
		stk_fact(v, "gpu_not_started", c->m[i].task, c->name, stk_kind_name(c->kkind),
		    (long long)c->kseq);
		stk_blame(v, c->m[i].task, STK_SRC_PLUGIN, c->op);
	}
	free(began);
}

/*
 * "allreduce of 4194304 bytes (ncclFloat32), algorithm Ring, protocol LL;
 * NCCL 2.28.3": what the pages say of the kernel, where they say it (they
 * describe the op enqueued last: the kernel's only when it is that one).
 */
static void
stk_gpu_kernel_text(const struct stk_gcomm *c, char *buf, size_t len)
{
	const struct stk_page *p = c->m[0].pg;
	size_t at;

	if (c->top == c->kseq)
		stk_gpu_op_text(p, buf, len);
	else
		snprintf(buf, len, "%s", stk_kind_name(c->kkind));
	at = strlen(buf);
	if (p->algo[0] && c->top == c->kseq)
		at += (size_t)snprintf(buf + at, len - at, ", algorithm %s", p->algo);
	if (p->proto[0] && c->top == c->kseq && at < len)
		at += (size_t)snprintf(buf + at, len - at, ", protocol %s", p->proto);
	/* NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z since 2.9. */
	if (p->lib_version >= 20900 && at < len)
		snprintf(buf + at, len - at, "; NCCL %u.%u.%u", p->lib_version / 10000,
		    p->lib_version / 100 % 100, p->lib_version % 100);
}

/* "150-210", or "100" where all are the same; each value divided by unit. */
static void
stk_gpu_range(char *buf, size_t len, json_int_t lo, json_int_t hi, json_int_t unit)
{
	if (lo / unit == hi / unit)
		snprintf(buf, len, "%lld", (long long)(hi / unit));
	else
		snprintf(buf, len, "%lld-%lld", (long long)(lo / unit), (long long)(hi / unit));
}

/*
 * What a host's GPUs are doing, as NVML saw them: busy at low power is a
 * kernel that spins waiting on a peer (seed 003: four H100s at 100% and
 * about 100 W of 700), busy at high power one that computes.
 */
static void
stk_gpu_signature(struct stk_verdict *v, json_t *h)
{
	json_int_t umin = 101, umax = -1, pmin = 1 << 30, pmax = -1, lim = -1;
	const char *host = json_string_value(json_object_get(h, "host")), *what = "";
	char of[32] = "", util[48], power[48];
	json_t *g;
	size_t i;

	json_array_foreach(json_object_get(h, "gpus"), i, g) {
		json_int_t u = json_integer_value(json_object_get(g, "util"));
		json_int_t p = json_integer_value(json_object_get(g, "power_mw"));
		json_int_t l = json_integer_value(json_object_get(g, "limit_mw"));

		umin = u >= 0 && u < umin ? u : umin;
		umax = u > umax ? u : umax;
		pmin = p >= 0 && p < pmin ? p : pmin;
		pmax = p > pmax ? p : pmax;
		lim = l > lim ? l : lim;
	}
	if (umax < 0 || pmax < 0)
		return;		/* NVML gave neither: no signature */
	if (umin >= 90 && lim > 0 && pmax * 10 < lim * 4)
		what = ": busy at low power, their kernels spin waiting rather than compute";
	else if (umin >= 90 && lim > 0)
		what = ": busy at high power, computing";
	else if (umax < 10)
		what = ": idle, no kernel runs";
	if (lim > 0)
		snprintf(of, sizeof of, " of %lld W", (long long)lim / 1000);
	stk_gpu_range(util, sizeof util, umin, umax, 1);
	stk_gpu_range(power, sizeof power, pmin, pmax, 1000);
	stk_say(v, "GPUs on %s (NVML): %zu at %s%% utilisation, %s W%s%s", host ? host : "?",
	    json_array_size(json_object_get(h, "gpus")), util, power, of, what);
}

/* (b) Every kernel began and none ended: the hang is inside the collective. */
static void
stk_gpu_inside(const struct stk_result *r, struct stk_verdict *v, const struct stk_gcomm *c,
    double idle)
{
	char kernel[256];
	json_t *h;
	size_t i;

	stk_say(v, "comm %s: hung inside %s seq %llu on every rank: no rank is late; the "
	    "collective library or the fabric (all %d kernels began, none ended in %.1f s)",
	    c->name, stk_kind_name(c->kkind), (unsigned long long)c->kseq, c->n, idle);
	stk_fact(v, "hung_inside", -1, c->name, stk_kind_name(c->kkind), (long long)c->kseq);
	stk_gpu_kernel_text(c, kernel, sizeof kernel);
	stk_say(v, "comm %s: the kernel: %s", c->name, kernel);
	for (int k = 0; k < c->n; k++)
		if (c->m[k].pg->wait_peer >= 0)
			stk_say(v, "comm %s: comm rank %d waits on comm rank %d", c->name,
			    c->m[k].pg->rank, c->m[k].pg->wait_peer);
	json_array_foreach(r->gpus, i, h)
		stk_gpu_signature(v, h);
	v->code = EXIT_PROBLEMS;
}

/*
 * A rank that waits for an op its GPU finished: its main thread in a device
 * synchronize or a wait on NCCL's work, with no op of any communicator of
 * its still under way (one waiting in another group's op is that op's).
 */
static int
stk_gpu_host_waits(const struct stk_task *t)
{
	if (t->in_comm != 1 || t->stack == NULL || (strstr(t->stack, "ynchronize") == NULL &&
	    strstr(t->stack, "WorkNCCL") == NULL))
		return 0;
	for (int k = 0; k < t->npages; k++)
		if (t->pages[k].state == STATUS_RUNNING)
			return 0;
	return 1;
}

/* (c) Every kernel ended, yet main threads wait on the device: completion never reached the host. */
static void
stk_gpu_unseen(const struct stk_result *r, struct stk_verdict *v, const struct stk_gcomm *c,
    double idle)
{
	struct stk_gm *waits = xmalloc(((size_t)c->n + 1) * sizeof *waits);
	char who[160];
	int nw = 0;

	for (int i = 0; i < c->n; i++)
		if (stk_gpu_host_waits(&r->tasks[c->m[i].task]))
			waits[nw++] = c->m[i];
	if (nw > 0 && v->nculprits == 0) {
		stk_gpu_ranks(r, waits, nw, who, sizeof who);
		stk_say(v, "comm %s: the kernels of %s seq %llu ended on every rank %.1f s ago, but "
		    "the host has not seen it complete: %s still wait%s for it in %s main thread",
		    c->name, stk_kind_name(c->kkind), (unsigned long long)c->kseq, idle, who,
		    nw == 1 ? "s" : "", nw == 1 ? "its" : "their");
		stk_fact(v, "host_missed_completion", -1, c->name, stk_kind_name(c->kkind),
		    (long long)c->kseq);
		v->code = EXIT_PROBLEMS;
	}
	free(waits);
}

/* A desync among the ranks at the newest seq enqueued (the pages describe that op only). */
static int
stk_gpu_desync_top(const struct stk_result *r, struct stk_verdict *v, const struct stk_gcomm *c)
{
	struct stk_gcomm at = *c;
	int n = 0, found;

	at.m = xmalloc(((size_t)c->n + 1) * sizeof *at.m);
	for (int i = 0; i < c->n; i++)
		if (c->m[i].pg->seq_started == c->top)
			at.m[n++] = c->m[i];
	at.n = n;
	snprintf(at.op, sizeof at.op, "%s seq %llu of comm %s", stk_kind_name(at.m[0].pg->kind_started),
	    (unsigned long long)c->top, c->name);
	found = n > 1 && stk_gpu_desync(r, v, &at);
	free(at.m);
	return found;
}

/* The communicator is judged here: verdict.c's host-side "all in one op" is not said of it. */
static void
stk_gpu_judged_add(struct stk_verdict *v, const struct stk_gcomm *c)
{
	v->gpu_comms = xreallocarray(v->gpu_comms, (size_t)v->ngpu_comms + 1, sizeof *v->gpu_comms);
	snprintf(v->gpu_comms[v->ngpu_comms++], sizeof *v->gpu_comms, "%s", c->m[0].pg->commid);
}

/*
 * One NCCL communicator's pages. The op judged is the newest whose kernel
 * began on any rank (kseq): the hosts may have enqueued more behind it.
 */
static void
stk_gpu_comm(const struct stk_result *r, struct stk_verdict *v, struct stk_gcomm *c)
{
	double idle = -1;
	int began = 0, ended = 0, kernel = 0;

	snprintf(c->name, sizeof c->name, "NCCL 0x%s", c->m[0].pg->commid);
	if (c->top == 0)
		return;
	if (stk_gpu_desync_top(r, v, c)) {
		stk_gpu_judged_add(v, c);
		return;
	}
	for (int i = 0; i < c->n; i++) {
		const struct stk_page *p = c->m[i].pg;

		if (p->seq_kernel > c->kseq) {
			c->kseq = p->seq_kernel;
			c->kkind = p->kind_kernel;
		}
		idle = idle < 0 || p->idle_s < idle ? p->idle_s : idle;
		kernel += p->kernel;
	}
	for (int i = 0; i < c->n; i++) {
		if (c->m[i].pg->seq_started < c->kseq)
			return;		/* a rank that did not enqueue it: behind on the host, verdict.c's */
		began += c->m[i].pg->seq_kernel >= c->kseq;
		ended += c->m[i].pg->seq_done >= c->kseq;
	}
	if (idle < STK_GPU_IDLE_S || kernel < c->n || c->kseq == 0)
		return;
	snprintf(c->op, sizeof c->op, "%s seq %llu of comm %s", stk_kind_name(c->kkind),
	    (unsigned long long)c->kseq, c->name);
	stk_gpu_judged_add(v, c);
	if (ended == c->n && c->kseq == c->top)
		stk_gpu_unseen(r, v, c, idle);
	else if (began == c->n && ended == 0 && c->n == c->m[0].pg->nranks)
		stk_gpu_inside(r, v, c, idle);
	else if (began > 0 && began < c->n)
		stk_gpu_not_begun(r, v, c);
}

/*
 * The flight recorder's desync: its mismatch findings name each rank of a
 * group that differs from the lowest one, among so many ranks compared.
 * Fewer such ranks than the rest: they are the odd ones; all but the
 * lowest (of three or more): the lowest is. One group, the first found.
 */
static void
stk_gpu_fr_odd(const struct stk_result *r, struct stk_verdict *v)
{
	struct rankset odd = { 0 };
	json_t *x;
	size_t i;
	int base = -1, ndiff, among = 0;
	const char *pg = NULL;
	char what[160] = "", who[160], name[64];

	json_array_foreach(r->fr_findings, i, x) {
		const char *kind = json_string_value(json_object_get(x, "kind"));
		const char *g = json_string_value(json_object_get(x, "pg"));
		json_int_t rank = json_integer_value(json_object_get(x, "rank"));

		if (kind == NULL || strcmp(kind, "mismatch") != 0 || g == NULL || rank < 0 ||
		    rank >= RANKSET_MAX || (pg != NULL && strcmp(g, pg) != 0))
			continue;
		pg = g;
		rankset_add(&odd, (int)rank);
		base = (int)json_integer_value(json_object_get(x, "versus"));
		among = (int)json_integer_value(json_object_get(x, "among"));
		/* The group's name is the dump's: made printable. */
		snprintf(name, sizeof name, "%s", g);
		stk_clean_here(name);
		snprintf(what, sizeof what, "seq %lld of process group %s (a desync)",
		    (long long)json_integer_value(json_object_get(x, "seq")), name);
	}
	ndiff = rankset_count(&odd);
	if (ndiff > 0 && ndiff == among - 1 && among > 2 && base >= 0 && base < RANKSET_MAX) {
		rankset_free(&odd);
		rankset_add(&odd, base);
	} else if (ndiff == 0 || ndiff * 2 >= among) {
		rankset_free(&odd);
		return;
	}
	rankset_fold(&odd, who, sizeof who);
	stk_say(v, "flight recorder: the odd one%s out of the desync in process group %s: rank%s %s",
	    rankset_count(&odd) == 1 ? "" : "s", name, rankset_count(&odd) == 1 ? "" : "s", who);
	stk_fact(v, "flight_recorder_desync", -1, NULL, NULL, -1);
	stk_fact_ranks(v, who);
	for (int k = 0; r->by_rank && k < r->ntasks; k++)
		if (rankset_has(&odd, r->tasks[k].id))
			stk_blame(v, k, STK_SRC_FR, what);
	rankset_free(&odd);
}

void
stk_verdict_gpu(const struct stk_result *r, struct stk_verdict *v)
{
	struct stk_gm *m;
	size_t pages = 0;
	int n = 0;

	for (int i = 0; i < r->ntasks; i++)
		pages += (size_t)r->tasks[i].npages;
	m = xmalloc((pages + 1) * sizeof *m);
	for (int i = 0; i < r->ntasks; i++)
		for (int k = 0; k < r->tasks[i].npages; k++)
			if (r->tasks[i].pages[k].nccl)
				m[n++] = (struct stk_gm){ i, &r->tasks[i].pages[k] };
	if (n > 1)
		qsort(m, (size_t)n, sizeof *m, stk_gm_cmp);
	for (int a = 0, b; a < n; a = b) {
		struct stk_gcomm c = { .m = &m[a] };

		for (b = a; b < n && strcmp(m[b].pg->commid, m[a].pg->commid) == 0; b++)
			c.top = m[b].pg->seq_started > c.top ? m[b].pg->seq_started : c.top;
		c.n = b - a;
		stk_gpu_comm(r, v, &c);
	}
	free(m);
	if (r->fr_findings != NULL)
		stk_gpu_fr_odd(r, v);
}
