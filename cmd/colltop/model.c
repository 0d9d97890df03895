/*
 * The front end's model, folded from the workers' frames: each rank's last
 * probe and its history, the straggler test, each host's last sample and
 * whether it is lost, and the other jobs on the hosts with whether they
 * still advance.
 *
 * A straggler is a rank that came to the probe later than factor x the
 * median lateness of all ranks (and at least --straggler-ms late), for
 * slow_k intervals in a row, once the warm-up intervals are past. A job is
 * stalled when none of its ranks' sequence numbers moved for stall_s while
 * one of them is inside an op; the rank behind is the one whose last op
 * started (or, on NCCL's pages, was enqueued) is the lowest, and on NCCL's
 * pages with every rank in one op, the one whose kernel has not begun
 * (model_gpu).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "status.h"
#include "msg.h"
#include "top.h"
#include "xmalloc.h"

void
model_init(struct top_model *m, const struct top_args *a)
{
	*m = (struct top_model){ .a = a, .straggler = -1, .interval_s = a->interval_s,
	    .bytes = a->bytes, .iters = a->iters, .med_lat_us = -1, .med_late_us = -1,
	    .busbw = -1 };
}

static void
model_jobs_free(struct top_model *m)
{
	for (int j = 0; j < m->njobs; j++)
		free(m->jobs[j].r);
	free(m->jobs);
	m->jobs = NULL;
	m->njobs = 0;
}

void
model_free(struct top_model *m)
{
	for (int h = 0; h < m->nhosts; h++)
		json_decref(m->hosts[h].sample);
	free(m->hosts);
	free(m->ranks);
	model_jobs_free(m);
	memset(m, 0, sizeof *m);
}

int
model_find_host(struct top_model *m, const char *name, int add)
{
	struct top_host *h;

	for (int i = 0; i < m->nhosts; i++)
		if (strcmp(m->hosts[i].name, name) == 0)
			return i;
	if (!add)
		return -1;
	m->hosts = xreallocarray(m->hosts, (size_t)m->nhosts + 1, sizeof *m->hosts);
	h = &m->hosts[m->nhosts];
	memset(h, 0, sizeof *h);
	snprintf(h->name, sizeof h->name, "%s", name);
	msg_clean(h->name);	/* as a host calls itself: anyone's words */
	return m->nhosts++;
}

/* The slot of job rank r, made when first seen. */
static struct top_rank *
model_rank(struct top_model *m, int r)
{
	if (r >= m->nranks) {
		m->ranks = xreallocarray(m->ranks, (size_t)r + 1, sizeof *m->ranks);
		for (int k = m->nranks; k <= r; k++)
			m->ranks[k] = (struct top_rank){ .rank = -1, .host = -1, .lat_us = -1,
			    .late_us = -1, .busbw = -1 };
		m->nranks = r + 1;
	}
	return &m->ranks[r];
}

static void
model_host_counts(struct top_model *m)
{
	for (int h = 0; h < m->nhosts; h++)
		m->hosts[h].nranks = 0;
	for (int r = 0; r < m->nranks; r++)
		if (m->ranks[r].rank >= 0 && m->ranks[r].host >= 0)
			m->hosts[m->ranks[r].host].nranks++;
}

/* nccl-tests' bus bandwidth of the probe at this latency (GB/s); -1 without one. */
static double
model_busbw(const struct top_model *m, double lat_us)
{
	return lat_us > 0 ? (double)m->bytes / (lat_us * 1e3) * probe_busbw_factor(m->size) : -1;
}

