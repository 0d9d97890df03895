/*
 * collstack's verdict on waits across communicators, on results built by
 * hand: a chain through a group names only its root; three communicators;
 * a deadlock between two groups; every rank in one op with no progress; a
 * job that advances. Then 80,000 ranks in 40,001 communicators, as a chain
 * 80,000 long and as one cycle through all of them: the steps the chain
 * takes are counted, and stay linear in the pages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collstack.h"
#include "kind.h"

struct job {
	struct stk_result r;
	int n;
};

static void
job_init(struct job *j, int n)
{
	memset(j, 0, sizeof *j);
	j->n = n;
	j->r.by_rank = 1;
	j->r.size = n;
	j->r.ntasks = n;
	j->r.tasks = calloc((size_t)n, sizeof *j->r.tasks);
	for (int i = 0; i < n; i++) {
		j->r.tasks[i] = (struct stk_task){ .id = i, .rank = i, .host = "h", .pid = 1000 + i,
			.state = 'S', .in_comm = -1 };
	}
}

/* Task t's page in comm id: its group rank, state, seqs; waits on peer. */
static void
job_page(struct job *j, int t, const char *id, int nranks, int rank, int state, uint64_t started,
    uint64_t done, double idle)
{
	struct stk_task *k = &j->r.tasks[t];
	struct stk_page *p;

	k->pages = realloc(k->pages, (size_t)(k->npages + 1) * sizeof *k->pages);
	p = &k->pages[k->npages++];
	memset(p, 0, sizeof *p);
	snprintf(p->commid, sizeof p->commid, "%s", id);
	p->nranks = nranks;
	p->rank = rank;
	p->state = state;
	p->seq_started = started;
	p->seq_done = done;
	p->kind_started = KIND_ALLREDUCE;
	p->wait_peer = -1;
	p->idle_s = idle;
}

static void
job_free(struct job *j)
{
	for (int i = 0; i < j->n; i++)
		free(j->r.tasks[i].pages);
	free(j->r.tasks);
}

static int
has_line(const struct stk_verdict *v, const char *want)
{
	for (int i = 0; i < v->n; i++)
		if (strstr(v->line[i], want) != NULL)
			return 1;
	for (int i = 0; i < v->n; i++)
		printf("# %s\n", v->line[i]);
	return 0;
}

/* World W of 4 at seq 9; group G {0,1} at seq 2. */
static void
chain2(struct job *j, double idle)
{
	job_init(j, 4);
	j->r.tasks[1].where = "save_checkpoint (x.py:12)";
	job_page(j, 0, "w", 4, 0, 2, 8, 8, idle);
	job_page(j, 1, "w", 4, 1, 2, 8, 8, idle);
	job_page(j, 2, "w", 4, 2, 3, 9, 8, idle);
	job_page(j, 3, "w", 4, 3, 3, 9, 8, idle);
	job_page(j, 0, "g", 2, 0, 3, 2, 1, idle);
	job_page(j, 1, "g", 2, 1, 2, 1, 1, idle);
}

static void
test_chain_two(void **state)
{
	struct job j;
	struct stk_verdict v;

	(void)state;
	chain2(&j, 5);
	stk_verdict(&j.r, &v);
	assert_int_equal(v.code, 1);
	assert_int_equal(v.nculprits, 1);
	assert_int_equal(v.culprits[0], 1);
	assert_true(has_line(&v, "ranks 2-3 wait in allreduce seq 9 of comm w for ranks 0-1; "
	    "rank 0 (group rank 0) waits in allreduce seq 2 of comm g for rank 1 (group rank 1); "
	    "rank 1 is in save_checkpoint (x.py:12)"));
	stk_verdict_free(&v);
	job_free(&j);
}

/* Task t's NCCL page (the plugin's): enqueued, kernel began, kernel ended. */
static void
job_nccl(struct job *j, int t, const char *id, int nranks, int rank, uint64_t queued,
    uint64_t began, uint64_t ended)
{
	struct stk_page *p;

	job_page(j, t, id, nranks, rank, 3, queued, ended, 5);
	p = &j->r.tasks[t].pages[j->r.tasks[t].npages - 1];
	p->nccl = p->kernel = 1;
	p->seq_kernel = began;
	p->kind_kernel = KIND_ALLREDUCE;
}

/*
 * On the GPU side, across communicators: rank 1's stream is busy and never
 * starts group g's seq 2, whose kernel runs on rank 0; rank 0's world op
 * seq 6 is queued behind that kernel, while ranks 2-3 run it. Rank 0's GPU
 * has not started seq 6 either, but it is a link: only rank 1 is named.
 */
