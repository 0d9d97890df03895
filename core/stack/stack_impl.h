/*
 * The stack module's own helpers: the snapshot a process leaves behind
 * (registers and stack copies, taken while it was stopped) for the unwinder
 * and the symbol cache to work on after it runs again.
 */
#ifndef COLL_STACK_IMPL_H
#define COLL_STACK_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stack.h"
#include "stack_py.h"

#define STACK_NREGS 33		/* DWARF registers kept: x86-64 uses 17, aarch64 33 */
#define STACK_COPY_MAX (256u << 10)	/* of each thread's stack, from its stack pointer up */

struct stack_snap_thread {
	pid_t tid;
	int stopped;		/* 1 stopped, 0 not (yet), -1 ended */
	int have_regs;		/* its registers were read: it can be unwound */
	int sig;		/* a signal it stopped for: given back on detach */
	uint64_t regs[STACK_NREGS];
	uint64_t pc, sp;
	uint8_t *stk;		/* copy of [stk_lo, stk_lo + stk_len) */
	uint64_t stk_lo;
	size_t stk_len;
	struct stack_pyframe *py;	/* its Python frames, innermost first (py.c) */
	int npy;
};

struct stack_snap {
	pid_t pid;
	uint64_t deadline_ns;	/* the process's budget ends (stack_opts.budget_ms) */
	int n;
	struct stack_snap_thread *t;
};

/* Read a small file whole, NUL-terminated; the length, or -1. */
ssize_t stack__read_file(const char *path, char *buf, size_t len);
/* /proc/.../stat: state letter, parent, name. */
int stack__stat(const char *path, char *state, pid_t *ppid, char *comm, size_t commlen);
/* The numeric entries of a /proc directory (pids, tids), ascending; -1 if it cannot be read. */
int stack__list_ids(const char *dir, pid_t **out);
/*
 * Stop every thread of p->pid, copy registers and stacks, and walk its
 * Python frames if it runs CPython (found into py before the stop), resume;
 * fills p's threads.
 */
int stack__snap(struct stack_snap *s, struct stack_proc *p, const struct stack_opts *o,
    struct stack_py *py);
void stack__snap_free(struct stack_snap *s);
#define STACK_DEBUG_ROOT "/usr/lib/debug"
/*
 * Open the separate debug file of a module (build id id of n bytes, file
 * file_name, debug link link), as stack__unwind looks for it: by build id
 * under root, by link next to the module if it is ours or root's, by link
 * under root. Under root only what owner (root; a test's own user) owns and
 * nobody else may write, links resolving inside root. An fd, its path in
 * path; -1 if none.
 */
int stack__unwind_debug(const char *root, uid_t owner, const unsigned char *id, int n,
    const char *file_name, const char *link, char *path, size_t len);
/* Unwind and name the snapshot's threads into p. */
int stack__unwind(struct stack_syms *sy, struct stack_snap *s, struct stack_proc *p,
    const struct stack_opts *o);

#endif
