/*
 * The agent protocol (agentproto.h) and the launcher's end of it (agentrx):
 * what parses, what is refused, that encoding round-trips through the
 * parser, and that output a program prints can never become control.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentproto.h"
#include "agentrx.h"
#include "err.h"

struct parse_row {
	const char *line;
	int ok;
	enum agentproto_kind kind;
	long value;
	int stream;
	int more;
};

static const struct parse_row parse_rows[] = {
	{ "o hello", 1, AGENTPROTO_OUTPUT, 0, 1, 0 },
	{ "O hel", 1, AGENTPROTO_OUTPUT, 0, 1, 1 },
	{ "e oops", 1, AGENTPROTO_OUTPUT, 0, 2, 0 },
	{ "E oo", 1, AGENTPROTO_OUTPUT, 0, 2, 1 },
	{ "o ", 1, AGENTPROTO_OUTPUT, 0, 1, 0 },
	{ "p 4242", 1, AGENTPROTO_PID, 4242, 0, 0 },
	{ "p 2", 1, AGENTPROTO_PID, 2, 0, 0 },
	{ "x 0", 1, AGENTPROTO_EXIT, 0, 0, 0 },
	{ "x 255", 1, AGENTPROTO_EXIT, 255, 0, 0 },
	{ "s 9", 1, AGENTPROTO_SIGNAL, 9, 0, 0 },
	{ "k 15", 1, AGENTPROTO_KILL, 15, 0, 0 },
	{ "t 0", 1, AGENTPROTO_STEP, 0, 0, 0 }, { "t 17", 1, AGENTPROTO_STEP, 17, 0, 0 },
	/* pid 1 and 0 would turn a group signal into "everything": never a valid pid. */
	{ "p 1", 0, 0, 0, 0, 0 }, { "p 0", 0, 0, 0, 0, 0 }, { "p -1", 0, 0, 0, 0, 0 },
	{ "p 2147483648", 0, 0, 0, 0, 0 }, { "p 12345678901", 0, 0, 0, 0, 0 },
	{ "x 256", 0, 0, 0, 0, 0 }, { "x -1", 0, 0, 0, 0, 0 }, { "x 01", 0, 0, 0, 0, 0 },
	{ "x", 0, 0, 0, 0, 0 }, { "x ", 0, 0, 0, 0, 0 }, { "x 3 ", 0, 0, 0, 0, 0 },
	{ "x +3", 0, 0, 0, 0, 0 }, { "s 0", 0, 0, 0, 0, 0 }, { "s 65", 0, 0, 0, 0, 0 },
	{ "k 0", 0, 0, 0, 0, 0 }, { "k 99", 0, 0, 0, 0, 0 },
	{ "t -1", 0, 0, 0, 0, 0 }, { "t 4294967291", 0, 0, 0, 0, 0 }, { "t", 0, 0, 0, 0, 0 },
	{ "", 0, 0, 0, 0, 0 }, { "o", 0, 0, 0, 0, 0 }, { "ohello", 0, 0, 0, 0, 0 },
	{ "q hello", 0, 0, 0, 0, 0 }, { "coll-agent: pgid 1", 0, 0, 0, 0, 0 },
	{ "coll-agent: exit 0", 0, 0, 0, 0, 0 }, { " o hi", 0, 0, 0, 0, 0 },
};

static void
test_agentproto_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof parse_rows / sizeof *parse_rows; i++) {
		const struct parse_row *r = &parse_rows[i];
		struct agentproto_msg m;
		int got = agentproto_parse(r->line, strlen(r->line), &m);

		if (!r->ok) {
			if (got != COLL_EPROTO)
				fail_msg("'%s' parsed but must not", r->line);
			continue;
		}
		if (got != COLL_OK)
			fail_msg("'%s' did not parse", r->line);
		assert_int_equal(m.kind, r->kind);
		if (r->kind == AGENTPROTO_OUTPUT) {
			assert_int_equal(m.stream, r->stream);
			assert_int_equal(m.more, r->more);
			assert_int_equal(m.len, strlen(r->line) - 2);
			assert_memory_equal(m.text, r->line + 2, m.len);
		} else {
			assert_int_equal(m.value, r->value);
		}
	}
}

/* A record longer than a piece, or holding a newline, is refused. */
static void
test_agentproto_bounds(void **state)
{
	char line[AGENTPROTO_LINE + 8];
	struct agentproto_msg m;

	(void)state;
	memset(line, 'a', sizeof line);
	line[0] = 'o';
	line[1] = ' ';
	assert_int_equal(agentproto_parse(line, 2 + AGENTPROTO_PIECE, &m), COLL_OK);
	assert_int_equal(agentproto_parse(line, 3 + AGENTPROTO_PIECE, &m), COLL_EPROTO);
	line[10] = '\n';
	assert_int_equal(agentproto_parse(line, 20, &m), COLL_EPROTO);
}

