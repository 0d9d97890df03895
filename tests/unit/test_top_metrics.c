/*
 * colltop's /metrics text (metrics.c) and the format's writer (promtext.c):
 * label values escaped (backslash, quote, newline; bytes that are not
 * printable UTF-8 made '?'), counters ending in _total with exact integers,
 * units in the names and the model's units turned into them, unknown values
 * (-1) left out rather than shown, each family's HELP and TYPE once before
 * its samples, and a job rank's second page of the same rank left out.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "colltop/top.h"
#include "promtext.h"

static void
test_escape(void **state)
{
	struct promtext t = { 0 };
	const char *lab[] = { "host", "a\\b\"c\nd", "job", "caf\xc3\xa9 \x01\xff\xc3", NULL };

	(void)state;
	promtext_sample(&t, "coll_x", lab, 1.5);
	assert_string_equal(t.p, "coll_x{host=\"a\\\\b\\\"c\\nd\",job=\"caf\xc3\xa9 ???\"} 1.5\n");
	promtext_free(&t);
	/* Overlong forms, surrogates and C1 controls are not text. */
	promtext_label_value(&t, "\xc0\xaf\xed\xa0\x80\xc2\x85ok\xe2\x82\xac");
	assert_string_equal(t.p, "???????ok\xe2\x82\xac");
	promtext_free(&t);
}

static void
test_values(void **state)
{
	struct promtext t = { 0 };
	const char *lab[] = { "a", NULL, NULL };

	(void)state;
	promtext_sample(&t, "n", NULL, NAN);
	assert_null(t.p);
	promtext_sample(&t, "n", lab, 2);	/* a pair with no value is left out */
	promtext_sample_u64(&t, "c_total", NULL, 18446744073709551615ull);
	promtext_sample(&t, "i", NULL, INFINITY);
	assert_string_equal(t.p, "n 2\nc_total 18446744073709551615\ni +Inf\n");
	promtext_free(&t);
}

/* A model by hand: two hosts, two probe ranks (one lost), a job of two ranks and a dup. */
static void
model_make(struct top_model *m, struct top_host *h, struct top_rank *r, struct top_job *j,
    struct top_jobrank *jr)
{
	*m = (struct top_model){ .frames = 7, .interval_s = 0.5, .size = 2, .bytes = 65536,
	    .hosts = h, .nhosts = 2, .ranks = r, .nranks = 2, .jobs = j, .njobs = 1 };
	h[0] = (struct top_host){ .name = "n\"1" };
	h[1] = (struct top_host){ .name = "n2" };
	h[0].sample = json_loads("{\"net\":[{\"name\":\"eth0\",\"up\":true,\"speed_mbps\":100000,"
	    "\"rx_bytes\":9007199254740993,\"tx_bytes\":5,\"errors\":0,\"drops\":1,"
	    "\"carrier_changes\":2}],\"rdma\":[{\"dev\":\"mlx5_0\",\"port\":1,\"state\":\"ACTIVE\","
	    "\"rx_bytes\":4,\"hw\":false,\"retransmits\":0}],\"gpu\":[{\"index\":3,\"util\":50,"
	    "\"power_mw\":250000,\"temp_c\":-1,\"nvlink_tx_kib\":2}]}", 0, NULL);
	r[0] = (struct top_rank){ .rank = 0, .host = 0, .lat_us = 250, .late_us = 10,
	    .busbw = 1.5, .straggler = 1 };
	r[1] = (struct top_rank){ .rank = 1, .host = 1, .lat_us = 300, .late_us = -1,
	    .busbw = 2, .lost = 1 };
	*j = (struct top_job){ .jobid = "abc", .commid = "c1", .user = "u", .nranks = 2,
	    .r = jr, .nr = 3, .still_s = 1.25, .stalled = 1, .behind = 1, .straggler = 1,
	    .retries = 3, .live = 2 };
	jr[0] = (struct top_jobrank){ .rank = 0, .wrank = 4, .gpu = -1, .host = "n2", .seq_done = 41, .late_ms = -1 };
	jr[1] = (struct top_jobrank){ .rank = 1, .wrank = 5, .gpu = -1, .host = "n2", .seq_done = 40, .late_ms = 40,
	    .straggler = 1, .retries = 3 };
	jr[2] = (struct top_jobrank){ .rank = 1, .wrank = 5, .gpu = -1, .host = "n2", .seq_done = 12, .late_ms = 9 };
}

static int
count(const char *s, const char *w)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, w)) != NULL; p += strlen(w))
		n++;
	return n;
}

