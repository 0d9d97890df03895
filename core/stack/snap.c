/*
 * One consistent snapshot of a process: every thread is seized and
 * interrupted (PTRACE_SEIZE + PTRACE_INTERRUPT: no signal is sent, so a
 * process stopped by SIGSTOP stays stopped and one that was running runs on
 * after us), its registers and the live part of its stack (from the stack
 * pointer to the end of the mapping, at most STACK_COPY_MAX) are copied, and
 * all are detached at once. Unwinding then works on the copies while the
 * process runs: the pause is a few system calls per thread.
 *
 * Threads are read from /proc before the stop (name, state, wait channel,
 * system call: what they were doing, not what the stop made of it). Threads
 * born during the stop are seized in a second round. A thread that does not
 * stop within stop_wait_ms (uninterruptible sleep) is left out, named so; it
 * stops when it wakes and stays stopped until its tracer thread exits, which
 * is why stack_read_many always reads from threads of its own that end when
 * the reading does (the kernel detaches a dead tracer's tracees).
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "stack.h"
#include "stack_impl.h"
#include "xmalloc.h"

#define STACK_SNAP_ROUNDS 3
#define STACK_MAPS_MAX (4u << 20)
#define STACK_BUDGET_MS 10000	/* a process's time when stack_opts gives none */

/* A stop that delivered a signal (not our interrupt, not a group stop): give it back. */
static int
stack_stop_signal(int st)
{
	return (st >> 16) == 0 ? WSTOPSIG(st) : 0;
}

struct stack_map {
	uint64_t lo, hi;
};

/* Threads of pid now, as tids; the count. */
static int
stack_tids(pid_t pid, pid_t **out)
{
	char path[64];
	int n;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	n = stack__list_ids(path, out);
	return n < 0 ? 0 : n;
}

/* What a thread is doing, from /proc, before it is stopped. */
static void
stack_thread_proc(pid_t pid, struct stack_thread *t)
{
	char path[96], buf[256];
	pid_t pp;

	t->syscall = -1;
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)t->tid);
	if (stack__stat(path, &t->state, &pp, t->name, sizeof t->name) != COLL_OK)
		t->state = 0;
	snprintf(path, sizeof path, "/proc/%d/task/%d/wchan", (int)pid, (int)t->tid);
	if (stack__read_file(path, buf, sizeof buf) > 0 && strcmp(buf, "0") != 0)
		snprintf(t->wchan, sizeof t->wchan, "%.47s", buf);
	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)t->tid);
	if (stack__read_file(path, buf, sizeof buf) > 0 && buf[0] >= '0' && buf[0] <= '9')
		t->syscall = strtol(buf, NULL, 10);
}

/* /proc/PID/maps, read once before the stop: NUL-terminated, malloc'ed; NULL if unreadable. */
static char *
stack_maps_text(pid_t pid)
{
	char path[64], *buf = xmalloc(STACK_MAPS_MAX);

	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	if (stack__read_file(path, buf, STACK_MAPS_MAX) < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Writable mappings, where stacks live; the text is cut up as it is read. */
static int
stack_maps(char *buf, struct stack_map **out)
{
	char *line, *save = NULL;
	int n = 0, cap = 64;

	*out = xcalloc((size_t)cap, sizeof **out);
	if (buf == NULL)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo, hi;
		char perm[8];

		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perm) != 3 || perm[1] != 'w')
			continue;
		if (n == cap) {
			cap *= 2;
			*out = xreallocarray(*out, (size_t)cap, sizeof **out);
		}
		(*out)[n++] = (struct stack_map){ lo, hi };
	}
	return n;
}

static int
stack_snap_has(const struct stack_snap *s, pid_t tid)
{
	for (int i = 0; i < s->n; i++)
		if (s->t[i].tid == tid)
			return 1;
	return 0;
}

/* Seize and interrupt the threads not seized yet; -errno of the first refusal. */
static int
stack_seize(struct stack_snap *s, const pid_t *tids, int n)
{
	for (int i = 0; i < n; i++) {
		if (stack_snap_has(s, tids[i]))
			continue;
		if (ptrace(PTRACE_SEIZE, tids[i], 0, 0) == -1) {
			if (errno == ESRCH)
				continue;	/* the thread ended meanwhile */
			return -errno;
		}
		s->t = xreallocarray(s->t, (size_t)s->n + 1, sizeof *s->t);
		s->t[s->n++] = (struct stack_snap_thread){ .tid = tids[i] };
		if (ptrace(PTRACE_INTERRUPT, tids[i], 0, 0) == -1 && errno != ESRCH)
			return -errno;
	}
	return 0;
}

