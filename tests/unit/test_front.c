/*
 * The front ends' shared piece (cmd/front.c): the workers' argv around the
 * user's arguments, and rank 0's record put back together within its bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "launch.h"

static const struct cmd front_cmd = { .tool = "tool", .usage = "tool", .summary = "tool" };

static void
test_front_argv(void **state)
{
	char a0[] = "tool", a1[] = "-H", a2[] = "h1", a3[] = "--job", a4[] = "12";
	char *argv[] = { a0, a1, a2, a3, a4, NULL };
	const struct front_argv w = { .sub = "env", .first = { "--control-port", "9" },
	    .last = { "--job", "1234abcd" } };
	static const char *const want[] = { "env", "--worker", "--control-port", "9", "-H", "h1",
	    "--job", "12", "--job", "1234abcd" };
	char **v = front_argv(&front_cmd, &w, 5, argv);
	size_t i;

	assert_non_null(v);
	assert_non_null(v[0]);
	assert_true(v[0][0] == '/');	/* this very program, by its path */
	for (i = 0; i < sizeof want / sizeof want[0]; i++)
		assert_string_equal(v[i + 1], want[i]);
	assert_null(v[i + 1]);
	front_argv_free(v);
	/* Nothing around: this program, --worker and the user's. */
	v = front_argv(&front_cmd, &(struct front_argv){ 0 }, 3, argv);
	assert_string_equal(v[1], "--worker");
	assert_string_equal(v[2], "-H");
	assert_string_equal(v[3], "h1");
	assert_null(v[4]);
	front_argv_free(v);
	front_argv_free(NULL);
}

static void
test_front_record(void **state)
{
	struct front_record r = { .max = 16 };

	/* Only rank 0's stdout is taken; its pieces are joined as they came. */
	assert_int_equal(front_record_take(&r, 1, LAUNCH_STDOUT, "xx", 2), 0);
	assert_int_equal(front_record_take(&r, 0, LAUNCH_STDERR, "yy", 2), 0);
	assert_int_equal(front_record_take(&r, 0, LAUNCH_STDOUT, "{\"a\":", 5), 1);
	assert_int_equal(front_record_take(&r, 0, LAUNCH_STDOUT, "1}", 2), 1);
	assert_int_equal(r.len, 7);
	assert_memory_equal(r.buf, "{\"a\":1}", 7);
	assert_int_equal(r.overflow, 0);
	/* Past the bound: taken (not shown), dropped, and said by overflow. */
	assert_int_equal(front_record_take(&r, 0, LAUNCH_STDOUT, "0123456789", 10), 1);
	assert_int_equal(r.overflow, 1);
	assert_int_equal(r.len, 7);
	front_record_free(&r);
	assert_null(r.buf);
	assert_int_equal(r.len, 0);
	/* Unbounded (colltop's frames): grows as far as pieces come. */
	r = (struct front_record){ .max = SIZE_MAX };
	for (int i = 0; i < 1000; i++)
		front_record_add(&r, "0123456789", 10);
	assert_int_equal(r.len, 10000);
	assert_int_equal(r.overflow, 0);
	assert_memory_equal(r.buf + 9990, "0123456789", 10);
	front_record_free(&r);
}

/* The workers' job: our own installation first remotely, labelled, timed; a bad host option is a usage error. */
static void
test_front_prepare(void **state)
{
	struct hostopt ho = { .jo = { .tool = "tool" } };

	unsetenv("SLURM_JOB_NODELIST");
	assert_int_equal(front_prepare(&front_cmd, &ho, 7.5), EXIT_OK);
	assert_int_equal(ho.jo.by_path, 1);
	assert_int_equal(ho.jo.label, 1);
	assert_true(ho.jo.timeout_s == 7.5);
	assert_int_equal(ho.jo.kind, LAUNCH_LOCAL);
	assert_int_equal(ho.jo.nranks, 1);
	hostopt_release(&ho);
	ho = (struct hostopt){ .place = "spiral" };
	assert_int_equal(front_prepare(&front_cmd, &ho, 0), EXIT_USAGE);
	hostopt_release(&ho);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_front_argv),
		cmocka_unit_test(test_front_record),
		cmocka_unit_test(test_front_prepare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
