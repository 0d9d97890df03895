/*
 * Python frames (core/stack/py_layout.c): the location table that turns an
 * instruction into its line, checked against what CPython 3.11, 3.12 and
 * 3.13 themselves say for every instruction of one function (co_lines()),
 * tables cut short or misread, and the _Py_DebugOffsets a 3.13 interpreter
 * publishes, as 3.13.0 wrote them, with the ones we must refuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#include "stack_py.h"

/*
 * The function each table is of, compiled at line 2 of sample.py:
 *
 * def sample(a, b):
 *     x = a + b
 *     if x > 10:
 *         y = [i * 2
 *              for i in range(x)]
 *     else:
 *         y = None
 *
 *
 *
 *     return (x,
 *             y)
 */
/* CPython 3.11, def sample() of the comment above, at line 2 */
static const uint8_t lt311[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41, 0xd8, 0x07, 0x08, 0x88,
	0x32, 0x82, 0x76, 0x80, 0x76, 0xf0, 0x02, 0x01, 0x0d, 0x20, 0xf0, 0x00, 0x01, 0x0d, 0x20,
	0xdd, 0x16, 0x1b, 0x98, 0x41, 0x91, 0x68, 0x94, 0x68, 0xf0, 0x03, 0x01, 0x0d, 0x20, 0xf1,
	0x00, 0x01, 0x0d, 0x20, 0xf4, 0x00, 0x01, 0x0d, 0x20, 0x88, 0x01, 0x88, 0x01, 0xf0, 0x06,
	0x00, 0x0d, 0x11, 0x88, 0x01, 0xf0, 0x08, 0x00, 0x0d, 0x0e, 0xd8, 0x0c, 0x0d, 0xf0, 0x03,
	0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f,
};
static const int lines311[] = {
	2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 5,
	5, 5, 5, 5, 5, 5, 5, 8, 8, 12, 13, 12, 12,
};
/* CPython 3.12, def sample() of the comment above, at line 2 */
static const uint8_t lt312[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41, 0xd8, 0x07, 0x08, 0x88,
	0x32, 0x82, 0x76, 0xe4, 0x16, 0x1b, 0x98, 0x41, 0x93, 0x68, 0xf6, 0x03, 0x01, 0x0d, 0x20,
	0xd8, 0x11, 0x12, 0xf0, 0x03, 0x00, 0x0e, 0x0f, 0x90, 0x11, 0x8b, 0x55, 0xf0, 0x00, 0x01,
	0x0d, 0x20, 0x88, 0x01, 0xf0, 0x00, 0x01, 0x0d, 0x20, 0xf0, 0x0e, 0x00, 0x0d, 0x0e, 0xd8,
	0x0c, 0x0d, 0xf0, 0x03, 0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf0, 0x09, 0x00,
	0x0d, 0x11, 0x88, 0x01, 0xf0, 0x08, 0x00, 0x0d, 0x0e, 0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01,
	0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf9, 0xf2, 0x0f, 0x01, 0x0d, 0x20,
};
static const int lines312[] = {
	2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 6, 5, 5,
	5, 5, 5, 5, 5, 5, 5, 12, 13, 12, 12, 8, 8, 12, 13, 12, 12, -1, -1, 5, 5, 5,
};
/* CPython 3.13, def sample() of the comment above, at line 2 */
static const uint8_t lt313[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x89, 0x05, 0x80, 0x41, 0xd8, 0x07, 0x08, 0x88, 0x32, 0x83,
	0x76, 0xe4, 0x16, 0x1b, 0x98, 0x41, 0x94, 0x68, 0xf3, 0x03, 0x01, 0x0d, 0x20, 0xd9, 0x16,
	0x1e, 0x90, 0x11, 0xf0, 0x03, 0x00, 0x0e, 0x0f, 0x90, 0x11, 0x8c, 0x55, 0xd9, 0x16, 0x1e,
	0xf0, 0x03, 0x00, 0x09, 0x0a, 0xf0, 0x00, 0x01, 0x0d, 0x20, 0xf0, 0x0e, 0x00, 0x0d, 0x0e,
	0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf0, 0x09,
	0x00, 0x0d, 0x11, 0x88, 0x01, 0xf0, 0x08, 0x00, 0x0d, 0x0e, 0xd8, 0x0c, 0x0d, 0xf0, 0x03,
	0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf9, 0xf2, 0x0f, 0x01, 0x0d, 0x20,
};
static const int lines313[] = {
	2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 6, 6, 6, 5, 5,
	5, 5, 5, 5, 5, 6, 6, 5, 5, 12, 13, 12, 12, 8, 8, 12, 13, 12, 12, -1, -1, 5, 5, 5,
};

