/*
 * A rank of an MPI job without MPI, for collstack's stacks rule: its main
 * thread waits in frames named as Open MPI's or MPICH's collectives name
 * theirs (no MPI_ frame above them), or computes. "ready" on stdout.
 *
 *   mpi_like ompi|mpich|compute
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static __attribute__((noinline)) void
wait_here(void)
{
	struct timespec ts = { 1000, 0 };

	for (;;)
		nanosleep(&ts, NULL);
}

static __attribute__((noinline)) void
ompi_coll_base_allreduce_intra_ring(void)
{
	wait_here();
}

static __attribute__((noinline)) void
MPIDI_progress_test(void)
{
	wait_here();
}

static __attribute__((noinline)) void
MPIR_Allreduce_intra_auto(void)
{
	MPIDI_progress_test();
}

static __attribute__((noinline)) void
compute(void)
{
	struct timespec ts = { 1000, 0 };

	for (;;)
		nanosleep(&ts, NULL);
}

int
main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (strcmp(what, "ompi") == 0)
		ompi_coll_base_allreduce_intra_ring();
	else if (strcmp(what, "mpich") == 0)
		MPIR_Allreduce_intra_auto();
	compute();
	return 0;
}