static void
test_render(void **state)
{
	struct top_model m;
	struct top_host h[2];
	struct top_rank r[2];
	struct top_job j;
	struct top_jobrank jr[3];
	struct promtext t = { 0 };
	static const char *const want[] = {
		"coll_top_up 1\n", "coll_top_frames_total 7\n", "coll_top_interval_seconds 0.5\n",
		"# TYPE coll_probe_latency_seconds gauge\n",
		"coll_probe_latency_seconds{host=\"n\\\"1\",rank=\"0\"} 0.00025\n",
		"coll_probe_busbw_bytes_per_second{host=\"n\\\"1\",rank=\"0\"} 1500000000\n",
		"coll_probe_lateness_seconds{host=\"n\\\"1\",rank=\"0\"} 1e-05\n",
		"coll_probe_straggler{host=\"n\\\"1\",rank=\"0\"} 1\n",
		"coll_probe_lost{host=\"n2\",rank=\"1\"} 1\n",
		"# TYPE coll_network_receive_bytes_total counter\n",
		"coll_network_receive_bytes_total{host=\"n\\\"1\",device=\"eth0\"} 9007199254740993\n",
		"coll_network_speed_bytes{host=\"n\\\"1\",device=\"eth0\"} 12500000000\n",
		"coll_network_up{host=\"n\\\"1\",device=\"eth0\"} 1\n",
		"coll_rdma_receive_bytes_total{host=\"n\\\"1\",device=\"mlx5_0\",port=\"1\"} 4\n",
		"coll_rdma_port_active{host=\"n\\\"1\",device=\"mlx5_0\",port=\"1\"} 1\n",
		"coll_gpu_utilization_ratio{host=\"n\\\"1\",gpu=\"3\"} 0.5\n",
		"coll_gpu_power_watts{host=\"n\\\"1\",gpu=\"3\"} 250\n",
		"coll_gpu_nvlink_transmit_bytes_total{host=\"n\\\"1\",gpu=\"3\"} 2048\n",
		"coll_job_stalled{job=\"abc\",comm=\"c1\",user=\"u\"} 1\n",
		"coll_job_seq{job=\"abc\",comm=\"c1\",user=\"u\"} 41\n",
		"coll_job_behind_rank{job=\"abc\",comm=\"c1\",user=\"u\"} 5\n",
		"coll_job_still_seconds{job=\"abc\",comm=\"c1\",user=\"u\"} 1.25\n",
		"coll_job_straggler_rank{job=\"abc\",comm=\"c1\",user=\"u\"} 5\n",
		"coll_job_retried_ops{job=\"abc\",comm=\"c1\",user=\"u\"} 3\n",
		"coll_job_rank_late_seconds{job=\"abc\",comm=\"c1\",user=\"u\",rank=\"5\",host=\"n2\"} "
		    "0.04\n",
		"coll_job_rank_straggler{job=\"abc\",comm=\"c1\",user=\"u\",rank=\"5\",host=\"n2\"} 1\n",
		"coll_job_rank_retries_total{job=\"abc\",comm=\"c1\",user=\"u\",rank=\"5\",host=\"n2\"} "
		    "3\n",
	};

	(void)state;
	model_make(&m, h, r, &j, jr);
	metrics_render(&m, &t);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		if (strstr(t.p, want[i]) == NULL)
			fail_msg("missing: %s\nin:\n%s", want[i], t.p);
	/* Unknown: absent, never -1; the lost rank's stale latency is not shown. */
	assert_null(strstr(t.p, " -1\n"));
	assert_null(strstr(t.p, "coll_probe_latency_seconds{host=\"n2\""));
	assert_null(strstr(t.p, "coll_gpu_temperature_celsius{"));
	assert_null(strstr(t.p, "coll_job_rank_late_seconds{job=\"abc\",comm=\"c1\",user=\"u\","
	    "rank=\"4\""));
	/* Retransmits only from hardware counters. */
	assert_null(strstr(t.p, "coll_rdma_retransmits_total{"));
	/* The second page of rank 1 on n2: one series, the first's. */
	assert_int_equal(count(t.p, "coll_job_rank_seq{job=\"abc\",comm=\"c1\",user=\"u\","
	    "rank=\"5\",host=\"n2\"}"), 1);
	assert_int_equal(count(t.p, "# TYPE coll_job_rank_seq gauge\n"), 1);
	/* Every counter's name ends in _total. */
	for (const char *p = t.p; (p = strstr(p, "# TYPE ")) != NULL; p++) {
		const char *e = strchr(p, '\n');

		if (strncmp(e - 8, " counter", 8) == 0)
			assert_memory_equal(e - 14, "_total", 6);
	}
	promtext_free(&t);
	json_decref(h[0].sample);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
