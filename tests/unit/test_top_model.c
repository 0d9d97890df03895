/*
 * colltop's model and view, fed frames as rank 0 writes them: the straggler
 * test (warm-up, k x the median, the floor, K in a row, recovery), lost ranks
 * and hosts, other jobs stalled with the rank behind named three ways, frames
 * that are not frames, and the view's tables, filter, sort and sparklines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kind.h"
#include "top.h"
#include "user.h"

static struct top_args args = { .factor = 3, .slow_k = 3, .min_late_ms = 10, .warmup = 3,
	.stall_s = 2, .interval_s = 1, .iters = 1, .bytes = 65536 };

/* A frame of n ranks on hosts h0..h(n-1), rank r late by late_ms[r]. */
static void
feed(struct top_model *m, int n, const double *late_ms, const char *extra, double now)
{
	char buf[8192], err[256];
	size_t o;

	o = (size_t)snprintf(buf, sizeof buf, "{\"it\":%llu,\"interval_ms\":1000,\"bytes\":65536,"
	    "\"iters\":1,\"size\":%d,\"ranks\":[", (unsigned long long)m->frames, n);
	for (int r = 0; r < n; r++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s{\"r\":%d,\"h\":\"h%d\",\"pid\":%d,"
		    "\"lat\":%f,\"late\":%f%s}", r ? "," : "", r, r, 100 + r, 200.0 + r,
		    late_ms ? late_ms[r] * 1000 : 50.0, r == 0 && extra ? extra : "");
	snprintf(buf + o, sizeof buf - o, "],\"lost\":[]}");
	assert_int_equal(model_frame(m, buf, strlen(buf), now, err, sizeof err), 0);
}

static void
test_straggler(void **state)
{
	struct top_model m;
	double ok[4] = { 0.05, 0.1, 0.02, 0.08 }, slow[4] = { 0.05, 0.1, 0.02, 300 };
	/* frame index (1-based) -> the straggler expected after it */
	static const struct { int slow; int want; } rows[] = {
		{ 1, -1 }, { 1, -1 }, { 1, -1 },	/* warm-up: not judged */
		{ 1, -1 }, { 1, -1 }, { 1, 3 },		/* judged from frame 4: 3 in a row at 6 */
		{ 1, 3 }, { 0, -1 }, { 1, -1 },		/* recovers, then one slow is not enough */
	};

	(void)state;
	model_init(&m, &args);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		feed(&m, 4, rows[i].slow ? slow : ok, NULL, (double)i);
		assert_int_equal(m.straggler, rows[i].want);
		for (int r = 0; r < 3; r++)
			assert_int_equal(m.ranks[r].straggler, 0);
	}
	assert_int_equal(m.ranks[3].slow_run, 1);
	assert_true(m.busbw > 0);
	model_free(&m);
}

/* Two ranks: the slow one is held against the other, not a median it pulls up. */
static void
test_straggler_two(void **state)
{
	struct top_model m;
	double slow[2] = { 0.05, 300 };

	(void)state;
	model_init(&m, &args);
	for (int i = 0; i < 6; i++) {
		feed(&m, 2, slow, NULL, i);
		assert_int_equal(m.straggler, i < 5 ? -1 : 1);
	}
	assert_false(m.ranks[0].straggler);
	model_free(&m);
}

static void
test_floor(void **state)
{
	struct top_model m;
	/* 8 ms is 100 x the median, but under the 10 ms floor: jitter, not a straggler. */
	double late[4] = { 0.08, 0.08, 0.08, 8 };

	(void)state;
	model_init(&m, &args);
	for (int i = 0; i < 10; i++)
		feed(&m, 4, late, NULL, i);
	assert_int_equal(m.straggler, -1);
	assert_int_equal(m.ranks[3].slow_run, 0);
	model_free(&m);
}