/* Wait until every seized thread has stopped or ended, or the deadline. */
static void
stack_wait_stops(struct stack_snap *s, uint64_t deadline_ns)
{
	struct timespec nap = { 0, 20000 };
	int left;

	do {
		left = 0;
		for (int i = 0; i < s->n; i++) {
			struct stack_snap_thread *t = &s->t[i];
			int st;
			pid_t r;

			if (t->stopped)
				continue;
			r = waitpid(t->tid, &st, __WALL | WNOHANG);
			if (r == t->tid && WIFSTOPPED(st)) {
				t->stopped = 1;
				/* Under PTRACE_SEIZE our interrupt and group stops are event stops. */
				t->sig = stack_stop_signal(st);
			} else if (r == t->tid || (r == -1 && errno == ECHILD)) {
				t->stopped = -1;	/* it ended */
			} else {
				left++;
			}
		}
		if (left > 0)
			nanosleep(&nap, NULL);
	} while (left > 0 && clock_now_ns() < deadline_ns);
}

#if defined(__x86_64__)
/* DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip. */
static int
stack_regs(struct stack_snap_thread *t)
{
	struct user_regs_struct r;
	struct iovec iov = { &r, sizeof r };

	if (ptrace(PTRACE_GETREGSET, t->tid, NT_PRSTATUS, &iov) == -1)
		return -1;
	uint64_t v[17] = { r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8, r.r9,
		r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip };
	memcpy(t->regs, v, sizeof v);
	t->pc = r.rip;
	t->sp = r.rsp;
	return 0;
}
#elif defined(__aarch64__)
/* DWARF numbering: x0-x30, sp; the pc is set apart. */
static int
stack_regs(struct stack_snap_thread *t)
{
	struct user_regs_struct r;
	struct iovec iov = { &r, sizeof r };

	if (ptrace(PTRACE_GETREGSET, t->tid, NT_PRSTATUS, &iov) == -1)
		return -1;
	for (int i = 0; i < 31; i++)
		t->regs[i] = r.regs[i];
	t->regs[31] = r.sp;
	t->pc = r.pc;
	t->sp = r.sp;
	return 0;
}
#else
#error "collstack reads registers on x86-64 and aarch64 only"
#endif

/* Copy the live part of the thread's stack: from below sp (the red zone) to its mapping's end. */
static void
stack_copy(pid_t pid, struct stack_snap_thread *t, const struct stack_map *m, int nm)
{
	uint64_t lo = t->sp > 128 ? t->sp - 128 : 0, hi = 0;
	struct iovec local, remote;
	ssize_t got;

	for (int i = 0; i < nm; i++)
		if (t->sp >= m[i].lo && t->sp < m[i].hi) {
			lo = lo < m[i].lo ? m[i].lo : lo;
			hi = m[i].hi;
		}
	if (hi == 0)
		return;	/* not in a mapping we knew: the unwinder reads the live process */
	if (hi - lo > STACK_COPY_MAX)
		hi = lo + STACK_COPY_MAX;
	t->stk = xmalloc((size_t)(hi - lo));
	local = (struct iovec){ t->stk, (size_t)(hi - lo) };
	remote = (struct iovec){ (void *)(uintptr_t)lo, (size_t)(hi - lo) };
	got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got <= 0) {
		free(t->stk);
		t->stk = NULL;
		return;
	}
	t->stk_lo = lo;
	t->stk_len = (size_t)got;
}

static void
stack_detach(struct stack_snap *s)
{
	for (int i = 0; i < s->n; i++) {
		struct stack_snap_thread *t = &s->t[i];
		int st;

		/* Not stopped yet: detach works only on a stopped tracee; look once more. */
		if (t->stopped == 0 && waitpid(t->tid, &st, __WALL | WNOHANG) == t->tid &&
		    WIFSTOPPED(st))
			(void)ptrace(PTRACE_DETACH, t->tid, 0, stack_stop_signal(st));
		else if (t->stopped == 1)
			(void)ptrace(PTRACE_DETACH, t->tid, 0, t->sig);
	}
}

/* The threads as /proc listed them, in p; 0 or COLL_ENOTFOUND. */
static int
stack_snap_list(struct stack_proc *p, pid_t **tids)
{
	int n = stack_tids(p->pid, tids);

	if (n == 0)
		return COLL_ENOTFOUND;
	p->threads = xcalloc((size_t)n, sizeof *p->threads);
	p->nthreads = n;
	for (int i = 0; i < n; i++) {
		p->threads[i].tid = (*tids)[i];
		stack_thread_proc(p->pid, &p->threads[i]);
	}
	return COLL_OK;
}

