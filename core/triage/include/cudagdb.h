/*
 * cudagdb.c: the GPU kernels of processes, as cuda-gdb lists them ("info
 * cuda kernels"). Named cudagdb, not cuda: core/cuda is coll's CUDA engine.
 */
#ifndef COLL_TRIAGE_CUDAGDB_H
#define COLL_TRIAGE_CUDAGDB_H

#include <stddef.h>
#include <sys/types.h>

/* Debuggers at once: each takes a CPU while it attaches; a host rarely has more than 8 GPUs. */
#define CUDAGDB_AT_ONCE 8

/* What came of one process's debugger. */
struct cudagdb_res {
	int asked;		/* 0: the time ran out before its turn */
	int failed;		/* the debugger could not be started (errno) */
	int timed_out;		/* stopped at the deadline */
	int status;		/* its wait status */
	int big;		/* it wrote more than 1 MiB (out holds the first) */
	char *out;		/* what it wrote, NUL-terminated (malloc'ed; NULL if not asked) */
	size_t len;
};

/* The debugger to run ($COLL_CUDA_GDB, cuda-gdb on PATH, /usr/local/cuda/bin), or NULL. */
char *cudagdb_find(void);

/*
 * Run gdb on each of pids (suspects first where suspect is not NULL),
 * CUDAGDB_AT_ONCE at once, within budget_s: one record each into res; the
 * count of processes asked. A debugger past the deadline is stopped, and a
 * process it left stopped continued.
 */
int cudagdb_run(const char *gdb, const pid_t *pids, const int *suspect, int n, double budget_s,
    struct cudagdb_res *res);

/* cuda-gdb's "info cuda kernels" table as "name (device D, status)" joined by "; "; NULL none. */
char *cudagdb_parse(const char *out);

#endif
