/*
 * collstack --cuda: the GPU kernels each process runs, as cuda-gdb lists
 * them ("info cuda kernels"), in batch mode: attach, list, detach. It is
 * slow (cuda-gdb takes some 10 s to attach to a PyTorch process on an H100)
 * and it stops the process meanwhile, so it is asked for, never done by
 * default, and runs after collstack's own snapshot is over. The processes of
 * a host are attached to at once (each cuda-gdb without its lock file), and
 * those that outlast the time given are killed, which detaches them.
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

char *
stk_cuda_parse(const char *out)
{
	char *text = xstrdup(out), *save = NULL, *res = NULL, *hdr[16], *w[16];
	int ncol = 0, dev = -1, status = -1, inv = -1;

	for (char *line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *p = line;
		char copy[1024];
		int n;

		while (*p == ' ' || *p == '*')
			p++;
		if (ncol == 0) {
			if (strncmp(p, "Kernel ", 7) != 0 || strstr(p, "Invocation") == NULL)
				continue;
			snprintf(copy, sizeof copy, "%s", p);
			ncol = stk_cuda_words(copy, hdr, 16);
			for (int i = 0; i < ncol; i++) {
				dev = strcmp(hdr[i], "Dev") == 0 ? i : dev;
				status = strcmp(hdr[i], "Status") == 0 ? i : status;
				inv = strcmp(hdr[i], "Invocation") == 0 ? i : inv;
			}
			if (inv != ncol - 1 || dev < 0 || status < 0)
				ncol = 0;	/* not a table we know */
			continue;
		}
		if (*p < '0' || *p > '9')
			continue;
		snprintf(copy, sizeof copy, "%s", p);
		if ((n = stk_cuda_words(copy, w, ncol - 1)) < ncol - 1)
			continue;
		/* The invocation is the rest of the line, spaces and all. */
		{
			const char *rest = p + (w[ncol - 2] - copy) + strlen(w[ncol - 2]);
			char *old = res;

			while (*rest == ' ')
				rest++;
			if (*rest == '\0')
				continue;
			res = old ? xasprintf("%s; %s (device %s, %s)", old, rest, w[dev], w[status]) :
			    xasprintf("%s (device %s, %s)", rest, w[dev], w[status]);
			free(old);
		}
	}
	free(text);
	return res;
}

struct stk_cuda_run {
	pid_t child;
	int fd;
	char *out;
	size_t len;
	int status, done;
};

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
		execl(gdb, gdb, "-nx", "-q", "-batch", "--cuda-use-lockfile=0", "-p", pidstr,
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

void
stk_cuda_kernels(const pid_t *pids, int n, double budget_s, char **kernels, char **why)
{
	struct stk_cuda_run *r = xcalloc((size_t)n + 1, sizeof *r);
	struct pollfd *pf = xcalloc((size_t)n + 1, sizeof *pf);
	char *gdb = stk_cuda_gdb();
	uint64_t deadline = clock_now_ms() + (uint64_t)(budget_s * 1000);
	int open_fds = 0;

	for (int i = 0; i < n; i++) {
		kernels[i] = why[i] = NULL;
		r[i].fd = -1;
		if (gdb == NULL) {
			why[i] = xstrdup("no cuda-gdb here (set COLL_CUDA_GDB, or put it on PATH)");
			continue;
		}
		if ((r[i].child = stk_cuda_spawn(gdb, pids[i], &r[i].fd)) < 0) {
			why[i] = xasprintf("cannot start %s: %s", gdb, strerror(errno));
			continue;
		}
		r[i].out = xmalloc(STK_CUDA_OUT_MAX + 1);
		open_fds++;
	}
	while (open_fds > 0 && clock_now_ms() < deadline) {
		int m = 0;

		for (int i = 0; i < n; i++)
			if (r[i].fd >= 0)
				pf[m++] = (struct pollfd){ r[i].fd, POLLIN, 0 };
		if (poll(pf, (nfds_t)m, 200) < 0 && errno != EINTR)
			break;
		for (int i = 0, k = 0; i < n; i++) {
			ssize_t got;

			if (r[i].fd < 0)
				continue;
			if (pf[k++].revents == 0)
				continue;
			got = read(r[i].fd, r[i].out + r[i].len, STK_CUDA_OUT_MAX - r[i].len);
			if (got > 0 && r[i].len + (size_t)got < STK_CUDA_OUT_MAX) {
				r[i].len += (size_t)got;
				continue;
			}
			if (got < 0 && errno == EINTR)
				continue;
			close(r[i].fd);
			r[i].fd = -1;
			open_fds--;
		}
	}
	for (int i = 0; i < n; i++) {
		if (r[i].child <= 0)
			continue;
		if (r[i].fd >= 0) {
			/* Killing the debugger detaches it from the process. */
			kill(r[i].child, SIGKILL);
			close(r[i].fd);
			why[i] = xasprintf("cuda-gdb gave no answer within %.0f s (raise -T)",
			    budget_s);
		}
		waitpid(r[i].child, &r[i].status, 0);
		if (why[i] != NULL) {
			free(r[i].out);
			continue;
		}
		r[i].out[r[i].len] = '\0';
		kernels[i] = stk_cuda_parse(r[i].out);
		if (kernels[i] == NULL && strstr(r[i].out, "No CUDA kernels") == NULL) {
			/* Its own words, first line, say why (permissions, no CUDA in the process). */
			char *nl, *first = r[i].out;

			while (*first == '\n')
				first++;
			if ((nl = strchr(first, '\n')) != NULL)
				*nl = '\0';
			why[i] = xasprintf("cuda-gdb listed no kernel table%s%s", *first ? ": " : "",
			    first);
		} else if (kernels[i] == NULL)
			kernels[i] = xstrdup("none");
		free(r[i].out);
	}
	free(gdb);
	free(pf);
	free(r);
}
