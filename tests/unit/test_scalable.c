/*
 * Init from several unique ids (comm_init_scalable): every rank is a process,
 * every root runs in a process of its own (so that one can be killed as a
 * crashed host would be), all on loopback. Ranks record what they saw in a
 * shared page; the test process asserts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "coll.h"
#include "comm.h"
#include "comm_impl.h"
#include "err.h"
#include "net.h"
#include "root.h"
#include "status.h"
#include "uid.h"

#define MAXR 8
#define MAXB 4
#define WAIT_MS 60000

struct seen {
	int init_rc[MAXR];
	int rc[MAXR];		/* of the scenario after init */
	int bad[MAXR];		/* wrong results */
	int failed[MAXR][MAXR];	/* comm_get_failed: 1 for each rank named dead */
	int async[MAXR];	/* comm_get_async_error once the notice came */
	int root_joined[MAXB];	/* each root's count of joined ranks, kept current by it */
	int ready[MAXR];	/* the rank's first op is done */
	int done[MAXR];		/* the rank has recorded what it saw */
	char err[MAXR][COLL_ERR_LEN];
};

typedef void (*scen_fn)(struct comm *c, int rank, struct seen *s);

struct world {
	int n, nroots;
	int skip;		/* a rank never started, or -1 */
	int join_timeout_ms;
	int env;		/* ranks join with comm_init_env, the ids in COLL_UNIQUE_ID */
	int late, late_ms;	/* rank late starts late_ms late */
	int kill, kill_ms;	/* the test kills rank kill kill_ms after the start (-1: none) */
	int kill_root;		/* ... and once root kill_root has all its ranks (-1: at once) */
	int listen;		/* after init, however it went, wait for a dead rank's name */
	int linger_ms;		/* a rank whose init failed stays this long (not reported dead) */
	struct coll_uid uids[MAXB];
	pid_t roots[MAXB];
	pid_t ranks[MAXR];
	struct seen *s;
};

/* A root in a child process: its id goes up the pipe, then it serves until killed. */
static pid_t
root_child(int nranks, int join_timeout_ms, struct coll_uid *uid, int *joined)
{
	int fds[2];
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct root *root;
		struct net_addr a;
		struct coll_uid u;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		if (net_addr_parse(&a, "127.0.0.1", 0) != COLL_OK ||
		    root_start(&root, &a, nranks, join_timeout_ms, &u) != COLL_OK)
			_exit(1);
		if (write(fds[1], &u, sizeof u) != (ssize_t)sizeof u)
			_exit(1);
		for (;;) {
			*joined = root_joined(root);
			nanosleep(&(struct timespec){ 0, 5 * 1000000 }, NULL);
		}
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], uid, sizeof *uid), (ssize_t)sizeof *uid);
	close(fds[0]);
	return pid;
}

static int
block_size(int n, int nroots, int b)
{
	return (int)((int64_t)(b + 1) * n / nroots) - (int)((int64_t)b * n / nroots);
}

