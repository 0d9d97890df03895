/*
 * Option parsing: opt_next over a small table (short, clustered, long, values
 * attached or separate, "--", collrun's stop at the first operand, errors that
 * name the option), the value parsers opt_size, opt_int and opt_double, and
 * opt_parse, the loop every tool runs its options through.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "hostopt.h"
#include "opt.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAXARGS 8

enum { O_ALL = 1, O_BYTES, O_NP, O_VERBOSE, O_TIMEOUT, O_ITERS_T };

static const struct opt opts[] = {
	{ O_ALL, 'a', "all", OPT_FLAG, NULL, "all of them", NULL },
	{ O_BYTES, 'b', "bytes", OPT_FLAG, NULL, "count bytes", NULL },
	{ O_NP, 'n', "np", OPT_VALUE, "N", "number of ranks", NULL },
	{ O_VERBOSE, 'v', NULL, OPT_FLAG, NULL, "more output", NULL },
	{ O_TIMEOUT, 0, "timeout", OPT_VALUE, "SEC", "give up after SEC seconds", NULL },
	OPT_END_TABLE,
};

struct step {
	int id;			/* an option id, OPT_DONE or OPT_ERROR (the last step) */
	const char *val;	/* expected value (NULL for flags) */
};

static const struct {
	const char *argv[MAXARGS];	/* NULL-terminated; argv[0] is the program */
	int stop_at_operand;
	struct step want[MAXARGS];
	int ind;			/* st.ind after OPT_DONE */
	const char *err;		/* a substring of st.err after OPT_ERROR */
} next_rows[] = {
	{ { "prog" }, 0, { { OPT_DONE, NULL } }, 1, NULL },
	{ { "prog", "-a" }, 0, { { O_ALL, NULL }, { OPT_DONE, NULL } }, 2, NULL },
	{ { "prog", "-a", "-b" }, 0, { { O_ALL, NULL }, { O_BYTES, NULL }, { OPT_DONE, NULL } },
	  3, NULL },
	/* clustered short flags */
	{ { "prog", "-ab" }, 0, { { O_ALL, NULL }, { O_BYTES, NULL }, { OPT_DONE, NULL } }, 2,
	  NULL },
	{ { "prog", "-vv" }, 0, { { O_VERBOSE, NULL }, { O_VERBOSE, NULL }, { OPT_DONE, NULL } },
	  2, NULL },
	/* short with value, attached and separate */
	{ { "prog", "-n4" }, 0, { { O_NP, "4" }, { OPT_DONE, NULL } }, 2, NULL },
	{ { "prog", "-n", "4" }, 0, { { O_NP, "4" }, { OPT_DONE, NULL } }, 3, NULL },
	{ { "prog", "-n16", "-a" }, 0, { { O_NP, "16" }, { O_ALL, NULL }, { OPT_DONE, NULL } }, 3,
	  NULL },
	{ { "prog", "-abn4" }, 0,
	  { { O_ALL, NULL }, { O_BYTES, NULL }, { O_NP, "4" }, { OPT_DONE, NULL } }, 2, NULL },
	{ { "prog", "-abn", "4" }, 0,
	  { { O_ALL, NULL }, { O_BYTES, NULL }, { O_NP, "4" }, { OPT_DONE, NULL } }, 3, NULL },
	{ { "prog", "-nab" }, 0, { { O_NP, "ab" }, { OPT_DONE, NULL } }, 2, NULL },
	{ { "prog", "-n", "-a" }, 0, { { O_NP, "-a" }, { OPT_DONE, NULL } }, 3, NULL },
	/* long, with value after '=' or as the next argument */
	{ { "prog", "--all", "--bytes" }, 0,
	  { { O_ALL, NULL }, { O_BYTES, NULL }, { OPT_DONE, NULL } }, 3, NULL },
	{ { "prog", "--np=4" }, 0, { { O_NP, "4" }, { OPT_DONE, NULL } }, 2, NULL },
	{ { "prog", "--np", "4" }, 0, { { O_NP, "4" }, { OPT_DONE, NULL } }, 3, NULL },
	{ { "prog", "--np=" }, 0, { { O_NP, "" }, { OPT_DONE, NULL } }, 2, NULL },
	{ { "prog", "--np=a=b" }, 0, { { O_NP, "a=b" }, { OPT_DONE, NULL } }, 2, NULL },
	{ { "prog", "--np", "--all" }, 0, { { O_NP, "--all" }, { OPT_DONE, NULL } }, 3, NULL },
	{ { "prog", "--timeout", "5", "-v" }, 0,
	  { { O_TIMEOUT, "5" }, { O_VERBOSE, NULL }, { OPT_DONE, NULL } }, 4, NULL },
	{ { "prog", "--timeout=1.5" }, 0, { { O_TIMEOUT, "1.5" }, { OPT_DONE, NULL } }, 2, NULL },
	/* "--" ends the options */
	{ { "prog", "--" }, 0, { { OPT_DONE, NULL } }, 2, NULL },
	{ { "prog", "--", "-a" }, 0, { { OPT_DONE, NULL } }, 2, NULL },
	{ { "prog", "-a", "--", "--np" }, 0, { { O_ALL, NULL }, { OPT_DONE, NULL } }, 3, NULL },
	{ { "prog", "-n", "--", "-a" }, 0, { { O_NP, "--" }, { O_ALL, NULL }, { OPT_DONE, NULL } },
	  4, NULL },
	/* collrun: options end at the program name, whose own options are left alone */
	{ { "collrun", "-n", "4", "./app", "-a", "--np=2" }, 1,
	  { { O_NP, "4" }, { OPT_DONE, NULL } }, 3, NULL },
	{ { "collrun", "./app" }, 1, { { OPT_DONE, NULL } }, 1, NULL },
	{ { "collrun", "--np=2", "hostname", "--", "-x" }, 1,
	  { { O_NP, "2" }, { OPT_DONE, NULL } }, 2, NULL },
	{ { "collrun", "-a", "-", "-b" }, 1, { { O_ALL, NULL }, { OPT_DONE, NULL } }, 2, NULL },
	{ { "collrun", "-a", "--", "-n" }, 1, { { O_ALL, NULL }, { OPT_DONE, NULL } }, 3, NULL },
	{ { "collrun", "" }, 1, { { OPT_DONE, NULL } }, 1, NULL },
	/* without stop_at_operand, an operand is an error */
	{ { "prog", "-a", "file" }, 0, { { O_ALL, NULL }, { OPT_ERROR, NULL } }, 0,
	  "unexpected argument 'file'" },
	{ { "prog", "-" }, 0, { { OPT_ERROR, NULL } }, 0, "'-'" },
	/* unknown options */
	{ { "prog", "-x" }, 0, { { OPT_ERROR, NULL } }, 0, "unknown option '-x'" },
	{ { "prog", "-ax" }, 0, { { O_ALL, NULL }, { OPT_ERROR, NULL } }, 0,
	  "unknown option '-x'" },
	{ { "prog", "--bogus" }, 0, { { OPT_ERROR, NULL } }, 0, "unknown option '--bogus'" },
	{ { "prog", "--bogus=3" }, 0, { { OPT_ERROR, NULL } }, 0, "unknown option '--bogus'" },
	{ { "prog", "--al" }, 0, { { OPT_ERROR, NULL } }, 0, "unknown option '--al'" },
	{ { "prog", "--alll" }, 0, { { OPT_ERROR, NULL } }, 0, "unknown option '--alll'" },
	{ { "prog", "--v" }, 0, { { OPT_ERROR, NULL } }, 0, "unknown option '--v'" },
	{ { "collrun", "-x", "./app" }, 1, { { OPT_ERROR, NULL } }, 0, "unknown option '-x'" },
	/* missing values */
	{ { "prog", "-n" }, 0, { { OPT_ERROR, NULL } }, 0, "option '-n' needs a value" },
	{ { "prog", "-an" }, 0, { { O_ALL, NULL }, { OPT_ERROR, NULL } }, 0,
	  "option '-n' needs a value" },
	{ { "prog", "--np" }, 0, { { OPT_ERROR, NULL } }, 0, "option '--np' needs a value" },
	{ { "prog", "-a", "--timeout" }, 0, { { O_ALL, NULL }, { OPT_ERROR, NULL } }, 0,
	  "option '--timeout' needs a value" },
	/* a value given to a flag */
	{ { "prog", "--all=1" }, 0, { { OPT_ERROR, NULL } }, 0, "option '--all' takes no value" },
};