static void
test_chain_gpu_link(void **state)
{
	struct job j;
	struct stk_verdict v;

	(void)state;
	job_init(&j, 4);
	job_nccl(&j, 0, "0000000000000a01", 4, 0, 6, 5, 5);
	job_nccl(&j, 1, "0000000000000a01", 4, 1, 6, 5, 5);
	job_nccl(&j, 2, "0000000000000a01", 4, 2, 6, 6, 5);
	job_nccl(&j, 3, "0000000000000a01", 4, 3, 6, 6, 5);
	job_nccl(&j, 0, "0000000000000b01", 2, 0, 2, 2, 1);
	job_nccl(&j, 1, "0000000000000b01", 2, 1, 2, 1, 1);
	stk_verdict(&j.r, &v);
	assert_int_equal(v.code, 1);
	assert_true(has_line(&v, "rank 0 (h, pid 1000): its GPU has not started allreduce seq 6 "
	    "of comm NCCL 0x0000000000000a01: it runs allreduce seq 2 of comm NCCL "
	    "0x0000000000000b01, which waits in turn: a link, not the cause"));
	assert_true(has_line(&v, "rank 1 (h, pid 1001): its GPU has not started allreduce seq 2: "
	    "its stream is busy with earlier work; rank 0 runs its kernel and waits for it"));
	assert_int_equal(v.nculprits, 1);
	assert_int_equal(v.culprits[0], 1);
	stk_verdict_free(&v);
	job_free(&j);
}

/* The same job while it still moves: nobody named, and it advances. */
static void
test_chain_advances(void **state)
{
	struct job j;
	struct stk_verdict v;

	(void)state;
	chain2(&j, 0.01);
	stk_verdict(&j.r, &v);
	assert_int_equal(v.code, 0);
	assert_int_equal(v.nculprits, 0);
	assert_true(has_line(&v, "no rank is behind: the job advances"));
	stk_verdict_free(&v);
	job_free(&j);
}

static void
test_chain_three(void **state)
{
	struct job j;
	struct stk_verdict v;

	(void)state;
	job_init(&j, 4);
	for (int i = 0; i < 4; i++)
		job_page(&j, i, "w", 4, i, i == 3 ? 3 : 2, i == 3 ? 9 : 8, 8, 3);
	job_page(&j, 0, "g", 2, 0, 2, 1, 1, 3);
	job_page(&j, 1, "g", 2, 1, 3, 2, 1, 3);
	job_page(&j, 1, "h", 2, 0, 2, 1, 1, 3);
	job_page(&j, 2, "h", 2, 1, 3, 2, 1, 3);
	stk_verdict(&j.r, &v);
	assert_int_equal(v.code, 1);
	assert_int_equal(v.nculprits, 1);
	assert_int_equal(v.culprits[0], 0);
	assert_true(has_line(&v, "rank 3 waits in allreduce seq 9 of comm w for ranks 0-2; "
	    "rank 1 (group rank 1) waits in allreduce seq 2 of comm g for rank 0 (group rank 0); "
	    "rank 2 (group rank 1) waits in allreduce seq 2 of comm h for rank 1 (group rank 0); "
	    "rank 0 is outside any collective"));
	stk_verdict_free(&v);
	job_free(&j);
}

static void
test_chain_cycle(void **state)
{
	struct job j;
	struct stk_verdict v;

	(void)state;
	job_init(&j, 4);
	for (int i = 0; i < 4; i++)
		job_page(&j, i, "w", 4, i, i >= 2 ? 3 : 2, i >= 2 ? 9 : 8, 8, 3);
	job_page(&j, 0, "a", 2, 0, 3, 2, 1, 3);
	job_page(&j, 1, "a", 2, 1, 2, 1, 1, 3);
	job_page(&j, 0, "b", 2, 0, 2, 1, 1, 3);
	job_page(&j, 1, "b", 2, 1, 3, 2, 1, 3);
	stk_verdict(&j.r, &v);
	assert_int_equal(v.code, 1);
	assert_int_equal(v.nculprits, 2);
	assert_true(has_line(&v, "deadlock between 2 communicators: "));
	assert_true(has_line(&v, ": ranks 0-1 wait on each other round the cycle"));
	assert_true(has_line(&v, "ranks 2-3 wait in allreduce seq 9 of comm w for ranks 0-1; "));
	stk_verdict_free(&v);
	job_free(&j);
}