static void
world_start(struct world *w, int n, int nroots)
{
	w->n = n;
	w->nroots = nroots;
	if (w->join_timeout_ms == 0)
		w->join_timeout_ms = 20000;
	w->s = mmap(NULL, sizeof *w->s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(w->s != MAP_FAILED);
	memset(w->s, 0, sizeof *w->s);
	for (int b = 0; b < nroots; b++)
		w->roots[b] = root_child(block_size(n, nroots, b), w->join_timeout_ms, &w->uids[b],
		    &w->s->root_joined[b]);
}

static void
rank_child(struct world *w, int rank, scen_fn fn)
{
	struct coll_config cfg = COLL_CONFIG_INIT;
	struct comm *c = NULL;
	struct seen *s = w->s;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	cfg.timeout_ms = 20000;
	if (rank == w->late)
		nanosleep(&(struct timespec){ w->late_ms / 1000, (w->late_ms % 1000) * 1000000L },
		    NULL);
	if (w->env) {
		char list[MAXB * UID_STR_LEN] = "", one[UID_STR_LEN], num[16];

		for (int b = 0; b < w->nroots; b++) {
			uid_format(&w->uids[b], one, sizeof one);
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", b ? "," : "",
			    one);
		}
		setenv("COLL_UNIQUE_ID", list, 1);
		snprintf(num, sizeof num, "%d", rank);
		setenv("COLL_RANK", num, 1);
		snprintf(num, sizeof num, "%d", w->n);
		setenv("COLL_SIZE", num, 1);
		s->init_rc[rank] = comm_init_env(&c, &cfg);
	} else {
		s->init_rc[rank] = comm_init_scalable(&c, w->n, w->uids, w->nroots, rank, &cfg);
	}
	if (s->init_rc[rank] != COLL_OK && c != NULL)
		snprintf(s->err[rank], COLL_ERR_LEN, "%s", comm_last_error(c));
	if (s->init_rc[rank] == COLL_OK && fn != NULL)
		fn(c, rank, s);
	for (int i = 0; w->listen && c != NULL && i < 250 && comm_get_failed(c, NULL, 0) == 0; i++)
		nanosleep(&(struct timespec){ 0, 20 * 1000000 }, NULL);
	if (w->listen && c != NULL) {
		int dead[MAXR], nd = comm_get_failed(c, dead, MAXR);

		for (int i = 0; i < nd && i < MAXR; i++)
			s->failed[rank][dead[i]] = 1;
	}
	if (s->init_rc[rank] != COLL_OK && w->linger_ms > 0)
		nanosleep(&(struct timespec){ w->linger_ms / 1000, (w->linger_ms % 1000) * 1000000L },
		    NULL);
	comm_destroy(c);
	_exit(0);
}

/* Run the ranks (all but w->skip) to their end; the test fails if any outlives WAIT_MS. */
static void
world_run(struct world *w, scen_fn fn)
{
	uint64_t t0 = clock_now_ms(), until = t0 + WAIT_MS;
	int left = 0, st;
	pid_t pid;

	for (int r = 0; r < w->n; r++) {
		w->ranks[r] = 0;
		if (r == w->skip)
			continue;
		if ((w->ranks[r] = fork()) == 0)
			rank_child(w, r, fn);
		assert_true(w->ranks[r] > 0);
		left++;
	}
	while (left > 0 && clock_now_ms() < until) {
		struct timespec ts = { 0, 10 * 1000000 };

		if (w->kill >= 0 && w->ranks[w->kill] > 0 && clock_now_ms() >= t0 +
		    (uint64_t)w->kill_ms && (w->kill_root < 0 || w->s->root_joined[w->kill_root] >=
		    block_size(w->n, w->nroots, w->kill_root))) {
			kill(w->ranks[w->kill], SIGKILL);
			w->kill = -1;
		}
		if ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
			for (int r = 0; r < w->n; r++)
				if (w->ranks[r] == pid) {
					w->ranks[r] = 0;
					left--;
				}
		} else {
			nanosleep(&ts, NULL);
		}
	}
	for (int r = 0; r < w->n; r++)
		if (w->ranks[r] > 0) {
			kill(w->ranks[r], SIGKILL);
			waitpid(w->ranks[r], NULL, 0);
		}
	assert_int_equal(left, 0);	/* a rank hung */
}

static void
world_end(struct world *w)
{
	for (int b = 0; b < w->nroots; b++)
		if (w->roots[b] > 0) {
			kill(w->roots[b], SIGKILL);
			waitpid(w->roots[b], NULL, 0);
		}
	/* The status pages of ranks that were killed (or never finished) go too. */
	status_remove_job(w->uids[0].jobid);
	munmap(w->s, sizeof *w->s);
}

/* --- every rank's book is right: results, pids and ports through the data plane --- */

