/*
 * The worker role: join the job, fold every rank's facts into rank 0, measure
 * clocks against rank 0, the links between every pair and a short all-reduce
 * sweep through the core, and on rank 0 either hand the record to the front
 * end (--worker) or analyse and print it (under collrun).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "coll.h"
#include "comm.h"
#include "err.h"
#include "gpubw.h"
#include "probe.h"
#include "retried.h"
#include "xmalloc.h"

extern char **environ;

#define CHECK_CLOCK_SAMPLES 5

struct check_worker {
	struct check_args *a;
	struct comm *c, *pc;
	struct check_result r;
	uint64_t t;		/* when the phase under way began */
};

const char *const check_phase_names[CHECK_PHASES] = { "join", "facts", "clocks",
	"links", "allreduce" };

/* When this process started, on clock_now_ns's clock (to a tick): join counts from it. */
static uint64_t
check_started_ns(void)
{
	char buf[1024] = "", *p;
	unsigned long long ticks = 0;
	struct timespec boot;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t now = clock_now_ns(), age;
	FILE *f = fopen("/proc/self/stat", "r");

	if (f != NULL) {
		if (fgets(buf, sizeof buf, f) == NULL)
			buf[0] = '\0';
		fclose(f);
	}
	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0 ||
	    (p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
	    "%*d %*d %llu", &ticks) != 1)
		return now;
	age = (uint64_t)boot.tv_sec * 1000000000u + (uint64_t)boot.tv_nsec -
	    (uint64_t)(ticks * (1000000000ull / (unsigned long long)hz));
	return age < now ? now - age : now;
}

static void
check_phase_done(struct check_worker *w, int ph)
{
	uint64_t now = clock_now_ns();

	w->r.ms[ph] = (double)(now - w->t) / 1e6;
	w->t = now;
}

static void
check_progress(const struct check_worker *w, const char *what)
{
	if (w->a->worker && comm_rank(w->c) == 0) {
		fprintf(stderr, "collcheck-progress: %s\n", what);
		fflush(stderr);
	}
}

static void
check_links_progress(void *arg, int round, int rounds)
{
	char buf[96];

	snprintf(buf, sizeof buf, "links: round %d of %d", round + 1, rounds);
	check_progress(arg, buf);
}

/* Rank 0: one host per distinct host name, in rank order; rank_host maps ranks to them. */
static void
check_hosts_from(struct check_worker *w)
{
	struct check_result *r = &w->r;
	int n = comm_size(w->c);
	const char **names = xcalloc((size_t)n, sizeof *names);

	for (int i = 0; i < r->fold.n; i++) {
		const struct facts_folded *e = &r->fold.v[i];

		if (strcmp(e->key, "host.name") != 0 || facts_is_skipped(e->val))
			continue;
		for (int g = 0; g < e->ranks.n; g++)
			for (int k = e->ranks.r[g][0]; k <= e->ranks.r[g][1] && k < n; k++)
				names[k] = e->val;
	}
	r->nranks = n;
	r->rank_host = xcalloc((size_t)n, sizeof *r->rank_host);
	r->hosts = xcalloc((size_t)n, sizeof *r->hosts);
	for (int k = 0; k < n; k++) {
		const char *name = names[k] != NULL ? names[k] : comm_host(w->c, k);
		int h;

		for (h = 0; h < r->nhosts && strcmp(r->hosts[h].name, name) != 0; h++)
			;
		r->rank_host[k] = h;
		if (h < r->nhosts)
			continue;
		r->hosts[h] = (struct check_host){ .name = xstrdup(name), .rank = k,
		    .pid = comm_pid(w->c, k) };
		facts_init(&r->hosts[h].facts);
		r->nhosts++;
	}
	free(names);
}

struct check_fold {
	struct facts_fold *ff;
	int nranks;
};

static void *
check_fold_pack(void *arg, size_t *len)
{
	return facts_fold_pack(((struct check_fold *)arg)->ff, len);
}

