/*
 * collstack's end of the line at scale: what rank 0 and the front end do
 * with every rank's task record once the workers are done. Two synthetic
 * hangs of N ranks, 8 a host: "one" (every rank in an all-reduce at op 100,
 * waiting on its ring neighbour, one rank computing at op 99: the shape of
 * the fault-localisation seed), "sink" (the same, but the one rank is in
 * op 100 too and waits on no peer: the chain of waits ends at it) and
 * "half" (the upper half of the ranks stuck computing at op 99, a pipeline
 * stage that stopped). A first run at the smallest size warms the
 * allocator and is not printed. Each goes
 * through the record as rank 0 writes it, the record as the front end reads
 * it, the verdict and the text and JSON reports, each timed alone, at 1,248
 * ranks (the seed's job), 10,000 and 80,000 (10,000 hosts x 8). The
 * reference is the same table at the smaller sizes: a step that grows by
 * more than the rank count's ratio (8x) does not scale.
 *
 *   bench_collstack_front [MAX_RANKS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "collstack.h"
#include "stack.h"
#include "xmalloc.h"

/* The frames of a rank in the all-reduce, or of the one that is not. */
static const char *const waiting[] = { "__poll", "coll_wait", "coll_allreduce",
	"train_step", "main" };
static const char *const busy[] = { "gemm_kernel", "forward", "train_step", "main" };

enum hang { ONE, SINK, HALF };

static void
task_make(struct stk_task *t, int r, int n, int culprit, enum hang hg)
{
	memset(t, 0, sizeof *t);
	t->id = t->rank = r;
	t->host = xasprintf("node%05d", r / 8 + 1);
	t->pid = 1000 + r % 8;
	t->state = r == culprit ? 'R' : 'S';
	t->comm = xstrdup("python3");
	t->cmdline = xstrdup("python3 train.py --config llama.yaml");
	t->where = xstrdup(r == culprit ? "gemm_kernel" : "__poll");
	t->stack = xstrdup(r == culprit ? "gemm_kernel < forward < train_step < main" :
	    "__poll < coll_wait < coll_allreduce < train_step < main");
	t->in_comm = r != culprit;
	t->nthreads = 4;
	t->npages = 1;
	t->pages = xcalloc(1, sizeof *t->pages);
	snprintf(t->pages[0].commid, sizeof t->pages[0].commid, "%016x", 0xc011);
	t->pages[0].nranks = n;
	t->pages[0].rank = r;
	/* In the op (state 3) and waiting on the next rank of the ring, or outside it. */
	t->pages[0].state = r == culprit && hg != SINK ? 0 : 3;
	t->pages[0].seq_started = r == culprit && hg != SINK ? 99 : 100;
	t->pages[0].seq_done = 99;
	t->pages[0].kind_started = t->pages[0].kind_done = 1;
	t->pages[0].wait_peer = r == culprit ? -1 : (r + 1) % n;
	t->pages[0].idle_s = r == culprit ? 0.1 : 42.0;
}

static void
tree_add(struct stack_node *tree, int r, const char *const *fn, int n)
{
	struct stack_frame f[8];
	struct stack_thread th = { .tid = 1000 + r, .state = 'S', .syscall = -1, .stopped = 1 };

	memset(f, 0, sizeof f);
	for (int i = 0; i < n; i++) {
		f[i].func = fn[i];
		f[i].module = "libcoll.so";
	}
	th.nframes = n;
	th.frames = f;
	stack_tree_add(tree, r, &th);
}

static void
result_make(struct stk_result *res, int n, enum hang hg)
{
	int half = hg == HALF;
	int culprit = n / 2;

	memset(res, 0, sizeof *res);
	stack_tree_init(&res->tree);
	res->by_rank = 1;
	res->size = n;
	res->ntasks = n;
	res->tasks = xcalloc((size_t)n, sizeof *res->tasks);
	res->nhosts = (n + 7) / 8;
	res->hosts = xcalloc((size_t)res->nhosts, sizeof *res->hosts);
	for (int h = 0; h < res->nhosts; h++)
		res->hosts[h] = xasprintf("node%05d", h + 1);
	for (int r = 0; r < n; r++) {
		/* "half": every rank from n/2 up is the culprit's like. */
		task_make(&res->tasks[r], r, n, half && r >= culprit ? r : culprit, hg);
		if (half ? r >= culprit : r == culprit)
			tree_add(&res->tree, r, busy, 4);
		else
			tree_add(&res->tree, r, waiting, 5);
	}
}

static double
ms_since(uint64_t t0)
{
	return (double)(clock_now_ns() - t0) / 1e6;
}

static void
run(int n, enum hang hg, int quiet)
{
	struct stk_result res, back;
	struct stk_verdict v;
	struct stk_args a = { 0 };
	double t_rec, t_read, t_verdict, t_text, t_json;
	char err[256], *s;
	uint64_t t0;
	json_t *rec;
	int fd = dup(STDOUT_FILENO);

	result_make(&res, n, hg);
	t0 = clock_now_ns();
	rec = stk_record(&res);
	s = json_dumps(rec, JSON_COMPACT);
	t_rec = ms_since(t0);
	t0 = clock_now_ns();
	if (stk_record_read(&back, s, strlen(s), err, sizeof err) != 0) {
		fprintf(stderr, "bench_collstack_front: %s\n", err);
		exit(1);
	}
	t_read = ms_since(t0);
	t0 = clock_now_ns();
	stk_verdict(&back, &v);
	t_verdict = ms_since(t0);
	/* The reports go to /dev/null: their writing, not the terminal's, is timed. */
	fflush(stdout);
	if (freopen("/dev/null", "w", stdout) == NULL)
		exit(1);
	a.fmt = FMT_TEXT;
	t0 = clock_now_ns();
	(void)stk_render(&back, &v, &a);
	fflush(stdout);
	t_text = ms_since(t0);
	a.fmt = FMT_JSON;
	t0 = clock_now_ns();
	(void)stk_render(&back, &v, &a);
	fflush(stdout);
	t_json = ms_since(t0);
	fflush(stdout);
	dup2(fd, STDOUT_FILENO);
	close(fd);
	if (!quiet)
		printf("| %d | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", n,
		    hg == HALF ? "half" : hg == SINK ? "sink" : "one", (double)strlen(s) / 1e6,
		    t_rec, t_read, t_verdict, t_text, t_json);
	fflush(stdout);
	free(s);
	json_decref(rec);
	stk_verdict_free(&v);
	stk_result_free(&back);
	stk_result_free(&res);
}

int
main(int argc, char **argv)
{
	static const int sizes[] = { 1248, 10000, 80000 };
	int max = argc > 1 ? atoi(argv[1]) : 80000;

	printf("| ranks | behind | record MB | rank 0 writes it, ms | front end reads it, ms "
	    "| verdict, ms | text report, ms | JSON report, ms |\n"
	    "|---|---|---|---|---|---|---|---|\n");
	run(sizes[0], ONE, 1);
	for (int hg = ONE; hg <= HALF; hg++)
		for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
			if (sizes[i] <= max)
				run(sizes[i], (enum hang)hg, 0);
	return 0;
}
