/*
 * A rank of a job whose hang crosses communicators, for collstack's chain
 * tests: coll's own world communicator of 4 and groups split from it, a few
 * all-reduces on each, then the hang. "ready" on stdout before the last op.
 *
 *   chain_rank chain2   rank 1 in save_checkpoint; rank 0 in group {0,1}'s
 *                       all-reduce; ranks 2,3 in the world's
 *   chain_rank chain3   rank 0 in save_checkpoint; rank 1 in group {0,1}'s;
 *                       rank 2 in group {1,2}'s; rank 3 in the world's
 *   chain_rank cycle    groups A and B both {0,1}: rank 0 calls A's then B's
 *                       all-reduce, rank 1 B's then A's; ranks 2,3 the world's
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll.h"
#include "comm.h"
#include "err.h"

static int me;

static void
die(const char *what, int rc)
{
	printf("chain: rank %d %s failed: %s\n", me, what, coll_strerror(rc));
	fflush(stdout);
	exit(3);
}

static void
reduce(struct comm *c)
{
	int64_t v = me, sum = 0;
	int rc = coll_allreduce(c, &v, &sum, 1, DT_INT64, OP_SUM);

	if (rc != COLL_OK)
		die("allreduce", rc);
}

/* The group of the ranks in set (a bit per rank), NULL elsewhere; a few ops on it. */
static struct comm *
group(struct comm *w, unsigned set)
{
	struct comm *g = NULL;
	int rc = comm_split(w, (set >> me) & 1 ? 0 : COLL_SPLIT_NOCOLOR, me, &g, NULL);

	if (rc != COLL_OK)
		die("split", rc);
	if (g != NULL)
		reduce(g);
	return g;
}

static __attribute__((noinline)) void
save_checkpoint(void)
{
	struct timespec ts = { 1000, 0 };

	for (;;)
		nanosleep(&ts, NULL);
}

static void
ready(void)
{
	printf("chain: rank %d ready\n", me);
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	struct comm *w, *a, *b;
	int rc = comm_init_env(&w, NULL);

	if (rc != COLL_OK)
		die("init", rc);
	me = comm_rank(w);
	for (int i = 0; i < 8; i++)
		reduce(w);
	a = group(w, 0x3);
	b = group(w, strcmp(what, "chain3") == 0 ? 0x6 : 0x3);
	ready();
	if (strcmp(what, "chain2") == 0) {
		if (me == 1)
			save_checkpoint();
		reduce(me == 0 ? a : w);
	} else if (strcmp(what, "chain3") == 0) {
		if (me == 0)
			save_checkpoint();
		reduce(me == 1 ? a : me == 2 ? b : w);
	} else if (strcmp(what, "cycle") == 0) {
		if (me < 2)
			reduce(me == 0 ? a : b);
		reduce(me == 0 ? b : me == 1 ? a : w);
	}
	save_checkpoint();
	return 0;
}