static int
check_fold_merge(void *arg, const void *buf, size_t len, int from)
{
	struct check_fold *cf = arg;
	struct facts_fold in;
	int rc;

	facts_fold_init(&in);
	rc = facts_fold_unpack(&in, buf, len, cf->nranks);
	/* Rank from speaks for its subtree only (coll.h): from .. from + lowbit(from) - 1. */
	for (int i = 0; i < in.n && rc == COLL_OK; i++)
		if (in.v[i].ranks.r[0][0] < from ||
		    rankset_last(&in.v[i].ranks) >= from + (from & -from))
			rc = COLL_EPROTO;
	if (rc == COLL_OK)
		facts_fold_merge(cf->ff, &in);
	facts_fold_free(&in);
	return rc;
}

/* Whether this rank is the first of its host: the one that measures its GPUs. */
static int
check_first_on_host(struct comm *c)
{
	for (int k = 0; k < comm_rank(c); k++)
		if (strcmp(comm_host(c, k), comm_host(c, comm_rank(c))) == 0)
			return 0;
	return 1;
}

/*
 * Fold every rank's facts up a binomial tree (coll_fold): each parent merges
 * what its children agree on, so rank 0 receives log2(n) folds of what hosts
 * share once plus each host's own facts (docs/SCALE.md), not every host's
 * facts whole.
 */
static int
check_gather_facts(struct check_worker *w)
{
	struct facts f;
	struct facts_roots roots;
	struct check_fold cf = { &w->r.fold, comm_size(w->c) };
	struct coll_fold_ops ops = { check_fold_pack, check_fold_merge, &cf };
	int rc;

	facts_init(&f);
	facts_roots_env(&roots);
	roots.since = w->a->since;
	if (w->a->what & CHECK_ENV)
		facts_collect(&f, &roots, environ);
	else
		facts_read_host(&f, &roots);
	if ((w->a->what & CHECK_GPUS) && check_first_on_host(w->c)) {
		check_progress(w, "measuring the GPUs' copies");
		gpubw_collect(&f, w->a);
	}
	facts_fold_add(&w->r.fold, &f, comm_rank(w->c));
	facts_free(&f);
	rc = coll_fold(w->c, 0, &ops);
	if (rc == COLL_OK && comm_rank(w->c) == 0)
		check_hosts_from(w);
	else
		facts_fold_free(&w->r.fold);
	return rc;
}

static int
check_clocks(struct check_worker *w)
{
	int n = comm_size(w->c);
	double *off = xcalloc((size_t)n, sizeof *off), *rtt = xcalloc((size_t)n, sizeof *rtt);
	int rc = probe_clock_offsets(w->pc, CHECK_CLOCK_SAMPLES, off, rtt);

	w->r.clocks = 1;
	if (rc == COLL_OK && comm_rank(w->c) == 0)
		for (int h = 0; h < w->r.nhosts; h++) {
			w->r.hosts[h].offset_us = off[w->r.hosts[h].rank];
			w->r.hosts[h].rtt_us = rtt[w->r.hosts[h].rank];
		}
	free(off);
	free(rtt);
	return rc;
}

static int
check_links(struct check_worker *w)
{
	struct pair_opts po = { w->a->link_bytes, (int)w->a->link_iters, 20 };
	int n = comm_size(w->c), rc;
	struct probe_link *row = xcalloc((size_t)n, sizeof *row);
	double *mine = xcalloc((size_t)n * 2, sizeof *mine);
	struct coll_blobs b = { 0 };

	rc = probe_links(w->c, w->pc, &po, row, check_links_progress, w);
	for (int p = 0; p < n; p++) {
		mine[p] = row[p].lat_us;
		mine[n + p] = row[p].bw_gbs;
	}
	if (rc == COLL_OK)
		rc = coll_gatherv(w->c, mine, (size_t)n * 2 * sizeof *mine, 0, &b);
	if (rc == COLL_OK && comm_rank(w->c) == 0) {
		w->r.lat = xcalloc((size_t)n * n, sizeof *w->r.lat);
		w->r.bw = xcalloc((size_t)n * n, sizeof *w->r.bw);
		for (int k = 0; k < n; k++) {
			const double *v = (const double *)(b.data + b.off[k]);

			if (b.len[k] != (size_t)n * 2 * sizeof *v)
				continue;
			memcpy(&w->r.lat[(size_t)k * n], v, (size_t)n * sizeof *v);
			memcpy(&w->r.bw[(size_t)k * n], v + n, (size_t)n * sizeof *v);
		}
	}
	coll_blobs_free(&b);
	free(row);
	free(mine);
	return rc;
}