static void
test_lost(void **state)
{
	struct top_model m;
	char err[256], lines[8][256];
	int at[8], n;
	const char *f = "{\"it\":1,\"interval_ms\":1000,\"bytes\":8,\"iters\":1,\"size\":2,"
	    "\"ranks\":[{\"r\":0,\"h\":\"a\",\"lat\":5,\"late\":1},{\"r\":2,\"h\":\"c\",\"lat\":5,"
	    "\"late\":1}],\"lost\":[{\"r\":1,\"h\":\"b\",\"why\":\"rank 1 stopped answering\"}]}";

	(void)state;
	model_init(&m, &args);
	assert_int_equal(model_frame(&m, f, strlen(f), 1, err, sizeof err), 0);
	assert_true(m.ranks[1].lost);
	assert_int_equal(model_find_host(&m, "b", 0), m.ranks[1].host);
	assert_true(m.hosts[m.ranks[1].host].lost);
	assert_false(m.hosts[m.ranks[0].host].lost);
	n = view_alerts(&m, 1.1, lines, at, 8);
	assert_int_equal(n, 1);
	assert_string_equal(lines[0], "lost: b: rank 1 stopped answering");
	assert_int_equal(at[0], VA_BAD);
	/* Silence past 1.5 intervals is said too. */
	assert_int_equal(view_alerts(&m, 3, lines, at, 8), 2);
	assert_non_null(strstr(lines[0], "no word from the workers for 2.0 s"));
	/* By the launcher's placement: its name for the host need not be the host's own. */
	{
		static const int rank_host[3] = { 7, 8, 9 };

		model_ranks_lost(&m, rank_host, 3, 9, "ssh: connection lost");
		assert_true(m.ranks[2].lost);
		assert_true(m.hosts[m.ranks[2].host].lost);
		assert_string_equal(m.hosts[m.ranks[2].host].why, "ssh: connection lost");
		assert_false(m.ranks[0].lost);
		model_ranks_lost(&m, rank_host, 3, 7, "ssh: session lost");
		assert_true(m.ranks[0].lost);
		assert_string_equal(m.ranks[0].why, "ssh: session lost");
		assert_true(m.hosts[m.ranks[0].host].lost);
		assert_int_equal(model_find_host(&m, "7", 0), -1);
	}
	model_free(&m);
}

/* Pages of one job of 3 ranks: seq started and proc state per rank. */
static void
feed_job(struct top_model *m, const unsigned *seq, const char *proc, const int *wait, double now)
{
	char extra[2048];
	size_t o = (size_t)snprintf(extra, sizeof extra, ",\"pages\":[");

	for (int r = 0; r < 3; r++)
		o += (size_t)snprintf(extra + o, sizeof extra - o, "%s{\"job\":\"00000000000000aa\","
		    "\"comm\":\"00000000000000bb\",\"rank\":%d,\"nranks\":3,\"pid\":%d,\"state\":3,"
		    "\"source\":0,\"seq_started\":%u,\"seq_done\":%u,\"seq_queued\":0,"
		    "\"kind\":\"allreduce\",\"host\":\"h0\",\"wait_peer\":%d,\"proc\":\"%c\"}",
		    r ? "," : "", r, 500 + r, seq[r], seq[r] - 1, wait ? wait[r] : -1, proc[r]);
	snprintf(extra + o, sizeof extra - o, "]");
	feed(m, 1, NULL, extra, now);
}

/*
 * Job ids are public (page names): a page of another user's with the same job
 * and communicator ids is another job, that user's, never a rank of the first
 * (colltop's 'c' would have named the wrong owner to collstack).
 */
static void
test_jobs_by_owner(void **state)
{
	struct top_model m;
	char extra[1024];
	size_t o = 0;

	(void)state;
	model_init(&m, &args);
	o += (size_t)snprintf(extra + o, sizeof extra - o, ",\"pages\":[");
	for (int r = 0; r < 2; r++)
		o += (size_t)snprintf(extra + o, sizeof extra - o, "%s{\"job\":\"00000000000000aa\","
		    "\"comm\":\"00000000000000bb\",\"rank\":%d,\"nranks\":2,\"pid\":%d,"
		    "\"state\":3,\"source\":0,\"seq_started\":5,\"seq_done\":4,"
		    "\"seq_queued\":0,\"kind\":\"allreduce\",\"host\":\"h0\",\"wait_peer\":-1,"
		    "\"proc\":\"S\",\"user\":\"%s\"}", r ? "," : "", r, 700 + r,
		    r ? "mallory" : "alice");
	snprintf(extra + o, sizeof extra - o, "]");
	feed(&m, 1, NULL, extra, 1);
	assert_int_equal(m.njobs, 2);
	assert_string_equal(m.jobs[0].user, "alice");
	assert_int_equal(m.jobs[0].nr, 1);
	assert_string_equal(m.jobs[1].user, "mallory");
	assert_int_equal(m.jobs[1].nr, 1);
	model_free(&m);
}

