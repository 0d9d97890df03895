/*
 * core/triage's cuda-gdb reader: its kernel table read by columns (rows of
 * text and what they must give), and the debugger run on a live process
 * through tests/stack/cuda_gdb_standin.sh: its answer taken, a debugger
 * that never answers stopped at the deadline, one that writes without end
 * cut at 1 MiB, and none started when too little time is left.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "cudagdb.h"

/* Columns padded to the header's width, the invocation where it says "Invocation". */
#define HDR "  Kernel Parent Dev Grid Status   SMs Mask GridDim BlockDim Invocation\n"

static const struct {
	const char *in, *want;	/* want NULL: no kernel read */
} parse_rows[] = {
	{ HDR "*      0      -   0    8 Active 0xfff (24,1,1) (544,1,1)    k_one()\n",
	  "k_one() (device 0, Active)" },
	{ HDR "       0      -   1    8 Active 0xfff (24,1,1) (544,1,1)    k_one()\n"
	      "       1      -   3    9 Pending 0x0 (1,1,1) (1,1,1)        k_two(int, float)\n",
	  "k_one() (device 1, Active); k_two(int, float) (device 3, Pending)" },
	{ "No CUDA kernels.\n", NULL },
	{ "ptrace: Operation not permitted.\n", NULL },
	/* A header without Dev or Status is no table of ours. */
	{ "  Kernel Parent Grid Invocation\n       0      -   8 k()\n", NULL },
	/* A row shorter than the invocation's column names nothing. */
	{ HDR "   0 - 0\n", NULL },
	{ "", NULL },
};

static void
test_parse_rows(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof parse_rows / sizeof *parse_rows; i++) {
		char *k = cudagdb_parse(parse_rows[i].in);

		if (parse_rows[i].want == NULL)
			assert_null(k);
		else
			assert_string_equal(k, parse_rows[i].want);
		free(k);
	}
}

/* cuda-gdb 13.0's own output on an H200: the focused kernel's function said. */
static void
test_parse_h200(void **state)
{
	char path[512], buf[8192], *k;
	size_t len;
	FILE *f;

	(void)state;
	snprintf(path, sizeof path, "%s/tests/stack/cuda/info_kernels.txt", COLL_SRC);
	assert_non_null(f = fopen(path, "r"));
	len = fread(buf, 1, sizeof buf - 1, f);
	buf[len] = '\0';
	fclose(f);
	k = cudagdb_parse(buf);
	assert_string_equal(k, "ncclDevKernel_AllReduce_Sum_f32_RING_LL() (device 0, Active, in "
	    "ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE)");
	free(k);
}

static pid_t
target_start(void)
{
	pid_t p = fork();

	assert_true(p >= 0);
	if (p == 0) {
		execlp("sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	return p;
}

static void
target_stop(pid_t p)
{
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

/* The stand-in run as the debugger on a live target, STANDIN_CUDA=mode. */
static void
run_standin(const char *mode, double budget_s, struct cudagdb_res *res, int *asked)
{
	char gdb[512];
	pid_t p = target_start();

	snprintf(gdb, sizeof gdb, "%s/tests/stack/cuda_gdb_standin.sh", COLL_SRC);
	setenv("STANDIN_CUDA", mode, 1);
	*asked = cudagdb_run(gdb, &p, NULL, 1, budget_s, res);
	unsetenv("STANDIN_CUDA");
	target_stop(p);
}

static void
test_run_answer(void **state)
{
	struct cudagdb_res r;
	char *k;
	int asked;

	(void)state;
	run_standin("", 30, &r, &asked);
	assert_int_equal(asked, 1);
	assert_true(r.asked && !r.failed && !r.timed_out && !r.big);
	assert_int_equal(r.status, 0);
	assert_int_equal(strlen(r.out), r.len);
	assert_non_null(k = cudagdb_parse(r.out));
	assert_non_null(strstr(k, "(device 0, Active, in ncclDevFunc_"));
	free(k);
	free(r.out);
}

/* A debugger that never answers is stopped at the deadline, not waited for. */
static void
test_run_slow(void **state)
{
	struct cudagdb_res r;
	uint64_t t0 = clock_now_ms();
	int asked;

	(void)state;
	run_standin("slow", 2, &r, &asked);
	assert_int_equal(asked, 1);
	assert_true(r.asked && r.timed_out);
	/* The deadline, and a second for SIGTERM to work before SIGKILL. */
	assert_true(clock_now_ms() - t0 < 5000);
	free(r.out);
}

/* A debugger that writes without end is read up to 1 MiB, no more. */
static void
test_run_flood(void **state)
{
	struct cudagdb_res r;
	int asked;

	(void)state;
	run_standin("flood", 30, &r, &asked);
	assert_true(r.asked && r.big);
	assert_int_equal(r.len, 1u << 20);
	free(r.out);
}

/* Under a second left: no debugger is started (each needs some 10 s), and none is asked. */
static void
test_run_no_time(void **state)
{
	struct cudagdb_res r;
	int asked;

	(void)state;
	run_standin("", 0.5, &r, &asked);
	assert_int_equal(asked, 0);
	assert_false(r.asked);
	assert_null(r.out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_rows),
		cmocka_unit_test(test_parse_h200),
		cmocka_unit_test(test_run_answer),
		cmocka_unit_test(test_run_slow),
		cmocka_unit_test(test_run_flood),
		cmocka_unit_test(test_run_no_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