/*
 * A short sweep, 8 B to 2 MiB by 8x: small sizes show latency, the large
 * ones bandwidth; `collcheck allreduce` is the full sweep.
 */
static int
check_allreduce(struct check_worker *w)
{
	struct probe_opts po = { .iters = 5, .warmup = 1, .check = 1, .dt = DT_FLOAT32,
	    .op = OP_SUM };
	struct probe p;
	struct probe_result res;
	int rc;

	if ((rc = probe_init(&p, w->c, &po, 2u << 20)) != COLL_OK)
		return rc;
	w->r.allreduce = json_array();
	for (size_t s = 8; s <= (2u << 20) && rc == COLL_OK; s *= 8) {
		char buf[64];

		snprintf(buf, sizeof buf, "allreduce: %zu bytes", s);
		check_progress(w, buf);
		if ((rc = probe_allreduce(&p, s, &res)) != COLL_OK)
			break;
		json_array_append_new(w->r.allreduce, json_pack("{s:I, s:f, s:f, s:f, s:I, s:i, "
		    "s:f}", "size", (json_int_t)res.bytes, "time_us", res.m[0].time_us, "algbw",
		    res.m[0].algbw, "busbw", res.m[0].busbw, "wrong", (json_int_t)(res.m[0].wrong +
		    res.m[1].wrong), "slowest_rank", res.m[0].slow_rank, "slowest_us",
		    res.m[0].slow_us));
	}
	probe_free(&p);
	return rc;
}

/* Ops the core ran again after a broken link, on either communicator, to rank 0. */
static int
check_retries(struct check_worker *w)
{
	struct retried_set mine = { 0 }, all = { 0 };
	int rc;

	retried_take(&mine, w->c, 0, NULL);
	if (w->pc != NULL)
		retried_take(&mine, w->pc, 1, NULL);
	rc = retried_gather(w->c, comm_size(w->c), &mine, &all);
	if (rc == COLL_OK && comm_rank(w->c) == 0)
		w->r.retries = retried_json(&all);
	retried_free(&mine);
	retried_free(&all);
	return rc;
}

static int
check_steps(struct check_worker *w)
{
	int rc;

	check_progress(w, "gathering facts");
	if ((rc = check_gather_facts(w)) != COLL_OK)
		return rc;
	check_phase_done(w, PH_FACTS);
	if ((rc = comm_split(w->c, 0, comm_rank(w->c), &w->pc, NULL)) != COLL_OK)
		return rc;
	if (w->a->what & CHECK_ENV) {
		check_progress(w, "clock offsets");
		if ((rc = check_clocks(w)) != COLL_OK)
			return rc;
	}
	check_phase_done(w, PH_CLOCKS);
	if ((w->a->what & CHECK_LINKS) && comm_size(w->c) > 1 && (rc = check_links(w)) != COLL_OK)
		return rc;
	check_phase_done(w, PH_LINKS);
	if (w->a->what & CHECK_ALLREDUCE)
		rc = check_allreduce(w);
	check_phase_done(w, PH_ALLREDUCE);
	if (rc == COLL_OK)
		rc = check_retries(w);
	return rc;
}

