/*
 * collcheck's merged set of retried ops (cmd/collcheck/retried.c): both ends
 * of a link say it once; a flapping NIC under a large job, whose broken
 * links are more than a set lists, is counted past RETRIED_LISTED, and the
 * record of what is listed still reads back (it was refused as malformed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "retried.h"

static struct retried
entry(uint64_t seq, int a, int b)
{
	struct retried e = { .seq = seq, .kind = KIND_ALLREDUCE, .count = 1, .rank = { a, b } };

	snprintf(e.host[0], sizeof e.host[0], "h%d", a);
	snprintf(e.host[1], sizeof e.host[1], "h%d", b);
	return e;
}

static void
test_once_per_link(void **state)
{
	struct retried_set s = { 0 };
	struct retried x = entry(40, 1, 2), y = entry(40, 2, 1), z = entry(40, 3, -1);

	(void)state;
	retried_merge(&s, &x);
	retried_merge(&s, &y);
	retried_merge(&s, &z);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.more, 0);
	retried_free(&s);
}

static void
test_listed_bound(void **state)
{
	struct retried_set s = { 0 }, back = { 0 };
	json_t *j;

	(void)state;
	for (int i = 0; i < RETRIED_LISTED + 88; i++) {
		struct retried e = entry(1 + (uint64_t)i / 64, i % 64, 64 + i % 64);

		retried_merge(&s, &e);
	}
	assert_int_equal(s.n, RETRIED_LISTED);
	assert_int_equal(s.more, 88);
	j = retried_json(&s);
	assert_int_equal(retried_from_json(&back, j, 128), 0);
	assert_int_equal(back.n, RETRIED_LISTED);
	json_decref(j);
	retried_free(&back);
	retried_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_once_per_link),
		cmocka_unit_test(test_listed_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
