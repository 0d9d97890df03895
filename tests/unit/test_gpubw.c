/*
 * collcheck gpus's judgement (cmd/collcheck/gpubw*.c) on synthetic
 * measurements, as a host's facts: a slow pair and a slow GPU are named,
 * --config's floors override the table's, a model without floors is judged
 * against its peers only and said once; and the measurement itself through
 * a fake CUDA driver whose GPU 1 never finishes a copy: a failure with a
 * reason, not a hang, and GPU 1 is not used again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "gpubw.h"
#include "xmalloc.h"

/* One host of n GPUs of model: h2d/d2h 55, every pair 370, then the caller's changes. */
static void
host(struct check_result *r, const char *model, int n)
{
	struct facts *f;

	memset(r, 0, sizeof *r);
	r->nhosts = r->nranks = 1;
	r->hosts = xcalloc(1, sizeof *r->hosts);
	r->rank_host = xcalloc(1, sizeof *r->rank_host);
	r->hosts[0].name = xstrdup("node01");
	f = &r->hosts[0].facts;
	facts_init(f);
	facts_add(f, "gpubw", "%d GPUs, 268435456 bytes x 5", n);
	for (int i = 0; i < n; i++) {
		char k[64];

		snprintf(k, sizeof k, "gpubw.model.%d", i);
		facts_add(f, k, "%s", model);
		snprintf(k, sizeof k, "gpubw.bus.%d", i);
		facts_add(f, k, "0000:%02x:00", 0x19 + i);
		snprintf(k, sizeof k, "gpubw.h2d.%d", i);
		facts_add(f, k, "55.00");
		snprintf(k, sizeof k, "gpubw.d2h.%d", i);
		facts_add(f, k, "54.00");
		for (int j = 0; j < n; j++) {
			snprintf(k, sizeof k, "gpubw.p2p.%d.%d", i, j);
			if (i != j)
				facts_add(f, k, "370.00");
		}
	}
}

static void
judge(struct check_result *r, const char *conf)
{
	struct check_args a = { 0 };
	char line[256], err[256], *eq;

	check_conf_defaults(&a.conf);
	if (conf != NULL) {
		snprintf(line, sizeof line, "%s", conf);
		eq = strchr(line, '=');
		*eq = '\0';
		eq[-1] = '\0';
		assert_int_equal(gpubw_conf_line(&a.conf, line, eq + 2, err, sizeof err), 0);
	}
	gpubw_analyse(r, &a);
	check_conf_free(&a.conf);
}

/* How many findings of severity sev contain text. */
static int
found(const struct check_result *r, int sev, const char *text)
{
	int n = 0;

	for (int i = 0; i < r->nfind; i++)
		n += r->find[i].sev == sev && strstr(r->find[i].msg, text) != NULL;
	return n;
}

static void
test_slow_pair_named(void **state)
{
	struct check_result r;

	(void)state;
	host(&r, "NVIDIA H200", 4);
	facts_add(&r.hosts[0].facts, "gpubw.p2p.0.1", "120.00");
	judge(&r, NULL);
	assert_int_equal(found(&r, SEV_ERROR, "GPU 0 -> GPU 1: 120.00 GB/s, below the floor"), 1);
	assert_int_equal(r.nfind, 1);
	check_result_free(&r);
	/*
	 * Above the floor, below 0.7 x its peers: a warning. The H200's own
	 * floor is 0.7 x its measured pairs, so a lower one is configured.
	 */
	host(&r, "NVIDIA H200", 4);
	facts_add(&r.hosts[0].facts, "gpubw.p2p.2.3", "251.00");
	judge(&r, "gpu_floor *H200* = 38 38 200");
	assert_int_equal(found(&r, SEV_WARN, "GPU 2 -> GPU 3: 251.00 GB/s, below 0.7 x 370.00"),
	    1);
	assert_int_equal(r.nfind, 1);
	check_result_free(&r);
}

static void
test_slow_gpu_named(void **state)
{
	struct check_result r;

	(void)state;
	host(&r, "NVIDIA H100 80GB HBM3", 8);
	facts_add(&r.hosts[0].facts, "gpubw.h2d.2", "12.50");
	for (int j = 0; j < 8; j++)
		if (j != 5) {
			char k[64];

			snprintf(k, sizeof k, "gpubw.p2p.5.%d", j);
			facts_add(&r.hosts[0].facts, k, "200.00");
			snprintf(k, sizeof k, "gpubw.p2p.%d.5", j);
			facts_add(&r.hosts[0].facts, k, "200.00");
		}
	judge(&r, NULL);
	assert_int_equal(found(&r, SEV_ERROR, "GPU 2 (0000:1b:00) NVIDIA H100 80GB HBM3: host to "
	    "device 12.50 GB/s, below the floor"), 1);
	/* With GPU 5's 14 copies, 15 below a floor: 4 listed, the rest counted; GPU 5 named. */
	assert_int_equal(found(&r, SEV_ERROR, "-> GPU"), 3);
	assert_int_equal(found(&r, SEV_ERROR, "and 11 more GPU copies below their floor"), 1);
	assert_int_equal(found(&r, SEV_WARN, "GPU 5 (0000:1e:00): 14 of its 14 copies"), 1);
	check_result_free(&r);
}

