/*
 * One rank of a job with a hang planted in it, for bench/triage/accuracy:
 * coll's own communicators, the world and pairs of it ({0,1}, {2,3}, ...), a
 * step of training being an all-reduce in the pair, the step's work, then an
 * all-reduce in the world, as data- and tensor-parallel groups do. At step
 * STEP, rank CULPRIT does KIND, where the others go on as far as they can:
 *
 *   user    sits in save_checkpoint() before the world all-reduce: the others
 *           wait for it in the world
 *   group   sits in save_checkpoint() before the pair's all-reduce: its
 *           partner waits in the pair, the others in the world (a chain
 *           across communicators whose root is CULPRIT)
 *   stop    stops itself (SIGSTOP) before the world all-reduce
 *   dead    kills itself (SIGKILL) before the world all-reduce
 *
 *   hang_rank KIND CULPRIT STEP       (under collrun)
 *
 * Each rank says "triage: R STEP world" (or "group") before it enters the
 * op of that step where it will wait, and the culprit "triage: R STEP KIND",
 * so that the harness knows when the plan has taken hold.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll.h"
#include "comm.h"
#include "err.h"

static int me;

static void
hang_fail(const char *what, struct comm *c, int rc)
{
	printf("triage: %d %s failed: %s (%s)\n", me, what, c ? comm_last_error(c) : "",
	    coll_strerror(rc));
	fflush(stdout);
	exit(3);
}

/* The user code a rank hangs in: a name the verdict should print. */
static __attribute__((noinline)) void
save_checkpoint(void)
{
	for (;;)
		pause();
}

static __attribute__((noinline)) void
hang_inject(const char *kind, unsigned long step)
{
	printf("triage: %d %lu %s\n", me, step, kind);
	fflush(stdout);
	if (strcmp(kind, "stop") == 0)
		raise(SIGSTOP);
	else if (strcmp(kind, "dead") == 0)
		raise(SIGKILL);
	save_checkpoint();
}

static void
hang_allreduce(struct comm *c, const char *name, unsigned long step, unsigned long at)
{
	int64_t v = me, sum = 0;
	int rc;

	if (step == at) {
		printf("triage: %d %lu %s\n", me, step, name);
		fflush(stdout);
	}
	if ((rc = coll_allreduce(c, &v, &sum, 1, DT_INT64, OP_SUM)) != COLL_OK)
		hang_fail(name, c, rc);
}

int
main(int argc, char **argv)
{
	struct comm *world, *pair;
	unsigned long at;
	int culprit, rc;
	const char *kind;

	if (argc != 4)
		return 64;
	kind = argv[1];
	culprit = atoi(argv[2]);
	at = strtoul(argv[3], NULL, 10);
	if ((rc = comm_init_env(&world, NULL)) != COLL_OK)
		hang_fail("init", world, rc);
	me = comm_rank(world);
	if ((rc = comm_split(world, me / 2, me, &pair, NULL)) != COLL_OK)
		hang_fail("split", world, rc);
	for (unsigned long step = 1;; step++) {
		int mine = me == culprit && step == at;

		if (mine && strcmp(kind, "group") == 0)
			hang_inject(kind, step);
		hang_allreduce(pair, "group", step, at);
		if (mine)
			hang_inject(kind, step);
		hang_allreduce(world, "world", step, at);
	}
}
