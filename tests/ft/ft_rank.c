/*
 * One rank of a fault-tolerance scenario, run under collrun (tests/cli/t011x):
 *
 *   ft_rank kill ITERS      all-reduce loop; a rank killed by COLL_FAULT is
 *                           named, the survivors shrink and go on, correct
 *                           (FT_PACE_MS: sleep that long before each step)
 *   ft_rank close ITERS     a link closed by COLL_FAULT mid-op: the op is
 *                           retried and every result is right; each rank
 *                           says which peer its status page names for it
 *   ft_rank inplace         the same on an in-place all-reduce whose input
 *                           was not saved: the retry is refused, with why
 *   ft_rank abort-init|abort-split|abort-shrink
 *                           rank 7 stays away; comm_abort from another thread
 *                           unblocks the others' wait; prints how fast
 *   ft_rank rootkill ITERS  the communicator's root lives in rank 0, which
 *                           COLL_FAULT kills: the others fail, naming the root
 *   ft_rank nb              non-blocking: init, ops and finalize return
 *                           COLL_EINPROGRESS, a second op in flight COLL_EBUSY
 *   ft_rank abort-op        the same abort test on a non-blocking all-reduce
 *   ft_rank split           split by parity, key reversing the order
 *   ft_rank grow            6 ranks grow to 8 while the 6 keep serving ops
 *
 * Every result is checked against its expected value; a wrong one exits 2.
 * Lines start with "ft: " for the test to read.
 */
#include <inttypes.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll.h"
#include "comm.h"
#include "err.h"
#include "status.h"

#define FT_BIG (256 * 1024)

static int me;		/* rank in the job, never renumbered */

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A call on a non-blocking communicator returns at once: wait for it here. */
static int
settle(struct comm *c, int rc)
{
	while (rc == COLL_EINPROGRESS && (rc = comm_get_async_error(c)) == COLL_EINPROGRESS)
		usleep(100);
	return rc;
}

static void
die(const char *what, struct comm *c, int rc)
{
	printf("ft: rank %d %s failed: %s (%s)\n", me, what, c ? comm_last_error(c) : "",
	    coll_strerror(rc));
	fflush(stdout);
	exit(3);
}

/* Join in non-blocking mode, and wait for it. */
static struct comm *
join_nb(void)
{
	struct coll_config cfg = COLL_CONFIG_INIT;
	struct comm *c;
	int rc;

	cfg.blocking = 0;
	if ((rc = comm_init_env(&c, &cfg)) == COLL_OK)
		rc = settle(c, COLL_EINPROGRESS);
	if (rc != COLL_OK)
		die("init", c, rc);
	me = comm_rank(c);
	return c;
}

static struct comm *
join(void)
{
	struct comm *c;
	int rc = comm_init_env(&c, NULL);

	if (rc != COLL_OK)
		die("init", c, rc);
	me = comm_rank(c);
	return c;
}

/* The job ranks of c's members, in c's order (allgather of ours). */
static int *
members(struct comm *c)
{
	int *v = calloc((size_t)comm_size(c), sizeof *v), rc;

	rc = settle(c, coll_allgather(c, &me, v, 1, DT_INT32));
	if (rc != COLL_OK)
		die("allgather", c, rc);
	return v;
}

/* One small and one ring-sized all-reduce of job-rank-derived values, checked. */
static int
step(struct comm *c, const int *mem, int inplace)
{
	static float big[FT_BIG], out[FT_BIG];
	uint64_t v = (uint64_t)me + 1, want = 0, got = 0;
	float fwant = 0;
	int rc, n = comm_size(c);

	for (int i = 0; i < n; i++) {
		want += (uint64_t)mem[i] + 1;
		fwant += (float)(mem[i] % 7);
	}
	if ((rc = settle(c, coll_allreduce(c, &v, &got, 1, DT_UINT64, OP_SUM))) != COLL_OK)
		return rc;
	if (got != want) {
		printf("ft: rank %d WRONG small sum %" PRIu64 " want %" PRIu64 "\n", me, got, want);
		exit(2);
	}
	for (int i = 0; i < FT_BIG; i++)
		big[i] = (float)(me % 7);
	if ((rc = settle(c, coll_allreduce(c, big, inplace ? big : out, FT_BIG, DT_FLOAT32,
	    OP_SUM))) != COLL_OK)
		return rc;
	for (int i = 0; i < FT_BIG; i++)
		if ((inplace ? big : out)[i] != fwant) {
			printf("ft: rank %d WRONG big[%d] %g want %g\n", me, i,
			    (double)(inplace ? big : out)[i], (double)fwant);
			exit(2);
		}
	return COLL_OK;
}