static void
test_jobs(void **state)
{
	struct top_model m;
	static const int waits[3] = { 2, 2, -1 };
	static const struct {
		unsigned seq[3];
		const char *proc;
		const int *wait;
		int stalled, behind;
		const char *why;
	} rows[] = {
		{ { 10, 10, 10 }, "SSS", NULL, 0, -1, NULL },
		{ { 11, 11, 11 }, "SSS", NULL, 0, -1, NULL },	/* advancing */
		{ { 12, 11, 12 }, "SSS", NULL, 0, -1, NULL },	/* still 0 s */
		{ { 12, 11, 12 }, "SSS", NULL, 0, -1, NULL },	/* still 1 s */
		{ { 12, 11, 12 }, "SSS", NULL, 1, 1, "behind" },	/* 2 s: stalled, 1 behind */
		{ { 13, 13, 13 }, "STS", NULL, 0, -1, NULL },	/* moved: not stalled */
		{ { 13, 13, 13 }, "STS", NULL, 0, -1, NULL },
		{ { 13, 13, 13 }, "STS", NULL, 1, 1, "stopped" },	/* all in 13, rank 1 stopped */
		{ { 14, 14, 14 }, "SSS", waits, 0, -1, NULL },
		{ { 14, 14, 14 }, "SSS", waits, 0, -1, NULL },
		{ { 14, 14, 14 }, "SSS", waits, 1, 2, "waited on" },	/* both others wait on 2 */
		/* 0 and 1 both at 20, 2 ahead (it finished its part): the stopped one. */
		{ { 20, 20, 21 }, "SST", NULL, 0, -1, NULL },
		{ { 20, 20, 21 }, "STS", NULL, 0, -1, NULL },
		{ { 20, 20, 21 }, "STS", NULL, 1, 1, "stopped" },
		/* Two behind, neither stopped nor waited on by most: the lower rank. */
		{ { 22, 23, 22 }, "SSS", NULL, 0, -1, NULL },
		{ { 22, 23, 22 }, "SSS", NULL, 0, -1, NULL },
		{ { 22, 23, 22 }, "SSS", NULL, 1, 0, "behind" },
	};
	char lines[8][256];
	int at[8];

	(void)state;
	model_init(&m, &args);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		feed_job(&m, rows[i].seq, rows[i].proc, rows[i].wait, (double)i);
		assert_int_equal(m.njobs, 1);
		assert_int_equal(m.jobs[0].stalled, rows[i].stalled);
		assert_int_equal(m.jobs[0].behind, rows[i].behind);
		if (rows[i].why != NULL)
			assert_string_equal(m.jobs[0].why, rows[i].why);
		if (i == 10 || i == 13) {
			assert_int_equal(view_alerts(&m, (double)i + 0.5, lines, at, 8), 1);
			assert_non_null(strstr(lines[0], i == 10 ? "stalled 2 s in seq 14; rank 2 "
			    "(h0, pid 502) is waited on" : "stalled 2 s; rank 1 (h0, pid 501) is "
			    "stopped at seq 20, others up to 21"));
		}
	}
	assert_int_equal(view_stalled_job(&m), 0);
	assert_int_equal(view_alerts(&m, 16.5, lines, at, 8), 1);
	assert_non_null(strstr(lines[0], "stalled 2 s; rank 0 (h0, pid 500) is behind at seq 22, "
	    "others up to 23"));
	/* The job ended: its pages are gone, and so is it. */
	feed(&m, 1, NULL, NULL, 18);
	assert_int_equal(m.njobs, 0);
	assert_int_equal(view_stalled_job(&m), -1);
	model_free(&m);
}

