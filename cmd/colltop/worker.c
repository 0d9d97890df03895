/*
 * The worker: one per host (or -n of them here), joined in one communicator.
 * Each interval every rank sleeps to the same moment (the end of the last
 * probe plus the interval: the all-reduce ended at nearly the same time
 * everywhere, so no clocks need to agree), runs the probe, samples its host
 * if it is the host's first rank, and gathers its snapshot to rank 0, which
 * writes the frame on stdout; a broadcast from rank 0 ends the interval with
 * the front end's word (a new interval, or stop).
 *
 * Lateness, not latency, finds a straggler: in an all-reduce every rank waits
 * for the last to arrive, so the rank that holds the others up has the
 * shortest op of all. How late each rank began the op against the moment it
 * meant to (comm_op_begin_ns) is its own, and is what the others waited for.
 *
 * A rank the root declares dead (its host stopped answering: keep-alives
 * every 250 ms, dead after --dead-after) is shrunk away by the rest, which
 * go on; the frames name it as lost. The keep-alive settings are this tool's
 * unless COLL_KEEPALIVE_MS or COLL_KEEPALIVE_LIMIT are set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "coll.h"
#include "comm.h"
#include "err.h"
#include "top.h"
#include "xmalloc.h"

#define WORKER_KA_MS 250
#define WORKER_VERDICT_MS 3000	/* waiting for the root to say who died */

struct worker {
	struct top_args *a;
	struct comm *c;
	int *jobrank;		/* rank in c -> the job's rank */
	int njob;		/* the job's ranks at the start */
	int me;			/* the job's rank */
	int leader;		/* the first rank of this host in c */
	struct collect col;
	float *sbuf, *rbuf;
	size_t count;
	int ctl;
	int ctl_gone;		/* the front end hung up: it is not asked again */
	int ctl_said;		/* a failed try was said */
	int32_t interval_ms;
	json_t *lost;		/* [{r, h, why}] */
	uint64_t iter;
};

static void
worker_keepalive(const struct top_args *a)
{
	char buf[32];
	long limit = (long)(a->dead_after_s * 1000 / WORKER_KA_MS + 0.5);

	if (getenv("COLL_KEEPALIVE_MS") == NULL && getenv("COLL_KEEPALIVE_LIMIT") == NULL) {
		snprintf(buf, sizeof buf, "%d", WORKER_KA_MS);
		setenv("COLL_KEEPALIVE_MS", buf, 1);
		snprintf(buf, sizeof buf, "%ld", limit < 2 ? 2 : limit);
		setenv("COLL_KEEPALIVE_LIMIT", buf, 1);
	}
}

/*
 * Rank 0: reach the front end's control port, once an interval until it
 * works. A try can fail while strangers crowd the port (the front end closes
 * the oldest handshakes to make room), so one failure is not the end; it
 * is said once.
 */
static void
worker_ctl(struct worker *w)
{
	char err[256];

	if (comm_rank(w->c) != 0 || w->ctl >= 0 || w->ctl_gone || w->a->ctl_port <= 0)
		return;
	if ((w->ctl = ctl_connect((int)w->a->ctl_port, err, sizeof err)) < 0 && !w->ctl_said) {
		w->ctl_said = 1;
		fprintf(stderr, "colltop: rank %d: no control connection yet (+, - and q do not "
		    "reach the workers; trying again each interval): %s\n", w->me, err);
	}
}

static void
worker_roles(struct worker *w)
{
	int me = comm_rank(w->c);
	const char *host = comm_host(w->c, me);

	w->leader = 1;
	for (int k = 0; k < me; k++)
		if (strcmp(comm_host(w->c, k), host) == 0)
			w->leader = 0;
	worker_ctl(w);
}

