/*
 * The worker role, one per host: join the job, find the job's processes here,
 * agree with rank 0 on how they are labelled (their ranks when every process
 * has a distinct one, else task numbers by host and pid), take every
 * process's stacks in parallel, build this host's tree, merge the trees up a
 * binomial tree through the core (each step one send of a packed tree, so
 * rank 0 receives log2(hosts) trees, not every stack), and gather the
 * per-process facts to rank 0, which writes the record (or, under collrun,
 * judges and prints it itself).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "clock.h"
#include "coll.h"
#include "collstack.h"
#include "fr.h"
#include "comm.h"
#include "err.h"
#include "ras.h"
#include "xmalloc.h"

struct stk_worker {
	struct stk_args *a;
	struct comm *c;
	struct stk_local loc;
	struct stack_proc *procs;
	int *ids;
	int by_rank, size;
	char host[256];
	char err[512];
	struct stack_node tree;
	struct stk_result r;	/* rank 0 */
	uint64_t t0;
	struct stack_syms *sy;
};

/* Rank 0 sees every process's rank and decides the labels; everyone learns them. */
static int
stk_agree_ids(struct stk_worker *w)
{
	int n = comm_size(w->c), me = comm_rank(w->c), rc;
	struct coll_blobs b = { 0 };
	int64_t *plan = xcalloc((size_t)n + 2, sizeof *plan);
	int32_t *mine = xcalloc((size_t)w->loc.n + 1, sizeof *mine);

	for (int i = 0; i < w->loc.n; i++)
		mine[i + 1] = w->loc.pi[i].rank;
	/* The job's size says which ranks are missing: only when the whole job was asked for. */
	mine[0] = w->loc.n > 0 && (w->a->sel == SEL_JOB || w->a->sel == SEL_SLURM) ?
	    w->loc.pi[0].size : 0;
	rc = coll_gatherv(w->c, mine, sizeof *mine * ((size_t)w->loc.n + 1), 0, &b);
	if (rc == COLL_OK && me == 0) {
		/* plan: [by_rank, size, first task number of each worker...] */
		int total = 0, unique = 1, maxr = -1;
		char *seen;

		for (int k = 0; k < n; k++) {
			const int32_t *v = (const int32_t *)(b.data + b.off[k]);
			int cnt = (int)(b.len[k] / sizeof *v) - 1;

			plan[2 + k] = total;
			total += cnt > 0 ? cnt : 0;
			if (cnt >= 0 && v[0] > plan[1])
				plan[1] = v[0];
			for (int i = 1; i <= cnt; i++)
				maxr = v[i] > maxr ? v[i] : maxr;
		}
		seen = xcalloc((size_t)maxr + 2, 1);
		for (int k = 0; k < n && unique; k++) {
			const int32_t *v = (const int32_t *)(b.data + b.off[k]);

			for (int i = 1; i < (int)(b.len[k] / sizeof *v) && unique; i++)
				unique = v[i] >= 0 && !seen[v[i]]++;
		}
		plan[0] = unique && total > 0;
		free(seen);
	}
	coll_blobs_free(&b);
	if (rc == COLL_OK)
		rc = coll_broadcast(w->c, plan, plan, (size_t)n + 2, DT_INT64, 0);
	if (rc == COLL_OK) {
		w->by_rank = (int)plan[0];
		w->size = (int)plan[1];
		w->ids = xcalloc((size_t)w->loc.n + 1, sizeof *w->ids);
		for (int i = 0; i < w->loc.n; i++)
			w->ids[i] = w->by_rank ? w->loc.pi[i].rank : (int)plan[2 + me] + i;
	}
	free(plan);
	free(mine);
	return rc;
}

/* Does pid run NCCL (libnccl mapped)? */
static int
stk_runs_nccl(pid_t pid)
{
	char path[64], line[512];
	FILE *f;
	int yes = 0;

	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (!yes && fgets(line, sizeof line, f) != NULL)
		yes = strstr(line, "/libnccl") != NULL;
	fclose(f);
	return yes;
}

/* Does any op's count differ between the ranks of a communicator? */
static int
stk_ras_uneven(json_t *ras)
{
	json_t *c, *x, *n, *first;
	size_t i, k;
	const char *op;

	json_array_foreach(json_object_get(ras, "comms"), i, c) {
		first = json_object_get(json_array_get(json_object_get(c, "ranks"), 0), "counts");
		json_array_foreach(json_object_get(c, "ranks"), k, x)
			json_object_foreach(json_object_get(x, "counts"), op, n)
				if (!json_equal(n, json_object_get(first, op)))
					return 1;
	}
	return 0;
}