/* Every rank in one op, none late: a problem once nothing moves; words say no rank is late. */
static void
test_chain_all_in(void **state)
{
	struct job j;
	struct stk_verdict v;

	(void)state;
	job_init(&j, 4);
	for (int i = 0; i < 4; i++) {
		job_page(&j, i, "w", 4, i, 3, 9, 8, 2);
		j.r.tasks[i].pages[0].wait_peer = (i + 3) % 4;
	}
	stk_verdict(&j.r, &v);
	assert_int_equal(v.code, 1);
	assert_int_equal(v.nculprits, 0);
	assert_true(has_line(&v, "comm w: all 4 ranks seen are in allreduce seq 9 and none has "
	    "progressed for 2.0 s: no rank is late"));
	stk_verdict_free(&v);
	for (int i = 0; i < 4; i++)
		j.r.tasks[i].pages[0].idle_s = 0.01;
	stk_verdict(&j.r, &v);
	assert_int_equal(v.code, 0);
	assert_true(has_line(&v, "no rank is behind: the job advances"));
	stk_verdict_free(&v);
	job_free(&j);
}

#define BIG 80000

static int
member_cmp(const void *a, const void *b)
{
	const struct stk_member *x = a, *y = b;
	int c = strcmp(x->pg->commid, y->pg->commid);

	return c != 0 ? c : (x->pg->rank > y->pg->rank) - (x->pg->rank < y->pg->rank);
}

/* The chain's own steps on j: at most a few per page and communicator. */
static void
count_work(struct job *j, int ncomms)
{
	struct stk_member *m = calloc(4 * BIG, sizeof *m);
	struct stk_chain *ch;
	struct stk_verdict v = { 0 };
	int n = 0;

	for (int i = 0; i < j->n; i++)
		for (int k = 0; k < j->r.tasks[i].npages; k++)
			m[n++] = (struct stk_member){ i, &j->r.tasks[i].pages[k] };
	qsort(m, (size_t)n, sizeof *m, member_cmp);
	ch = stk_chain_new(&j->r, m, n);
	v.slot = calloc((size_t)j->n + 1, sizeof *v.slot);
	stk_chain_say(ch, &j->r, &v);
	printf("# %d pages, %d communicators: %ld steps\n", n, ncomms, stk_chain_work(ch));
	assert_true(stk_chain_work(ch) <= 12L * (n + ncomms));
	stk_chain_free(ch);
	stk_verdict_free(&v);
	free(m);
}

/* Rank i waits in group {i,i+1} for rank i+1, which waits in the next: one chain, 80,000 long. */
static void
test_chain_scale_line(void **state)
{
	struct job j;
	struct stk_verdict v;
	char id[20];

	(void)state;
	job_init(&j, BIG);
	for (int i = 0; i + 1 < BIG; i++) {
		snprintf(id, sizeof id, "g%06d", i);
		job_page(&j, i, id, 2, 0, 3, 2, 1, 3);
		job_page(&j, i + 1, id, 2, 1, 2, 1, 1, 3);
	}
	count_work(&j, BIG);
	stk_verdict(&j.r, &v);
	assert_int_equal(v.nculprits, 1);
	assert_int_equal(v.culprits[0], BIG - 1);
	assert_true(has_line(&v, "and 79991 more communicators; rank 79999 is outside any "
	    "collective"));
	stk_verdict_free(&v);
	job_free(&j);
}

/* Pairs {2k,2k+1}: in one of two, 2k waits for 2k+1 who computes; in the other, a cycle with the world. */
static void
test_chain_scale_cycle(void **state)
{
	struct job j;
	struct stk_verdict v;
	char id[20];

	(void)state;
	job_init(&j, BIG);
	for (int i = 0; i < BIG; i++) {
		int k = i % 4;

		job_page(&j, i, "w", BIG, i, k == 3 ? 3 : 2, k == 3 ? 9 : 8, 8, 3);
		snprintf(id, sizeof id, "g%06d", i / 2);
		job_page(&j, i, id, 2, i % 2, k == 0 || k == 2 ? 3 : 2, k == 0 || k == 2 ? 2 : 1, 1, 3);
	}
	count_work(&j, BIG / 2 + 1);
	stk_verdict(&j.r, &v);
	assert_int_equal(v.code, 1);
	assert_int_equal(v.nculprits, 3 * BIG / 4);
	assert_true(has_line(&v, "deadlock between 20001 communicators: "));
	stk_verdict_free(&v);
	job_free(&j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_two),
		cmocka_unit_test(test_chain_advances),
		cmocka_unit_test(test_chain_gpu_link),
		cmocka_unit_test(test_chain_three),
		cmocka_unit_test(test_chain_cycle),
		cmocka_unit_test(test_chain_all_in),
		cmocka_unit_test(test_chain_scale_line),
		cmocka_unit_test(test_chain_scale_cycle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