static int
model_one_rank(struct top_model *m, json_t *o, int bound)
{
	json_int_t r = json_integer_value(json_object_get(o, "r"));
	const char *host = json_string_value(json_object_get(o, "h"));
	json_t *s = json_object_get(o, "s");
	struct top_rank *x;
	double lat;

	if (r < 0 || r >= bound || host == NULL)
		return 0;
	x = model_rank(m, (int)r);
	x->rank = (int)r;
	if (x->host < 0 || strcmp(m->hosts[x->host].name, host) != 0)
		x->host = model_find_host(m, host, 1);
	x->pid = (int)json_integer_value(json_object_get(o, "pid"));
	x->lat_us = lat = json_number_value(json_object_get(o, "lat"));
	x->late_us = json_number_value(json_object_get(o, "late"));
	x->busbw = model_busbw(m, lat);
	if (x->nhist == TOP_HIST) {
		memmove(x->hist, x->hist + 1, (TOP_HIST - 1) * sizeof *x->hist);
		x->nhist--;
	}
	x->hist[x->nhist++] = (float)lat;
	if (s != NULL) {
		json_decref(m->hosts[x->host].sample);
		m->hosts[x->host].sample = json_incref(s);
	}
	return 1;
}

/* Medians, busbw of the op, and the straggler test (rule.c) over the ranks of this frame. */
static void
model_judge(struct top_model *m, const char *seen)
{
	double *late = xcalloc((size_t)m->nranks + 1, sizeof *late);
	double *lat = xcalloc((size_t)m->nranks + 1, sizeof *lat), minlat = -1;
	int *slow = xcalloc((size_t)m->nranks + 1, sizeof *slow);
	int *strag = xcalloc((size_t)m->nranks + 1, sizeof *strag);
	int *idx = xcalloc((size_t)m->nranks + 1, sizeof *idx);
	int n = 0, worst;

	for (int r = 0; r < m->nranks; r++) {
		if (!seen[r])
			continue;
		idx[n] = r;
		slow[n] = m->ranks[r].slow_run;
		late[n] = m->ranks[r].late_us;
		lat[n++] = m->ranks[r].lat_us;
		if (minlat < 0 || m->ranks[r].lat_us < minlat)
			minlat = m->ranks[r].lat_us;
	}
	worst = rule_judge(m->a, m->a->min_late_ms * 1e3, m->frames > (uint64_t)m->a->warmup,
	    late, n, slow, strag);
	m->straggler = worst >= 0 ? idx[worst] : -1;
	for (int i = 0; i < n; i++) {
		m->ranks[idx[i]].slow_run = slow[i];
		m->ranks[idx[i]].straggler = strag[i];
	}
	m->med_late_us = rule_median(late, n);
	m->med_lat_us = rule_median(lat, n);
	m->busbw = m->size > 1 ? model_busbw(m, minlat) : -1;
	free(late);
	free(lat);
	free(slow);
	free(strag);
	free(idx);
}

static void
model_mark_lost(struct top_rank *x, const char *why)
{
	x->lost = 1;
	x->straggler = 0;
	x->slow_run = 0;
	snprintf(x->why, sizeof x->why, "%s", why);
	msg_clean(x->why);
}

/* A host whose every rank is lost is lost, for the reason of its first. */
static void
model_hosts_lost(struct top_model *m)
{
	int *live = xcalloc((size_t)m->nhosts + 1, sizeof *live);
	int *first = xcalloc((size_t)m->nhosts + 1, sizeof *first);

	for (int h = 0; h < m->nhosts; h++)
		first[h] = -1;
	for (int r = 0; r < m->nranks; r++) {
		int h = m->ranks[r].host;

		if (h < 0)
			continue;
		live[h] += !m->ranks[r].lost;
		if (first[h] < 0)
			first[h] = r;
	}
	for (int h = 0; h < m->nhosts; h++)
		if (first[h] >= 0 && live[h] == 0 && !m->hosts[h].lost) {
			m->hosts[h].lost = 1;
			snprintf(m->hosts[h].why, sizeof m->hosts[h].why, "%s",
			    m->ranks[first[h]].why);
		}
	free(live);
	free(first);
}

