/*
 * Flight recorder dumps in JSON (dump_fr_trace_json) and format 2.10's keys:
 * the JSON twins of PyTorch's own pickles (tests/stack/fr_json, written by
 * hand from tests/stack/fr_torch) read into the same entries as the
 * pickles; the report's first line names the format and the library's
 * version, a rank that did not join is said with its thread, a format newer
 * than 2.10 is read by its keys with a note, ranks on different library
 * versions are a finding; and the JSON reader's bounds (depth, values,
 * bytes, duplicate keys, no object) refuse before anything is made.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fr.h"
#include "frjson.h"

static json_t *
fixture(const char *dir, int rank)
{
	char path[512], err[256];
	static char buf[1 << 16];
	size_t n;
	FILE *f;
	json_t *v;

	snprintf(path, sizeof path, "%s/tests/stack/%s/x_%d", COLL_SRC, dir, rank);
	assert_non_null(f = fopen(path, "rb"));
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	if ((v = fr_parse(buf, n, err, sizeof err)) == NULL)
		fail_msg("%s: %s", path, err);
	return v;
}

/* The JSON twin of each of PyTorch's pickles holds the same entries, less their frames. */
static void
twins_check(const char *jdir, const char *pdir)
{
	static const char *const keys[] = { "record_id", "process_group", "collective_seq_id",
		"profiling_name", "input_sizes", "input_dtypes", "output_sizes", "state",
		"thread_name", "thread_id", "is_p2p" };

	for (int rank = 0; rank < 2; rank++) {
		json_t *j = fixture(jdir, rank), *p = fixture(pdir, rank);
		json_t *je = json_object_get(j, "entries"), *pe = json_object_get(p, "entries");

		assert_string_equal(json_string_value(json_object_get(j, "version")), "2.10");
		assert_true(json_equal(json_object_get(j, "comm_lib_version"),
		    json_object_get(p, "comm_lib_version")));
		assert_int_equal(json_array_size(je), json_array_size(pe));
		assert_true(json_array_size(je) >= 5);
		for (size_t i = 0; i < json_array_size(je); i++)
			for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
				if (!json_equal(json_object_get(json_array_get(je, i), keys[k]),
				    json_object_get(json_array_get(pe, i), keys[k])))
					fail_msg("rank %d entry %zu: %s differs", rank, i, keys[k]);
		assert_null(json_object_get(json_array_get(je, 0), "frames"));
		json_decref(j);
		json_decref(p);
	}
}

static void
test_json_as_pickle(void **state)
{
	(void)state;
	twins_check("fr_json", "fr_torch");
}

/* Both forms of one recorder, written by PyTorch 2.11 itself (tests/gpu/fr_dump210.py). */
static void
test_real_json_as_pickle(void **state)
{
	(void)state;
	twins_check("fr_real210/json", "fr_real210/pickle");
}

static const char *
line(const struct fr_report *r, size_t i)
{
	return json_string_value(json_array_get(r->lines, i));
}

