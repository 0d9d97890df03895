/*
 * A rank of a large job, for collstack's scale test, without the cost of a
 * 1,024-rank mesh: it publishes a real status page from its environment
 * (COLL_JOBID, COLL_RANK, COLL_SIZE) as a job hung in an all-reduce would:
 * every rank in allreduce seq SEQ waiting on its left neighbour, except rank
 * BEHIND, which finished seq SEQ-1 and computes in train_step, and rank
 * AHEAD (if given), which finished seq SEQ itself (a broadcast's root does)
 * and computes too. Then each waits in its own function until killed.
 *
 *   stack_pager SEQ BEHIND [AHEAD]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "kind.h"
#include "status.h"

static __attribute__((noinline)) void
wait_allreduce(void)
{
	for (;;)
		pause();
}

static __attribute__((noinline)) void
train_step(void)
{
	struct timespec ts = { 1000, 0 };

	for (;;)
		nanosleep(&ts, NULL);
}

int
main(int argc, char **argv)
{
	const char *job = getenv("COLL_JOBID"), *rank = getenv("COLL_RANK"),
	    *size = getenv("COLL_SIZE");
	struct status st;
	char host[64] = "";
	int r, n;
	unsigned long long seq;

	if (argc < 3 || argc > 4 || job == NULL || rank == NULL || size == NULL) {
		fprintf(stderr, "usage: stack_pager SEQ BEHIND [AHEAD] (under collrun)\n");
		return 2;
	}
	seq = strtoull(argv[1], NULL, 10);
	r = atoi(rank);
	n = atoi(size);
	gethostname(host, sizeof host - 1);
	if (status_open(&st, strtoull(job, NULL, 16), 0x5eed, r, n, host) != 0) {
		perror("stack_pager: status_open");
		return 1;
	}
	status_begin(&st, seq - 1, KIND_ALLREDUCE, 4096);
	status_end(&st, seq - 1, KIND_ALLREDUCE);
	if (r == atoi(argv[2])) {
		train_step();
	} else if (argc == 4 && r == atoi(argv[3])) {
		status_begin(&st, seq, KIND_ALLREDUCE, 4096);
		status_end(&st, seq, KIND_ALLREDUCE);
		train_step();
	} else {
		status_begin(&st, seq, KIND_ALLREDUCE, 4096);
		status_wait(&st, (r + n - 1) % n, 1);
		wait_allreduce();
	}
	return 0;
}