/* Copies below 64 MiB (-s 1M) are bound by latency: no floor applies, peers still do. */
static void
test_small_copies_no_floor(void **state)
{
	struct check_result r;

	(void)state;
	host(&r, "NVIDIA H200", 4);
	facts_add(&r.hosts[0].facts, "gpubw", "4 GPUs, 1048576 bytes x 5");
	facts_add(&r.hosts[0].facts, "gpubw.h2d.1", "20.00");
	facts_add(&r.hosts[0].facts, "gpubw.p2p.0.1", "120.00");
	judge(&r, NULL);
	assert_int_equal(found(&r, SEV_ERROR, ""), 0);
	assert_int_equal(found(&r, SEV_INFO, "floors not applied: copies of 1048576 bytes"), 1);
	assert_int_equal(found(&r, SEV_WARN, "GPU 0 -> GPU 1: 120.00 GB/s, below 0.7 x"), 1);
	assert_int_equal(found(&r, SEV_WARN, "host to device 20.00 GB/s"), 1);
	check_result_free(&r);
}

/* Another process on the GPU while it was measured: its floors and failures warn, never err. */
static void
test_busy_gpu_warns(void **state)
{
	struct check_result r;

	(void)state;
	host(&r, "NVIDIA H200", 4);
	facts_add(&r.hosts[0].facts, "gpubw.busy.1", "2");
	facts_add(&r.hosts[0].facts, "gpubw.p2p.0.1", "120.00");
	facts_add(&r.hosts[0].facts, "gpubw.p2p.2.3", "120.00");
	judge(&r, NULL);
	assert_int_equal(found(&r, SEV_WARN, "GPU 0 -> GPU 1: 120.00 GB/s, below the floor"), 1);
	assert_int_equal(found(&r, SEV_ERROR, "GPU 2 -> GPU 3: 120.00 GB/s, below the floor"), 1);
	assert_int_equal(found(&r, SEV_INFO, "in use by other processes while measured (GPU "
	    "(processes)): 1 (2)"), 1);
	check_result_free(&r);
	/* The four listed are on a busy GPU; the line counting the rest takes their worst. */
	host(&r, "NVIDIA H200", 4);
	facts_add(&r.hosts[0].facts, "gpubw.busy.0", "1");
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 4; b++)
			if (a != b && (a == 0 || b == 0 || a + b == 5)) {
				char k[32];

				snprintf(k, sizeof k, "gpubw.p2p.%d.%d", a, b);
				facts_add(&r.hosts[0].facts, k, "120.00");
			}
	judge(&r, NULL);
	assert_int_equal(found(&r, SEV_ERROR, "more GPU copies below their floor"), 1);
	check_result_free(&r);
}

static void
test_config_floor_overrides(void **state)
{
	struct check_result r;

	(void)state;
	host(&r, "NVIDIA H200", 2);
	facts_add(&r.hosts[0].facts, "gpubw.p2p.0.1", "120.00");
	judge(&r, "gpu_floor *H200* = 10 10 100");
	assert_int_equal(found(&r, SEV_ERROR, "floor"), 0);
	assert_int_equal(found(&r, SEV_WARN, "GPU 0 -> GPU 1: 120.00 GB/s, below 0.7 x"), 1);
	check_result_free(&r);
	/* And raises them: every copy below 400 is below the floor. */
	host(&r, "NVIDIA H200", 2);
	judge(&r, "gpu_floor NVIDIA H200 = 0 0 400");
	assert_int_equal(found(&r, SEV_ERROR, "below the floor of 400 GB/s"), 2);
	assert_int_equal(found(&r, SEV_ERROR, "host to device"), 0);
	check_result_free(&r);
}