/* Read through fr_open as collstack --fr does: format, library, and the thread of the rank behind. */
static void
report_check(const char *dir)
{
	char prefix[512], err[512];
	const char *want;
	const char *paths[] = { prefix };
	struct fr_set s;
	struct fr_report r;
	json_t *f;

	snprintf(prefix, sizeof prefix, "%s/tests/stack/%s/x_", COLL_SRC, dir);
	if (fr_open(&s, paths, 1, geteuid(), 0, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(s.n, 2);
	fr_analyze(&s, &r);
	assert_string_equal(line(&r, 0), "dumps of format 2.10; communication library 2.28.9 on "
	    "every rank");
	/* A pickle's line goes on with the frames; the JSON dump has none. */
	want = "rank 1 did not join nccl:all_reduce seq 6: its newest is nccl:all_reduce seq 5 "
	    "(completed, thread 'python3')";
	assert_memory_equal(line(&r, 2), want, strlen(want) + 1 - (strstr(dir, "pickle") != NULL));
	assert_int_equal(r.problems, 1);
	f = json_array_get(r.findings, 0);
	assert_string_equal(json_string_value(json_object_get(f, "kind")), "not_joined");
	assert_string_equal(json_string_value(json_object_get(f, "thread")), "python3");
	fr_report_free(&r);
	fr_close(&s);
}

static void
test_json_report(void **state)
{
	(void)state;
	report_check("fr_json");
}

/* PyTorch 2.11's own dumps, JSON and pickle, give the same verdict. */
static void
test_real_report(void **state)
{
	(void)state;
	report_check("fr_real210/json");
	report_check("fr_real210/pickle");
}

/* A rank's dump as a live job's worker sends it on (fr_trim keeps what the dump says of itself). */
static void
add(struct fr_set *s, int rank, const char *version, const char *lib, const char *thread)
{
	char err[256], label[16];
	json_t *e = json_pack("{s:[s,s], s:i, s:s, s:s, s:i, s:b}", "process_group", "0",
	    "default_pg", "collective_seq_id", rank == 0 ? 2 : 1, "profiling_name", "nccl:all_reduce",
	    "state", "started", "record_id", 0, "is_p2p", 0);
	json_t *root = json_pack("{s:s, s:s, s:[o], s:{s:i}}", "version", version,
	    "comm_lib_version", lib, "entries", e, "a_key_of_a_newer_format", "x", 1), *t;

	if (thread != NULL)
		json_object_set_new(e, "thread_name", json_string(thread));
	t = fr_trim(root, 16);
	assert_string_equal(json_string_value(json_object_get(t, "version")), version);
	snprintf(label, sizeof label, "rank %d", rank);
	assert_int_equal(fr_add_root(s, rank, label, t, err, sizeof err), 0);
	json_decref(t);
	json_decref(root);
}

/* A newer format is read by its keys, and said; ranks on two library versions are a finding. */
static void
test_newer_format(void **state)
{
	struct fr_set s = { 0 };
	struct fr_report r;
	int said = 0, found = 0;
	size_t i;
	json_t *x;

	(void)state;
	add(&s, 0, "2.12", "2.29.1", "pt_main_thread");
	add(&s, 1, "2.12", "2.28.9", NULL);
	fr_analyze(&s, &r);
	assert_string_equal(line(&r, 0), "dumps of format 2.12; communication library 2.29.1 "
	    "(rank 0), 2.28.9 (rank 1)");
	json_array_foreach(r.lines, i, x)
		said += strstr(json_string_value(x), "note: format 2.12 is newer than 2.10") != NULL;
	assert_int_equal(said, 1);
	json_array_foreach(r.findings, i, x)
		found += strcmp(json_string_value(json_object_get(x, "kind")), "lib_versions") == 0;
	assert_int_equal(found, 1);
	/* Rank 1 is behind; its entry names no thread, and none is made up. */
	json_array_foreach(r.lines, i, x)
		if (strncmp(json_string_value(x), "rank 1 did not join", 19) == 0)
			assert_null(strstr(json_string_value(x), "thread"));
	assert_int_equal(r.problems, 2);
	fr_report_free(&r);
	/* 2.10 itself, and older formats, are no news. */
	fr_close(&s);
	add(&s, 0, "2.10", "2.28.9", NULL);
	add(&s, 1, "2.4", "2.28.9", NULL);
	fr_analyze(&s, &r);
	json_array_foreach(r.lines, i, x)
		assert_null(strstr(json_string_value(x), "is newer"));
	fr_report_free(&r);
	fr_close(&s);
}

static void
refused(const char *p, size_t len, const char *why)
{
	char err[256];
	json_t *v = fr_parse(p, len, err, sizeof err);

	if (v != NULL)
		fail_msg("'%.40s' read, not refused for '%s'", p, why);
	if (strstr(err, why) == NULL)
		fail_msg("'%s' does not say '%s'", err, why);
}

#define S(s) s, sizeof(s) - 1

static void
test_json_bounds(void **state)
{
	char deep[64], err[256];
	size_t n = (size_t)FRJSON_VALUES_MAX * 2 + 8;
	char *many = malloc(n);
	json_t *v;

	(void)state;
	/* 17 levels: refused before parsing; brackets inside a string are no levels. */
	strcpy(deep, "{\"a\":");
	memset(deep + 5, '[', 16);
	deep[21] = '\0';
	refused(deep, strlen(deep), "nested deeper than 16");
	deep[20] = '\0';	/* 16 levels: within bounds, refused only for ending early */
	refused(deep, strlen(deep), "does not parse");
	v = fr_parse(S(" {\"a\": \"[[[[[[[[[[[[[[[[[[[[\\\"[[[[\"}"), err, sizeof err);
	assert_non_null(v);
	/* No entries (JSON leaves them out when there are none): an empty list. */
	assert_int_equal(json_array_size(json_object_get(v, "entries")), 0);
	json_decref(v);
	/* More values than FRJSON_VALUES_MAX: counted, not parsed. */
	many[0] = '{';
	memcpy(many + 1, "\"a\":[", 5);
	for (size_t i = 6; i + 2 < n; i += 2)
		memcpy(many + i, "0,", 2);
	memcpy(many + n - 2, "]}", 2);
	refused(many, n, "more than 4194304 values");
	free(many);
	/* Bytes: the length alone decides (nothing past the first is read). */
	assert_null(frjson_read("{", (size_t)FRJSON_BYTES_MAX + 1, err, sizeof err));
	assert_non_null(strstr(err, "more than 64 MiB"));
	refused(S("{\"version\": \"2.10\", \"version\": \"9\"}"), "duplicate object key");
	refused(S("{\"entries\": [1, 2"), "does not parse at line 1");
	refused(S("{\"entries\": {}}"), "its entries are not a list");
	refused(S("{\"a\": \"\\u0000\"}"), "does not parse");
	/* A pickle is told by its first byte: not JSON, so the pickle reader's own words. */
	refused(S("\x80\x02]q\x00."), "its value is not a dict");
	refused(S("{\"a\": \"\x1b[31m\"}\x01"), "does not parse");
}

/*
 * A stranger's file at a rank's name is judged by its owner before it is
 * parsed: a planted dump of the slowest JSON costs nothing. As root only
 * (the file is given to another user).
 */
static void
test_stranger_not_parsed(void **state)
{
	char dir[] = "/tmp/test_frjson.XXXXXX", path[512], src[512], err[512];
	const char *paths[] = { path };
	struct fr_set s;
	FILE *f;
	int found = 0;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof src, "cp %s/tests/stack/fr_real210/json/x_0 %s/x_0", COLL_SRC, dir);
	assert_int_equal(system(src), 0);
	snprintf(path, sizeof path, "%s/x_1", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"entries\": [", f);	/* not JSON: parsing it would say so */
	fclose(f);
	assert_int_equal(chown(path, 65534, 65534), 0);
	snprintf(path, sizeof path, "%s/x_", dir);
	if (fr_open(&s, paths, 1, 0, 0, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(s.n, 1);
	for (int i = 0; i < s.nskipped; i++) {
		found += strstr(s.skipped[i], "ignored: owned by user") != NULL;
		assert_null(strstr(s.skipped[i], "not a flight recorder dump"));
	}
	assert_int_equal(found, 1);
	fr_close(&s);
	snprintf(src, sizeof src, "rm -rf %s", dir);
	assert_int_equal(system(src), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_as_pickle),
		cmocka_unit_test(test_real_json_as_pickle),
		cmocka_unit_test(test_real_report),
		cmocka_unit_test(test_json_report),
		cmocka_unit_test(test_newer_format),
		cmocka_unit_test(test_json_bounds),
		cmocka_unit_test(test_stranger_not_parsed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