/*
 * Pages of a 4-rank job whose ops first..first+nops-1 each rank came to
 * late_ms[r] after the first: every rank ends together, so a rank's wait is
 * the latest arrival less its own (plus 1 ms of work). retries/peer: rank 1's.
 */
static int feed_kind;	/* each op's kind in the frame (enum coll_kind); 0: not said */

static void
feed_ops(struct top_model *m, const double *late_ms, unsigned first, int nops, int retries,
    int peer, double now)
{
	char extra[16384];
	size_t o = (size_t)snprintf(extra, sizeof extra, ",\"pages\":[");
	double hi = 0;

	for (int r = 0; r < 4; r++)
		hi = late_ms[r] > hi ? late_ms[r] : hi;
	for (int r = 0; r < 4; r++) {
		o += (size_t)snprintf(extra + o, sizeof extra - o, "%s{\"job\":\"00000000000000cc\","
		    "\"comm\":\"00000000000000dd\",\"rank\":%d,\"nranks\":4,\"pid\":%d,"
		    "\"state\":2,\"source\":0,\"seq_started\":%u,\"seq_done\":%u,"
		    "\"seq_queued\":0,\"kind\":\"allreduce\",\"host\":\"h%d\",\"wait_peer\":-1,"
		    "\"proc\":\"S\",\"retries\":%d,\"retry_peer\":%d,\"retry_age_s\":0.5,"
		    "\"gpu\":%d,%s\"ops\":[", r ? "," : "", r, 600 + r, first + (unsigned)nops - 1,
		    first + (unsigned)nops - 1, r, r == 1 ? retries : 0, r == 1 ? peer : -1,
		    r == 2 ? -1 : r, r == 2 ? "\"gpu_bus\":\"0000:3b:00.0\"," : "");
		for (int k = 0; k < nops; k++) {
			long long base = 1000000000000LL + (long long)(first + (unsigned)k) * 100000000LL;

			o += (size_t)snprintf(extra + o, sizeof extra - o, "%s[%u,0,%lld,%lld",
			    k ? "," : "", first + (unsigned)k, base + (long long)(late_ms[r] * 1e6),
			    base + (long long)((hi + 1) * 1e6));
			o += (size_t)(feed_kind ? snprintf(extra + o, sizeof extra - o, ",%d]",
			    feed_kind) : snprintf(extra + o, sizeof extra - o, "]"));
		}
		o += (size_t)snprintf(extra + o, sizeof extra - o, "]}");
	}
	snprintf(extra + o, sizeof extra - o, "]");
	feed(m, 1, NULL, extra, now);
}

/*
 * A job's own straggler (jobstrag.c), by the probe's rule: rank 2 comes 40 ms
 * late to each op and is named after the warm-up and slow_k intervals; equal
 * ranks name none; an interval with no new ops changes nothing; a retried
 * link is counted and named by both ranks.
 */