static void
model_lost(struct top_model *m, json_t *lost, int bound)
{
	size_t i;
	json_t *o;
	int any = 0;

	json_array_foreach(lost, i, o) {
		json_int_t r = json_integer_value(json_object_get(o, "r"));
		const char *h = json_string_value(json_object_get(o, "h"));
		const char *why = json_string_value(json_object_get(o, "why"));
		struct top_rank *x;

		if (r < 0 || r >= bound)
			continue;
		x = model_rank(m, (int)r);
		x->rank = (int)r;
		any |= !x->lost;
		model_mark_lost(x, why ? why : "dropped");
		if (x->host < 0 && h != NULL)
			x->host = model_find_host(m, h, 1);
	}
	if (any)
		model_hosts_lost(m);
}

void
model_ranks_lost(struct top_model *m, const int *rank_host, int nranks, int host, const char *why)
{
	for (int r = 0; r < nranks && r < m->nranks; r++)
		if (rank_host[r] == host && m->ranks[r].rank >= 0)
			model_mark_lost(&m->ranks[r], why);
	model_hosts_lost(m);
}

/*
 * The jobs by key, for this frame's pages: a hash of the key model_job
 * compares, so a frame of many jobs' pages is a lookup a page, not a walk
 * of every job (which made a host of 4096 jobs hold the model's lock for a
 * third of a second a frame). Open addressing, sized once a frame for the
 * jobs there were and one new job a page; slots hold indices into m->jobs.
 */
struct model_index {
	int *slot;		/* -1 empty */
	size_t mask;
};

static uint64_t
model_hash(const char *id, const char *comm, const char *who, const char *where)
{
	const char *part[4] = { id, comm, who, where };
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < 4; i++) {
		for (const unsigned char *c = (const unsigned char *)part[i]; *c; c++)
			h = (h ^ *c) * 1099511628211ull;
		h = (h ^ 0xff) * 1099511628211ull;	/* no byte of a cleaned string */
	}
	return h;
}

static int
model_same(const struct top_job *j, const char *id, const char *comm, const char *who,
    const char *where)
{
	return strcmp(j->jobid, id) == 0 && strcmp(j->commid, comm) == 0 &&
	    strcmp(j->user, who) == 0 && strcmp(j->local, where) == 0;
}

/* The slot of the key: the job's, or the empty one where it would go. */
static int *
model_slot(const struct top_model *m, const struct model_index *ix, const char *id,
    const char *comm, const char *who, const char *where)
{
	size_t at = (size_t)model_hash(id, comm, who, where) & ix->mask;

	while (ix->slot[at] >= 0 && !model_same(&m->jobs[ix->slot[at]], id, comm, who, where))
		at = (at + 1) & ix->mask;
	return &ix->slot[at];
}

static void
model_index_build(const struct top_model *m, struct model_index *ix, size_t npages)
{
	size_t cap = 64;

	while (cap < 2 * ((size_t)m->njobs + npages))
		cap *= 2;
	ix->slot = xreallocarray(NULL, cap, sizeof *ix->slot);
	ix->mask = cap - 1;
	for (size_t i = 0; i < cap; i++)
		ix->slot[i] = -1;
	for (int j = 0; j < m->njobs; j++) {
		const struct top_job *x = &m->jobs[j];

		*model_slot(m, ix, x->jobid, x->commid, x->user, x->local) = j;
	}
}

/*
 * A job is its id, communicator and owner: ids are public (page names), so
 * another user's pages with the same ids are another job, theirs, never
 * ranks of this one (and colltop's 'c' names the owner to collstack). A job
 * coll did not launch is known by its launcher's key (ident.c); a key that
 * is a launcher's pid holds on its host only, so the host is part of it.
 * The key is compared as it is kept: cleaned and bounded.
 */