static void
test_opt_next(void **state)
{
	for (size_t r = 0; r < ARRAY_LEN(next_rows); r++) {
		char store[MAXARGS][32], *argv[MAXARGS + 1];
		struct opt_state st;
		int argc = 0;

		while (argc < MAXARGS && next_rows[r].argv[argc] != NULL) {
			snprintf(store[argc], sizeof store[argc], "%s", next_rows[r].argv[argc]);
			argv[argc] = store[argc];
			argc++;
		}
		argv[argc] = NULL;
		opt_init(&st, opts, argc, argv, next_rows[r].stop_at_operand);
		for (int k = 0; k < MAXARGS; k++) {
			const struct step *w = &next_rows[r].want[k];
			const char *val = "unset";
			int id = opt_next(&st, &val);

			if (id != w->id)
				fail_msg("row %zu (%s ...) step %d: id %d, want %d (err '%s')", r,
				    next_rows[r].argv[1] ? next_rows[r].argv[1] : "", k, id, w->id,
				    st.err);
			if (id == OPT_DONE) {
				assert_int_equal(st.ind, next_rows[r].ind);
				break;
			}
			if (id == OPT_ERROR) {
				assert_non_null(next_rows[r].err);
				if (strstr(st.err, next_rows[r].err) == NULL)
					fail_msg("row %zu: error '%s' lacks '%s'", r, st.err,
					    next_rows[r].err);
				break;
			}
			if (w->val == NULL)
				assert_null(val);
			else
				assert_string_equal(val, w->val);
		}
	}
}