static void
test_job_straggler(void **state)
{
	double slow[4] = { 0, 0.2, 40, 0.1 }, equal[4] = { 0.1, 0, 0.2, 0.1 };
	struct top_model m;
	char lines[8][256];
	int at[8], n, found = 0;

	(void)state;
	model_init(&m, &args);
	for (int i = 0; i < 6; i++) {
		feed_ops(&m, slow, 1 + (unsigned)i * 3, 3, 0, -1, i);
		assert_int_equal(m.njobs, 1);
		assert_int_equal(m.jobs[0].straggler, i < 5 ? -1 : 2);	/* judged from 4, 3 in a row */
		assert_int_equal(m.jobs[0].nops, 3);
		assert_int_equal(m.jobs[0].judged_seq, 3 + (unsigned)i * 3);
	}
	assert_int_equal(m.jobs[0].r[2].rank, 2);
	/* The others' median wait (40.9 ms) less its own (1 ms). */
	assert_true(m.jobs[0].r[2].late_ms > 39.89 && m.jobs[0].r[2].late_ms < 39.91);
	for (int k = 0; k < 4; k++)
		assert_int_equal(m.jobs[0].r[k].straggler, k == 2);
	n = view_alerts(&m, 5.5, lines, at, 8);
	for (int i = 0; i < n; i++)
		found += strstr(lines[i], "straggler: rank 2 (h2, GPU at 0000:3b:00.0, pid 602) comes "
		    "39.9 ms late to each op (median of 3 ops") != NULL;
	assert_int_equal(found, 1);
	/* A GPU the worker placed among its host's is shown by its index; else by its address. */
	assert_int_equal(m.jobs[0].r[3].gpu, 3);
	assert_int_equal(m.jobs[0].r[2].gpu, -1);
	assert_string_equal(m.jobs[0].r[2].gpu_bus, "0000:3b:00.0");
	/* The same ops again (no new op): nothing changes, however often. */
	for (int i = 0; i < 4; i++) {
		feed_ops(&m, equal, 16, 3, 0, -1, 6 + i);
		assert_int_equal(m.jobs[0].straggler, 2);
		assert_int_equal(m.jobs[0].r[2].slow_run, 3);
	}
	/* New ops with equal ranks: no longer named. */
	feed_ops(&m, equal, 19, 3, 0, -1, 10);
	assert_int_equal(m.jobs[0].straggler, -1);
	model_free(&m);

	model_init(&m, &args);
	for (int i = 0; i < 8; i++) {
		feed_ops(&m, equal, 1 + (unsigned)i * 3, 3, i > 5 ? 2 : 0, 3, i);
		assert_int_equal(m.jobs[0].straggler, -1);
	}
	assert_int_equal(m.jobs[0].retries, 2);
	assert_true(m.jobs[0].retrying);
	n = view_alerts(&m, 7.5, lines, at, 8);
	found = 0;
	for (int i = 0; i < n; i++) {
		found += strstr(lines[i], "straggler") != NULL;
		found += 10 * (strstr(lines[i], "link rank 1 <-> rank 3 (h1 <-> h3) broke and ops "
		    "were retried 2 times") != NULL);
	}
	assert_int_equal(found, 10);
	model_free(&m);
}

/*
 * A frame of many jobs (the model finds a page's job by its key, not by a
 * walk of every job): each job once with both its ranks, over two frames, and
 * a communicator id with a byte the model cleans still one job, not one a page.
 */
static void
test_many_jobs(void **state)
{
	enum { NJOBS = 3000 };
	size_t cap = (size_t)NJOBS * 2 * 256 + 1024, o;
	char *buf = malloc(cap), err[256];
	struct top_model m;

	(void)state;
	assert_non_null(buf);
	model_init(&m, &args);
	for (int f = 0; f < 2; f++) {
		o = (size_t)snprintf(buf, cap, "{\"it\":%d,\"size\":1,\"ranks\":[{\"r\":0,"
		    "\"h\":\"h0\",\"lat\":1,\"late\":1,\"pages\":[", f);
		for (int r = 0; r < 2; r++)
			for (int j = 0; j <= NJOBS; j++)
				o += (size_t)snprintf(buf + o, cap - o, "%s{\"job\":\"%016x\","
				    "\"comm\":\"%s\",\"rank\":%d,\"nranks\":2,\"pid\":%d,"
				    "\"proc\":\"S\",\"user\":\"u%d\"}", r + j ? "," : "", j,
				    j == NJOBS ? "b\\u001bb" : "00000000000000bb", r, 1000 + j, j % 3);
		snprintf(buf + o, cap - o, "]}],\"lost\":[]}");
		assert_int_equal(model_frame(&m, buf, strlen(buf), f + 1, err, sizeof err), 0);
		assert_int_equal(m.njobs, NJOBS + 1);
		for (int j = 0; j < m.njobs; j++) {
			unsigned id = 0;

			assert_int_equal(sscanf(m.jobs[j].jobid, "%x", &id), 1);
			assert_int_equal(id, (unsigned)j);
			assert_int_equal(m.jobs[j].nr, 2);
			assert_int_equal(m.jobs[j].r[0].rank, 0);
			assert_int_equal(m.jobs[j].r[1].rank, 1);
		}
	}
	model_free(&m);
	free(buf);
}