static int
run_kill(int iters)
{
	struct comm *c = join(), *nc;
	int *mem = members(c), failed[64], nf, rc;
	const char *pace = getenv("FT_PACE_MS");
	uint64_t t0;

	printf("ft: rank %d running\n", me);
	for (int it = 0; it < iters; it++) {
		if (pace != NULL)
			usleep((useconds_t)atoi(pace) * 1000);	/* a job that runs for a while */
		t0 = now_ms();
		if ((rc = step(c, mem, 0)) == COLL_OK)
			continue;
		printf("ft: rank %d op failed after %" PRIu64 " ms: %s\n", me, now_ms() - t0,
		    comm_last_error(c));
		for (int w = 0; w < 200 && (nf = comm_get_failed(c, failed, 64)) == 0; w++)
			usleep(10000);
		if ((rc = comm_shrink(c, failed, nf, &nc, NULL, COLL_SHRINK_ABORT)) != COLL_OK)
			die("shrink", c, rc);
		comm_destroy(c);
		c = nc;
		free(mem);
		mem = members(c);
		printf("ft: rank %d shrunk to %d ranks, new rank %d\n", me, comm_size(c),
		    comm_rank(c));
		/*
		 * A rank may have completed the op the others failed in: all go on
		 * from the earliest iteration anyone failed in.
		 */
		{
			int64_t at = it, from;

			if ((rc = coll_allreduce(c, &at, &from, 1, DT_INT64, OP_MIN)) != COLL_OK)
				die("agreeing where to go on", c, rc);
			it = (int)from - 1;
		}
	}
	printf("ft: rank %d done %d iterations on %d ranks, retries %" PRIu64 "\n", me, iters,
	    comm_size(c), comm_retries(c));
	free(mem);
	comm_destroy(c);
	return 0;
}

static int
own_page(const struct status_page *pg, uid_t owner, void *arg)
{
	(void)owner;
	if (pg->pid != (int32_t)getpid())
		return 0;
	*(int *)arg = pg->retry_peer;
	return 1;
}

static int
run_close(int iters, int inplace)
{
	struct comm *c = join();
	int *mem = members(c), rc;

	for (int it = 0; it < iters; it++)
		if ((rc = step(c, mem, inplace)) != COLL_OK)
			die("allreduce", c, rc);
	printf("ft: rank %d done %d iterations, retries %" PRIu64 "\n", me, iters, comm_retries(c));
	/* The retried link as this rank's page names it, read as colltop reads it. */
	{
		int peer = -2;

		status_scan(NULL, own_page, &peer);
		printf("ft: rank %d retry peer %d\n", me, peer);
	}
	free(mem);
	comm_destroy(c);
	return 0;
}

struct aborter {
	struct comm *c;
	int ms;
	uint64_t at;
};

static void *
abort_later(void *arg)
{
	struct aborter *a = arg;

	usleep((useconds_t)a->ms * 1000);
	a->at = now_ms();
	comm_abort(a->c);
	return NULL;
}