/*
 * NCCL's RAS service on this host, where a process here runs NCCL (or
 * NCCL_RAS_ADDR names one): its report into blob, or why there is none.
 */
static void
stk_ras_here(struct stk_worker *w, json_t *blob)
{
	const char *addr = getenv("NCCL_RAS_ADDR");
	int want = addr != NULL, ms = (int)(w->a->timeout_s * 1000 / 20);
	char why[256] = "";
	json_t *ras, *again = NULL;
	pid_t *job;

	for (int i = 0; i < w->loc.n && !want; i++)
		want = stk_runs_nccl(w->loc.pi[i].pid);
	if (!want)
		return;
	if (addr == NULL)
		addr = RAS_DEFAULT;
	if (ms < 1000 || ms > 15000)
		ms = ms < 1000 ? 1000 : 15000;
	/* The service speaks for the job only from a socket one of its processes holds. */
	job = xcalloc((size_t)w->loc.n + 1, sizeof *job);
	for (int i = 0; i < w->loc.n; i++)
		job[i] = w->loc.pi[i].pid;
	if ((ras = ras_query(addr, job, w->loc.n, ms, why, sizeof why)) == NULL) {
		json_object_set_new(blob, "ras_skipped", json_string(why));
		free(job);
		return;
	}
	/*
	 * Counts that differ may only be a running job caught mid-step: they
	 * count against a rank only if a second report a moment later says the
	 * same. Counts still moving mean the job progresses.
	 */
	if (stk_ras_uneven(ras)) {
		struct timespec pause = { 0, 300 * 1000000L };

		nanosleep(&pause, NULL);
		again = ras_query(addr, job, w->loc.n, ms, why, sizeof why);
		if (again == NULL || !json_equal(json_object_get(ras, "comms"),
		    json_object_get(again, "comms"))) {
			json_object_set_new(blob, "ras_skipped", json_string(again == NULL ? why :
			    "its collective counts differ between ranks but still move: the job "
			    "makes progress"));
			json_decref(ras);
			ras = NULL;
		}
		json_decref(again);
	}
	if (ras != NULL)
		json_object_set_new(blob, "ras", ras);
	free(job);
}

static int
stk_system_module(const char *m)
{
	static const char *const sys[] = { "libc.so", "libc-", "ld-linux", "ld64.so", "libpthread",
		"linux-vdso", "[vdso", "libgcc_s", "libstdc++", "libm.so", "[kernel]" };

	if (m == NULL)
		return 1;
	for (size_t i = 0; i < sizeof sys / sizeof *sys; i++)
		if (strncmp(m, sys[i], strlen(sys[i])) == 0)
			return 1;
	return 0;
}

/* A Python function of the user's own, not of the standard library or an installed package. */
static int
stk_user_python(const struct stack_frame *f)
{
	static const char *const lib[] = { "/site-packages/", "/dist-packages/", "/lib/python3",
		"<frozen " };

	if (f->kind != STACK_FRAME_PYTHON)
		return 0;
	for (size_t i = 0; i < sizeof lib / sizeof *lib; i++)
		if (f->module != NULL && strstr(f->module, lib[i]) != NULL)
			return 0;
	return 1;
}

/* The process's main thread, or NULL. */
static const struct stack_thread *
stk_main_thread(const struct stack_proc *p)
{
	for (int i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == p->pid && p->threads[i].nframes > 0)
			return &p->threads[i];
	return NULL;
}

/*
 * Where the main thread is: its innermost Python function of the user's
 * own, else its innermost Python function, else its innermost frame
 * outside the system's libraries.
 */
static char *
stk_where(const struct stack_proc *p)
{
	const struct stack_thread *t = stk_main_thread(p);

	if (t == NULL)
		return NULL;
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < t->nframes; k++) {
			const struct stack_frame *f = &t->frames[k];

			if (pass == 0 ? stk_user_python(f) : f->kind == STACK_FRAME_PYTHON)
				return xasprintf("%s (%s:%d)", f->func, f->file, f->line);
		}
	for (int k = 0; k < t->nframes; k++) {
		const struct stack_frame *f = &t->frames[k];

		if (stk_system_module(f->module) || f->func == NULL)
			continue;
		if (f->file != NULL)
			return xasprintf("%s (%s:%d)", f->func, f->file, f->line);
		return xasprintf("%s (%s)", f->func, f->module);
	}
	return NULL;
}