/*
 * A job that makes its communicator again with the same ids counts its ops
 * from 1 anew: below the last judged, they are judged again, not never.
 */
static void
test_job_restart(void **state)
{
	double slow[4] = { 0, 0.2, 40, 0.1 };
	struct top_model m;

	(void)state;
	model_init(&m, &args);
	for (int i = 0; i < 6; i++)
		feed_ops(&m, slow, 1 + (unsigned)i * 3, 3, 0, -1, i);
	assert_int_equal(m.jobs[0].judged_seq, 18);
	assert_int_equal(m.jobs[0].straggler, 2);
	for (int i = 0; i < 3; i++) {
		feed_ops(&m, slow, 1 + (unsigned)i * 3, 3, 0, -1, 6 + i);
		assert_int_equal(m.jobs[0].judged_seq, 3 + (unsigned)i * 3);
		assert_int_equal(m.jobs[0].nops, 3);
		assert_int_equal(m.jobs[0].straggler, 2);
	}
	model_free(&m);
}

/*
 * A rooted op's waits differ by design (the root of a broadcast leaves
 * first): ops of such kinds are never compared; an all-reduce said as such is.
 */
static void
test_job_rooted(void **state)
{
	double slow[4] = { 0, 0.2, 40, 0.1 };
	struct top_model m;

	(void)state;
	for (int kind = KIND_ALLREDUCE; kind <= KIND_BROADCAST; kind++) {
		feed_kind = kind;
		model_init(&m, &args);
		for (int i = 0; i < 6; i++)
			feed_ops(&m, slow, 1 + (unsigned)i * 3, 3, 0, -1, i);
		assert_int_equal(m.jobs[0].straggler, kind == KIND_ALLREDUCE ? 2 : -1);
		assert_int_equal(m.jobs[0].nops, kind == KIND_ALLREDUCE ? 3 : 0);
		model_free(&m);
	}
	feed_kind = 0;
}

/* A frame's ops are untrusted: odd shapes and values are passed over, never read past. */
static void
test_job_ops_odd(void **state)
{
	static const char *const ops[] = { "\"x\"", "[[1]]", "[[-5,0,1,2]]", "[[\"a\",1,2,3]]",
		"[[3,0,9,2]]", "[[4,0,1,99999999999999999]]", "[1,2,3]", "[[7,0,1,2],[7,0,1,3]]" };
	char extra[2048];
	struct top_model m;

	(void)state;
	model_init(&m, &args);
	for (int i = 0; i < 10; i++) {
		size_t o = (size_t)snprintf(extra, sizeof extra, ",\"pages\":[");

		for (int r = 0; r < 2; r++)
			o += (size_t)snprintf(extra + o, sizeof extra - o, "%s{\"job\":\"00000000000000ee\","
			    "\"comm\":\"00000000000000ff\",\"rank\":%d,\"nranks\":2,\"pid\":%d,"
			    "\"proc\":\"S\",\"retries\":-3,\"retry_peer\":99999999999,\"gpu\":\"x\","
			    "\"ops\":%s}", r ? "," : "", r, 900 + r, ops[(i + r) % 8]);
		snprintf(extra + o, sizeof extra - o, "]");
		feed(&m, 1, NULL, extra, i);
		assert_int_equal(m.njobs, 1);
		assert_int_equal(m.jobs[0].straggler, -1);
		assert_int_equal(m.jobs[0].retries, 0);
		assert_int_equal(m.jobs[0].r[0].retry_peer, -1);
		assert_int_equal(m.jobs[0].r[0].gpu, -1);
	}
	model_free(&m);
}

/* c takes the user's own stalled job before another user's listed first. */
static void
test_stalled_own_first(void **state)
{
	struct top_job jobs[3] = { { .stalled = 1 }, { .stalled = 0 }, { .stalled = 1 } };
	struct top_model m = { .jobs = jobs, .njobs = 3 };
	char me[64];

	(void)state;
	user_name(geteuid(), me, sizeof me);
	snprintf(jobs[0].user, sizeof jobs[0].user, "%.40s-not", me);
	snprintf(jobs[1].user, sizeof jobs[1].user, "%s", me);
	snprintf(jobs[2].user, sizeof jobs[2].user, "%s", me);
	assert_int_equal(view_stalled_job(&m), 2);
	jobs[2].stalled = 0;
	assert_int_equal(view_stalled_job(&m), 0);
}