/* Rank 7 stays out of the call; the others are unblocked by an abort 300 ms in. */
static int
run_abort(const char *what)
{
	struct coll_config cfg = COLL_CONFIG_INIT;
	struct aborter a = { .ms = 300 };
	struct comm *c, *nc = NULL;
	pthread_t t;
	int rc;

	me = atoi(getenv("COLL_RANK"));
	if (strcmp(what, "abort-op") == 0) {
		c = join_nb();
	} else if (strcmp(what, "abort-init") == 0) {
		if (me == 7) {
			sleep(2);
			return 0;
		}
		cfg.blocking = 0;
		if ((rc = comm_init_env(&c, &cfg)) != COLL_OK)
			die("init", c, rc);
	} else {
		c = join();
	}
	if (me == 7) {
		sleep(2);
		comm_abort(c);
		comm_destroy(c);
		return 0;
	}
	a.c = c;
	pthread_create(&t, NULL, abort_later, &a);
	if (strcmp(what, "abort-init") == 0) {
		while ((rc = comm_get_async_error(c)) == COLL_EINPROGRESS)
			usleep(1000);
		pthread_join(t, NULL);
	} else if (strcmp(what, "abort-op") == 0) {
		static uint64_t v, sum;

		if ((rc = coll_allreduce(c, &v, &sum, 1, DT_UINT64, OP_SUM)) != COLL_EINPROGRESS)
			die("non-blocking allreduce", c, rc);
		while ((rc = comm_get_async_error(c)) == COLL_EINPROGRESS)
			usleep(1000);
		pthread_join(t, NULL);
	} else if (strcmp(what, "abort-split") == 0) {
		rc = comm_split(c, 0, me, &nc, NULL);
		pthread_join(t, NULL);
	} else {
		rc = comm_shrink(c, NULL, 0, &nc, NULL, COLL_SHRINK_DEFAULT);
		pthread_join(t, NULL);
	}
	printf("ft: rank %d %s returned %s %" PRIu64 " ms after the abort\n", me, what,
	    coll_strerror(rc), now_ms() - a.at);
	/* Stay a while: leaving now would make the root announce us dead to ranks still waiting. */
	sleep(1);
	comm_destroy(nc);
	comm_destroy(c);	/* joins the init thread: it must have let go */
	return rc == COLL_EABORTED ? 0 : 4;
}

/* Rank 0 makes a unique id whose root runs in its process; all join it. */
static struct comm *
grow_join(struct comm *world, int nranks, int as_rank, struct comm *from)
{
	struct coll_uid uid;
	struct comm *nc;
	int rc;

	memset(&uid, 0, sizeof uid);
	if (me == 0 && (rc = comm_grow_uid(from, nranks, &uid)) != COLL_OK)
		die("grow_uid", from, rc);
	if ((rc = coll_broadcast(world, &uid, &uid, sizeof uid, DT_UINT8, 0)) != COLL_OK)
		die("broadcast", world, rc);
	if (from != NULL && as_rank < comm_size(from))
		rc = comm_grow(from, nranks, &uid, &nc, NULL);
	else
		rc = comm_init(&nc, nranks, &uid, as_rank, NULL);
	if (rc != COLL_OK)
		die("grow", nc, rc);
	return nc;
}

static int
run_rootkill(int iters)
{
	struct comm *world = join(), *c = grow_join(world, comm_size(world), me, world);
	int *mem = members(c), rc;
	uint64_t t0 = now_ms();

	for (int it = 0; it < iters; it++) {
		if ((rc = step(c, mem, 0)) != COLL_OK) {
			printf("ft: rank %d op failed after %" PRIu64 " ms: %s\n", me,
			    now_ms() - t0, comm_last_error(c));
			fflush(stdout);
			exit(3);
		}
		t0 = now_ms();
	}
	printf("ft: rank %d done\n", me);
	return 0;
}

/* Non-blocking calls: each returns at once; the communicator says when it is done. */
static int
run_nb(void)
{
	uint64_t v, sum, want;
	struct comm *c;
	int rc, n;

	c = join_nb();
	n = comm_size(c);
	want = (uint64_t)n * (uint64_t)(n + 1) / 2;
	for (int it = 0; it < 5; it++) {
		v = (uint64_t)me + 1;
		sum = 0;
		/*
		 * Rank 0 comes late to the first and the last op, so that on the
		 * others they are surely still in flight when the next call comes.
		 */
		if (me == 0 && (it == 0 || it == 4))
			usleep(200 * 1000);
		if ((rc = coll_allreduce(c, &v, &sum, 1, DT_UINT64, OP_SUM)) != COLL_EINPROGRESS)
			die("non-blocking allreduce", c, rc);
		if (it == 0 && me != 0 && (rc = coll_barrier(c)) != COLL_EBUSY) {
			printf("ft: rank %d WRONG: a second call in flight returned %s\n", me,
			    coll_strerror(rc));
			exit(2);
		}
		/*
		 * The last one is flushed by finalize, which must wait for it; on
		 * rank 0 it may be done already, and finalize then ends at once.
		 */
		if (it == 4 && (rc = comm_finalize(c)) != COLL_EINPROGRESS &&
		    !(me == 0 && rc == COLL_OK))
			die("non-blocking finalize", c, rc);
		if ((rc = settle(c, COLL_EINPROGRESS)) != COLL_OK)
			die("allreduce", c, rc);
		if (sum != want) {
			printf("ft: rank %d WRONG sum %" PRIu64 " want %" PRIu64 "\n", me, sum, want);
			exit(2);
		}
	}
	printf("ft: rank %d nb ok\n", me);
	comm_destroy(c);
	return 0;
}

