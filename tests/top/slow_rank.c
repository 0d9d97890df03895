/*
 * A libcoll job with one slow rank, for colltop's test of a job's own
 * straggler (tests/cli/t090x-colltop-job-*.sh): every rank runs OPS
 * all-reduces of 1024 int64s, PAUSE_MS apart; the rank SLOW (-1: none)
 * sleeps SLOW_MS before each, so the others wait for it in every op.
 *
 *   SLOW=2 SLOW_MS=40 collrun -n 4 slow_rank OPS PAUSE_MS
 *
 * Prints "slow: rank R done" after its last op, and "slow: rank R failed:
 * WHY" (exit 3) if an op fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "coll.h"
#include "comm.h"
#include "err.h"

#define SLOW_COUNT 1024

static void
slow_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts) != 0)
		;
}

static long
slow_env(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? strtol(v, NULL, 10) : dflt;
}

int
main(int argc, char **argv)
{
	long ops = argc > 1 ? strtol(argv[1], NULL, 10) : 100;
	long pause_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 10;
	long slow = slow_env("SLOW", -1), slow_ms = slow_env("SLOW_MS", 40);
	static int64_t in[SLOW_COUNT], out[SLOW_COUNT];
	struct comm *w;
	int rc = comm_init_env(&w, NULL), me;

	if (rc != COLL_OK) {
		printf("slow: init failed: %s\n", coll_strerror(rc));
		return 3;
	}
	me = comm_rank(w);
	for (int i = 0; i < SLOW_COUNT; i++)
		in[i] = me + i;
	for (long k = 0; k < ops; k++) {
		if (me == slow)
			slow_sleep_ms(slow_ms);
		if ((rc = coll_allreduce(w, in, out, SLOW_COUNT, DT_INT64, OP_SUM)) != COLL_OK) {
			printf("slow: rank %d failed: %s\n", me, coll_strerror(rc));
			return 3;
		}
		slow_sleep_ms(pause_ms);
	}
	printf("slow: rank %d done\n", me);
	comm_destroy(w);
	return 0;
}