/*
 * A native frame of a wait inside communication: a collective library's
 * (NCCL's, coll's, MPI's: Open MPI's coll components, MPICH's and
 * MVAPICH's internals, the profiling interface; gloo's; PyTorch's process
 * groups) or a wait for the device, which is where a rank sits while its
 * collective's kernel waits for a peer. C++ names as demangled, and mangled
 * where the symbols gave no better.
 */
static int
stk_comm_native(const char *func)
{
	static const char *const prefix[] = { "nccl", "pnccl", "coll_", "MPI_", "PMPI_",
		"ompi_coll_", "ompi_request_", "mca_coll_", "mca_pml_", "MPIR_", "MPIDI_", "MPID_",
		"MPIC_", "gloo::", "c10d::", "_ZN4gloo", "_ZN4c10d", "all_reduce", "all_gather",
		"reduce_scatter", "broadcast", "barrier" };

	for (size_t i = 0; i < sizeof prefix / sizeof *prefix; i++)
		if (strncmp(func, prefix[i], strlen(prefix[i])) == 0)
			return 1;
	return strstr(func, "Synchronize") != NULL || strcmp(func, "synchronize") == 0;
}

/*
 * A Python frame of torch.distributed's collectives: the process group's
 * calls and the wrappers and functional forms around them. Not every file
 * of torch/distributed: FSDP's forward, pipelining's schedules and the
 * elastic agent's @record run the user's computation inside them.
 */
static int
stk_comm_python(const struct stack_frame *f)
{
	static const char *const file[] = { "torch/distributed/distributed_c10d.py",
		"torch/distributed/c10d_logger.py", "torch/distributed/_functional_collectives",
		"torch/distributed/nn/functional.py", "_fsdp_collectives.py" };
	const char *path = f->module != NULL ? f->module : f->file;

	if (f->func != NULL && strcmp(f->func, "synchronize") == 0)
		return 1;	/* torch.cuda.synchronize: a wait for the device */
	for (size_t i = 0; path != NULL && i < sizeof file / sizeof *file; i++)
		if (strstr(path, file[i]) != NULL)
			return 1;
	return f->file != NULL && strcmp(f->file, "distributed_c10d.py") == 0;
}

/*
 * Whether the main thread waits in communication, read from its innermost
 * frames: the native frames above its innermost Python frame, then that
 * frame. The frames below it are the callers of the code that runs: a rank
 * computing inside FSDP's forward or under the elastic agent has
 * torch.distributed far down its stack and is not in a collective.
 */
static int
stk_in_comm(const struct stack_proc *p)
{
	const struct stack_thread *t = stk_main_thread(p);

	if (t == NULL)
		return -1;
	for (int k = 0; k < t->nframes; k++) {
		const struct stack_frame *f = &t->frames[k];

		if (f->kind == STACK_FRAME_PYTHON)
			return stk_comm_python(f);
		if (f->func != NULL && stk_comm_native(f->func))
			return 1;
	}
	return 0;
}

/* The interpreter's own frames, which the Python frames among them stand for. */
static int
stk_interp_module(const char *m)
{
	return m != NULL && (strncmp(m, "python3", 7) == 0 || strncmp(m, "libpython3", 10) == 0);
}

/* The main thread's frames as one line, innermost first, the interpreter's left out. */
static char *
stk_main_stack(const struct stack_proc *p)
{
	const struct stack_thread *t = stk_main_thread(p);
	char buf[1024];
	size_t len = 0;
	int shown = 0;

	if (t == NULL)
		return NULL;
	buf[0] = '\0';
	for (int k = 0; k < t->nframes && shown < 14 && len < sizeof buf - 1; k++) {
		const struct stack_frame *f = &t->frames[k];
		int n;

		if (f->kind != STACK_FRAME_PYTHON && stk_interp_module(f->module))
			continue;
		if (f->func != NULL && f->file != NULL)
			n = snprintf(buf + len, sizeof buf - len, "%s%s (%s:%d)", shown ? " < " : "",
			    f->func, f->file, f->line);
		else
			n = snprintf(buf + len, sizeof buf - len, "%s%s (%s)", shown ? " < " : "",
			    f->func ? f->func : "??", f->module ? f->module : "?");
		len += n > 0 ? (size_t)n : 0;
		len = len < sizeof buf ? len : sizeof buf - 1;
		shown++;
	}
	return shown > 0 ? xstrdup(buf) : NULL;
}