static void
scen_books(struct comm *c, int rank, struct seen *s)
{
	int n = comm_size(c);
	uint64_t v = (uint64_t)rank + 1, sum = 0, mine[2], all[2 * MAXR], got;

	if ((s->rc[rank] = coll_allreduce(c, &v, &sum, 1, DT_UINT64, OP_SUM)) != COLL_OK) {
		snprintf(s->err[rank], COLL_ERR_LEN, "%s", comm_last_error(c));
		return;
	}
	s->bad[rank] += sum != (uint64_t)n * (uint64_t)(n + 1) / 2;
	/* What each rank says of itself must be what everyone's book says of it. */
	mine[0] = (uint64_t)getpid();
	mine[1] = net_addr_port(&c->book[rank].addr);
	if ((s->rc[rank] = coll_allgather(c, mine, all, 2, DT_UINT64)) != COLL_OK)
		return;
	for (int i = 0; i < n; i++) {
		s->bad[rank] += all[2 * i] != (uint64_t)comm_pid(c, i);
		s->bad[rank] += all[2 * i + 1] != net_addr_port(&c->book[i].addr);
	}
	/* And every pair connects: each rank sends its number to each other. */
	for (int k = 1; k < n && s->rc[rank] == COLL_OK; k++) {
		v = (uint64_t)rank;
		s->rc[rank] = coll_sendrecv(c, &v, 1, (rank + k) % n, &got, 1, (rank - k + n) % n,
		    DT_UINT64);
		s->bad[rank] += got != (uint64_t)((rank - k + n) % n);
	}
}

static void
test_blocks_of_uneven_size(void **state)
{
	struct world w = { .skip = -1, .late = -1, .kill = -1, .kill_root = -1 };

	(void)state;
	world_start(&w, 7, 3);	/* blocks 0-1, 2-3, 4-6 */
	world_run(&w, scen_books);
	for (int r = 0; r < w.n; r++) {
		if (w.s->init_rc[r] != COLL_OK || w.s->rc[r] != COLL_OK)
			fail_msg("rank %d: init %d, op %d: %s", r, w.s->init_rc[r], w.s->rc[r],
			    w.s->err[r]);
		assert_int_equal(w.s->bad[r], 0);
	}
	world_end(&w);
}

/* Through COLL_UNIQUE_ID, as a launcher would hand the ids out. */
static void
test_one_rank_per_root(void **state)
{
	struct world w = { .skip = -1, .late = -1, .kill = -1, .kill_root = -1, .env = 1 };

	(void)state;
	world_start(&w, 4, 4);
	world_run(&w, scen_books);
	for (int r = 0; r < w.n; r++) {
		assert_int_equal(w.s->init_rc[r], COLL_OK);
		assert_int_equal(w.s->rc[r], COLL_OK);
		assert_int_equal(w.s->bad[r], 0);
	}
	world_end(&w);
}

/* --- a rank of one block never comes: every rank of every block hears which --- */

static void
test_missing_rank_named_in_every_block(void **state)
{
	/* The ranks linger after their failed init: one that left first would be named instead. */
	struct world w = { .skip = 5, .late = -1, .kill = -1, .kill_root = -1, .join_timeout_ms = 1500,
	    .linger_ms = 2000 };

	(void)state;
	world_start(&w, 6, 3);	/* rank 5 is in the last block, 4-5 */
	world_run(&w, NULL);
	for (int r = 0; r < 5; r++) {
		assert_int_not_equal(w.s->init_rc[r], COLL_OK);
		if (strstr(w.s->err[r], "5 never joined") == NULL)
			fail_msg("rank %d: %s", r, w.s->err[r]);
	}
	world_end(&w);
}

/* --- a rank dies after init: the survivors of every block name it --- */

static void
scen_death(struct comm *c, int rank, struct seen *s)
{
	uint64_t v = 1, sum = 0;
	struct timespec ts = { 0, 300 * 1000000 };
	int dead[MAXR], nd;

	/* Rank 3 may finish the first op and die while others are still in it: either op fails. */
	if ((s->rc[rank] = coll_allreduce(c, &v, &sum, 1, DT_UINT64, OP_SUM)) == COLL_OK) {
		if (rank == 3)
			raise(SIGKILL);
		nanosleep(&ts, NULL);
		s->rc[rank] = coll_allreduce(c, &v, &sum, 1, DT_UINT64, OP_SUM);
	}
	snprintf(s->err[rank], COLL_ERR_LEN, "%s", comm_last_error(c));
	/* The notice may trail the data plane's failure a little. */
	for (int i = 0; i < 100 && comm_get_failed(c, dead, MAXR) == 0; i++)
		nanosleep(&(struct timespec){ 0, 20 * 1000000 }, NULL);
	nd = comm_get_failed(c, dead, MAXR);
	for (int i = 0; i < nd && i < MAXR; i++)
		s->failed[rank][dead[i]] = 1;
	/*
	 * Stay until every survivor has recorded its error: a survivor that
	 * exits first is a death too, and one still waiting on a busy machine
	 * could name it before the notice of rank 3 comes from its block's root.
	 */
	__atomic_store_n(&s->done[rank], 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 500; i++) {
		int all = 1;

		for (int r = 0; r < 6; r++)
			all &= r == 3 || __atomic_load_n(&s->done[r], __ATOMIC_SEQ_CST);
		if (all)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000000 }, NULL);
	}
}