static void
worker_sleep_until(uint64_t t)
{
	uint64_t now = clock_now_ns();
	struct timespec ts;

	if (now >= t)
		return;
	ts.tv_sec = (time_t)((t - now) / 1000000000u);
	ts.tv_nsec = (long)((t - now) % 1000000000u);
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int
worker_probe(struct worker *w, uint64_t sched, double *lat_us, double *late_us)
{
	uint64_t t0 = 0, t1;
	int rc;

	for (long i = 0; i < w->a->iters; i++) {
		rc = coll_allreduce(w->c, w->sbuf, w->rbuf, w->count, DT_FLOAT32, OP_SUM);
		if (rc != COLL_OK)
			return rc;
		if (i == 0)
			t0 = comm_op_begin_ns(w->c);
	}
	t1 = clock_now_ns();
	*late_us = t0 > sched ? (double)(t0 - sched) / 1e3 : 0;
	*lat_us = (double)(t1 - t0) / 1e3 / (double)w->a->iters;
	return COLL_OK;
}

static char *
worker_snapshot(struct worker *w, double lat, double late, size_t *len)
{
	json_t *o = json_pack("{s:i, s:s, s:i, s:f, s:f}", "r", w->me, "h",
	    comm_host(w->c, comm_rank(w->c)), "pid", (int)getpid(), "lat", lat, "late", late);
	char *s;

	if (w->leader) {
		json_object_set_new(o, "s", collect_host(&w->col));
		json_object_set_new(o, "pages", collect_pages(&w->col, comm_jobid(w->c),
		    comm_host(w->c, comm_rank(w->c))));
	}
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	*len = strlen(s);
	return s;
}

/* Rank 0: the frame of this interval, on stdout, one line. */
static void
worker_frame(struct worker *w, const struct coll_blobs *b)
{
	json_t *f = json_pack("{s:I, s:i, s:I, s:i, s:i, s:[], s:O}", "it", (json_int_t)w->iter,
	    "interval_ms", w->interval_ms, "bytes", (json_int_t)(w->count * sizeof(float)),
	    "iters", (int)w->a->iters, "size", comm_size(w->c), "ranks", "lost", w->lost);
	json_t *ranks = json_object_get(f, "ranks");
	char *s;

	for (int k = 0; k < b->n; k++) {
		json_t *r = json_loadb((const char *)b->data + b->off[k], b->len[k], 0, NULL);

		if (r != NULL)
			json_array_append_new(ranks, r);
	}
	s = json_dumps(f, JSON_COMPACT);
	printf("%s\n", s);
	fflush(stdout);
	free(s);
	json_decref(f);
}

/*
 * Who is left, by the job's ranks: the shrink may have dropped more ranks
 * than this rank was told of (the root joins every survivor's list), so the
 * survivors say who they are and the rest are the lost.
 */
static int
worker_drop(struct worker *w, struct comm *old, struct comm *nc)
{
	int n = comm_size(nc), was = comm_size(old), k = 0;
	int32_t me = w->me, *left = xcalloc((size_t)n, sizeof *left);
	char *alive = xcalloc((size_t)w->njob, 1);	/* by job rank */
	int rc = coll_allgather(nc, &me, left, 1, DT_INT32);

	for (int r = 0; rc == COLL_OK && r < n; r++)
		if (left[r] >= 0 && left[r] < w->njob)
			alive[left[r]] = 1;
	for (int o = 0; rc == COLL_OK && o < was; o++)
		if (!alive[w->jobrank[o]])
			json_array_append_new(w->lost, json_pack("{s:i, s:s, s:s}", "r", w->jobrank[o],
			    "h", comm_host(old, o), "why", comm_last_error(old)));
	for (int r = 0; rc == COLL_OK && r < n; r++)
		w->jobrank[k++] = left[r];
	free(left);
	free(alive);
	return rc;
}

/* Go on without the dead; anything else ends the worker (-1, said on stderr). */
static int
worker_recover(struct worker *w, int rc)
{
	struct comm *nc = NULL;
	int *failed = NULL, n;

	if (rc == COLL_EROOTLOST || comm_get_async_error(w->c) == COLL_EROOTLOST ||
	    (n = comm_wait_failed(w->c, WORKER_VERDICT_MS, &failed)) == 0) {
		fprintf(stderr, "colltop: rank %d: %s\n", w->me, comm_last_error(w->c));
		return -1;
	}
	rc = comm_shrink(w->c, failed, n, &nc, NULL, COLL_SHRINK_ABORT);
	if (rc != COLL_OK || nc == NULL) {
		fprintf(stderr, "colltop: rank %d: cannot go on without the lost ranks: %s\n",
		    w->me, comm_last_error(nc != NULL ? nc : w->c));
		free(failed);
		comm_destroy(nc);
		return -1;
	}
	free(failed);
	if ((rc = worker_drop(w, w->c, nc)) != COLL_OK) {
		fprintf(stderr, "colltop: rank %d: the survivors could not agree who is left: %s\n",
		    w->me, comm_last_error(nc));
		comm_destroy(nc);
		return -1;
	}
	comm_destroy(w->c);
	w->c = nc;
	worker_roles(w);
	return 0;
}

/* The end of an interval: rank 0 hands on the front end's word; 1 to stop. */
static int
worker_control(struct worker *w, int *rc)
{
	struct ctl_cmd cmd = { 0 };

	worker_ctl(w);
	if (comm_rank(w->c) == 0 && w->ctl >= 0 && ctl_poll(w->ctl, &cmd) < 0) {
		cmd.quit = 1;	/* the dashboard is gone */
		close(w->ctl);
		w->ctl = -1;
		w->ctl_gone = 1;
	}
	if ((*rc = coll_broadcast(w->c, &cmd, &cmd, 4, DT_INT32, 0)) != COLL_OK)
		return 0;
	if (cmd.interval_ms > 0)
		w->interval_ms = cmd.interval_ms;
	return cmd.quit != 0;
}

/* One interval; 1 to stop, 0 to go on, or a core error. */
static int
worker_interval(struct worker *w, uint64_t *next)
{
	struct coll_blobs b = { 0 };
	double lat = 0, late = 0;
	uint64_t sched = *next;
	size_t len;
	char *snap;
	int rc, stop;

	if (w->a->iterations > 0 && (long)w->iter >= w->a->iterations)
		return 1;	/* the last interval's frame went out before a failure */
	worker_sleep_until(sched);
	if ((rc = worker_probe(w, sched, &lat, &late)) != COLL_OK)
		return rc;
	*next = clock_now_ns() + (uint64_t)w->interval_ms * 1000000u;
	snap = worker_snapshot(w, lat, late, &len);
	rc = coll_gatherv(w->c, snap, len, 0, &b);
	free(snap);
	if (rc == COLL_OK && comm_rank(w->c) == 0)
		worker_frame(w, &b);
	coll_blobs_free(&b);
	if (rc != COLL_OK)
		return rc;
	w->iter++;	/* its frame is out: a failure from here on does not repeat it */
	stop = worker_control(w, &rc);
	if (rc != COLL_OK)
		return rc;
	return stop || (w->a->iterations > 0 && (long)w->iter >= w->a->iterations);
}

static int
worker_loop(struct worker *w)
{
	uint64_t next;
	int rc;

	if ((rc = coll_barrier(w->c)) != COLL_OK && worker_recover(w, rc) != 0)
		return EXIT_CANNOT;
	next = clock_now_ns();
	for (;;) {
		rc = worker_interval(w, &next);
		if (rc == 1)
			return EXIT_OK;
		if (rc != COLL_OK) {
			if (worker_recover(w, rc) != 0)
				return EXIT_CANNOT;
			next = clock_now_ns();
		}
	}
}

int
worker_run(struct top_args *a)
{
	struct worker w = { .a = a, .ctl = -1, .interval_ms = (int32_t)(a->interval_s * 1000) };
	struct coll_config cfg = COLL_CONFIG_INIT;
	int code, n;

	worker_keepalive(a);
	if ((code = comm_init_env(&w.c, &cfg)) != COLL_OK) {
		/* A failed init may still leave a communicator: its error, then free it. */
		fprintf(stderr, "colltop: cannot join the workers: %s\n", w.c != NULL ?
		    comm_last_error(w.c) : "COLL_UNIQUE_ID, COLL_RANK or COLL_SIZE is malformed");
		comm_destroy(w.c);
		return EXIT_CANNOT;
	}
	n = comm_size(w.c);
	w.me = comm_rank(w.c);
	w.njob = n;
	w.jobrank = xcalloc((size_t)n, sizeof *w.jobrank);
	for (int k = 0; k < n; k++)
		w.jobrank[k] = k;
	w.count = a->bytes / sizeof(float) ? a->bytes / sizeof(float) : 1;
	w.sbuf = xcalloc(w.count, sizeof *w.sbuf);
	w.rbuf = xcalloc(w.count, sizeof *w.rbuf);
	for (size_t i = 0; i < w.count; i++)
		w.sbuf[i] = (float)(w.me + 1);
	w.lost = json_array();
	collect_init(&w.col, comm_jobid(w.c), !a->no_gpu);
	worker_roles(&w);
	code = worker_loop(&w);
	if (w.ctl >= 0)
		close(w.ctl);
	collect_free(&w.col);
	json_decref(w.lost);
	comm_destroy(w.c);
	free(w.jobrank);
	free(w.sbuf);
	free(w.rbuf);
	return code;
}