static void
stk_task_fill(struct stk_worker *w, int i, struct stk_task *t, struct stk_pageset *ps)
{
	const struct stack_pinfo *pi = &w->loc.pi[i];
	const struct stack_proc *p = &w->procs[i];
	char now = 0;

	memset(t, 0, sizeof *t);
	t->id = w->ids[i];
	t->rank = pi->rank;
	t->host = w->host;
	t->pid = pi->pid;
	t->state = pi->state ? pi->state : 'G';
	t->comm = (char *)pi->comm;
	t->cmdline = (char *)pi->cmdline;
	t->nthreads = p->nthreads;
	t->pause_ms = p->pause_ms;
	/* It may have ended while we read it (gone, or a zombie its parent has not reaped). */
	if (pi->state != 0 && pi->state != 'Z' && (p->err == COLL_ENOTFOUND ||
	    (now = stack_state(pi->pid, NULL)) == 0 || now == 'Z')) {
		t->state = now == 'Z' ? 'Z' : 'G';
		t->err = xasprintf("pid %d ended while its stacks were read", (int)pi->pid);
	} else if (pi->state == 0)
		t->err = xasprintf("pid %d is not running here", (int)pi->pid);
	else if (p->err != COLL_OK)
		t->err = xstrdup(p->why);
	t->where = stk_where(p);
	t->stack = stk_main_stack(p);
	t->in_comm = stk_in_comm(p);
	if (p->note[0] != '\0')
		t->note = xstrdup(p->note);
	stk_pages_load(ps, pi->status_dir, pi->uid);
	t->npages = stk_pages_of(ps, pi->pid, pi->uid, &t->pages);
}

/* What the evidence rule refused here, for the report: "ignored" strings and a count. */
static void
stk_ignored_here(const struct stk_local *l, json_t *blob)
{
	json_t *a = json_array();

	for (int i = 0; i < l->nignored; i++)
		json_array_append_new(a, json_string(l->ignored[i]));
	if (l->nmore > 0)
		json_array_append_new(a, json_sprintf("and %d more processes like that",
		    l->nmore));
	json_object_set_new(blob, "ignored", a);
}

/*
 * Whom --cuda asks first where it cannot ask all in time: a process whose
 * main thread is outside any collective, or whose plugin page shows an op
 * enqueued whose kernel has not begun.
 */
static int *
stk_cuda_suspects(struct stk_worker *w, struct stk_pageset *ps)
{
	int *s = xcalloc((size_t)w->loc.n + 1, sizeof *s);

	for (int i = 0; i < w->loc.n; i++) {
		const struct stack_pinfo *pi = &w->loc.pi[i];
		struct stk_page *pg;
		int np;

		stk_pages_load(ps, pi->status_dir, pi->uid);
		np = stk_pages_of(ps, pi->pid, pi->uid, &pg);
		s[i] = stk_in_comm(&w->procs[i]) == 0;
		for (int k = 0; k < np; k++)
			s[i] |= pg[k].nccl && pg[k].kernel && pg[k].seq_kernel < pg[k].seq_started;
		free(pg);
	}
	return s;
}

/* Every process's stacks, each read within its share of -T. */
static void
stk_local_read(struct stk_worker *w, const pid_t *pids, uint64_t t)
{
	struct stack_opts o = { .max_frames = STACK_MAX_FRAMES, .stop_wait_ms = 500 };
	char *hold = getenv("COLL_TEST_STACK_HOLD_MS");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	o.hold_ms = hold ? atoi(hold) : 0;
	/*
	 * One process may take T/10 (at most 10 s) to be read and named, all of
	 * them T/5: a hostile one (a FIFO for a library, an ELF built to be slow)
	 * costs its own time and leaves the rest of -T/2 to the phases after.
	 */
	o.budget_ms = (int)(w->a->timeout_s * 100);
	o.budget_ms = o.budget_ms < 500 ? 500 : o.budget_ms > 10000 ? 10000 : o.budget_ms;
	o.deadline_ns = t + (uint64_t)(w->a->timeout_s * 2e8);
	w->procs = xcalloc((size_t)w->loc.n + 1, sizeof *w->procs);
	stack_read_many(w->sy, pids, w->loc.n, w->a->threads > 0 ? (int)w->a->threads :
	    (int)(ncpu > 16 ? 16 : ncpu > 0 ? ncpu : 1), &o, w->procs);
}

