/*
 * collstack --cuda: the GPU kernels each process runs, as cuda-gdb lists
 * them (cudagdb_run, core/triage). It is slow and it stops the process
 * meanwhile, so it is asked for, never done by default, and runs after
 * collstack's own snapshot is over, within -T/4 in all. Here each
 * debugger's end is said in collstack's words: its kernels, or why not.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "collstack.h"
#include "cudagdb.h"
#include "xmalloc.h"

/* Its debugger's output into kernels, or why not. */
static void
stk_cuda_judge(const struct cudagdb_res *o, int asked, int suspects, char **kernels, char **why)
{
	if (!o->asked) {
		*why = xasprintf("not asked: the time -T leaves --cuda (-T/4) went to the %d "
		    "processes asked before it (%d of them suspects: outside any collective, or a "
		    "GPU kernel enqueued and not begun); raise -T", asked, suspects);
	} else if (o->failed) {
		*why = xasprintf("cannot start cuda-gdb: %s", strerror(o->failed));
	} else if (o->timed_out) {
		*why = xasprintf("cuda-gdb gave no answer in the time -T leaves it (-T/4, about "
		    "10 s a process, %d at once: raise -T)", CUDAGDB_AT_ONCE);
	} else if (WIFSIGNALED(o->status) && o->len == 0) {
		*why = xasprintf("cuda-gdb was killed (SIG%s) before it said anything",
		    sigabbrev_np(WTERMSIG(o->status)) ? sigabbrev_np(WTERMSIG(o->status)) : "?");
	} else if (o->big) {
		*why = xstrdup("cuda-gdb wrote more than 1 MiB");
	} else {
		*kernels = cudagdb_parse(o->out);
		if (*kernels == NULL && strstr(o->out, "No CUDA kernels") != NULL) {
			*kernels = xstrdup("none");
		} else if (*kernels == NULL) {
			/* Its own words, first line, say why (permissions, no CUDA in the process). */
			char *first = o->out + strspn(o->out, "\n");

			first[strcspn(first, "\n")] = '\0';
			*why = xasprintf("cuda-gdb listed no kernel table%s%.200s", *first ? ": " : "",
			    first);
		}
	}
}

void
stk_cuda_kernels(const pid_t *pids, const int *suspect, int n, double budget_s, char **kernels,
    char **why)
{
	char *gdb = cudagdb_find();
	struct cudagdb_res *res = xcalloc((size_t)n + 1, sizeof *res);
	int asked = 0, suspects = 0;

	for (int i = 0; i < n; i++) {
		kernels[i] = why[i] = NULL;
		suspects += suspect != NULL && suspect[i];
	}
	if (gdb != NULL)
		asked = cudagdb_run(gdb, pids, suspect, n, budget_s, res);
	for (int i = 0; i < n; i++) {
		if (gdb == NULL)
			why[i] = xstrdup("no cuda-gdb here (set COLL_CUDA_GDB, or put it on PATH)");
		else
			stk_cuda_judge(&res[i], asked, suspects < asked ? suspects : asked, &kernels[i],
			    &why[i]);
		free(res[i].out);
	}
	free(res);
	free(gdb);
}