/* After OPT_DONE, argv[ind..] are the operands, untouched. */
static void
test_opt_operands(void **state)
{
	char a0[] = "collrun", a1[] = "-n", a2[] = "2", a3[] = "./app", a4[] = "-n", a5[] = "9";
	char *argv[] = { a0, a1, a2, a3, a4, a5, NULL };
	struct opt_state st;
	const char *val;

	opt_init(&st, opts, 6, argv, 1);
	assert_int_equal(opt_next(&st, &val), O_NP);
	assert_string_equal(val, "2");
	assert_int_equal(opt_next(&st, &val), OPT_DONE);
	assert_int_equal(st.ind, 3);
	assert_string_equal(argv[st.ind], "./app");
	assert_string_equal(argv[st.ind + 1], "-n");
	/* Asking again stays done. */
	assert_int_equal(opt_next(&st, &val), OPT_DONE);
	assert_int_equal(st.ind, 3);
}

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

static void
test_opt_size(void **state)
{
	static const struct {
		const char *in;
		int ok;
		unsigned long long want;
	} rows[] = {
		{ "8", 1, 8 },
		{ "0", 1, 0 },
		{ "1", 1, 1 },
		{ "64K", 1, 64 * KiB },
		{ "64k", 1, 64 * KiB },
		{ "256M", 1, 256 * MiB },
		{ "256m", 1, 256 * MiB },
		{ "1G", 1, GiB },
		{ "8g", 1, 8 * GiB },
		{ "0K", 1, 0 },
		{ "1024G", 1, 1024 * GiB },		/* the bound: 1 TiB */
		{ "1048576M", 1, 1024 * GiB },
		{ "1099511627776", 1, 1024 * GiB },
		{ "", 0, 0 },
		{ "-1", 0, 0 },
		{ "-0", 0, 0 },
		{ "-1K", 0, 0 },
		{ "12Q", 0, 0 },
		{ "1KB", 0, 0 },
		{ "1KiB", 0, 0 },
		{ "1T", 0, 0 },
		{ "K", 0, 0 },
		{ "G", 0, 0 },
		{ "1.5K", 0, 0 },
		{ "1 K", 0, 0 },
		{ "8 ", 0, 0 },
		{ "8x", 0, 0 },
		{ "abc", 0, 0 },
		{ "1025G", 0, 0 },
		{ "1048577M", 0, 0 },
		{ "1099511627777", 0, 0 },
		{ "17179869184G", 0, 0 },		/* 2^34 G: wraps a 64-bit product */
		{ "18446744073709551615", 0, 0 },
		{ "18446744073709551616", 0, 0 },	/* past unsigned long long */
		{ "99999999999999999999999999", 0, 0 },
		{ "99999999999999999999999999K", 0, 0 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		char err[256] = "";
		size_t out = 12345;
		int r = opt_size("--maxbytes", rows[i].in, &out, err, sizeof err);

		if (rows[i].ok) {
			if (r != 0)
				fail_msg("opt_size(\"%s\") failed: %s", rows[i].in, err);
			assert_true(out == rows[i].want);
		} else {
			if (r != -1)
				fail_msg("opt_size(\"%s\") = %d (%zu), want -1", rows[i].in, r, out);
			assert_int_equal(out, 12345);
			assert_non_null(strstr(err, "--maxbytes"));
			assert_non_null(strstr(err, rows[i].in));
		}
	}
}

static void
test_opt_int(void **state)
{
	static const struct {
		const char *in;
		long min, max;
		int ok;
		long want;
	} rows[] = {
		{ "1", 1, 1024, 1, 1 },
		{ "1024", 1, 1024, 1, 1024 },
		{ "-1", -1, 1, 1, -1 },
		{ "0", -5, 5, 1, 0 },
		{ "9223372036854775807", 0, 9223372036854775807L, 1, 9223372036854775807L },
		{ "0", 1, 1024, 0, 0 },
		{ "1025", 1, 1024, 0, 0 },
		{ "-5", 1, 1024, 0, 0 },
		{ "-2", -1, 1, 0, 0 },
		{ "", 1, 1024, 0, 0 },
		{ "abc", 1, 1024, 0, 0 },
		{ "4x", 1, 1024, 0, 0 },
		{ "4 ", 1, 1024, 0, 0 },
		{ "4.0", 1, 1024, 0, 0 },
		{ "9223372036854775808", 0, 9223372036854775807L, 0, 0 },
		{ "-9223372036854775809", -9223372036854775807L - 1, 0, 0, 0 },
		{ "99999999999999999999", 1, 1024, 0, 0 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		char err[256] = "";
		long out = 777;
		int r = opt_int("--np", rows[i].in, rows[i].min, rows[i].max, &out, err, sizeof err);

		if (rows[i].ok) {
			if (r != 0)
				fail_msg("opt_int(\"%s\") failed: %s", rows[i].in, err);
			assert_int_equal(out, rows[i].want);
		} else {
			if (r != -1)
				fail_msg("opt_int(\"%s\", %ld, %ld) = %d, want -1", rows[i].in,
				    rows[i].min, rows[i].max, r);
			assert_int_equal(out, 777);
			assert_non_null(strstr(err, "--np"));
			assert_non_null(strstr(err, rows[i].in));
		}
	}
}

static void
test_opt_double(void **state)
{
	static const struct {
		const char *in;
		double min, max;
		int ok;
		double want;
	} rows[] = {
		{ "0.5", 0, 1, 1, 0.5 },
		{ "0", 0, 1, 1, 0 },
		{ "1", 0, 1, 1, 1 },
		{ "1e3", 0, 1e4, 1, 1000 },
		{ "-2.5", -10, 10, 1, -2.5 },
		{ "1.0001", 0, 1, 0, 0 },
		{ "-0.1", 0, 1, 0, 0 },
		{ "nan", 0, 1e9, 0, 0 },
		{ "NAN", -1e9, 1e9, 0, 0 },
		{ "inf", 0, 1e9, 0, 0 },
		{ "-inf", -1e9, 1e9, 0, 0 },
		{ "1e400", 0, 1e300, 0, 0 },
		{ "", 0, 1, 0, 0 },
		{ "abc", 0, 1, 0, 0 },
		{ "0.5s", 0, 1, 0, 0 },
		{ "0,5", 0, 1, 0, 0 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		char err[256] = "";
		double out = 42;
		int r = opt_double("--timeout", rows[i].in, rows[i].min, rows[i].max, &out, err,
		    sizeof err);

		if (rows[i].ok) {
			if (r != 0)
				fail_msg("opt_double(\"%s\") failed: %s", rows[i].in, err);
			assert_true(out == rows[i].want);
		} else {
			if (r != -1)
				fail_msg("opt_double(\"%s\", %g, %g) = %d, want -1", rows[i].in,
				    rows[i].min, rows[i].max, r);
			assert_true(out == 42);
			assert_non_null(strstr(err, "--timeout"));
			assert_non_null(strstr(err, rows[i].in));
		}
	}
}

/* --help lists every option of the table, once, with its value name. */
static void
test_opt_print_help(void **state)
{
	static const char *const want[] = {
		"-a, --all ", "-b, --bytes ", "-n, --np N ", "-v ", "    --timeout SEC ",
		"number of ranks", "give up after SEC seconds",
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	opt_print_help(opts, f);
	fclose(f);
	for (size_t i = 0; i < ARRAY_LEN(want); i++) {
		const char *at = strstr(text, want[i]);

		if (at == NULL)
			fail_msg("help lacks '%s':\n%s", want[i], text);
		if (strstr(at + 1, want[i]) != NULL)
			fail_msg("help has '%s' more than once:\n%s", want[i], text);
	}
	free(text);
}

/*
 * An internal option (help NULL) is parsed but listed nowhere; a table
 * without -h and -V still answers them; a long option mistyped names the one
 * it is likely a slip for; every line of --help fits 80 columns, and a name
 * too long for its column puts its text on the next line.
 */
enum { O_WORKER = 50, O_LONGNAME };

static const struct opt hidden_opts[] = {
	{ O_ALL, 'a', "all", OPT_FLAG, NULL, "all of them", NULL },
	{ O_WORKER, 0, "worker", OPT_FLAG, NULL, NULL, NULL },
	{ O_ITERS_T, 'i', "iters", OPT_VALUE, "N", "timed iterations per size: a help text "
	    "long enough to need two lines or more at eighty columns, as many of coll's are",
	    NULL },
	{ O_LONGNAME, 0, "connect-timeout-of-each", OPT_VALUE, "SECONDS", "long name", NULL },
	OPT_END_TABLE,
};

static void
test_opt_hidden(void **state)
{
	const char *val;
	struct opt_state st;
	char a0[] = "prog", a1[] = "--worker", a2[] = "-a", a3[] = "-V", a4[] = "--help";
	char a5[] = "--iter", a6[] = "--worke", a7[] = "-h";
	char *argv[] = { a0, a1, a2, a3, a4, a7, NULL };
	char *text = NULL, *line;
	size_t len = 0;
	FILE *f;

	(void)state;
	opt_init(&st, hidden_opts, 6, argv, 0);
	assert_int_equal(opt_next(&st, &val), O_WORKER);
	assert_int_equal(opt_next(&st, &val), O_ALL);
	assert_int_equal(opt_next(&st, &val), OPT_ID_VERSION);
	assert_int_equal(opt_next(&st, &val), OPT_ID_HELP);
	assert_int_equal(opt_next(&st, &val), OPT_ID_HELP);
	assert_int_equal(opt_next(&st, &val), OPT_DONE);
	char *bad[] = { a0, a5, NULL };
	opt_init(&st, hidden_opts, 2, bad, 0);
	assert_int_equal(opt_next(&st, &val), OPT_ERROR);
	assert_string_equal(st.err, "unknown option '--iter'; did you mean --iters?");
	/* An internal option is never offered. */
	char *bad2[] = { a0, a6, NULL };
	opt_init(&st, hidden_opts, 2, bad2, 0);
	assert_int_equal(opt_next(&st, &val), OPT_ERROR);
	assert_string_equal(st.err, "unknown option '--worke'");
	f = open_memstream(&text, &len);
	assert_non_null(f);
	opt_print_help(hidden_opts, f);
	fclose(f);
	assert_null(strstr(text, "worker"));
	assert_non_null(strstr(text, "  -h, --help "));
	assert_non_null(strstr(text, "  -V, --version "));
	if (strstr(text, "  -i, --iters N             timed iterations per size: a help text "
	    "long enough\n                            to need two") == NULL)
		fail_msg("not wrapped under its column:\n%s", text);
	assert_non_null(strstr(text, "      --connect-timeout-of-each SECONDS\n                            long name\n"));
	for (line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n"))
		if (strlen(line) > 80)
			fail_msg("a line of %zu columns: %s", strlen(line), line);
	free(text);
}

/* opt_parse: what a tool gets, in order, and what it answers for each way of taking operands. */
static const struct opt parse_opts[] = {
	{ O_ALL, 'a', "all", OPT_FLAG, NULL, "all of them", NULL },
	{ O_NP, 'n', "np", OPT_VALUE, "N", "number of ranks", NULL },
	HOSTOPT_TABLE("per host"),
	OPT_HELP_ENTRY,
	OPT_VERSION_ENTRY,
	OPT_END_TABLE,
};

static const struct cmd parse_cmd = { .tool = "tool", .usage = "tool [options]",
	.summary = "a tool", .opts = parse_opts };

struct parse_got {
	char seen[256];		/* ids and values as "id=val;" */
	const char *ops[MAXARGS];
	int nops;
};

static int
parse_value(void *args, int id, const char *val, char *err, size_t len)
{
	struct parse_got *g = args;
	size_t n = strlen(g->seen);

	if (val != NULL && strcmp(val, "bad") == 0) {
		snprintf(err, len, "-n must be good, not '%s'", val);
		return -1;
	}
	snprintf(g->seen + n, sizeof g->seen - n, "%d=%s;", id, val ? val : "");
	return 0;
}

static void
parse_operand(void *args, const char *arg)
{
	struct parse_got *g = args;

	g->ops[g->nops++] = arg;
}

/* Run opt_parse on a NULL-ended argv with stdout and stderr into *out. */
static int
parse_run(enum opt_operands how, struct hostopt *ho, struct parse_got *g, char **argv,
    int *rest, char *out, size_t outlen)
{
	const struct opt_parser p = { .cmd = &parse_cmd, .ho = ho, .value = parse_value,
	    .operand = parse_operand, .args = g, .operands = how };
	FILE *tmp = tmpfile();
	int argc = 0, saved1 = dup(1), saved2 = dup(2), r;
	size_t n;

	while (argv[argc] != NULL)
		argc++;
	fflush(stdout);
	fflush(stderr);
	dup2(fileno(tmp), 1);
	dup2(fileno(tmp), 2);
	r = opt_parse(&p, argc, argv, rest);
	fflush(stdout);
	fflush(stderr);
	dup2(saved1, 1);
	dup2(saved2, 2);
	close(saved1);
	close(saved2);
	rewind(tmp);
	n = fread(out, 1, outlen - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	return r;
}

static void
test_opt_parse(void **state)
{
	char a0[] = "tool", a1[] = "-an", a2[] = "4", a3[] = "-H", a4[] = "h[1-2]", a5[] = "app";
	char a6[] = "-a", bad[] = "bad", dd[] = "--", help[] = "--help", ver[] = "-V";
	char out[4096];
	struct parse_got g = { 0 };
	struct hostopt ho = { 0 };
	int rest = -1;

	/* The tool's options reach it in order; the host options go to the hosts. */
	char *v1[] = { a0, a1, a2, a3, a4, NULL };
	assert_int_equal(parse_run(OPT_OPERANDS_NONE, &ho, &g, v1, &rest, out, sizeof out),
	    EXIT_OK);
	assert_string_equal(g.seen, "1=;3=4;");
	assert_string_equal(ho.hosts, "h[1-2]");
	assert_int_equal(rest, 5);
	/* Refused operands name the argument, in the tool's usage error. */
	char *v2[] = { a0, a6, dd, a5, NULL };
	memset(&g, 0, sizeof g);
	assert_int_equal(parse_run(OPT_OPERANDS_NONE, NULL, &g, v2, NULL, out, sizeof out),
	    EXIT_USAGE);
	assert_non_null(strstr(out, "tool: unexpected argument 'app'\nusage: tool [options]"));
	/* collrun's way: the options end at the program, whose own stay its. */
	char *v3[] = { a0, a6, a5, a6, NULL };
	memset(&g, 0, sizeof g);
	assert_int_equal(parse_run(OPT_OPERANDS_REST, NULL, &g, v3, &rest, out, sizeof out),
	    EXIT_OK);
	assert_int_equal(rest, 2);
	assert_string_equal(g.seen, "1=;");
	/* collstack's: operands between options, and "--" does not end them. */
	char *v4[] = { a0, a5, a6, dd, a5, a6, NULL };
	memset(&g, 0, sizeof g);
	assert_int_equal(parse_run(OPT_OPERANDS_BETWEEN, NULL, &g, v4, NULL, out, sizeof out),
	    EXIT_OK);
	assert_int_equal(g.nops, 2);
	assert_string_equal(g.seen, "1=;1=;");
	/* A value the tool refuses, and one the host options refuse: said the same way. */
	char *v5[] = { a0, a1, bad, NULL };
	assert_int_equal(parse_run(OPT_OPERANDS_NONE, NULL, &g, v5, NULL, out, sizeof out),
	    EXIT_USAGE);
	assert_non_null(strstr(out, "tool: -n must be good, not 'bad'\n"));
	char f[] = "--fanout", zero[] = "0";
	char *v6[] = { a0, f, zero, NULL };
	assert_int_equal(parse_run(OPT_OPERANDS_NONE, &ho, &g, v6, NULL, out, sizeof out),
	    EXIT_USAGE);
	assert_non_null(strstr(out, "tool: --fanout must be an integer"));
	/* --help and --version are answered, and stop the loop there. */
	char *v7[] = { a0, help, a1, bad, NULL };
	memset(&g, 0, sizeof g);
	assert_int_equal(parse_run(OPT_OPERANDS_NONE, NULL, &g, v7, NULL, out, sizeof out), -1);
	assert_non_null(strstr(out, "usage: tool [options]"));
	assert_non_null(strstr(out, "-V, --version"));
	assert_string_equal(g.seen, "");
	char *v8[] = { a0, ver, NULL };
	assert_int_equal(parse_run(OPT_OPERANDS_NONE, NULL, &g, v8, NULL, out, sizeof out), -1);
	assert_string_equal(out, "tool " COLL_VERSION "\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opt_next),
		cmocka_unit_test(test_opt_operands),
		cmocka_unit_test(test_opt_size),
		cmocka_unit_test(test_opt_int),
		cmocka_unit_test(test_opt_double),
		cmocka_unit_test(test_opt_print_help),
		cmocka_unit_test(test_opt_hidden),
		cmocka_unit_test(test_opt_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