/* Process i's threads into the tree and its task into tasks; it takes kernel and kwhy. */
static void
stk_local_task(struct stk_worker *w, int i, char *kernel, char *kwhy,
    struct stk_pageset *ps, json_t *tasks)
{
	struct stk_task tk;
	struct stack_thread none = { .err = "", .syscall = -1 };

	stk_task_fill(w, i, &tk, ps);
	tk.kernels = kernel;
	tk.kernels_err = kwhy;
	for (int k = 0; k < w->procs[i].nthreads; k++) {
		struct stack_thread *th = &w->procs[i].threads[k];

		/* Why a thread of a process that could not be read has no stack. */
		if (th->nframes == 0 && th->err[0] == '\0' && tk.err != NULL)
			snprintf(th->err, sizeof th->err, "%s", tk.err);
		stack_tree_add(&w->tree, w->ids[i], th);
	}
	if (w->procs[i].nthreads == 0) {
		snprintf(none.err, sizeof none.err, "%s", tk.err ? tk.err : "no threads");
		stack_tree_add(&w->tree, w->ids[i], &none);
	}
	json_array_append_new(tasks, stk_task_json(&tk));
	free(tk.err);
	free(tk.where);
	free(tk.stack);
	free(tk.note);
	free(tk.pages);
	free(tk.kernels);
	free(tk.kernels_err);
}

/* This host's stacks, tree and tasks (as the JSON blob rank 0 gathers). */
static char *
stk_local_work(struct stk_worker *w, size_t *len)
{
	pid_t *pids = xcalloc((size_t)w->loc.n + 1, sizeof *pids);
	json_t *tasks = json_array(), *blob;
	struct stk_pageset ps = { 0 };
	uint64_t hits, misses, t = clock_now_ns();
	double pmax = 0;
	char *s, **kernels, **kwhy;

	for (int i = 0; i < w->loc.n; i++)
		pids[i] = w->loc.pi[i].pid;
	stk_local_read(w, pids, t);
	/* After our own snapshot: cuda-gdb attaches with ptrace too. */
	kernels = xcalloc((size_t)w->loc.n + 1, sizeof *kernels);
	kwhy = xcalloc((size_t)w->loc.n + 1, sizeof *kwhy);
	if (w->a->cuda) {
		int *suspect = stk_cuda_suspects(w, &ps);

		stk_cuda_kernels(pids, suspect, w->loc.n, w->a->timeout_s / 4, kernels, kwhy);
		free(suspect);
	}
	for (int i = 0; i < w->loc.n; i++) {
		stk_local_task(w, i, kernels[i], kwhy[i], &ps, tasks);
		pmax = w->procs[i].pause_ms > pmax ? w->procs[i].pause_ms : pmax;
	}
	free(kernels);
	free(kwhy);
	stk_pages_free(&ps);
	stack_syms_stats(w->sy, &hits, &misses);
	blob = json_pack("{s:s, s:o, s:f, s:f, s:I, s:I}", "host", w->host, "tasks", tasks,
	    "ms", (double)(clock_now_ns() - t) / 1e6, "pause_max_ms", pmax,
	    "hits", (json_int_t)hits, "misses", (json_int_t)misses);
	stk_ignored_here(&w->loc, blob);
	stk_gpu_here(tasks, blob);
	stk_launcher_put(&w->loc, blob);
	stk_ras_here(w, blob);
	/*
	 * Every phase before the gather fits in -T/2 (the communicator's wait
	 * for a slow host): --cuda T/4, RAS T/20 a query (two at most), the
	 * flight recorder T/10.
	 */
	if (!w->a->no_fr_dump) {
		double budget = w->a->timeout_s / 10;

		stk_fr_here(&w->loc, budget < 1 ? 1 : budget > 10 ? 10 : budget, blob);
	}
	s = json_dumps(blob, JSON_COMPACT);
	json_decref(blob);
	free(pids);
	*len = strlen(s);
	return s;
}