int
check_worker(struct check_args *a)
{
	struct check_worker w = { .a = a };
	struct coll_config cfg = COLL_CONFIG_INIT;
	struct facts base;
	char err[512];
	int rc, code = EXIT_CANNOT;

	facts_init(&base);
	w.t = check_started_ns();
	/* Half of -T: a rank that hangs is named by the core before the job's deadline. */
	cfg.timeout_ms = (int)(a->timeout_s * 500);
	if (comm_env_timeout_ms() < cfg.timeout_ms)
		cfg.timeout_ms = comm_env_timeout_ms();
	if ((rc = comm_init_env(&w.c, &cfg)) != COLL_OK) {
		fprintf(stderr, "collcheck: cannot join the job: %s\n", w.c != NULL ?
		    comm_last_error(w.c) : "COLL_UNIQUE_ID, COLL_RANK or COLL_SIZE is malformed");
		goto out;
	}
	check_phase_done(&w, PH_JOIN);
	if ((rc = check_steps(&w)) != COLL_OK) {
		fprintf(stderr, "collcheck: %s\n", comm_last_error(w.pc != NULL &&
		    comm_get_async_error(w.pc) != COLL_OK ? w.pc : w.c));
		goto out;
	}
	code = EXIT_OK;
	if (comm_rank(w.c) != 0)
		goto out;
	if (a->worker) {
		json_t *rec = check_record(&w.r);

		json_dumpf(rec, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(rec);
		goto out;
	}
	if (a->baseline != NULL && check_baseline_load(&base, a->baseline, err, sizeof err) != 0) {
		fprintf(stderr, "collcheck: %s\n", err);
		code = EXIT_USAGE;
		goto out;
	}
	check_expand_facts(&w.r);
	check_analyse(&w.r, a, a->baseline != NULL ? &base : NULL);
	if (a->save_baseline != NULL && check_baseline_save(&w.r, a->save_baseline, err,
	    sizeof err) != 0) {
		fprintf(stderr, "collcheck: %s\n", err);
		code = EXIT_CANNOT;
		goto out;
	}
	code = check_report(&w.r, a);
out:
	facts_free(&base);
	comm_destroy(w.pc);
	comm_destroy(w.c);
	check_result_free(&w.r);
	return code;
}

/*
 * The record: hosts with their clocks, the facts still folded (in the fold's
 * own checked text form), the link matrices, the sweep.
 */
json_t *
check_record(const struct check_result *r)
{
	json_t *rec = json_object(), *hosts = json_array(), *map = json_array(), *ms = json_object();
	size_t flen;
	char *folded = facts_fold_pack(&r->fold, &flen);

	for (int h = 0; h < r->nhosts; h++) {
		const struct check_host *ch = &r->hosts[h];

		json_array_append_new(hosts, json_pack("{s:s, s:i, s:i, s:f, s:f}", "host",
		    ch->name, "rank", ch->rank, "pid", ch->pid, "clock_offset_us", ch->offset_us,
		    "rtt_us", ch->rtt_us));
	}
	json_object_set_new(rec, "facts", json_stringn(folded, flen));
	free(folded);
	for (int k = 0; k < r->nranks; k++)
		json_array_append_new(map, json_integer(r->rank_host[k]));
	for (int p = 0; p < CHECK_PHASES; p++)
		json_object_set_new(ms, check_phase_names[p], json_real(r->ms[p]));
	json_object_set_new(rec, "hosts", hosts);
	json_object_set_new(rec, "rank_host", map);
	json_object_set_new(rec, "phases_ms", ms);
	json_object_set_new(rec, "clocks", json_boolean(r->clocks));
	if (r->lat != NULL) {
		json_t *lat = json_array(), *bw = json_array();

		for (size_t i = 0; i < (size_t)r->nranks * r->nranks; i++) {
			json_array_append_new(lat, json_real(r->lat[i]));
			json_array_append_new(bw, json_real(r->bw[i]));
		}
		json_object_set_new(rec, "lat_us", lat);
		json_object_set_new(rec, "bw_gbs", bw);
	}
	if (r->allreduce != NULL)
		json_object_set(rec, "allreduce", r->allreduce);
	if (r->retries != NULL)
		json_object_set(rec, "retries", r->retries);
	return rec;
}

static int
check_record_host(struct check_host *ch, json_t *j, int nranks)
{
	json_t *rank = json_object_get(j, "rank");
	const char *name = json_string_value(json_object_get(j, "host"));

	if (name == NULL || !json_is_integer(rank) || json_integer_value(rank) < 0 ||
	    json_integer_value(rank) >= nranks)
		return -1;
	ch->name = xstrdup(name);
	ch->rank = (int)json_integer_value(rank);
	ch->pid = (int)json_integer_value(json_object_get(j, "pid"));
	facts_init(&ch->facts);
	ch->offset_us = json_number_value(json_object_get(j, "clock_offset_us"));
	ch->rtt_us = json_number_value(json_object_get(j, "rtt_us"));
	return 0;
}

int
check_record_read(struct check_result *r, const char *buf, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	json_t *rec = json_loadb(buf, len, 0, &je), *hosts, *map, *lat, *bw, *ar, *facts, *rt;
	size_t n, nn;

	if (rec == NULL) {
		/* jansson quotes the bad bytes in its text: one line, whatever they were. */
		for (char *p = je.text; *p != '\0'; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		snprintf(err, errlen, "rank 0's record is not JSON (%s at %d)", je.text, je.position);
		return -1;
	}
	hosts = json_object_get(rec, "hosts");
	map = json_object_get(rec, "rank_host");
	if (!json_is_array(hosts) || !json_is_array(map) || json_array_size(map) == 0) {
		snprintf(err, errlen, "rank 0's record lacks hosts");
		json_decref(rec);
		return -1;
	}
	n = json_array_size(hosts);
	if (n == 0 || n > json_array_size(map) || json_array_size(map) > COLL_MAX_RANKS) {
		snprintf(err, errlen, "rank 0's record has %zu hosts for %zu ranks", n,
		    json_array_size(map));
		json_decref(rec);
		return -1;
	}
	r->nranks = (int)json_array_size(map);
	r->hosts = xcalloc(n + 1, sizeof *r->hosts);
	r->rank_host = xcalloc((size_t)r->nranks, sizeof *r->rank_host);
	for (size_t i = 0; i < n; i++) {
		if (check_record_host(&r->hosts[i], json_array_get(hosts, i), r->nranks) != 0) {
			snprintf(err, errlen, "rank 0's record has a malformed host %zu", i);
			json_decref(rec);
			return -1;
		}
		r->nhosts++;
	}
	for (int k = 0; k < r->nranks; k++) {
		json_t *h = json_array_get(map, (size_t)k);

		if (!json_is_integer(h) || json_integer_value(h) < 0 ||
		    json_integer_value(h) >= r->nhosts) {
			snprintf(err, errlen, "rank 0's record puts rank %d on no host", k);
			json_decref(rec);
			return -1;
		}
		r->rank_host[k] = (int)json_integer_value(h);
	}
	facts = json_object_get(rec, "facts");
	if (!json_is_string(facts) || facts_fold_unpack(&r->fold, json_string_value(facts),
	    json_string_length(facts), r->nranks) != COLL_OK) {
		snprintf(err, errlen, "rank 0's record has malformed facts: use the same coll "
		    "version on every host");
		json_decref(rec);
		return -1;
	}
	check_expand_facts(r);
	lat = json_object_get(rec, "lat_us");
	bw = json_object_get(rec, "bw_gbs");
	nn = (size_t)r->nranks * r->nranks;
	if (json_is_array(lat) && json_is_array(bw) && json_array_size(lat) == nn &&
	    json_array_size(bw) == nn) {
		r->lat = xcalloc(nn, sizeof *r->lat);
		r->bw = xcalloc(nn, sizeof *r->bw);
		for (size_t i = 0; i < nn; i++) {
			r->lat[i] = json_number_value(json_array_get(lat, i));
			r->bw[i] = json_number_value(json_array_get(bw, i));
		}
	}
	r->clocks = json_is_true(json_object_get(rec, "clocks"));
	for (int p = 0; p < CHECK_PHASES; p++)
		r->ms[p] = json_number_value(json_object_get(json_object_get(rec, "phases_ms"),
		    check_phase_names[p]));
	if (json_is_array(ar = json_object_get(rec, "allreduce")))
		r->allreduce = json_incref(ar);
	/* Checked entry by entry when analysed (retried_find): a bad one is a finding. */
	if ((rt = json_object_get(rec, "retries")) != NULL)
		r->retries = json_incref(rt);
	json_decref(rec);
	return 0;
}

/* Each host's facts out of the fold, from its first rank; the fold is then let go. */
void
check_expand_facts(struct check_result *r)
{
	struct facts **out = xcalloc(r->nranks > 0 ? (size_t)r->nranks : 1, sizeof *out);

	for (int h = 0; h < r->nhosts; h++)
		if (r->hosts[h].rank >= 0 && r->hosts[h].rank < r->nranks)
			out[r->hosts[h].rank] = &r->hosts[h].facts;
	facts_fold_expand(&r->fold, out, r->nranks);
	facts_fold_free(&r->fold);
	free(out);
}
