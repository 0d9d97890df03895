/*
 * Messages about untrusted text: msg_clean leaves printable ASCII alone and
 * turns every byte that could drive a terminal (controls, DEL, anything from
 * 0x80 up) into '?', in place and at the same length; msg_quote escapes the
 * same bytes as \xNN inside quotes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "msg.h"

static void
test_msg_clean_printable(void **state)
{
	char s[] = "host gpu-01: NVIDIA H100 80GB HBM3 ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./";
	char want[sizeof s];

	(void)state;
	memcpy(want, s, sizeof s);
	msg_clean(s);
	assert_string_equal(s, want);
}

static void
test_msg_clean_escapes(void **state)
{
	/* A title change, OSC 52 (clipboard), a screen clear, CSI, DEL, a C1 CSI, UTF-8. */
	char s[] = "a\x1b]0;pwned\x07" "b\x1b]52;c;ZXZpbA==\x1b\\" "c\x1b[2J\x7f\x9b" "1m\xc3\xa9\r\n\t";
	size_t n = strlen(s);

	(void)state;
	msg_clean(s);
	assert_int_equal(strlen(s), n);
	assert_string_equal(s, "a?]0;pwned?b?]52;c;ZXZpbA==?\\c?[2J??1m?????");
	for (size_t i = 0; i < n; i++)
		assert_true(s[i] >= 0x20 && s[i] < 0x7f);
}

static void
test_msg_clean_edges(void **state)
{
	char empty[] = "", one[] = "\x01";

	(void)state;
	msg_clean(NULL);
	msg_clean(empty);
	assert_string_equal(empty, "");
	msg_clean(one);
	assert_string_equal(one, "?");
}

static void
test_msg_quote_escapes(void **state)
{
	char buf[MSG_QUOTE_LEN(8)];

	(void)state;
	assert_string_equal(msg_quote(buf, "a\x1b]0", 4, 8), "'a\\x1b]0'");
	assert_string_equal(msg_quote(buf, "0123456789", 10, 8), "'01234567...'");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_msg_clean_printable),
		cmocka_unit_test(test_msg_clean_escapes),
		cmocka_unit_test(test_msg_clean_edges),
		cmocka_unit_test(test_msg_quote_escapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