static void *
stk_tree_pack(void *arg, size_t *len)
{
	return stack_tree_pack(&((struct stk_worker *)arg)->tree, len);
}

static int
stk_tree_merge(void *arg, const void *buf, size_t len, int from)
{
	struct stk_worker *w = arg;
	struct stack_node t;
	char why[256];
	int rc;

	stack_tree_init(&t);
	if ((rc = stack_tree_parse(&t, buf, len, why, sizeof why)) != COLL_OK)
		snprintf(w->err, sizeof w->err, "rank %d sent a stack tree that does not parse "
		    "(%s): use the same coll version on every host", from, why);
	else
		stack_tree_merge(&w->tree, &t);
	stack_tree_free(&t);
	return rc;
}

static size_t
stk_ras_ranks(json_t *ras)
{
	size_t n = 0, i;
	json_t *c;

	json_array_foreach(json_object_get(ras, "comms"), i, c)
		n += json_array_size(json_object_get(c, "ranks"));
	return n;
}

/* A host's RAS report: every host's service speaks for the job, the fullest is kept. */
static void
stk_ras_keep(struct stk_result *r, json_t *o)
{
	json_t *ras = json_object_get(o, "ras");
	const char *skip = json_string_value(json_object_get(o, "ras_skipped"));
	const char *host = json_string_value(json_object_get(o, "host"));

	if (json_is_object(ras) && (r->ras == NULL || stk_ras_ranks(ras) > stk_ras_ranks(r->ras))) {
		json_decref(r->ras);
		free(r->ras_host);
		r->ras = json_incref(ras);
		r->ras_host = xstrdup(host);
	}
	if (skip != NULL && r->ras_note == NULL)
		r->ras_note = xasprintf("%s: %s", host, skip);
}

