/*
 * The GPU kernels a process runs, as cuda-gdb lists them ("info cuda
 * kernels"), in batch mode: attach, list, detach. It is slow (cuda-gdb
 * takes some 10 s to attach to a PyTorch process on an H100) and it stops
 * the process meanwhile. The processes are attached to all at once,
 * CUDAGDB_AT_ONCE at most, within the caller's time: cuda-gdb's lock file,
 * which kept one debugger per machine (or per GPU of CUDA_VISIBLE_DEVICES),
 * has been off by default since cuda-gdb 12.0 (gdb/cuda/cuda-utils.c,
 * cuda_use_lockfile); cuda-gdb 13 no longer knows the option that turned
 * it off (--cuda-use-lockfile=0 ends it with "unrecognized option", as on
 * an H200 with CUDA 13.0), so none is given. Where more processes than that
 * wait, the suspects go first.
 * A debugger that outlasts the time is stopped, and a process a debugger
 * left stopped is continued. Attaching is not free for the process: threads
 * that wait on a condition (OpenBLAS's workers in a PyTorch rank) may see the
 * attach as a spurious wake-up and exit.
 *
 * The debugger is $COLL_CUDA_GDB, else cuda-gdb on PATH, else
 * /usr/local/cuda/bin/cuda-gdb. Its output is another program's words
 * about another process: bounded (1 MiB), and its table read by columns.
 * Named cudagdb, not cuda: core/cuda is coll's CUDA engine.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "cudagdb.h"
#include "stack.h"
#include "xmalloc.h"

#define CUDAGDB_OUT_MAX (1u << 20)
#define CUDAGDB_DEFAULT "/usr/local/cuda/bin/cuda-gdb"

/* The debugger to run, or NULL. */
char *
cudagdb_find(void)
{
	const char *env = getenv("COLL_CUDA_GDB"), *path = getenv("PATH");
	char *dirs, *save = NULL, *d, *full;

	if (env != NULL && *env != '\0')
		return access(env, X_OK) == 0 ? xstrdup(env) : NULL;
	dirs = xstrdup(path ? path : "");
	for (d = strtok_r(dirs, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
		full = xasprintf("%s/cuda-gdb", d);
		if (access(full, X_OK) == 0) {
			free(dirs);
			return full;
		}
		free(full);
	}
	free(dirs);
	return access(CUDAGDB_DEFAULT, X_OK) == 0 ? xstrdup(CUDAGDB_DEFAULT) : NULL;
}

/* Split line into at most max words at blanks; the count. */
static int
cudagdb_words(char *line, char **w, int max)
{
	int n = 0;
	char *save = NULL;

	for (char *t = strtok_r(line, " \t", &save); t != NULL && n < max;
	     t = strtok_r(NULL, " \t", &save))
		w[n++] = t;
	return n;
}

/*
 * The table of "info cuda kernels", as cuda-gdb 13 prints it:
 *     Kernel Parent Dev Grid Status          SMs Mask  GridDim  BlockDim Invocation
 *   *      0      -   0    8 Active 0x...0fff0fff (24,1,1) (544,1,1) ncclDevKernel_...()
 * Columns are padded to the header's width; the invocation (which may hold
 * spaces) starts where the header says "Invocation", the device and status
 * are words of their own. The kernel the debugger focused on ('*') was
 * stopped in the function named by the "0x... in NAME" line before the table.
 */
char *
cudagdb_parse(const char *out)
{
	char *text = xstrdup(out), *save = NULL, *res = NULL, *hdr[16], *w[16], focus[256] = "";
	int ncol = 0, dev = -1, status = -1, infocus = 0;
	size_t inv = 0;

	for (char *line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *p = line, *h;
		char copy[1024];
		int n;

		if (strncmp(line, "[Switching focus to CUDA kernel", 31) == 0) {
			infocus = 1;
			continue;
		}
		if (infocus && strncmp(line, "0x", 2) == 0 && (h = strstr(line, " in ")) != NULL) {
			snprintf(focus, sizeof focus, "%.*s", (int)strcspn(h + 4, " ("), h + 4);
			infocus = 0;
			continue;
		}
		if (ncol == 0) {
			if ((h = strstr(line, "Invocation")) == NULL || strstr(line, " Kernel ") == NULL)
				continue;
			inv = (size_t)(h - line);
			snprintf(copy, sizeof copy, "%s", line);
			ncol = cudagdb_words(copy, hdr, 16);
			for (int i = 0; i < ncol; i++) {
				dev = strcmp(hdr[i], "Dev") == 0 ? i : dev;
				status = strcmp(hdr[i], "Status") == 0 ? i : status;
			}
			if (dev < 0 || status < 0 || dev >= 8 || status >= 8)
				ncol = 0;	/* not a table we know */
			continue;
		}
		while (*p == ' ' || *p == '*')
			p++;
		if (*p < '0' || *p > '9' || strlen(line) <= inv)
			continue;
		snprintf(copy, sizeof copy, "%s", p);
		if ((n = cudagdb_words(copy, w, 16)) <= (dev > status ? dev : status))
			continue;
		{
			const char *rest = line + inv;
			char *old = res, *one;
			size_t len = strlen(rest);

			while (*rest == ' ')
				rest++, len--;
			while (len > 0 && rest[len - 1] == ' ')
				len--;
			if (len == 0)
				continue;
			one = xasprintf("%.*s (device %s, %s%s%s)", (int)len, rest, w[dev], w[status],
			    line[0] == '*' && focus[0] ? ", in " : "",
			    line[0] == '*' && focus[0] ? focus : "");
			res = old ? xasprintf("%s; %s", old, one) : xstrdup(one);
			free(one);
			free(old);
		}
	}
	free(text);
	return res;
}


enum { CUDAGDB_WAIT, CUDAGDB_RUN, CUDAGDB_DONE };

/* One process and its debugger. */
struct cudagdb_one {
	pid_t target, gdb;
	int state, fd, status;
	int failed;		/* the debugger could not be started (errno) */
	int timed_out;		/* stopped at the deadline */
	int big;		/* it wrote more than CUDAGDB_OUT_MAX */
	char before;		/* the target's state before: a stop of its own is left alone */
	char *out;
	size_t len;
};

static pid_t
cudagdb_spawn(const char *gdb, pid_t pid, int *fd)
{
	char pidstr[24];
	int p[2];
	pid_t c, parent = getpid();

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
	if ((c = fork()) == 0) {
		int null = open("/dev/null", O_RDONLY);

		/* A debugger whose worker is gone quits on SIGTERM, and detaches as it does. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		dup2(null, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (null > 2)
			close(null);
		/* No lock file: several debuggers at once (off by default since cuda-gdb 12.0). */
		execl(gdb, gdb, "-nx", "-q", "-batch", "-p", pidstr,
		    "-ex", "info cuda kernels", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if (c < 0) {
		close(p[0]);
		return -1;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	*fd = p[0];
	return c;
}

static void
cudagdb_start(const char *gdb, struct cudagdb_one *o)
{
	o->before = stack_state(o->target, NULL);
	o->out = xmalloc(CUDAGDB_OUT_MAX + 1);
	if ((o->gdb = cudagdb_spawn(gdb, o->target, &o->fd)) < 0) {
		o->failed = errno;
		o->state = CUDAGDB_DONE;
		return;
	}
	o->state = CUDAGDB_RUN;
}

/* Read what its debugger wrote so far; the pipe is closed at its end. */
static void
cudagdb_read(struct cudagdb_one *o)
{
	while (o->fd >= 0) {
		ssize_t got = 0;

		/* Full: no more is read, and the debugger's next write fails (it ends). */
		if (o->len >= CUDAGDB_OUT_MAX)
			o->big = 1;
		else
			got = read(o->fd, o->out + o->len, CUDAGDB_OUT_MAX - o->len);
		if (got > 0) {
			o->len += (size_t)got;
			continue;
		}
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN)
			return;
		close(o->fd);
		o->fd = -1;
	}
}

/* Its debugger ended (reaped, status kept): what it wrote is all read. */
static void
cudagdb_ended(struct cudagdb_one *o, int status)
{
	o->status = status;
	o->gdb = 0;
	o->state = CUDAGDB_DONE;
	cudagdb_read(o);
	if (o->fd >= 0) {	/* something it started holds the pipe: no more is waited for */
		close(o->fd);
		o->fd = -1;
	}
}

/*
 * Stop the debuggers that overran: SIGTERM first (gdb detaches what it is
 * attached to as it quits), SIGKILL a second later, all at once.
 */
static void
cudagdb_stop_all(struct cudagdb_one *o, int n)
{
	uint64_t until = clock_now_ms() + 1000;
	int left = 0, status;

	for (int i = 0; i < n; i++)
		if (o[i].state == CUDAGDB_RUN) {
			kill(o[i].gdb, SIGTERM);
			o[i].timed_out = 1;
			left++;
		}
	while (left > 0 && clock_now_ms() < until) {
		struct timespec ts = { 0, 50 * 1000000L };

		nanosleep(&ts, NULL);
		for (int i = 0; i < n; i++)
			if (o[i].state == CUDAGDB_RUN && waitpid(o[i].gdb, &status, WNOHANG) == o[i].gdb) {
				cudagdb_ended(&o[i], status);
				left--;
			}
	}
	for (int i = 0; i < n; i++)
		if (o[i].state == CUDAGDB_RUN) {
			kill(o[i].gdb, SIGKILL);
			while (waitpid(o[i].gdb, &status, 0) < 0 && errno == EINTR)
				;
			cudagdb_ended(&o[i], status);
		}
}

/*
 * A debugger that did not end cleanly (stopped by us, killed, crashed) may
 * leave its target stopped: the SIGSTOP that attaching sends can still be
 * pending when the kernel detaches the process, and stops it whenever the
 * process next runs, which on a loaded machine is any time later. Once the
 * debugger is reaped its target gets one SIGCONT, which continues it if it
 * stopped and discards a stop still pending, unless it was stopped before
 * we came (Ctrl-Z): that stop is its own and stays.
 */
static void
cudagdb_settle(const struct cudagdb_one *o, int n)
{
	for (int i = 0; i < n; i++)
		if ((o[i].timed_out || o[i].status != 0) && o[i].before != 'T' &&
		    o[i].before != 't' && o[i].before != 0)
			kill(o[i].target, SIGCONT);
}

/* Start what may start, wait a little for output; whether to go on (some run or wait). */
static int
cudagdb_step(const char *gdb, struct cudagdb_one *o, const int *order, int n, int *next,
    uint64_t deadline)
{
	struct pollfd pf[CUDAGDB_AT_ONCE];
	int running = 0, np = 0, status;
	uint64_t now = clock_now_ms();

	for (int i = 0; i < n; i++)
		running += o[i].state == CUDAGDB_RUN;
	/* A debugger needs its 10 s or so: none is started in the last second. */
	while (running < CUDAGDB_AT_ONCE && *next < n && now + 1000 < deadline) {
		cudagdb_start(gdb, &o[order[(*next)++]]);
		running = 0;
		for (int i = 0; i < n; i++)
			running += o[i].state == CUDAGDB_RUN;
	}
	if (running == 0 || now >= deadline)
		return 0;
	for (int i = 0; i < n; i++)
		if (o[i].state == CUDAGDB_RUN && o[i].fd >= 0)
			pf[np++] = (struct pollfd){ o[i].fd, POLLIN, 0 };
	poll(pf, (nfds_t)np, (int)(deadline - now < 200 ? deadline - now : 200));
	running = 0;
	for (int i = 0; i < n; i++) {
		if (o[i].state != CUDAGDB_RUN)
			continue;
		cudagdb_read(&o[i]);
		if (waitpid(o[i].gdb, &status, WNOHANG) == o[i].gdb)
			cudagdb_ended(&o[i], status);
		else
			running++;
	}
	/* All may have ended at once: those still waiting get the time left. */
	return running > 0 || (*next < n && clock_now_ms() + 1000 < deadline);
}

/* Suspects first (the stacks or the plugin's pages point at them), else in order. */
static int *
cudagdb_order(const int *suspect, int n)
{
	int *order = xcalloc((size_t)n + 1, sizeof *order), k = 0;

	for (int pass = 1; pass >= 0; pass--)
		for (int i = 0; i < n; i++)
			if ((suspect != NULL && suspect[i]) == pass)
				order[k++] = i;
	return order;
}

/* Each debugger's end, as a record; its output NUL-terminated. */
static void
cudagdb_result(struct cudagdb_one *o, struct cudagdb_res *res)
{
	*res = (struct cudagdb_res){ .asked = o->state != CUDAGDB_WAIT, .failed = o->failed,
		.timed_out = o->timed_out, .status = o->status, .big = o->big, .out = o->out,
		.len = o->len };
	if (res->out != NULL)
		res->out[res->len] = '\0';
}

int
cudagdb_run(const char *gdb, const pid_t *pids, const int *suspect, int n, double budget_s,
    struct cudagdb_res *res)
{
	uint64_t deadline = clock_now_ms() + (uint64_t)(budget_s * 1000);
	struct cudagdb_one *o = xcalloc((size_t)n + 1, sizeof *o);
	int *order = cudagdb_order(suspect, n), next = 0;

	for (int i = 0; i < n; i++) {
		o[i].target = pids[i];
		o[i].fd = -1;
	}
	while (cudagdb_step(gdb, o, order, n, &next, deadline) > 0)
		;
	cudagdb_stop_all(o, n);
	cudagdb_settle(o, n);
	for (int i = 0; i < n; i++)
		cudagdb_result(&o[i], &res[i]);
	free(order);
	free(o);
	return next;
}