static int
run_split(void)
{
	struct comm *c = join(), *nc;
	int64_t v = me, sum = 0, want = 0;
	int rc;

	if ((rc = comm_split(c, me % 2, -me, &nc, NULL)) != COLL_OK)
		die("split", c, rc);
	for (int r = me % 2; r < comm_size(c); r += 2)
		want += r;
	if ((rc = coll_allreduce(nc, &v, &sum, 1, DT_INT64, OP_SUM)) != COLL_OK)
		die("allreduce", nc, rc);
	if (sum != want || comm_size(nc) != (comm_size(c) + 1 - me % 2) / 2 ||
	    comm_rank(nc) != comm_size(nc) - 1 - me / 2) {
		printf("ft: rank %d WRONG split: rank %d of %d sum %" PRId64 " want %" PRId64 "\n",
		    me, comm_rank(nc), comm_size(nc), sum, want);
		exit(2);
	}
	printf("ft: rank %d split ok: rank %d of %d\n", me, comm_rank(nc), comm_size(nc));
	comm_destroy(nc);
	comm_destroy(c);
	return 0;
}

/* Ranks 0-5 form a communicator, grow it to 8 with 6 and 7, and keep using the 6 meanwhile. */
static int
run_grow(void)
{
	struct coll_config nb = COLL_CONFIG_INIT;
	struct comm *world = join(), *six = NULL, *big;
	struct coll_uid uid;
	int rc, served = 0, *mem;

	if ((rc = comm_split(world, me < 6 ? 0 : COLL_SPLIT_NOCOLOR, me, &six, NULL)) != COLL_OK)
		die("split", world, rc);
	memset(&uid, 0, sizeof uid);
	if (me == 0 && (rc = comm_grow_uid(six, 8, &uid)) != COLL_OK)
		die("grow_uid", six, rc);
	if ((rc = coll_broadcast(world, &uid, &uid, sizeof uid, DT_UINT8, 0)) != COLL_OK)
		die("broadcast", world, rc);
	nb.blocking = 0;
	rc = six ? comm_grow(six, 8, &uid, &big, &nb) : comm_init(&big, 8, &uid, me, NULL);
	if (rc != COLL_OK)
		die("grow", big, rc);
	if (six != NULL) {
		int *m6 = members(six);

		/* The old communicator serves ops while the new one joins. */
		while ((rc = comm_get_async_error(big)) == COLL_EINPROGRESS || served < 3) {
			if ((rc = step(six, m6, 0)) != COLL_OK)
				die("allreduce on the old communicator", six, rc);
			served++;
		}
		free(m6);
		if ((rc = comm_get_async_error(big)) != COLL_OK)
			die("grow", big, rc);
	}
	mem = members(big);
	if ((rc = step(big, mem, 0)) != COLL_OK)
		die("allreduce on the grown communicator", big, rc);
	printf("ft: rank %d grow ok: rank %d of %d, %d ops on the old one meanwhile\n", me,
	    comm_rank(big), comm_size(big), served);
	free(mem);
	comm_destroy(big);
	comm_destroy(six);
	comm_destroy(world);
	return 0;
}

int
main(int argc, char **argv)
{
	int iters = argc > 2 ? atoi(argv[2]) : 10;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * libcrypto started before libcoll, as Python's hashlib does under
	 * PyTorch: its exit-time cleanup is then registered, and a rank that
	 * exits while handshakes run must still not crash (die() exits so).
	 */
	OPENSSL_init_crypto(0, NULL);
	if (argc < 2)
		return 64;
	if (strcmp(argv[1], "kill") == 0)
		return run_kill(iters);
	if (strcmp(argv[1], "close") == 0)
		return run_close(iters, 0);
	if (strcmp(argv[1], "inplace") == 0)
		return run_close(iters, 1);
	if (strncmp(argv[1], "abort-", 6) == 0)
		return run_abort(argv[1]);
	if (strcmp(argv[1], "rootkill") == 0)
		return run_rootkill(iters);
	if (strcmp(argv[1], "split") == 0)
		return run_split();
	if (strcmp(argv[1], "nb") == 0)
		return run_nb();
	if (strcmp(argv[1], "grow") == 0)
		return run_grow();
	return 64;
}
