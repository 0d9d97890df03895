/*
 * The tree launch's protocol (treeproto.h): upward lines that parse and what
 * is refused (ranks and hosts out of range, a 'k' going up, numbers with
 * signs or leading zeros), and plan lines that round-trip through the
 * encoder, with ranks placed twice or out of order refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "treeproto.h"

static void
test_up(void **state)
{
	static const struct {
		const char *line;
		int ok, kind, rank, host;
		const char *text;
	} rows[] = {
		{ "7 o hello", 1, TREEPROTO_RECORD, 7, -1, "o hello" },
		{ "0 p 1234", 1, TREEPROTO_RECORD, 0, -1, "p 1234" },
		{ "15 x 3", 1, TREEPROTO_RECORD, 15, -1, "x 3" },
		{ "3 s 9", 1, TREEPROTO_RECORD, 3, -1, "s 9" },
		{ "3 f", 1, TREEPROTO_FAILED, 3, -1, "f" },
		{ "3 l", 1, TREEPROTO_LOST, 3, -1, "l" },
		{ "h 4 timed out after 2 s connecting", 1, TREEPROTO_HOST, -1, 4,
		    "timed out after 2 s connecting" },
		{ "16 o x", 0, 0, 0, 0, NULL },		/* rank out of range */
		{ "-1 o x", 0, 0, 0, 0, NULL },
		{ "07 o x", 0, 0, 0, 0, NULL },		/* leading zero */
		{ "3 k 9", 0, 0, 0, 0, NULL },		/* a kill never comes up */
		{ "3 x 256", 0, 0, 0, 0, NULL },	/* the agent's bounds hold */
		{ "3 p 1", 0, 0, 0, 0, NULL },
		{ "3 q", 0, 0, 0, 0, NULL },
		{ "3", 0, 0, 0, 0, NULL },
		{ "3 ", 0, 0, 0, 0, NULL },
		{ "h 8 why", 0, 0, 0, 0, NULL },	/* host out of range */
		{ "h 2", 0, 0, 0, 0, NULL },
		{ "h x why", 0, 0, 0, 0, NULL },
		{ "collrun: command not found", 0, 0, 0, 0, NULL },
		{ "", 0, 0, 0, 0, NULL },
	};
	struct treeproto_up u;

	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int r = treeproto_parse_up(rows[i].line, strlen(rows[i].line), 16, 8, &u);

		if (!rows[i].ok) {
			assert_int_equal(r, COLL_EPROTO);
			continue;
		}
		assert_int_equal(r, COLL_OK);
		assert_int_equal(u.kind, rows[i].kind);
		assert_int_equal(u.rank, rows[i].rank);
		assert_int_equal(u.host, rows[i].host);
		assert_int_equal(u.len, strlen(rows[i].text));
		assert_memory_equal(u.text, rows[i].text, u.len);
	}
	/* A newline inside is never one line. */
	assert_int_equal(treeproto_parse_up("3 o a\nb", 7, 16, 8, &u), COLL_EPROTO);
}

static void
test_plan_roundtrip(void **state)
{
	int rank_host[12] = { 0, 0, 1, 1, 2, 2, 1, 0, 2, 1, 1, 1 }, back[12], host;
	char name[64];

	(void)state;
	for (int h = 0; h < 3; h++) {
		int mine[12], n = 0;
		char *line;

		for (int r = 0; r < 12; r++)
			if (rank_host[r] == h)
				mine[n++] = r;
		line = treeproto_encode_host(h, h == 1 ? "node-1.a_b" : "n0", mine, n);

		if (h == 1)
			assert_string_equal(line, "h 1 node-1.a_b 2-3,6,9-11");
		for (int r = 0; r < 12; r++)
			back[r] = -1;
		assert_int_equal(treeproto_parse_host(line, strlen(line), 12, 3, &host, name,
		    sizeof name, back), COLL_OK);
		assert_int_equal(host, h);
		for (int r = 0; r < 12; r++)
			assert_int_equal(back[r], rank_host[r] == h ? h : -1);
		free(line);
	}
}

/* A host whose ranks are scattered: a long line, each rank an item of its own. */
static void
test_plan_scattered(void **state)
{
	int mine[100], back[300], host;
	char name[64], *line;

	(void)state;
	for (int i = 0; i < 100; i++)
		mine[i] = 3 * i;
	line = treeproto_encode_host(7, "node007", mine, 100);
	assert_int_equal(strncmp(line, "h 7 node007 0,3,6,", 18), 0);
	assert_string_equal(line + strlen(line) - 8, ",294,297");
	for (int r = 0; r < 300; r++)
		back[r] = -1;
	assert_int_equal(treeproto_parse_host(line, strlen(line), 300, 8, &host, name,
	    sizeof name, back), COLL_OK);
	assert_int_equal(host, 7);
	assert_string_equal(name, "node007");
	for (int r = 0; r < 300; r++)
		assert_int_equal(back[r], r % 3 == 0 ? 7 : -1);
	free(line);
}

static void
test_plan_refused(void **state)
{
	static const char *bad[] = {
		"h 1 n 0-3,2",		/* 2 twice: out of order */
		"h 1 n 3-1",		/* backwards */
		"h 1 n 0,12",		/* rank out of range */
		"h 3 n 0",		/* host out of range */
		"h 1 n;rm 0",		/* not a host name */
		"h 1  0",		/* no name */
		"h 1 n ",		/* no ranks */
		"h 1 n 0,",
		"h 1 n 0-",
		"h 1 n 00",
		"h 1 n 0 1",
		"h 1 n 0x",		/* junk after the ranks */
		"h 1 n 0 ",
		"h 1 n 0-3x",
		"h 1 n 0-3,4x",
		"x 1 n 0",
		"h",
	};
	int rank_host[12], host;
	char name[64], small[2];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		for (int r = 0; r < 12; r++)
			rank_host[r] = -1;
		assert_int_equal(treeproto_parse_host(bad[i], strlen(bad[i]), 12, 3, &host, name,
		    sizeof name, rank_host), COLL_EPROTO);
	}
	/* A rank another host has is refused. */
	for (int r = 0; r < 12; r++)
		rank_host[r] = -1;
	rank_host[5] = 0;
	assert_int_equal(treeproto_parse_host("h 1 n 4-6", 9, 12, 3, &host, name, sizeof name,
	    rank_host), COLL_EPROTO);
	/* A name longer than the room is refused, not cut. */
	rank_host[5] = -1;
	assert_int_equal(treeproto_parse_host("h 1 nn 4", 8, 12, 3, &host, small, sizeof small,
	    rank_host), COLL_EPROTO);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_up),
		cmocka_unit_test(test_plan_roundtrip),
		cmocka_unit_test(test_plan_scattered),
		cmocka_unit_test(test_plan_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