static void
test_death_named_in_every_block(void **state)
{
	struct world w = { .skip = -1, .late = -1, .kill = -1, .kill_root = -1 };

	(void)state;
	world_start(&w, 6, 3);	/* rank 3 is in the middle block, 2-3 */
	world_run(&w, scen_death);
	for (int r = 0; r < w.n; r++) {
		if (r == 3)
			continue;
		assert_int_equal(w.s->init_rc[r], COLL_OK);
		assert_int_not_equal(w.s->rc[r], COLL_OK);
		if (strstr(w.s->err[r], "rank 3 (host") == NULL)
			fail_msg("rank %d does not name rank 3 (rc %d): %s", r, w.s->rc[r], w.s->err[r]);
		if (!w.s->failed[r][3])
			fail_msg("rank %d: comm_get_failed does not list rank 3", r);
	}
	world_end(&w);
}

/*
 * A rank dies after its block started but before a late leader of another
 * block came to listen: that leader still hears of it, and tells its block.
 */
static void
test_death_before_leader_listens(void **state)
{
	struct world w = { .skip = -1, .late = 0, .late_ms = 1500, .kill = 3, .kill_ms = 0,
	    .kill_root = 1, .listen = 1, .linger_ms = 3000 };

	(void)state;
	world_start(&w, 4, 2);	/* blocks 0-1 and 2-3; rank 0 leads block 0 and comes late */
	world_run(&w, NULL);
	for (int r = 0; r < 2; r++)
		if (!w.s->failed[r][3])
			fail_msg("rank %d never heard that rank 3 died (init %d: %s)", r,
			    w.s->init_rc[r], w.s->err[r]);
	/* Rank 2 lingers after its failed init: nobody may blame it. */
	for (int r = 0; r < 2; r++)
		assert_int_equal(w.s->failed[r][2], 0);
	world_end(&w);
}

/* --- a root's process dies: every rank of every block fails, none hangs --- */

static void
scen_root_crash(struct comm *c, int rank, struct seen *s)
{
	uint64_t v = 1, sum = 0;
	struct timespec ts = { 0, 20 * 1000000 };

	if ((s->rc[rank] = coll_allreduce(c, &v, &sum, 1, DT_UINT64, OP_SUM)) != COLL_OK)
		return;
	__atomic_store_n(&s->ready[rank], 1, __ATOMIC_SEQ_CST);
	/* Wait for the verdict (the test kills the root now), then an op must fail. */
	for (int i = 0; i < 1000 && comm_get_async_error(c) == COLL_OK; i++)
		nanosleep(&ts, NULL);
	s->async[rank] = comm_get_async_error(c);
	s->rc[rank] = coll_allreduce(c, &v, &sum, 1, DT_UINT64, OP_SUM);
	snprintf(s->err[rank], COLL_ERR_LEN, "%s", comm_last_error(c));
}