static void
test_not_frames(void **state)
{
	static const char *const bad[] = { "", "{", "[1,2]", "{\"it\":1}", "{\"ranks\":3}",
		"hello" };
	struct top_model m;
	char err[256];

	(void)state;
	model_init(&m, &args);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		assert_int_equal(model_frame(&m, bad[i], strlen(bad[i]), 1, err, sizeof err), -1);
		assert_non_null(strstr(err, "not a frame"));
	}
	assert_int_equal(m.frames, 0);
	/* Ranks out of range and missing fields are passed over, not trusted. */
	const char *odd = "{\"ranks\":[{\"r\":-4,\"h\":\"x\"},{\"r\":99999999,\"h\":\"x\"},"
	    "{\"r\":1}],\"lost\":[{\"r\":-1}]}";
	assert_int_equal(model_frame(&m, odd, strlen(odd), 1, err, sizeof err), 0);
	assert_int_equal(m.nranks, 0);
	/* A rank beyond every rank the frame holds is not trusted to size the tables. */
	const char *far = "{\"ranks\":[{\"r\":1048575,\"h\":\"a\",\"lat\":1,\"late\":1}]}";
	assert_int_equal(model_frame(&m, far, strlen(far), 2, err, sizeof err), 0);
	assert_int_equal(m.nranks, 0);
	model_free(&m);
}

static void
test_view(void **state)
{
	struct top_model m;
	struct view_table t;
	double late[3] = { 1, 2, 3 };
	char buf[128];
	float v[4] = { 1, 2, 4, 8 };

	(void)state;
	view_spark(v, 4, 10, 1, buf, sizeof buf);
	assert_string_equal(buf, "_.:#");
	view_spark(v, 4, 2, 0, buf, sizeof buf);
	assert_string_equal(buf, "\u2584\u2588");
	view_spark(v, 0, 10, 0, buf, sizeof buf);
	assert_string_equal(buf, "");
	assert_int_equal(view_col_parse(0, "late_ms"), 4);
	assert_int_equal(view_col_parse(1, "Gpu%"), 11);
	assert_int_equal(view_col_parse(0, "nope"), -1);
	model_init(&m, &args);
	feed(&m, 3, late, NULL, 1);
	view_table(&m, 0, 4, 1, NULL, 1, &t);	/* by LATE_MS, largest first */
	assert_int_equal(t.nrows, 3);
	assert_string_equal(t.rows[0][0].text, "2");
	assert_string_equal(t.rows[0][4].text, "3.000");
	view_table_free(&t);
	view_table(&m, 0, 0, 0, "h1", 1, &t);
	assert_int_equal(t.nrows, 1);
	assert_string_equal(t.rows[0][1].text, "h1");
	view_table_free(&t);
	view_table(&m, 1, 0, 0, NULL, 1, &t);
	assert_int_equal(t.nrows, 3);
	assert_string_equal(t.head[0].text, "HOST");
	view_table_free(&t);
	view_summary(&m, buf, sizeof buf);
	assert_non_null(strstr(buf, "3 ranks on 3 hosts  #1  every 1 s  probe 64K x1"));
	model_free(&m);
}

/*
 * What c runs on a job coll did not launch: --pid with its ranks on this host
 * (every communicator of the job, no other job's), and the other hosts each
 * counted once by their whole name: node1 is not node10, and a host with
 * three ranks is one host.
 */
