/*
 * Batch mode, for scripts and tests (top -b, htop has none): each interval
 * the summary, the alerts and both tables as plain text, or one JSON object
 * per line with every number the screen shows and more (totals, so that a
 * script can check a counter only grows).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "top.h"
#include "xmalloc.h"

static void
batch_table(const struct top_model *m, int by_host, FILE *f)
{
	struct view_table t;
	int sort = view_col_parse(by_host, m->a->sort ? m->a->sort : "");

	view_table(m, by_host, sort < 0 ? 0 : sort, 0, m->a->filter, m->a->ascii, &t);
	for (int r = -1; r < t.nrows; r++) {
		for (int c = 0; c < t.ncols; c++) {
			const struct view_cell *x = r < 0 ? &t.head[c] : &t.rows[r][c];
			int last = c == t.ncols - 1;

			if (last)
				fprintf(f, "%s", x->text);
			else if (x->right)
				fprintf(f, "%*s  ", t.width[c], x->text);
			else
				fprintf(f, "%-*s  ", t.width[c], x->text);
		}
		fputc('\n', f);
	}
	view_table_free(&t);
}

/* What c would run now, as the screen would say it before running it. */
static void
batch_c(const struct top_model *m, FILE *f)
{
	struct view_cs *cs;
	char line[2048];
	int j = view_stalled_job(m);

	if (j < 0)
		return;
	cs = xcalloc(1, sizeof *cs);
	view_collstack(m, j, NULL, cs);
	view_cs_line(cs, line, sizeof line);
	fprintf(f, "c: %s\n", line);
	if (cs->note[0] != '\0')
		fprintf(f, "c: %s\n", cs->note);
	free(cs);
}

/*
 * Flush a frame: 0, or the errno of the write that failed, fflush's own or
 * else e, the errno the frame's writes left (0 none).
 */
static int
batch_flush(FILE *f, int e)
{
	errno = 0;
	if (fflush(f) != 0)
		return errno != 0 ? errno : e != 0 ? e : EIO;
	return ferror(f) ? (e != 0 ? e : EIO) : 0;
}

int
batch_text(const struct top_model *m, FILE *f)
{
	char sum[512], alerts[32][256];
	int attrs[32], n;

	errno = 0;
	view_summary(m, sum, sizeof sum);
	fprintf(f, "colltop: %s\n", sum);
	n = view_alerts(m, m->t_last, alerts, attrs, 32);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%s\n", attrs[i] == VA_BAD ? "!! " : attrs[i] == VA_WARN ? "! " : "",
		    alerts[i]);
	batch_c(m, f);
	fputc('\n', f);
	batch_table(m, 0, f);
	fputc('\n', f);
	batch_table(m, 1, f);
	fputc('\n', f);
	return batch_flush(f, errno);
}

static json_t *
batch_ranks(const struct top_model *m)
{
	json_t *a = json_array();

	for (int r = 0; r < m->nranks; r++) {
		const struct top_rank *x = &m->ranks[r];

		if (x->rank < 0)
			continue;
		json_array_append_new(a, json_pack("{s:i, s:s, s:i, s:f, s:f, s:f, s:i, s:b, s:b, "
		    "s:s}", "rank", x->rank, "host", x->host >= 0 ? m->hosts[x->host].name : "?",
		    "pid", x->pid, "lat_us", x->lat_us, "late_us", x->late_us, "busbw", x->busbw,
		    "slow_intervals", x->slow_run, "straggler", x->straggler, "lost", x->lost,
		    "why", x->why));
	}
	return a;
}

static json_t *
batch_hosts(const struct top_model *m)
{
	json_t *a = json_array();

	for (int h = 0; h < m->nhosts; h++) {
		const struct top_host *x = &m->hosts[h];
		json_t *o = json_pack("{s:s, s:i, s:b, s:s}", "host", x->name, "ranks", x->nranks,
		    "lost", x->lost, "why", x->why);

		if (x->sample != NULL)
			json_object_update(o, x->sample);
		json_array_append_new(a, o);
	}
	return a;
}

/* A communicator rank and the rank shown for it (its world rank where known). */
struct batch_shown {
	int rank, shown;
};

static int
batch_cmp_shown(const void *a, const void *b)
{
	int x = ((const struct batch_shown *)a)->rank, y = ((const struct batch_shown *)b)->rank;

	return (x > y) - (x < y);
}

/* The job's ranks by communicator rank, for a peer's shown rank by a search. */
static struct batch_shown *
batch_shown_index(const struct top_job *x)
{
	struct batch_shown *ix = xcalloc((size_t)x->nr + 1, sizeof *ix);

	for (int k = 0; k < x->nr; k++)
		ix[k] = (struct batch_shown){ x->r[k].rank, view_jobrank_shown(&x->r[k]) };
	if (x->nr > 0)
		qsort(ix, (size_t)x->nr, sizeof *ix, batch_cmp_shown);
	return ix;
}

static json_t *
batch_peer(const struct top_job *x, const struct batch_shown *ix, int peer)
{
	struct batch_shown want = { peer, 0 }, *e;

	if (peer < 0)
		return json_null();
	e = bsearch(&want, ix, (size_t)x->nr, sizeof *ix, batch_cmp_shown);
	return json_integer(e != NULL ? e->shown : peer);
}

