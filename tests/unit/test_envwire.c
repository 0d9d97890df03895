/*
 * The user's variables on an agent's stdin (envwire.h): values with newlines,
 * percent signs and carriage returns come back whole from one line each, and
 * what is not such a line is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "envwire.h"

static void
test_round_trip(void **state)
{
	char *env[] = { "TOKEN=abc", "MULTI=one\ntwo\r\nthree", "PCT=100%25%", "EMPTY=",
	    "EQ=a=b", NULL };
	struct shbuf b = { 0 };
	char out[128], *p, *nl;
	int i = 0;

	(void)state;
	envwire_encode(&b, env);
	for (p = b.p; (nl = strchr(p, '\n')) != NULL; p = nl + 1, i++) {
		assert_non_null(env[i]);
		assert_int_equal(envwire_decode(p, (size_t)(nl - p), out, sizeof out), 0);
		assert_string_equal(out, env[i]);
	}
	assert_int_equal(i, 5);
	assert_string_equal(p, "");
	shquote_free(&b);
}

static void
test_refused(void **state)
{
	static const char *bad[] = { "A=b", "env =b", "env Ab", "env A=%0", "env A=%zz",
	    "env A=%00x", "env ", "" };
	char out[16];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(envwire_decode(bad[i], strlen(bad[i]), out, sizeof out), -1);
	/* Too long for the buffer. */
	assert_int_equal(envwire_decode("env A=0123456789abcdef", 22, out, sizeof out), -1);
	assert_int_equal(envwire_decode("env A=%41", 9, out, sizeof out), 0);
	assert_string_equal(out, "A=A");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
