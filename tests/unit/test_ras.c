/*
 * NCCL RAS reports read into collstack's shape: the JSON and the text
 * report NCCL 2.28.9 wrote on the GPU machine during a hang (rank 1 one
 * all-reduce behind), and reports that are neither.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ras.h"

static char *
slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf = malloc(1 << 16);

	snprintf(path, sizeof path, "%s/tests/stack/ras/%s", COLL_SRC, name);
	assert_non_null(f = fopen(path, "r"));
	*len = fread(buf, 1, (1 << 16) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

/* Each rank's AllReduce count, and its pid, in the first communicator. */
static void
check_counts(json_t *r, int with_status)
{
	json_t *c = json_array_get(json_object_get(r, "comms"), 0);
	json_t *ranks = json_object_get(c, "ranks");
	static const int pid[] = { 673, 674 }, count[] = { 6, 5 };

	assert_string_equal(json_string_value(json_object_get(r, "version")), "2.28.9");
	assert_string_equal(json_string_value(json_object_get(c, "hash")), "0x92906a7ad1050f54");
	assert_int_equal(json_array_size(ranks), 2);
	for (int i = 0; i < 2; i++) {
		json_t *x = json_array_get(ranks, (size_t)i);

		assert_int_equal(json_integer_value(json_object_get(x, "rank")), i);
		assert_int_equal(json_integer_value(json_object_get(x, "pid")), pid[i]);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(x, "counts"),
		    "AllReduce")), count[i]);
		if (with_status)
			assert_int_equal(json_integer_value(json_object_get(x, "async_error")), 0);
	}
	assert_int_equal(json_array_size(json_object_get(c, "missing")), 0);
}

static void
report_json(void **state)
{
	size_t len;
	char *buf = slurp("verbose_status.json", &len), why[256];
	json_t *r = stk_ras_parse(buf, len, why, sizeof why);

	(void)state;
	assert_non_null(r);
	check_counts(r, 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(
	    json_object_get(json_array_get(json_object_get(r, "comms"), 0), "ranks"), 0),
	    "counts"), "Broadcast")), 0);
	json_decref(r);
	free(buf);
}

static void
report_text(void **state)
{
	size_t len;
	char *buf = slurp("verbose_status.txt", &len), why[256];
	json_t *r = stk_ras_parse(buf, len, why, sizeof why);

	(void)state;
	assert_non_null(r);
	check_counts(r, 0);
	json_decref(r);
	free(buf);
}

static void
report_refused(void **state)
{
	char why[256];
	static const char *bad[] = { "", "hello\n", "{\"communicators\": 3}", "{\"a\": 1, \"a\": 2}",
		"{\"communicators\": [", "<html>" };

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		why[0] = '\0';
		assert_null(stk_ras_parse(bad[i], strlen(bad[i]), why, sizeof why));
		assert_true(strstr(why, "NCCL RAS report") != NULL);
	}
}

/* Ranks that are not objects, counts that are not numbers: left out, not believed. */
static void
report_odd_values(void **state)
{
	static const char *in = "{\"nccl_version\": \"2.28.9\", \"communicators\": [{\"hash\": "
	    "\"0x1\", \"size\": 3, \"ranks\": [7, {\"rank\": 0, \"collective_counts\": "
	    "{\"AllReduce\": \"x\", \"AllGather\": -4, \"Reduce\": 2}}], \"missing_ranks\": "
	    "[2, {\"rank\": 1}, \"z\"]}]}";
	char why[256];
	json_t *r = stk_ras_parse(in, strlen(in), why, sizeof why), *c, *cnt;

	(void)state;
	assert_non_null(r);
	c = json_array_get(json_object_get(r, "comms"), 0);
	assert_int_equal(json_array_size(json_object_get(c, "ranks")), 1);
	cnt = json_object_get(json_array_get(json_object_get(c, "ranks"), 0), "counts");
	assert_int_equal(json_object_size(cnt), 1);
	assert_int_equal(json_integer_value(json_object_get(cnt, "Reduce")), 2);
	assert_int_equal(json_array_size(json_object_get(c, "missing")), 2);
	json_decref(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(report_json),
		cmocka_unit_test(report_text),
		cmocka_unit_test(report_refused),
		cmocka_unit_test(report_odd_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
