/*
 * Reading processes: snapshot, unwind and name one (stack_read), or many in
 * parallel (stack_read_many). ptrace ties a tracee to the thread that seized
 * it, so each worker thread takes whole processes, from seize to detach; the
 * symbol cache is the one thing they share. The reading is done by threads
 * started for it, never the caller: a thread that stopped too late to be
 * detached (it was in uninterruptible sleep) is released when they exit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "stack.h"
#include "stack_impl.h"
#include "xmalloc.h"

int
stack_read(struct stack_syms *sy, pid_t pid, const struct stack_opts *o, struct stack_proc *p)
{
	struct stack_snap s;
	struct stack_py py;
	int r;

	memset(p, 0, sizeof *p);
	p->pid = pid;
	r = stack__snap(&s, p, o, &py);
	if (r == COLL_ENOTFOUND && p->why[0] == '\0')
		snprintf(p->why, sizeof p->why, "pid %d is gone", (int)pid);
	if (r == COLL_OK)
		r = stack__unwind(sy, &s, p, o);
	if (r == COLL_OK)
		stack__py_merge(sy, &py, &s, p);
	stack__snap_free(&s);
	p->err = r;
	return r;
}

struct stack_pool {
	struct stack_syms *sy;
	const pid_t *pids;
	int n;
	int next;		/* atomic: the next process to take */
	const struct stack_opts *o;
	struct stack_proc *out;
};

/* The processes before it took the time for all: pid is named, not read. */
static void
stack_read_late(pid_t pid, struct stack_proc *p)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->err = COLL_ETIMEDOUT;
	snprintf(p->why, sizeof p->why, "pid %d was not read: the processes before it took "
	    "the time for stacks (raise -T)", (int)pid);
}

static void *
stack_pool_run(void *arg)
{
	struct stack_pool *pl = arg;
	int i;

	while ((i = __atomic_fetch_add(&pl->next, 1, __ATOMIC_RELAXED)) < pl->n) {
		if (pl->o->deadline_ns != 0 && clock_now_ns() > pl->o->deadline_ns) {
			stack_read_late(pl->pids[i], &pl->out[i]);
			continue;
		}
		(void)stack_read(pl->sy, pl->pids[i], pl->o, &pl->out[i]);
	}
	return NULL;
}

void
stack_read_many(struct stack_syms *sy, const pid_t *pids, int n, int nthreads,
    const struct stack_opts *o, struct stack_proc *out)
{
	struct stack_pool pl = { sy, pids, n, 0, o, out };
	pthread_t *th;
	int started = 0;

	if (nthreads > n)
		nthreads = n;
	if (nthreads < 1)
		nthreads = 1;
	th = xcalloc((size_t)nthreads, sizeof *th);
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&th[started], NULL, stack_pool_run, &pl) == 0)
			started++;
	if (started == 0)
		stack_pool_run(&pl);	/* no thread could start: read here after all */
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
}

void
stack_proc_free(struct stack_proc *p)
{
	for (int i = 0; i < p->nthreads; i++)
		free(p->threads[i].frames);
	free(p->threads);
	p->threads = NULL;
	p->nthreads = 0;
}
