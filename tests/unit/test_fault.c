/*
 * Fault plans (COLL_FAULT): every valid form parses to the faults written, in
 * order; every malformed item is refused with a one-line message naming the
 * item and the expected form, and leaves no fault armed; fault_take hands
 * each fault out once, to its rank (any rank for '*') at its seq, and only
 * for the actions the caller asks about.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fault.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define DUMP_LEN 1024
#define ALL_ACTIONS 0xffffffffu

/* The plan as "RANK@SEQ:ACTION ...", '*' for any rank, "delay=MS" with its value. */
static const char *
dump(const struct fault_plan *p, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < p->n && o < len; i++) {
		const struct fault *f = &p->v[i];
		char rank[16];

		snprintf(rank, sizeof rank, "%d", f->rank);
		o += (size_t)snprintf(buf + o, len - o, "%s%s@%" PRIu64 ":%s", i ? " " : "",
		    f->rank == FAULT_ANY_RANK ? "*" : rank, f->seq, fault_action_name(f->action));
		if (f->action == FAULT_DELAY && o < len)
			o += (size_t)snprintf(buf + o, len - o, "=%d", f->delay_ms);
	}
	return buf;
}

static void
expect_err(int r, const char *err, const char *needle, const char *input)
{
	if (r != COLL_EINVAL)
		fail_msg("'%s': got %d, want COLL_EINVAL (err: %s)", input, r, err);
	if (strstr(err, needle) == NULL)
		fail_msg("'%s': error \"%s\" does not contain \"%s\"", input, err, needle);
	if (strchr(err, '\n') != NULL)
		fail_msg("'%s': error \"%s\" is more than one line", input, err);
}

static const struct {
	const char *in;
	const char *want;
} good_specs[] = {
	{ "3@5:kill", "3@5:kill" },
	{ "0@1:exit", "0@1:exit" },
	{ "*@2:hang", "*@2:hang" },
	{ "1@3:close", "1@3:close" },
	{ "2@4:corrupt", "2@4:corrupt" },
	{ "5@6:delay=250", "5@6:delay=250" },
	{ "4@1:delay=1", "4@1:delay=1" },
	{ "4@1:delay=3600000", "4@1:delay=3600000" },
	{ "16777216@1:exit", "16777216@1:exit" },
	{ "1@18446744073709551615:exit", "1@18446744073709551615:exit" },
	{ "007@010:exit", "7@10:exit" },		/* decimal, not octal */
	{ "1@2:exit,*@3:delay=10,0@9:corrupt", "1@2:exit *@3:delay=10 0@9:corrupt" },
	{ "2@7:close,1@7:kill", "2@7:close 1@7:kill" },	/* order as written */
	{ "1@2:exit,1@2:exit", "1@2:exit 1@2:exit" },	/* repeats are kept */
	{ "  1@2:exit , \t*@3:kill\n", "1@2:exit *@3:kill" },
	{ " 1@2:delay=5\t,\t3@4:hang ", "1@2:delay=5 3@4:hang" },
	{ "", "" },
	{ "  \t\n", "" },
};