static void
test_unknown_model(void **state)
{
	struct check_result r;

	(void)state;
	host(&r, "NVIDIA Z9000", 4);
	facts_add(&r.hosts[0].facts, "gpubw.p2p.3.0", "100.00");
	facts_add(&r.hosts[0].facts, "gpubw.d2h.1", "20.00");
	judge(&r, NULL);
	assert_int_equal(found(&r, SEV_INFO, "GPU model 'NVIDIA Z9000' has no floors"), 1);
	assert_int_equal(found(&r, SEV_WARN, "GPU 3 -> GPU 0: 100.00 GB/s"), 1);
	assert_int_equal(found(&r, SEV_WARN, "GPU 1 (0000:1a:00): device to host 20.00 GB/s"), 1);
	assert_int_equal(r.nfind, 3);
	check_result_free(&r);
}

static void
test_not_measured(void **state)
{
	struct check_result r;

	(void)state;
	host(&r, "NVIDIA H200", 2);
	facts_add(&r.hosts[0].facts, "gpubw", "skipped: no GPU visible (CUDA_VISIBLE_DEVICES=)");
	judge(&r, NULL);
	assert_int_equal(found(&r, SEV_INFO, "GPUs not measured: skipped: no GPU visible"), 1);
	assert_int_equal(r.nfind, 1);
	check_result_free(&r);
	host(&r, "NVIDIA H200", 2);
	facts_add(&r.hosts[0].facts, "gpubw", "failed: the CUDA driver does not start: x");
	facts_add(&r.hosts[0].facts, "gpubw.h2d.1", "failed: copies did not finish");
	judge(&r, NULL);
	assert_int_equal(found(&r, SEV_ERROR, "GPUs not measured: the CUDA driver does not"), 1);
	check_result_free(&r);
	host(&r, "NVIDIA H200", 2);
	facts_add(&r.hosts[0].facts, "gpubw.h2d.1", "failed: copies did not finish in 10 ms");
	facts_add(&r.hosts[0].facts, "gpubw.p2p.1.0", "370.00 staged");
	judge(&r, NULL);
	assert_int_equal(found(&r, SEV_ERROR, "GPU 1 (0000:1a:00): host to device copy failed: "
	    "copies did not finish"), 1);
	assert_int_equal(found(&r, SEV_WARN, "GPU 1 -> GPU 0: no peer access"), 1);
	check_result_free(&r);
}

static void
test_conf_errors(void **state)
{
	struct check_conf c;
	char err[256];

	(void)state;
	check_conf_defaults(&c);
	assert_int_equal(gpubw_conf_line(&c, "gpu_floor *H200*", "1 2", err, sizeof err), -1);
	assert_int_equal(gpubw_conf_line(&c, "gpu_floor *H200*", "1 2 -3", err, sizeof err), -1);
	assert_int_equal(gpubw_conf_line(&c, "gpu_floor ", "1 2 3", err, sizeof err), -1);
	assert_int_equal(gpubw_conf_line(&c, "gpu_bw_factor", "1.5", err, sizeof err), -1);
	assert_int_equal(gpubw_conf_line(&c, "link_bw_factor", "0.5", err, sizeof err), 1);
	assert_int_equal(gpubw_conf_line(&c, "gpu_bw_factor", "0.8", err, sizeof err), 0);
	assert_true(c.gpu_bw_factor == 0.8);
	/* The table: the longer names first, so GH200 is not an H200. */
	assert_int_equal(gpubw_floor_for(&c, "NVIDIA GH200 480GB")->p2p, 0);
	assert_int_equal(gpubw_floor_for(&c, "NVIDIA H100 PCIe")->p2p, 0);
	assert_true(gpubw_floor_for(&c, "NVIDIA H100 80GB HBM3")->p2p > 0);
	assert_null(gpubw_floor_for(&c, "NVIDIA A100-SXM4-80GB"));
	check_conf_free(&c);
}

/* A fake driver of 3 GPUs: every copy of GPU 1 never finishes. */
static int fk_cur = -1;

static int fk_init(unsigned f) { (void)f; return CU_OK; }
static int fk_count(int *n) { *n = 3; return CU_OK; }
static int fk_name(char *s, int l, int d) { snprintf(s, (size_t)l, "Fake %d", d); return CU_OK; }
static int fk_attr(int *v, int a, int d) { (void)a; *v = d; return CU_OK; }
static int fk_retain(cu_ctx_t *c, int d) { *c = (cu_ctx_t)(intptr_t)(d + 1); return CU_OK; }
static int fk_release(int d) { (void)d; return CU_OK; }
static int fk_set(cu_ctx_t c) { fk_cur = (int)(intptr_t)c - 1; return CU_OK; }
static int fk_alloc(cu_ptr_t *p, size_t n) { (void)n; *p = 4096; return CU_OK; }
static int fk_free(cu_ptr_t p) { (void)p; return CU_OK; }
static int fk_stream(cu_stream_t *s, unsigned f) { (void)f; *s = (void *)1; return CU_OK; }
static int fk_sdestroy(cu_stream_t s) { (void)s; return CU_OK; }
static int fk_event(cu_event_t *e, unsigned f)
{
	(void)f;
	*e = (cu_event_t)(intptr_t)(fk_cur + 1);
	return CU_OK;
}
static int fk_edestroy(cu_event_t e) { (void)e; return CU_OK; }
static int fk_record(cu_event_t e, cu_stream_t s) { (void)e; (void)s; return CU_OK; }
static int fk_query(cu_event_t e) { return (intptr_t)e == 2 ? CU_NOT_READY : CU_OK; }
static int fk_elapsed(float *ms, cu_event_t a, cu_event_t b) { (void)a; (void)b; *ms = 10;
	return CU_OK; }