static void
test_cs_hosts(void **state)
{
	static const struct { const char *job, *comm, *host; int pid; } pg[] = {
		{ "run:x", "c1", "node9", 901 }, { "run:x", "c1", "node9", 900 },
		{ "run:x", "c1", "node10", 100 }, { "run:x", "c1", "node10", 101 },
		{ "run:x", "c1", "node1", 10 }, { "run:x", "c1", "node2", 20 },
		{ "run:x", "c1", "node3", 30 }, { "run:x", "c1", "node3", 31 },
		{ "run:x", "c1", "node4", 40 }, { "run:x", "c1", "node4", 41 },
		{ "run:x", "c1", "node4", 42 }, { "run:x", "c2", "node9", 902 },
		{ "run:y", "c1", "node9", 950 },
	};
	struct top_model m;
	struct view_cs cs;
	char extra[8192];
	size_t o = (size_t)snprintf(extra, sizeof extra, ",\"pages\":[");

	(void)state;
	for (size_t i = 0; i < sizeof pg / sizeof pg[0]; i++)
		o += (size_t)snprintf(extra + o, sizeof extra - o, "%s{\"job\":\"%s\",\"comm\":"
		    "\"%s\",\"rank\":%zu,\"nranks\":11,\"pid\":%d,\"state\":3,\"source\":0,"
		    "\"seq_started\":5,\"seq_done\":4,\"seq_queued\":0,\"kind\":\"allreduce\","
		    "\"host\":\"%s\",\"wait_peer\":-1,\"proc\":\"S\",\"user\":\"alice\"}",
		    i ? "," : "", pg[i].job, pg[i].comm, i, pg[i].pid, pg[i].host);
	snprintf(extra + o, sizeof extra - o, "]");
	model_init(&m, &args);
	feed(&m, 1, NULL, extra, 1);
	assert_int_equal(m.njobs, 3);
	assert_string_equal(m.jobs[0].commid, "c1");
	view_collstack(&m, 0, "node9", &cs);
	assert_int_equal(cs.argc, 5);
	assert_string_equal(cs.argv[1], "--pid");
	assert_string_equal(cs.argv[2], "900,901,902");
	assert_string_equal(cs.argv[4], "alice");
	assert_string_equal(cs.note, "ranks on 5 other hosts (node1, node10, node2, ...) are "
	    "not in --pid: a pid is its own host's; run collstack there");
	/* Its other communicator: the same ranks, the same hosts. */
	assert_string_equal(m.jobs[1].commid, "c2");
	view_collstack(&m, 1, "node9", &cs);
	assert_string_equal(cs.argv[2], "900,901,902");
	assert_non_null(strstr(cs.note, "ranks on 5 other hosts"));
	/* Asked from elsewhere: the first host seen, and the rest (node9 once) are others. */
	view_collstack(&m, 0, "elsewhere", &cs);
	assert_string_equal(cs.argv[2], "900,901,902");
	assert_string_equal(cs.argv[3], "-H");
	assert_string_equal(cs.argv[4], "node9");
	assert_non_null(strstr(cs.note, "ranks on 5 other hosts"));
	view_collstack(&m, 2, "node9", &cs);
	assert_string_equal(cs.argv[2], "950");
	assert_string_equal(cs.note, "");
	/* --json's index: built once, every job's ranks once, the job's communicators together. */
	{
		struct view_cs_index *ix = view_cs_index(&m);

		assert_int_equal(ix->ngroups, 2);
		assert_int_equal(ix->ne, 13);
		assert_int_equal(ix->group[0], ix->group[1]);
		assert_int_not_equal(ix->group[0], ix->group[2]);
		assert_int_equal(ix->grun[ix->group[0] + 1] - ix->grun[ix->group[0]], 6);
		view_cs_index_free(ix);
	}
	model_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_straggler),
		cmocka_unit_test(test_straggler_two),
		cmocka_unit_test(test_floor),
		cmocka_unit_test(test_lost),
		cmocka_unit_test(test_jobs),
		cmocka_unit_test(test_jobs_by_owner),
		cmocka_unit_test(test_many_jobs),
		cmocka_unit_test(test_job_straggler),
		cmocka_unit_test(test_job_rooted),
		cmocka_unit_test(test_job_ops_odd),
		cmocka_unit_test(test_job_restart),
		cmocka_unit_test(test_not_frames),
		cmocka_unit_test(test_stalled_own_first),
		cmocka_unit_test(test_view),
		cmocka_unit_test(test_cs_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