static const struct {
	const char *in;
	const char *needle;	/* the message must name the bad item and what is wrong */
} bad_specs[] = {
	{ "1@2:boom", "fault item 1 '1@2:boom': unknown action 'boom': expected exit, kill, "
	    "hang, close, delay=MS or corrupt" },
	{ "1@2:EXIT", "unknown action 'EXIT'" },
	{ "1@2:", "fault item 1 '1@2:': unknown action ''" },
	{ "1@2:boom=3", "unknown action 'boom'" },
	{ "1@2:exit:kill", "unknown action 'exit:kill'" },
	{ "12:exit", "fault item 1 '12:exit': no '@' after the rank; expected RANK@SEQ:ACTION" },
	{ "exit", "fault item 1 'exit': no '@'" },
	{ "1@2exit", "fault item 1 '1@2exit': no ':' after the seq; expected RANK@SEQ:ACTION" },
	{ "1@2", "no ':' after the seq" },
	{ "1@0:exit", "fault item 1 '1@0:exit': seq '0' is not a number from 1 to 2^64-1; "
	    "expected RANK@SEQ:ACTION" },
	{ "1@-1:exit", "seq '-1' is not a number" },
	{ "1@+1:exit", "seq '+1' is not a number" },
	{ "1@ 1:exit", "seq ' 1' is not a number" },
	{ "1@:exit", "seq '' is not a number" },
	{ "1@18446744073709551616:exit", "seq '18446744073709551616' is not a number" },
	{ "1@99999999999999999999999:exit", "seq '99999999999999999999999' is not a number" },
	{ "1@2x:exit", "seq '2x' is not a number" },
	{ "1@0x10:exit", "seq '0x10' is not a number" },
	{ "1@2@3:exit", "seq '2@3' is not a number" },
	{ "-1@2:exit", "fault item 1 '-1@2:exit': rank '-1' is not '*' or a number from 0 to "
	    "16777216; expected RANK@SEQ:ACTION" },
	{ "16777217@2:exit", "rank '16777217' is not" },
	{ "99999999999999999999@2:exit", "rank '99999999999999999999' is not" },
	{ "@2:exit", "rank '' is not" },
	{ "**@2:exit", "rank '**' is not" },
	{ "1 @2:exit", "rank '1 ' is not" },
	{ "+1@2:exit", "rank '+1' is not" },
	{ "1@2:delay", "fault item 1 '1@2:delay': delay needs a value: expected delay=MS with "
	    "MS from 1 to 3600000" },
	{ "1@2:delay=", "delay '' is not a number of milliseconds from 1 to 3600000: "
	    "expected delay=MS" },
	{ "1@2:delay=0", "delay '0' is not a number of milliseconds" },
	{ "1@2:delay=3600001", "delay '3600001' is not" },
	{ "1@2:delay=-5", "delay '-5' is not" },
	{ "1@2:delay=5ms", "delay '5ms' is not" },
	{ "1@2:delay=99999999999999999999999", "delay '99999999999999999999999' is not" },
	{ "1@2:delay= 5", "delay ' 5' is not" },
	{ "1@2:exit=3", "fault item 1 '1@2:exit=3': action 'exit' takes no value" },
	{ "1@2:corrupt=1", "action 'corrupt' takes no value" },
	{ "1@2:exit,,", "fault item 2 is empty; expected RANK@SEQ:ACTION" },
	{ "1@2:exit,", "fault item 2 is empty" },
	{ ",1@2:exit", "fault item 1 is empty" },
	{ "1@2:exit, \t,3@4:kill", "fault item 2 is empty" },
	{ ",", "fault item 1 is empty" },
	/* The first bad item is named, not a good one before it. */
	{ "1@2:exit,3@4:boom", "fault item 2 '3@4:boom': unknown action 'boom'" },
	{ "1@2:exit , 3@0:kill ", "fault item 2 '3@0:kill': seq '0'" },
	/* Control bytes are escaped and long items cut short: one line, bounded. */
	{ "1@2:ex\nit", "fault item 1 '1@2:ex\\x0ait': unknown action 'ex\\x0ait'" },
	{ "1@2:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	  "fault item 1 '1@2:aaaaaaaaaaaaaaaaaaaaaaaaaaaa...': unknown action" },
};

static void
test_fault_parse_good(void **state)
{
	for (size_t i = 0; i < N(good_specs); i++) {
		struct fault_plan p;
		char err[COLL_ERR_LEN] = "x", buf[DUMP_LEN];
		int r = fault_parse(good_specs[i].in, &p, err, sizeof err);

		if (r != COLL_OK)
			fail_msg("'%s': %d %s", good_specs[i].in, r, err);
		assert_string_equal(err, "");
		assert_string_equal(dump(&p, buf, sizeof buf), good_specs[i].want);
		for (int j = 0; j < p.n; j++) {
			assert_int_equal(p.v[j].fired, 0);
			if (p.v[j].action != FAULT_DELAY)
				assert_int_equal(p.v[j].delay_ms, 0);
		}
		if (p.n == 0)
			assert_null(p.v);
		fault_plan_free(&p);
		assert_int_equal(p.n, 0);
		assert_null(p.v);
	}
}

static void
test_fault_parse_bad(void **state)
{
	for (size_t i = 0; i < N(bad_specs); i++) {
		struct fault dummy = { 0 };
		struct fault_plan p = { &dummy, 1 };
		char err[COLL_ERR_LEN] = "";

		expect_err(fault_parse(bad_specs[i].in, &p, err, sizeof err), err,
		    bad_specs[i].needle, bad_specs[i].in);
		/* All or nothing: no fault of a refused spec is armed. */
		assert_int_equal(p.n, 0);
		assert_null(p.v);
		if (strstr(err, "expected") == NULL)
			fail_msg("'%s': error \"%s\" gives no expected form", bad_specs[i].in, err);
	}
}

/* NULL (COLL_FAULT unset) is no faults; a caller may pass no err buffer. */
static void
test_fault_parse_null(void **state)
{
	struct fault_plan p = { NULL, 7 };
	char err[8] = "x";

	assert_int_equal(fault_parse(NULL, &p, err, sizeof err), COLL_OK);
	assert_int_equal(p.n, 0);
	assert_null(p.v);
	assert_string_equal(err, "");
	assert_int_equal(fault_parse("1@0:exit", &p, NULL, 0), COLL_EINVAL);
	assert_int_equal(fault_parse("1@0:exit", &p, err, 0), COLL_EINVAL);
	assert_string_equal(err, "");
	/* A short buffer gets the start of the message, terminated. */
	assert_int_equal(fault_parse("1@0:exit", &p, err, sizeof err), COLL_EINVAL);
	assert_string_equal(err, "fault i");
	fault_plan_free(&p);
}

/* 64 items and 4096 characters are the bounds: reached exactly, then refused. */
static void
test_fault_parse_bounds(void **state)
{
	char spec[FAULT_SPEC_MAX + 2], err[COLL_ERR_LEN], buf[DUMP_LEN];
	struct fault_plan p;
	size_t o = 0;

	for (int i = 1; i <= FAULT_ITEMS_MAX; i++)
		o += (size_t)snprintf(spec + o, sizeof spec - o, "%s%d@%d:exit", i > 1 ? "," : "",
		    i, i);
	assert_int_equal(fault_parse(spec, &p, err, sizeof err), COLL_OK);
	assert_int_equal(p.n, FAULT_ITEMS_MAX);
	assert_int_equal(p.v[63].rank, 64);
	assert_int_equal(p.v[63].seq, 64);
	fault_plan_free(&p);
	strcpy(spec + o, ",65@65:exit");
	expect_err(fault_parse(spec, &p, err, sizeof err), err,
	    "fault spec has 65 items: at most 64", "65 items");
	assert_null(p.v);

	memset(spec, ' ', FAULT_SPEC_MAX);
	memcpy(spec + 100, "1@2:kill", 8);
	spec[FAULT_SPEC_MAX] = '\0';
	assert_int_equal(fault_parse(spec, &p, err, sizeof err), COLL_OK);
	assert_string_equal(dump(&p, buf, sizeof buf), "1@2:kill");
	fault_plan_free(&p);
	spec[FAULT_SPEC_MAX] = ' ';
	spec[FAULT_SPEC_MAX + 1] = '\0';
	expect_err(fault_parse(spec, &p, err, sizeof err), err,
	    "fault spec is longer than 4096 characters", "4097 characters");
	assert_null(p.v);
	/* The length is checked first: even blank, an overlong spec is refused. */
	memset(spec, ' ', FAULT_SPEC_MAX + 1);
	expect_err(fault_parse(spec, &p, err, sizeof err), err,
	    "fault spec is longer than 4096 characters", "4097 blanks");
}

static void
test_fault_action_name(void **state)
{
	static const struct {
		enum fault_action a;
		const char *name;
		const char *spec;
	} rows[] = {
		{ FAULT_EXIT, "exit", "1@1:exit" },
		{ FAULT_KILL, "kill", "1@1:kill" },
		{ FAULT_HANG, "hang", "1@1:hang" },
		{ FAULT_CLOSE, "close", "1@1:close" },
		{ FAULT_DELAY, "delay", "1@1:delay=1" },
		{ FAULT_CORRUPT, "corrupt", "1@1:corrupt" },
	};

	for (size_t i = 0; i < N(rows); i++) {
		struct fault_plan p;
		char err[COLL_ERR_LEN];

		assert_string_equal(fault_action_name(rows[i].a), rows[i].name);
		assert_int_equal(fault_parse(rows[i].spec, &p, err, sizeof err), COLL_OK);
		assert_int_equal(p.v[0].action, rows[i].a);
		fault_plan_free(&p);
	}
	assert_string_equal(fault_action_name((enum fault_action)0), "unknown");
	assert_string_equal(fault_action_name((enum fault_action)(FAULT_CORRUPT + 1)), "unknown");
	assert_string_equal(fault_action_name((enum fault_action)-1), "unknown");
}

static void
parse_ok(const char *spec, struct fault_plan *p)
{
	char err[COLL_ERR_LEN];

	if (fault_parse(spec, p, err, sizeof err) != COLL_OK)
		fail_msg("'%s': %s", spec, err);
}

/* A fault fires once: the second ask at the same rank and seq gets nothing. */
static void
test_fault_take_once(void **state)
{
	struct fault_plan p;
	struct fault *f;

	parse_ok("2@5:exit", &p);
	f = fault_take(&p, 2, 5, ALL_ACTIONS);
	assert_ptr_equal(f, &p.v[0]);
	assert_int_equal(f->action, FAULT_EXIT);
	assert_int_equal(f->fired, 1);
	assert_null(fault_take(&p, 2, 5, ALL_ACTIONS));
	fault_plan_free(&p);
}

/* Another rank, another seq: nothing, and the fault stays armed for its own. */
static void
test_fault_take_wrong_rank_seq(void **state)
{
	struct fault_plan p;

	parse_ok("1@4:kill", &p);
	assert_null(fault_take(&p, 0, 4, ALL_ACTIONS));
	assert_null(fault_take(&p, 2, 4, ALL_ACTIONS));
	assert_null(fault_take(&p, 1, 3, ALL_ACTIONS));
	assert_null(fault_take(&p, 1, 5, ALL_ACTIONS));
	assert_int_equal(p.v[0].fired, 0);
	assert_ptr_equal(fault_take(&p, 1, 4, ALL_ACTIONS), &p.v[0]);
	fault_plan_free(&p);
	/* An empty plan has nothing to give. */
	parse_ok("", &p);
	assert_null(fault_take(&p, 0, 1, ALL_ACTIONS));
	assert_null(fault_take(NULL, 0, 1, ALL_ACTIONS));
}

/* '*' matches every rank; each process has its own plan, so it fires once in each. */
static void
test_fault_take_any_rank(void **state)
{
	static const int ranks[] = { 0, 1, 7, 4096, FAULT_RANK_MAX };
	struct fault_plan p;

	for (size_t i = 0; i < N(ranks); i++) {
		parse_ok("*@3:hang", &p);
		assert_null(fault_take(&p, ranks[i], 2, ALL_ACTIONS));
		assert_ptr_equal(fault_take(&p, ranks[i], 3, ALL_ACTIONS), &p.v[0]);
		assert_null(fault_take(&p, ranks[i], 3, ALL_ACTIONS));
		fault_plan_free(&p);
	}
	/* Once fired for one rank, a '*' fault is spent in this plan. */
	parse_ok("*@3:hang", &p);
	assert_non_null(fault_take(&p, 4, 3, ALL_ACTIONS));
	assert_null(fault_take(&p, 5, 3, ALL_ACTIONS));
	fault_plan_free(&p);
}

/* The mask picks the hook: a fault of another action is left for its own hook. */
static void
test_fault_take_mask(void **state)
{
	struct fault_plan p;
	struct fault *f;

	parse_ok("1@4:delay=10,1@4:close,1@4:corrupt", &p);
	assert_null(fault_take(&p, 1, 4, 0));
	assert_null(fault_take(&p, 1, 4, FAULT_MASK(FAULT_EXIT) | FAULT_MASK(FAULT_KILL)));
	f = fault_take(&p, 1, 4, FAULT_MASK(FAULT_CLOSE));
	assert_ptr_equal(f, &p.v[1]);
	assert_int_equal(p.v[0].fired, 0);
	assert_int_equal(p.v[2].fired, 0);
	f = fault_take(&p, 1, 4, FAULT_MASK(FAULT_DELAY) | FAULT_MASK(FAULT_CORRUPT));
	assert_ptr_equal(f, &p.v[0]);
	assert_int_equal(f->delay_ms, 10);
	assert_ptr_equal(fault_take(&p, 1, 4, FAULT_MASK(FAULT_DELAY) | FAULT_MASK(FAULT_CORRUPT)),
	    &p.v[2]);
	assert_null(fault_take(&p, 1, 4, ALL_ACTIONS));
	fault_plan_free(&p);
}

/* Several faults at one rank and seq come out in the order written, '*' ones included. */
static void
test_fault_take_order(void **state)
{
	struct fault_plan p;

	parse_ok("3@2:exit,*@2:delay=5,3@2:kill,3@1:hang", &p);
	assert_ptr_equal(fault_take(&p, 3, 2, ALL_ACTIONS), &p.v[0]);
	assert_ptr_equal(fault_take(&p, 3, 2, ALL_ACTIONS), &p.v[1]);
	assert_ptr_equal(fault_take(&p, 3, 2, ALL_ACTIONS), &p.v[2]);
	assert_null(fault_take(&p, 3, 2, ALL_ACTIONS));
	assert_int_equal(p.v[3].fired, 0);
	assert_ptr_equal(fault_take(&p, 3, 1, ALL_ACTIONS), &p.v[3]);
	fault_plan_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_parse_good),
		cmocka_unit_test(test_fault_parse_bad),
		cmocka_unit_test(test_fault_parse_null),
		cmocka_unit_test(test_fault_parse_bounds),
		cmocka_unit_test(test_fault_action_name),
		cmocka_unit_test(test_fault_take_once),
		cmocka_unit_test(test_fault_take_wrong_rank_seq),
		cmocka_unit_test(test_fault_take_any_rank),
		cmocka_unit_test(test_fault_take_mask),
		cmocka_unit_test(test_fault_take_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