static void
test_root_crash_fails_every_block(void **state)
{
	struct world w = { .skip = -1, .late = -1, .kill = -1, .kill_root = -1 };
	struct timespec ts = { 0, 10 * 1000000 };
	uint64_t until;
	int left, st;

	(void)state;
	world_start(&w, 4, 2);	/* blocks 0-1 and 2-3 */
	w.late = -1;
	for (int r = 0; r < w.n; r++)
		if ((w.ranks[r] = fork()) == 0)
			rank_child(&w, r, scen_root_crash);
	/* Once every rank ran its first op (bounded: a rank that fails is caught below). */
	until = clock_now_ms() + WAIT_MS / 2;
	for (int r = 0; r < w.n && clock_now_ms() < until; r++)
		while (!__atomic_load_n(&w.s->ready[r], __ATOMIC_SEQ_CST) && clock_now_ms() < until)
			nanosleep(&ts, NULL);
	kill(w.roots[1], SIGKILL);
	waitpid(w.roots[1], NULL, 0);
	w.roots[1] = 0;
	until = clock_now_ms() + WAIT_MS;
	for (left = w.n; left > 0 && clock_now_ms() < until;) {
		pid_t pid = waitpid(-1, &st, WNOHANG);

		for (int r = 0; pid > 0 && r < w.n; r++)
			if (w.ranks[r] == pid) {
				w.ranks[r] = 0;
				left--;
			}
		if (pid <= 0)
			nanosleep(&(struct timespec){ 0, 10 * 1000000 }, NULL);
	}
	for (int r = 0; r < w.n; r++)
		if (w.ranks[r] > 0)
			kill(w.ranks[r], SIGKILL);
	assert_int_equal(left, 0);
	for (int r = 0; r < w.n; r++) {
		assert_int_equal(w.s->init_rc[r], COLL_OK);
		assert_int_not_equal(w.s->rc[r], COLL_OK);
		/* Every rank learns it from the notice, before any op fails: the leader too. */
		if (w.s->async[r] != COLL_EROOTLOST)
			fail_msg("rank %d: async error %d, not COLL_EROOTLOST: %s", r, w.s->async[r],
			    w.s->err[r]);
		/* Block 1 lost its own root; block 0 hears it from its leader. */
		if (strstr(w.s->err[r], r < 2 ? "lost the root of ranks 2-3" : "lost the root") ==
		    NULL)
			fail_msg("rank %d: %s", r, w.s->err[r]);
	}
	world_end(&w);
}

/* --- what needs one root is refused, clearly --- */

static void
scen_shrink(struct comm *c, int rank, struct seen *s)
{
	struct comm *nc = NULL;
	int ex = 1;

	s->rc[rank] = comm_shrink(c, &ex, rank == 1 ? 0 : 1, &nc, NULL, COLL_SHRINK_DEFAULT);
	snprintf(s->err[rank], COLL_ERR_LEN, "%s", comm_last_error(c));
	comm_destroy(nc);
}

static void
test_shrink_refused(void **state)
{
	struct world w = { .skip = -1, .late = -1, .kill = -1, .kill_root = -1 };

	(void)state;
	world_start(&w, 4, 2);
	world_run(&w, scen_shrink);
	for (int r = 0; r < w.n; r++) {
		assert_int_equal(w.s->init_rc[r], COLL_OK);
		assert_int_equal(w.s->rc[r], COLL_EINVAL);
		assert_non_null(strstr(w.s->err[r], "several unique ids"));
	}
	world_end(&w);
}

static void
test_bad_arguments(void **state)
{
	struct coll_uid u[2];
	struct net_addr a;
	struct comm *c = (struct comm *)&a;

	(void)state;
	assert_int_equal(net_addr_parse(&a, "127.0.0.1", 1), COLL_OK);
	assert_int_equal(uid_generate(&u[0], &a), COLL_OK);
	u[1] = u[0];
	/* More roots than ranks, no roots, a rank out of range: refused before any connection. */
	assert_int_equal(comm_init_scalable(&c, 1, u, 2, 0, NULL), COLL_EINVAL);
	assert_null(c);
	assert_int_equal(comm_init_scalable(&c, 4, u, 0, 0, NULL), COLL_EINVAL);
	assert_int_equal(comm_init_scalable(&c, 4, u, 2, 4, NULL), COLL_EINVAL);
	u[1].version = 99;
	assert_int_equal(comm_init_scalable(&c, 4, u, 2, 0, NULL), COLL_EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_of_uneven_size),
		cmocka_unit_test(test_one_rank_per_root),
		cmocka_unit_test(test_missing_rank_named_in_every_block),
		cmocka_unit_test(test_death_named_in_every_block),
		cmocka_unit_test(test_death_before_leader_listens),
		cmocka_unit_test(test_root_crash_fails_every_block),
		cmocka_unit_test(test_shrink_refused),
		cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