/* Stop, copy, resume. Everything between the first seize and the detach counts as pause. */
static int
stack_snap_stop(struct stack_snap *s, struct stack_proc *p, const struct stack_opts *o,
    pid_t *tids, int n, const struct stack_map *maps, int nm, const struct stack_py *py)
{
	uint64_t t0 = clock_now_ns(), wait_ns = (uint64_t)(o->stop_wait_ms > 0 ?
	    o->stop_wait_ms : 500) * 1000000u;
	int r = 0;

	for (int round = 0; round < STACK_SNAP_ROUNDS && r == 0; round++) {
		int before = s->n;

		if (round > 0) {
			free(tids);
			n = stack_tids(p->pid, &tids);
		}
		r = stack_seize(s, tids, n);
		/* Even when a seize was refused: those seized must stop to be detached. */
		stack_wait_stops(s, t0 + wait_ns);
		if (s->n == before)
			break;	/* no thread appeared since the last round */
	}
	free(tids);
	for (int i = 0; i < s->n && r == 0; i++)
		if (s->t[i].stopped == 1 && stack_regs(&s->t[i]) == 0) {
			s->t[i].have_regs = 1;
			stack_copy(s->pid, &s->t[i], maps, nm);
		}
	if (r == 0)
		stack__py_walk(py, s);
	if (r == 0 && o->hold_ms > 0) {
		struct timespec hold = { o->hold_ms / 1000, (o->hold_ms % 1000) * 1000000L };

		nanosleep(&hold, NULL);
	}
	stack_detach(s);
	p->pause_ms = (double)(clock_now_ns() - t0) / 1e6;
	return r;
}

int
stack__snap(struct stack_snap *s, struct stack_proc *p, const struct stack_opts *o,
    struct stack_py *py)
{
	struct stack_map *maps = NULL;
	pid_t *tids = NULL;
	char *text;
	int n, nm, r;

	pid_t ppid = 0;

	memset(s, 0, sizeof *s);
	memset(py, 0, sizeof *py);
	s->pid = p->pid;
	s->deadline_ns = clock_now_ns() + (uint64_t)(o->budget_ms > 0 ? o->budget_ms :
	    STACK_BUDGET_MS) * 1000000u;
	if (stack_state(p->pid, &ppid) == 'Z') {
		snprintf(p->why, sizeof p->why, "pid %d is a zombie: it exited and its parent "
		    "(pid %d) has not reaped it", (int)p->pid, (int)ppid);
		return COLL_ENOTFOUND;
	}
	if ((r = stack_snap_list(p, &tids)) != COLL_OK) {
		free(tids);
		return r;
	}
	n = p->nthreads;
	/* One read of the maps serves both: the interpreter's modules and the stacks' mappings. */
	text = stack_maps_text(p->pid);
	if (text != NULL && stack__py_find(p->pid, text, s->deadline_ns, py) && py->why[0] != '\0')
		snprintf(p->note, sizeof p->note, "%s", py->why);
	nm = stack_maps(text, &maps);
	free(text);
	r = stack_snap_stop(s, p, o, tids, n, maps, nm, py);
	free(maps);
	if (r < 0) {
		stack_perm_why(p->pid, -r, p->why, sizeof p->why);
		return COLL_ESYS;
	}
	/* Threads born during the stop were seized in a later round: list them too. */
	for (int k = 0; k < s->n; k++) {
		int known = 0;

		for (int i = 0; i < p->nthreads && !known; i++)
			known = p->threads[i].tid == s->t[k].tid;
		if (known)
			continue;
		p->threads = xreallocarray(p->threads, (size_t)p->nthreads + 1, sizeof *p->threads);
		p->threads[p->nthreads] = (struct stack_thread){ .tid = s->t[k].tid };
		stack_thread_proc(p->pid, &p->threads[p->nthreads++]);
	}
	for (int i = 0; i < p->nthreads; i++) {
		struct stack_thread *t = &p->threads[i];

		t->stopped = 0;
		for (int k = 0; k < s->n; k++)
			if (s->t[k].tid == t->tid)
				t->stopped = s->t[k].have_regs;
		if (!t->stopped)
			snprintf(t->err, sizeof t->err, "%s", t->state == 'D' ? "did not stop: "
			    "in uninterruptible sleep" : "ended or did not stop");
	}
	return COLL_OK;
}

void
stack__snap_free(struct stack_snap *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->t[i].stk);
		free(s->t[i].py);
	}
	free(s->t);
	s->t = NULL;
	s->n = 0;
}