/* Every encoded record parses back, within srun's line limit, and the text comes back whole. */
static void
test_agentproto_roundtrip(void **state)
{
	static const size_t lens[] = { 0, 1, 999, 1000, 1001, 2500, 10000 };
	(void)state;
	for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
		char *text = malloc(lens[i] + 1), *enc = malloc(lens[i] * 2 + 64), *back = malloc(lens[i] + 1);
		size_t n, off = 0, got = 0, records = 0;

		for (size_t k = 0; k < lens[i]; k++)
			text[k] = (char)('A' + k % 26);
		n = agentproto_encode_output(enc, 2, text, lens[i], 1);
		while (off < n) {
			char *nl = memchr(enc + off, '\n', n - off);
			struct agentproto_msg m;

			assert_non_null(nl);
			assert_true((size_t)(nl - (enc + off)) < 1023);	/* srun --label keeps it whole */
			assert_int_equal(agentproto_parse(enc + off, (size_t)(nl - (enc + off)), &m), COLL_OK);
			assert_int_equal(m.stream, 2);
			memcpy(back + got, m.text, m.len);
			got += m.len;
			records++;
			off = (size_t)(nl - enc) + 1;
			/* Only the last piece ends the line. */
			assert_int_equal(m.more, off < n);
		}
		assert_int_equal(got, lens[i]);
		assert_memory_equal(back, text, lens[i]);
		assert_int_equal(records, lens[i] == 0 ? 1 : (lens[i] + 999) / 1000);
		free(text);
		free(enc);
		free(back);
	}
}

struct rx_seen {
	int lines[3];
	char last[3][4096];
	size_t last_len[3];
};

static void
rx_output(void *arg, int rank, int stream, const char *line, size_t len)
{
	struct rx_seen *s = arg;

	assert_int_equal(rank, 7);
	s->lines[stream]++;
	memcpy(s->last[stream], line, len < 4096 ? len : 4096);
	s->last_len[stream] = len;
}

static void
rx_feed(struct agentrx *rx, const char *records)
{
	const char *p = records, *nl;

	while ((nl = strchr(p, '\n')) != NULL) {
		agentrx_line(rx, p, (size_t)(nl - p));
		p = nl + 1;
	}
}

/* Pieces join into lines; control lines printed by the program stay output. */
static void
test_agentrx_lines_and_forgery(void **state)
{
	struct rx_seen seen = { 0 };
	struct launch l = { .cb = { .output = rx_output, .arg = &seen } };
	struct agentrx rx;

	(void)state;
	agentrx_init(&rx, &l, 7);
	rx_feed(&rx, "p 4242\nO abc\nO def\no ghi\ne coll-agent: pgid 1\ne coll-agent: exit 0\n");
	assert_int_equal(rx.pid, 4242);
	assert_int_equal(seen.lines[1], 1);
	assert_int_equal(seen.last_len[1], 9);
	assert_memory_equal(seen.last[1], "abcdefghi", 9);
	assert_int_equal(seen.lines[2], 2);
	assert_memory_equal(seen.last[2], "coll-agent: exit 0", 18);
	assert_int_equal(rx.ended, 0);
	/* A line that is not a record (a shell start-up file, say) is shown, never obeyed. */
	rx_feed(&rx, "p 1\nx 0\n");
	assert_int_equal(rx.pid, 4242);
	assert_int_equal(seen.lines[1], 2);
	assert_true(rx.ended);
	assert_int_equal(rx.state, LAUNCH_EXITED);
	assert_int_equal(rx.code, 0);
	rx_feed(&rx, "k 9\ns 9\nO tail\n");
	assert_int_equal(seen.lines[1], 3);	/* 'k' from the agent is not a record */
	assert_int_equal(rx.state, LAUNCH_SIGNALED);
	assert_int_equal(rx.code, 9);
	agentrx_flush(&rx);
	assert_int_equal(seen.lines[1], 4);
	assert_memory_equal(seen.last[1], "tail", 4);
	agentrx_free(&rx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agentproto_parse),
		cmocka_unit_test(test_agentproto_bounds),
		cmocka_unit_test(test_agentproto_roundtrip),
		cmocka_unit_test(test_agentrx_lines_and_forgery),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