/* Static: with a GPU hung, cu_bw leaves the pinned buffer be, as freeing it could block. */
static char fk_host[1 << 20];
static int fk_hostalloc(void **p, size_t n, unsigned f) { (void)f; (void)n; *p = fk_host;
	return CU_OK; }
static int fk_freehost(void *p) { (void)p; return CU_OK; }
static int fk_htod(cu_ptr_t d, const void *s, size_t n, cu_stream_t st) { (void)d; (void)s;
	(void)n; (void)st; return CU_OK; }
static int fk_dtoh(void *d, cu_ptr_t s, size_t n, cu_stream_t st) { (void)d; (void)s; (void)n;
	(void)st; return CU_OK; }
static int fk_canpeer(int *c, int a, int b) { *c = a != 2 && b != 2; return CU_OK; }
static int fk_enpeer(cu_ctx_t c, unsigned f) { (void)c; (void)f; return CU_OK; }
static int fk_peer(cu_ptr_t d, cu_ctx_t dc, cu_ptr_t s, cu_ctx_t sc, size_t n, cu_stream_t st)
{
	(void)d; (void)dc; (void)s; (void)sc; (void)n; (void)st;
	return CU_OK;
}

static void
test_measure_hung_gpu(void **state)
{
	struct cu_api a = { .init = fk_init, .device_get_count = fk_count,
	    .device_get_name = fk_name, .device_get_attribute = fk_attr,
	    .primary_ctx_retain = fk_retain, .primary_ctx_release = fk_release,
	    .ctx_set_current = fk_set, .mem_alloc = fk_alloc, .mem_free = fk_free,
	    .stream_create = fk_stream, .stream_destroy = fk_sdestroy, .event_create = fk_event,
	    .event_destroy = fk_edestroy, .event_record = fk_record, .event_query = fk_query,
	    .event_elapsed_time = fk_elapsed, .mem_host_alloc = fk_hostalloc,
	    .mem_free_host = fk_freehost, .memcpy_htod_async = fk_htod,
	    .memcpy_dtoh_async = fk_dtoh, .device_can_access_peer = fk_canpeer,
	    .ctx_enable_peer_access = fk_enpeer, .memcpy_peer_async = fk_peer };
	struct cu_bw_opts o = { 1u << 20, 5, 50 };
	struct cu_bw *b = xcalloc(1, sizeof *b);
	char why[256];

	(void)state;
	assert_int_equal(cu_bw_measure_with(&a, b, &o, why, sizeof why), COLL_OK);
	assert_int_equal(b->n, 3);
	/* 5 x 1 MiB in 10 ms. */
	assert_true(b->gpu[0].h2d > 0.52 && b->gpu[0].h2d < 0.53);
	assert_true(b->gpu[1].h2d < 0);
	assert_non_null(strstr(b->gpu[1].why, "did not finish in 50 ms"));
	assert_int_equal(b->gpu[1].state, CU_BW_HUNG);
	assert_true(b->p2p[0][1] < 0);
	assert_string_equal(b->pwhy[0][1], "GPU 1: it hung earlier");
	assert_true(b->p2p[0][2] > 0 && b->p2p[2][0] > 0);
	assert_int_equal(b->peer[0][2], 0);
	assert_int_equal(b->peer[2][0], 0);
	free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_pair_named),
		cmocka_unit_test(test_slow_gpu_named),
		cmocka_unit_test(test_small_copies_no_floor),
		cmocka_unit_test(test_busy_gpu_warns),
		cmocka_unit_test(test_config_floor_overrides),
		cmocka_unit_test(test_unknown_model),
		cmocka_unit_test(test_not_measured),
		cmocka_unit_test(test_conf_errors),
		cmocka_unit_test(test_measure_hung_gpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