static struct top_job *
model_job(struct top_model *m, struct model_index *ix, const char *job, const char *comm,
    const char *user, const char *local)
{
	char who[sizeof m->jobs[0].user], id[sizeof m->jobs[0].jobid];
	char where[sizeof m->jobs[0].local], cid[sizeof m->jobs[0].commid];
	struct top_job *j;
	int *slot;

	snprintf(who, sizeof who, "%s", user ? user : "?");
	snprintf(id, sizeof id, "%s", job);
	snprintf(where, sizeof where, "%s", local ? local : "");
	snprintf(cid, sizeof cid, "%s", comm);
	msg_clean(who);
	msg_clean(id);
	msg_clean(where);
	msg_clean(cid);
	slot = model_slot(m, ix, id, cid, who, where);
	if (*slot >= 0)
		return &m->jobs[*slot];
	m->jobs = xreallocarray(m->jobs, (size_t)m->njobs + 1, sizeof *m->jobs);
	*slot = m->njobs;
	j = &m->jobs[m->njobs++];
	*j = (struct top_job){ .behind = -1, .straggler = -1 };
	snprintf(j->jobid, sizeof j->jobid, "%s", id);
	snprintf(j->commid, sizeof j->commid, "%s", cid);
	snprintf(j->user, sizeof j->user, "%s", who);
	snprintf(j->local, sizeof j->local, "%s", where);
	return j;
}

/* A string field of a page, cleaned for the screen, into buf ("" when absent). */
static void
model_str(json_t *p, const char *key, char *buf, size_t len)
{
	const char *v = json_string_value(json_object_get(p, key));

	snprintf(buf, len, "%s", v ? v : "");
	msg_clean(buf);
}