/* A rank's straggler test by the job's own ops, and its retries (jobstrag.c). */
static void
batch_jobrank_late(json_t *o, const struct top_job *x, const struct batch_shown *ix,
    const struct top_jobrank *r)
{
	json_object_set_new(o, "late_ms", r->late_ms >= 0 ? json_real(r->late_ms) : json_null());
	json_object_set_new(o, "slow_intervals", json_integer(r->slow_run));
	json_object_set_new(o, "straggler", json_boolean(r->straggler));
	json_object_set_new(o, "gpu", json_integer(r->gpu));
	if (r->gpu_bus[0] != '\0')
		json_object_set_new(o, "gpu_bus", json_string(r->gpu_bus));
	json_object_set_new(o, "retries", json_integer((json_int_t)r->retries));
	json_object_set_new(o, "retry_peer", batch_peer(x, ix, r->retry_peer));
	json_object_set_new(o, "retry_age_s", r->retry_age_s >= 0 ? json_real(r->retry_age_s) :
	    json_null());
}

static json_t *
batch_job_ranks(const struct top_job *x)
{
	json_t *rs = json_array(), *o;
	struct batch_shown *ix = batch_shown_index(x);

	for (int k = 0; k < x->nr; k++) {
		o = json_pack("{s:i, s:i, s:s, s:i, s:i, s:I, s:I, s:I, s:s, "
		    "s:i, s:s%, s:b, s:b}", "rank", view_jobrank_shown(&x->r[k]),
		    "comm_rank", x->r[k].rank, "host", x->r[k].host, "pid", x->r[k].pid,
		    "state", x->r[k].state, "seq_started", (json_int_t)x->r[k].seq_started,
		    "seq_done", (json_int_t)x->r[k].seq_done,
		    "seq_queued", (json_int_t)x->r[k].seq_queued, "kind", x->r[k].kind,
		    "wait_peer", x->r[k].wait_peer, "proc", &x->r[k].proc, (size_t)1,
		    "kernel", x->r[k].kernel, "alive", strchr("?ZX", x->r[k].proc) == NULL);
		if (o != NULL)
			batch_jobrank_late(o, x, ix, &x->r[k]);
		json_array_append_new(rs, o);
	}
	free(ix);
	return rs;
}

/* What c would run on this job, as collstack's arguments and their note. */
static json_t *
batch_job_cs(const struct top_model *m, const struct view_cs_index *ix, int j)
{
	struct view_cs *cs = xcalloc(1, sizeof *cs);
	json_t *a = json_array(), *o;

	view_collstack_in(m, ix, j, NULL, cs);
	for (int i = 0; i < cs->argc; i++)
		json_array_append_new(a, json_string(cs->argv[i]));
	o = json_pack("{s:o, s:s}", "argv", a, "note", cs->note);
	free(cs);
	return o;
}

/* The job's straggler by its own ops (its rank as shown, null none) and its retries. */
static void
batch_job_late(json_t *o, const struct top_job *x)
{
	const struct top_jobrank *s = x->straggler >= 0 && x->straggler < x->nr ?
	    &x->r[x->straggler] : NULL;

	json_object_set_new(o, "straggler", s != NULL ? json_integer(view_jobrank_shown(s)) :
	    json_null());
	json_object_set_new(o, "straggler_late_ms", s != NULL ? json_real(s->late_ms) :
	    json_null());
	json_object_set_new(o, "ops_compared", json_integer(x->nops));
	json_object_set_new(o, "judged_seq", json_integer((json_int_t)x->judged_seq));
	json_object_set_new(o, "retries", json_integer((json_int_t)x->retries));
	json_object_set_new(o, "retrying", json_boolean(x->retrying));
}

static json_t *
batch_jobs(const struct top_model *m)
{
	json_t *a = json_array();
	struct view_cs_index *ix = view_cs_index(m);

	for (int j = 0; j < m->njobs; j++) {
		const struct top_job *x = &m->jobs[j];
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:b, s:s, s:f, "
		    "s:i, s:i, s:s, s:I, s:I, s:o, s:o}", "job", x->jobid, "launcher", x->launcher,
		    "user", x->user, "comm", x->commid, "nranks", x->nranks, "live", x->live,
		    "stalled", x->stalled,
		    "state", view_job_state(x), "still_s", x->still_s,
		    "behind", x->behind >= 0 ? view_rank_shown(x, x->behind) : -1,
		    "behind_comm_rank", x->behind, "how", x->behind >= 0 ? x->why : "",
		    "behind_seq", (json_int_t)x->behind_seq, "ahead_seq", (json_int_t)x->ahead_seq,
		    "ranks", batch_job_ranks(x), "collstack", batch_job_cs(m, ix, j));

		if (o != NULL)
			batch_job_late(o, x);
		json_array_append_new(a, o);
	}
	view_cs_index_free(ix);
	return a;
}

int
batch_json(const struct top_model *m, FILE *f)
{
	json_t *o = json_pack("{s:I, s:I, s:f, s:I, s:i, s:i, s:f, s:f, s:f}",
	    "frame", (json_int_t)m->frames, "interval", (json_int_t)m->iter,
	    "interval_s", m->interval_s, "bytes", (json_int_t)m->bytes, "iters", (int)m->iters,
	    "size", m->size, "busbw", m->busbw, "median_lat_us", m->med_lat_us,
	    "median_late_us", m->med_late_us);
	char *s;
	int e;

	if (m->straggler >= 0) {
		const struct top_rank *x = &m->ranks[m->straggler];

		json_object_set_new(o, "straggler", json_pack("{s:i, s:s, s:f, s:i}", "rank",
		    x->rank, "host", m->hosts[x->host].name, "late_us", x->late_us, "intervals",
		    x->slow_run));
	} else {
		json_object_set_new(o, "straggler", json_null());
	}
	json_object_set_new(o, "ranks", batch_ranks(m));
	json_object_set_new(o, "hosts", batch_hosts(m));
	json_object_set_new(o, "jobs", batch_jobs(m));
	s = json_dumps(o, JSON_COMPACT);
	errno = 0;
	fprintf(f, "%s\n", s);
	e = errno;
	free(s);
	json_decref(o);
	return batch_flush(f, e);
}