static int
stk_task_cmp(const void *a, const void *b)
{
	const struct stk_task *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/* Rank 0: the record from every worker's blob. */
static int
stk_assemble(struct stk_worker *w, const struct coll_blobs *b)
{
	struct stk_result *r = &w->r;
	struct fr_set fs = { 0 };

	r->by_rank = w->by_rank;
	r->size = w->size;
	r->hosts = xcalloc((size_t)b->n + 1, sizeof *r->hosts);
	for (int k = 0; k < b->n; k++) {
		json_t *o = json_loadb((const char *)b->data + b->off[k], b->len[k], 0, NULL);
		json_t *tasks = json_object_get(o, "tasks");
		double pm = json_number_value(json_object_get(o, "pause_max_ms"));

		if (!json_is_array(tasks) || !json_is_string(json_object_get(o, "host"))) {
			snprintf(w->err, sizeof w->err, "rank %d sent a malformed task list", k);
			json_decref(o);
			fr_close(&fs);
			return COLL_EPROTO;
		}
		r->hosts[r->nhosts++] = xstrdup(json_string_value(json_object_get(o, "host")));
		stk_ras_keep(r, o);
		stk_gpu_keep(r, json_object_get(o, "gpus"), r->hosts[r->nhosts - 1]);
		stk_ignored_add(r, json_object_get(o, "ignored"), r->hosts[r->nhosts - 1]);
		stk_launcher_gather(r, o, r->hosts[r->nhosts - 1]);
		stk_fr_gather(&fs, o, &r->fr_note);
		r->pause_max_ms = pm > r->pause_max_ms ? pm : r->pause_max_ms;
		r->cache_hits += (uint64_t)json_integer_value(json_object_get(o, "hits"));
		r->cache_misses += (uint64_t)json_integer_value(json_object_get(o, "misses"));
		r->tasks = xreallocarray(r->tasks, (size_t)r->ntasks + json_array_size(tasks) + 1,
		    sizeof *r->tasks);
		for (size_t i = 0; i < json_array_size(tasks); i++) {
			if (stk_task_read(&r->tasks[r->ntasks], json_array_get(tasks, i)) == 0) {
				r->ntasks++;
				continue;
			}
			stk_task_free(&r->tasks[r->ntasks]);
			fprintf(stderr, "collstack: rank %d sent a malformed task %zu: use the same "
			    "coll version on every host\n", k, i);
		}
		json_decref(o);
	}
	qsort(r->tasks, (size_t)r->ntasks, sizeof *r->tasks, stk_task_cmp);
	stk_fr_judge(r, &fs);
	fr_close(&fs);
	stk_ids_note(r);
	r->tree = w->tree;
	stack_tree_init(&w->tree);
	r->ms = (double)(clock_now_ns() - w->t0) / 1e6;
	return COLL_OK;
}

static int
stk_steps(struct stk_worker *w)
{
	struct coll_blobs b = { 0 };
	size_t len;
	char *blob;
	int rc;

	/* A host that cannot list its processes still takes part, with none. */
	if (stk_find(w->a, &w->loc, w->err, sizeof w->err) != 0) {
		fprintf(stderr, "collstack: %s\n", w->err);
		w->err[0] = '\0';
	}
	if ((rc = stk_agree_ids(w)) != COLL_OK)
		return rc;
	blob = stk_local_work(w, &len);
	/* Merged up a binomial tree: log2(n) steps, each a packed tree. */
	rc = coll_fold(w->c, 0, &(struct coll_fold_ops){ stk_tree_pack, stk_tree_merge, w });
	if (rc == COLL_OK)
		rc = coll_gatherv(w->c, blob, len, 0, &b);
	free(blob);
	if (rc == COLL_OK && comm_rank(w->c) == 0)
		rc = stk_assemble(w, &b);
	coll_blobs_free(&b);
	return rc;
}

static void
stk_worker_free(struct stk_worker *w)
{
	for (int i = 0; i < w->loc.n && w->procs != NULL; i++)
		stack_proc_free(&w->procs[i]);
	free(w->procs);
	free(w->ids);
	stk_local_free(&w->loc);
	stack_tree_free(&w->tree);
	stk_result_free(&w->r);
	stack_syms_free(w->sy);
	comm_destroy(w->c);
}

/*
 * A worker holds ptrace on ranks: it must never outlive collstack. Its
 * parent (the front end, or collrun's agent over SSH and srun) going away
 * kills it, however that parent ended (Slurm's step kill SIGKILLs the agent,
 * and proctrack/linuxproc, which finds a step's processes by their parents,
 * loses a worker orphaned before the sweep), at once if that parent was
 * gone before it looked; and it ends by itself when the front end's -T and
 * its kill stages (15 s) are long past.
 */
static void
stk_worker_tether(const struct stk_args *a)
{
	/*
	 * The parent it must have: the local front end says its pid (the
	 * parent read here would be whoever adopted an orphan); under an agent,
	 * which set the signal before exec, the parent it has.
	 */
	const char *front = getenv("COLL_STACK_FRONT_PID");
	pid_t parent = front != NULL ? (pid_t)atol(front) : getppid();

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		raise(SIGKILL);
	alarm((unsigned)a->timeout_s + 30);
}

int
stk_worker(struct stk_args *a)
{
	struct stk_worker w = { .a = a, .t0 = clock_now_ns() };
	struct coll_config cfg = COLL_CONFIG_INIT;
	int rc, code = EXIT_CANNOT;

	if (a->worker)
		stk_worker_tether(a);
	stack_tree_init(&w.tree);
	w.sy = stack_syms_new();
	if (gethostname(w.host, sizeof w.host - 1) != 0)
		snprintf(w.host, sizeof w.host, "?");
	cfg.timeout_ms = (int)(a->timeout_s * 500);
	if ((rc = comm_init_env(&w.c, &cfg)) != COLL_OK) {
		fprintf(stderr, "collstack: cannot join the job: %s\n", w.c != NULL ?
		    comm_last_error(w.c) : "COLL_UNIQUE_ID, COLL_RANK or COLL_SIZE is malformed");
		goto out;
	}
	if ((rc = stk_steps(&w)) != COLL_OK) {
		fprintf(stderr, "collstack: %s\n", w.err[0] ? w.err : comm_last_error(w.c));
		goto out;
	}
	code = EXIT_OK;
	if (comm_rank(w.c) != 0)
		goto out;
	if (a->worker) {
		json_t *rec = stk_record(&w.r);

		json_dumpf(rec, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(rec);
	} else {
		struct stk_verdict v;

		stk_verdict(&w.r, &v);
		code = stk_render(&w.r, &v, a);
		stk_verdict_free(&v);
	}
out:
	stk_worker_free(&w);
	return code;
}