static void
check_table(const uint8_t *tab, size_t len, const int *lines, int n)
{
	for (int lasti = 0; lasti < n; lasti++)
		if (stack__py_line(tab, len, 2, lasti) != lines[lasti])
			fail_msg("code unit %d: line %d, CPython says %d", lasti,
			    stack__py_line(tab, len, 2, lasti), lines[lasti]);
	/* Past the last instruction there is no line. */
	assert_int_equal(stack__py_line(tab, len, 2, n), -1);
	assert_int_equal(stack__py_line(tab, len, 2, -1), -1);
}

static void
line_311(void **state)
{
	(void)state;
	check_table(lt311, sizeof lt311, lines311, (int)(sizeof lines311 / sizeof *lines311));
}

static void
line_312(void **state)
{
	(void)state;
	check_table(lt312, sizeof lt312, lines312, (int)(sizeof lines312 / sizeof *lines312));
}

static void
line_313(void **state)
{
	(void)state;
	check_table(lt313, sizeof lt313, lines313, (int)(sizeof lines313 / sizeof *lines313));
}

/* A table cut inside an entry, or read from the wrong place, gives no line rather than a wrong one. */
static void
line_refused(void **state)
{
	static const uint8_t not_entry[] = { 0x01, 0x80, 0x00 };
	static const uint8_t long_cut[] = { 0xf0, 0x02 };	/* long form, its varints missing */
	static const uint8_t endless[] = { 0xe8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t big[96];

	(void)state;
	assert_int_equal(stack__py_line(not_entry, sizeof not_entry, 2, 0), -1);
	assert_int_equal(stack__py_line(long_cut, sizeof long_cut, 2, 0), -1);
	assert_int_equal(stack__py_line(endless, sizeof endless, 2, 0), -1);
	assert_int_equal(stack__py_line(lt311, 5, 2, 3), -1);	/* cut inside the third entry */
	assert_int_equal(stack__py_line(lt311, 0, 2, 0), -1);
	assert_int_equal(stack__py_line(lt311, 1, 2, 0), -1);	/* its column byte missing */
	/* 32 entries of one unit each, each a line further on (form 11, two column bytes). */
	for (int i = 0; i < 32; i++) {
		big[3 * i] = 0x80 | 11 << 3;
		big[3 * i + 1] = big[3 * i + 2] = 0;
	}
	assert_int_equal(stack__py_line(big, sizeof big, 2, 0), 3);
	assert_int_equal(stack__py_line(big, sizeof big, 2, 31), 34);
	/* A long form (14) going back 5 lines over 8 units: -5 is 11 as a signed varint. */
	big[0] = 0x80 | 14 << 3 | 7;
	big[1] = 11;
	big[2] = big[3] = big[4] = 0;
	assert_int_equal(stack__py_line(big, 5, 20, 7), 15);
	assert_int_equal(stack__py_line(big, 5, 20, 8), -1);
}

/* 3.13.0's own _Py_DebugOffsets, as uint64 words, read from its _PyRuntime. */
static const uint64_t dbg313[73] = {
	0x7970677562656478, 51183856, 0, 283320, 608, 632,
	194968, 7272, 7264, 7344, 7400, 7656,
	7640, 7648, 16, 7752, 0, 7768,
	7760, 304, 0, 8, 16, 72,
	152, 160, 232, 32, 80, 8,
	0, 56, 72, 70, 208, 112,
	120, 128, 136, 68, 52, 96,
	104, 200, 16, 8, 416, 24,
	88, 168, 32, 24, 16, 40,
	24, 16, 48, 32, 40, 24,
	16, 32, 16, 24, 40, 16,
	32, 64, 32, 16, 40, 240,
	200,
};

static void
debug_offsets(void **state)
{
	struct stack_py_layout l;
	const struct stack_py_layout *t = stack__py_layout(13);
	char why[160];

	(void)state;
	assert_int_equal(stack__py_debug_offsets((const uint8_t *)dbg313, sizeof dbg313, &l, why,
	    sizeof why), 0);
	/* What the interpreter says agrees with the table taken from its headers. */
	assert_non_null(t);
	assert_int_equal(l.rt_interp_head, t->rt_interp_head);
	assert_int_equal(l.is_next, t->is_next);
	assert_int_equal(l.is_threads_head, t->is_threads_head);
	assert_int_equal(l.ts_next, t->ts_next);
	assert_int_equal(l.ts_native_tid, t->ts_native_tid);
	assert_int_equal(l.ts_cframe, t->ts_cframe);
	assert_int_equal(l.fr_code, t->fr_code);
	assert_int_equal(l.fr_previous, t->fr_previous);
	assert_int_equal(l.fr_instr, t->fr_instr);
	assert_int_equal(l.fr_owner, t->fr_owner);
	assert_int_equal(l.co_filename, t->co_filename);
	assert_int_equal(l.co_name, t->co_name);
	assert_int_equal(l.co_qualname, t->co_qualname);
	assert_int_equal(l.co_linetable, t->co_linetable);
	assert_int_equal(l.co_firstlineno, t->co_firstlineno);
	assert_int_equal(l.co_code, t->co_code);
	assert_int_equal(l.str_state, t->str_state);
	assert_int_equal(l.str_length, t->str_length);
	assert_int_equal(l.str_ascii_size, t->str_ascii_size);
	assert_int_equal(l.str_compact_size, t->str_compact_size);
	assert_int_equal(l.bytes_data, t->bytes_data);
	assert_int_equal(l.cf_current, -1);
	assert_true(l.ts_size >= l.ts_native_tid + 8 && l.ts_size >= l.ts_cframe + 8);
	assert_true(l.fr_size >= l.fr_instr + 8 && l.fr_size > l.fr_owner);
}

/* An offset moved by a patch release is taken from the interpreter, not the table. */
static void
debug_offsets_moved(void **state)
{
	uint64_t w[73];
	struct stack_py_layout l;
	char why[160];

	(void)state;
	memcpy(w, dbg313, sizeof w);
	w[25] += 8;	/* thread_state.native_thread_id */
	assert_int_equal(stack__py_debug_offsets((const uint8_t *)w, sizeof w, &l, why,
	    sizeof why), 0);
	assert_int_equal(l.ts_native_tid, stack__py_layout(13)->ts_native_tid + 8);
	assert_true(l.ts_size >= l.ts_native_tid + 8);
}

static void
refused(uint64_t *w, const char *says)
{
	struct stack_py_layout l;
	char why[160] = "";

	assert_int_equal(stack__py_debug_offsets((const uint8_t *)w, 73 * 8, &l, why, sizeof why),
	    -1);
	if (strstr(why, says) == NULL)
		fail_msg("'%s' does not say '%s'", why, says);
}

static void
debug_offsets_refused(void **state)
{
	uint64_t w[73];
	struct stack_py_layout l;
	char why[160];

	(void)state;
	memcpy(w, dbg313, sizeof w);
	w[0] ^= 1;
	refused(w, "no _Py_DebugOffsets");
	memcpy(w, dbg313, sizeof w);
	w[1] = 0x030e00f0;	/* 3.14: another shape */
	refused(w, "Python 3.14: its frames are not read");
	memcpy(w, dbg313, sizeof w);
	w[2] = 1;
	refused(w, "free-threaded Python 3.13");
	memcpy(w, dbg313, sizeof w);
	w[30] = 1ull << 40;	/* interpreter_frame.executable */
	refused(w, "word 30");
	/* Offsets the process gives that lie past what is read of each object. */
	memcpy(w, dbg313, sizeof w);
	w[21] = 516;	/* thread_state.next */
	refused(w, "past what collstack reads");
	memcpy(w, dbg313, sizeof w);
	w[66] = 200;	/* bytes_object.ob_sval */
	refused(w, "past what collstack reads");
	memcpy(w, dbg313, sizeof w);
	w[68] = 126;	/* unicode_object.state */
	refused(w, "past what collstack reads");
	memcpy(w, dbg313, sizeof w);
	w[35] = 4000;	/* code_object.filename */
	refused(w, "past what collstack reads");
	assert_int_equal(stack__py_debug_offsets((const uint8_t *)dbg313, 100, &l, why,
	    sizeof why), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(line_311),
		cmocka_unit_test(line_312),
		cmocka_unit_test(line_313),
		cmocka_unit_test(line_refused),
		cmocka_unit_test(debug_offsets),
		cmocka_unit_test(debug_offsets_moved),
		cmocka_unit_test(debug_offsets_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
