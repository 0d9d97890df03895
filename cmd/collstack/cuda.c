/*
 * collstack --cuda: the GPU kernels each process runs, as cuda-gdb lists
 * them ("info cuda kernels"), in batch mode: attach, list, detach. It is
 * slow (cuda-gdb takes some 10 s to attach to a PyTorch process on an H100)
 * and it stops the process meanwhile, so it is asked for, never done by
 * default, and runs after collstack's own snapshot is over. The processes of
 * a host are attached to one after another (cuda-gdb keeps one debugger per
 * machine), within -T/4 in all; one that outlasts it is stopped, and its
 * process continued if the debugger left it stopped. Attaching is not free for the process: threads that wait on a
 * condition (OpenBLAS's workers in a PyTorch rank) may see the attach as a
 * spurious wake-up and exit.
 *
 * The debugger is $COLL_CUDA_GDB, else cuda-gdb on PATH, else
 * /usr/local/cuda/bin/cuda-gdb.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "collstack.h"
#include "xmalloc.h"

#define STK_CUDA_OUT_MAX (1u << 20)
#define STK_CUDA_DEFAULT "/usr/local/cuda/bin/cuda-gdb"

/* The debugger to run, or NULL. */
static char *
stk_cuda_gdb(void)
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
	return access(STK_CUDA_DEFAULT, X_OK) == 0 ? xstrdup(STK_CUDA_DEFAULT) : NULL;
}

/* Split line into at most max words at blanks; the count. */
static int
stk_cuda_words(char *line, char **w, int max)
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
stk_cuda_parse(const char *out)
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
			ncol = stk_cuda_words(copy, hdr, 16);
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
		if ((n = stk_cuda_words(copy, w, 16)) <= (dev > status ? dev : status))
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

static pid_t
stk_cuda_spawn(const char *gdb, pid_t pid, int *fd)
{
	char pidstr[24];
	int p[2];
	pid_t c;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
	if ((c = fork()) == 0) {
		int null = open("/dev/null", O_RDONLY);

		dup2(null, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (null > 2)
			close(null);
		execl(gdb, gdb, "-nx", "-q", "-batch", "-p", pidstr,
		    "-ex", "info cuda kernels", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if (c < 0) {
		close(p[0]);
		return -1;
	}
	*fd = p[0];
	return c;
}

/*
 * Stop a debugger that overran: SIGTERM first (gdb detaches what it is
 * attached to as it quits), SIGKILL after a second. A process left in a
 * ptrace stop by a killed debugger stays stopped: it is continued unless it
 * was stopped before we came.
 */
static void
stk_cuda_stop(pid_t gdb, pid_t target, char before)
{
	int status;

	kill(gdb, SIGTERM);
	for (int i = 0; i < 20; i++) {
		struct timespec ts = { 0, 50 * 1000000L };

		if (waitpid(gdb, &status, WNOHANG) == gdb)
			goto reaped;
		nanosleep(&ts, NULL);
	}
	kill(gdb, SIGKILL);
	waitpid(gdb, &status, 0);
reaped:
	if (before != 'T' && before != 't' && stack_state(target, NULL) == 'T')
		kill(target, SIGCONT);
}

/* One process: cuda-gdb's output, or NULL with why, by the deadline. */
static char *
stk_cuda_one(const char *gdb, pid_t pid, uint64_t deadline, char **why)
{
	char *out = xmalloc(STK_CUDA_OUT_MAX + 1), before = stack_state(pid, NULL);
	size_t len = 0;
	int fd, status, open = 1;
	pid_t c = stk_cuda_spawn(gdb, pid, &fd);

	if (c < 0) {
		*why = xasprintf("cannot start %s: %s", gdb, strerror(errno));
		free(out);
		return NULL;
	}
	while (open && clock_now_ms() < deadline) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t got;

		if (poll(&pf, 1, 200) <= 0)
			continue;
		got = read(fd, out + len, STK_CUDA_OUT_MAX - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got > 0 && len + (size_t)got < STK_CUDA_OUT_MAX)
			len += (size_t)got;
		else
			open = 0;
	}
	close(fd);
	if (open || len + 1 >= STK_CUDA_OUT_MAX) {
		stk_cuda_stop(c, pid, before);
		*why = open ? xstrdup("cuda-gdb gave no answer in the time -T leaves it (-T/4, "
		    "about 10 s a process: raise -T)") : xstrdup("cuda-gdb wrote more than 1 MiB");
		free(out);
		return NULL;
	}
	waitpid(c, &status, 0);
	out[len] = '\0';
	return out;
}

void
stk_cuda_kernels(const pid_t *pids, int n, double budget_s, char **kernels, char **why)
{
	char *gdb = stk_cuda_gdb(), *out;
	uint64_t deadline = clock_now_ms() + (uint64_t)(budget_s * 1000);

	for (int i = 0; i < n; i++) {
		kernels[i] = why[i] = NULL;
		if (gdb == NULL) {
			why[i] = xstrdup("no cuda-gdb here (set COLL_CUDA_GDB, or put it on PATH)");
			continue;
		}
		if (clock_now_ms() + 1000 >= deadline) {
			why[i] = xstrdup("not asked: the time -T leaves --cuda (-T/4) went to the "
			    "processes before it; raise -T");
			continue;
		}
		if ((out = stk_cuda_one(gdb, pids[i], deadline, &why[i])) == NULL)
			continue;
		kernels[i] = stk_cuda_parse(out);
		if (kernels[i] == NULL && strstr(out, "No CUDA kernels") != NULL)
			kernels[i] = xstrdup("none");
		else if (kernels[i] == NULL) {
			/* Its own words, first line, say why (permissions, no CUDA in the process). */
			char *first = out + strspn(out, "\n");

			first[strcspn(first, "\n")] = '\0';
			why[i] = xasprintf("cuda-gdb listed no kernel table%s%.200s", *first ? ": " : "",
			    first);
		}
		free(out);
	}
	free(gdb);
}