static int
model_int(json_t *p, const char *key, int dflt)
{
	json_t *v = json_object_get(p, key);

	return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

static void
model_page(struct top_model *m, struct model_index *ix, json_t *p)
{
	const char *job = json_string_value(json_object_get(p, "job"));
	const char *comm = json_string_value(json_object_get(p, "comm"));
	const char *host = json_string_value(json_object_get(p, "host"));
	const char *user = json_string_value(json_object_get(p, "user"));
	struct top_job *j;
	struct top_jobrank *x;

	if (job == NULL || comm == NULL)
		return;
	j = model_job(m, ix, job, comm, user, json_is_true(json_object_get(p, "job_local")) ?
	    (host ? host : "?") : NULL);
	j->seen = 1;
	j->nranks = model_int(p, "nranks", 0);
	model_str(p, "launcher", j->launcher, sizeof j->launcher);
	model_str(p, "slurm", j->slurm, sizeof j->slurm);
	if (j->nr == j->rcap) {
		j->rcap = j->rcap > 0 ? 2 * j->rcap : 4;
		j->r = xreallocarray(j->r, (size_t)j->rcap, sizeof *j->r);
	}
	x = &j->r[j->nr++];
	*x = (struct top_jobrank){ .rank = model_int(p, "rank", 0), .pid = model_int(p, "pid", 0),
	    .state = model_int(p, "state", 0), .source = model_int(p, "source", 0),
	    .wrank = model_int(p, "wrank", -1),
	    .kernel = json_is_true(json_object_get(p, "kernel")),
	    .seq_started = (uint64_t)json_integer_value(json_object_get(p, "seq_started")),
	    .seq_done = (uint64_t)json_integer_value(json_object_get(p, "seq_done")),
	    .seq_queued = (uint64_t)json_integer_value(json_object_get(p, "seq_queued")),
	    .wait_peer = model_int(p, "wait_peer", -1), .proc = '?', .late_ms = -1, .gpu = -1,
	    .retry_peer = -1, .retry_age_s = -1 };
	jobstrag_page(x, p);
	if (json_string_value(json_object_get(p, "proc")) != NULL)
		x->proc = json_string_value(json_object_get(p, "proc"))[0];
	model_str(p, "host", x->host, sizeof x->host);
	model_str(p, "kind", x->kind, sizeof x->kind);
	if (x->host[0] == '\0')
		snprintf(x->host, sizeof x->host, "?");
	if (x->kind[0] == '\0')
		snprintf(x->kind, sizeof x->kind, "?");
	if ((unsigned char)x->proc < 0x20 || (unsigned char)x->proc >= 0x7f)
		x->proc = '?';
}

/* Where a rank is: the op it last began (NCCL's pages: last enqueued). */
static uint64_t
model_pos(const struct top_jobrank *x)
{
	return x->source != 0 ? x->seq_queued : x->seq_started;
}

/*
 * Among the ranks at the lowest op (all of them when all are at one op): the
 * one whose process is stopped or gone, else the one most of the others wait
 * on; -1 when neither names one.
 */
static int
model_culprit(const struct top_job *j, uint64_t lo, const char **why)
{
	int best = -1, most = 0;

	for (int k = 0; k < j->nr; k++)
		if (model_pos(&j->r[k]) == lo && strchr("TtZX?", j->r[k].proc) != NULL) {
			*why = j->r[k].proc == 'T' || j->r[k].proc == 't' ? "stopped" : "dead";
			return j->r[k].rank;
		}
	for (int k = 0; k < j->nr; k++) {
		int votes = 0;

		if (model_pos(&j->r[k]) != lo)
			continue;
		for (int i = 0; i < j->nr; i++)
			votes += j->r[i].wait_peer == j->r[k].rank && i != k;
		if (votes > most) {
			most = votes;
			best = j->r[k].rank;
		}
	}
	*why = "waited on";
	return most * 2 > j->nr - 1 ? best : -1;
}

/*
 * Below the host, from NCCL's pages (kernel events on): every rank here
 * enqueued op n. A rank whose kernel for it has not begun while others'
 * began is the one behind: its GPU is busy with earlier work, and the
 * others' kernels spin waiting for it. Every kernel begun and none ended:
 * hung inside the kernel, no rank late.
 */
static void
model_gpu(struct top_job *j, uint64_t n)
{
	int begun = 0, ended = 0, late = -1;

	for (int k = 0; k < j->nr; k++) {
		const struct top_jobrank *x = &j->r[k];

		if (x->source != STATUS_SRC_NCCL || !x->kernel)
			return;	/* kernel events off: seq_started says nothing */
		begun += x->seq_started >= n;
		ended += x->seq_done >= n;
		if (x->seq_started < n && (late < 0 || x->seq_started < j->r[late].seq_started))
			late = k;
	}
	if (begun > 0 && late >= 0) {
		j->behind = j->r[late].rank;
		j->why = "gpu not started";
	} else if (begun == j->nr && ended == 0) {
		j->in_kernel = 1;
	}
}

/* A rank's process is there: not gone ('?'), not a zombie or dead. */
static int
model_alive(const struct top_jobrank *x)
{
	return strchr("?ZX", x->proc) == NULL;
}

static void
model_job_judge(struct top_model *m, struct top_job *j, double dt)
{
	uint64_t sum = 0, lo = UINT64_MAX, hi = 0;
	int inside = 0, lo_rank = -1, at_lo = 0;

	j->live = 0;
	for (int k = 0; k < j->nr; k++) {
		const struct top_jobrank *x = &j->r[k];
		uint64_t pos = model_pos(x);

		j->live += model_alive(x);
		sum += x->seq_started + x->seq_done + x->seq_queued;
		inside |= x->state == STATUS_RUNNING || (x->source != 0 && x->seq_queued >
		    x->seq_done);
		if (pos < lo || (pos == lo && x->rank < lo_rank)) {
			at_lo = pos < lo ? 0 : at_lo;
			lo = pos;
			lo_rank = x->rank;
		}
		at_lo += pos == lo;
		if (pos > hi)
			hi = pos;
	}
	j->still_s = sum == j->sum && m->frames > 1 ? j->still_s + dt : 0;
	j->sum = sum;
	/* No process left (a killed job's pages): gone, never stalled or advancing. */
	j->stalled = j->live > 0 && inside && j->still_s >= m->a->stall_s;
	/*
	 * Several ranks behind (one finished its part of the op, the other
	 * never began it): the stopped one, or the one waited on, among them.
	 * Every rank in one op and none named so: the GPU side.
	 */
	j->why = "behind";
	j->behind = -1;
	j->in_kernel = 0;
	if (j->stalled && (lo == hi || at_lo > 1))
		j->behind = model_culprit(j, lo, &j->why);
	if (j->stalled && j->behind < 0 && lo == hi)
		model_gpu(j, lo);
	if (j->stalled && j->behind < 0 && lo < hi) {
		j->why = "behind";
		j->behind = lo_rank;
	}
	j->behind_seq = lo;
	j->ahead_seq = hi;
}

/*
 * Pages of this frame replace the last; jobs no longer seen are gone. The
 * last frame's ranks of each job are kept aside until its straggler test
 * (jobstrag.c) has carried over what it knew of them.
 */
static void
model_jobs(struct top_model *m, json_t *ranks, double dt)
{
	int had = m->njobs, w = 0;
	struct model_index ix;
	size_t npages = 0;
	struct top_jobrank **was = xcalloc((size_t)had + 1, sizeof *was);
	int *nwas = xcalloc((size_t)had + 1, sizeof *nwas);
	size_t i, k;
	json_t *o, *p;

	for (int j = 0; j < had; j++) {
		was[j] = m->jobs[j].r;
		nwas[j] = m->jobs[j].nr;
		m->jobs[j].r = NULL;
		m->jobs[j].nr = 0;
		m->jobs[j].rcap = 0;
		m->jobs[j].seen = 0;
	}
	json_array_foreach(ranks, i, o)
		npages += json_array_size(json_object_get(o, "pages"));
	model_index_build(m, &ix, npages);
	json_array_foreach(ranks, i, o)
		json_array_foreach(json_object_get(o, "pages"), k, p)
			model_page(m, &ix, p);
	free(ix.slot);
	for (int j = 0; j < m->njobs; j++) {
		const struct top_jobrank *old = j < had ? was[j] : NULL;

		if (!m->jobs[j].seen) {
			free(m->jobs[j].r);
			continue;
		}
		m->jobs[w] = m->jobs[j];
		model_job_judge(m, &m->jobs[w], dt);
		jobstrag_judge(m, &m->jobs[w++], old, j < had ? nwas[j] : 0);
	}
	m->njobs = w;
	for (int j = 0; j < had; j++)
		free(was[j]);
	free(was);
	free(nwas);
}

int
model_frame(struct top_model *m, const char *line, size_t len, double now_s, char *err,
    size_t errlen)
{
	json_error_t je;
	json_t *f = json_loadb(line, len, 0, &je), *ranks, *o;
	double dt = m->t_last > 0 ? now_s - m->t_last : 0;
	char *seen;
	size_t i;
	int bound;

	if (f == NULL || !json_is_object(f) || !json_is_array(ranks = json_object_get(f, "ranks"))) {
		snprintf(err, errlen, "not a frame: %s", f == NULL ? je.text : "no ranks");
		json_decref(f);
		return -1;
	}
	m->frames++;
	m->t_last = now_s;
	m->iter = (uint64_t)json_integer_value(json_object_get(f, "it"));
	m->interval_s = (double)json_integer_value(json_object_get(f, "interval_ms")) / 1000;
	m->bytes = (size_t)json_integer_value(json_object_get(f, "bytes"));
	m->iters = (long)json_integer_value(json_object_get(f, "iters"));
	m->size = (int)json_integer_value(json_object_get(f, "size"));
	/*
	 * Job ranks are numbered from 0 and never renumbered: every one is in this
	 * frame or among the lost, which bounds them (a frame is untrusted input).
	 */
	bound = (int)(json_array_size(ranks) + json_array_size(json_object_get(f, "lost")));
	bound = bound > m->nranks ? bound : m->nranks;
	bound = bound < (1 << 20) ? bound : 1 << 20;
	seen = xcalloc((size_t)bound + 1, 1);
	json_array_foreach(ranks, i, o)
		if (model_one_rank(m, o, bound))
			seen[json_integer_value(json_object_get(o, "r"))] = 1;
	model_lost(m, json_object_get(f, "lost"), bound);
	for (int r = 0; r < m->nranks; r++)
		seen[r] &= !m->ranks[r].lost;
	model_judge(m, seen);
	model_jobs(m, ranks, dt);
	model_host_counts(m);
	free(seen);
	json_decref(f);
	return 0;
}
