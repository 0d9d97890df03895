/*
 * collstack --slurm JOBID from anywhere Slurm's commands work: squeue names
 * the job's nodes and state, and the workers run as a step of that job
 * (srun --jobid --overlap, so they do not wait for the CPUs its tasks hold).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "collstack.h"
#include "err.h"
#include "launch.h"
#include "xmalloc.h"

#define STK_SQUEUE_MAX (1u << 20)
#define STK_SQUEUE_MS 30000

/* Read both pipes to their ends (or the deadline); 0, or -1 when cut short. */
static int
stk_drain(int fds[2], char *buf[2], size_t cap)
{
	uint64_t until = clock_now_ms() + STK_SQUEUE_MS;
	size_t len[2] = { 0, 0 };
	int open = 2;

	while (open > 0) {
		struct pollfd p[2];
		int n = 0, left = (int)(until - clock_now_ms());

		if (clock_now_ms() >= until)
			return -1;
		for (int i = 0; i < 2; i++)
			p[i] = (struct pollfd){ fds[i], POLLIN, 0 };
		if ((n = poll(p, 2, left)) < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < 2 && n > 0; i++) {
			ssize_t k;

			if (fds[i] < 0 || p[i].revents == 0)
				continue;
			k = read(fds[i], buf[i] + len[i], cap - 1 - len[i]);
			if (k > 0 && (len[i] += (size_t)k) < cap - 1)
				continue;
			if (k < 0 && errno == EINTR)
				continue;
			buf[i][len[i]] = '\0';
			close(fds[i]);
			fds[i] = -1;	/* poll skips a negative descriptor */
			open--;
		}
	}
	return 0;
}

/* Run squeue for the job: its "STATE NODES" on out, or -1 with why. */
static int
stk_squeue(const char *id, char **out, char *err, size_t len)
{
	char path[4096], *buf[2], *nl;
	int po[2], pe[2], fds[2], status = 0, r;
	pid_t pid;

	*out = NULL;
	if (launch_resolve("squeue", path, sizeof path) != COLL_OK) {
		snprintf(err, len, "--slurm %s: squeue is not in PATH (install slurm-client), or "
		    "give the job's nodes with -H", id);
		return -1;
	}
	if (pipe(po) == -1 || pipe(pe) == -1) {
		snprintf(err, len, "--slurm %s: cannot make a pipe: %s", id, strerror(errno));
		return -1;
	}
	if ((pid = fork()) == 0) {
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
		execl(path, "squeue", "--noheader", "--jobs", id, "--format", "%T %N",
		    (char *)NULL);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	if (pid < 0) {
		close(po[0]);
		close(pe[0]);
		snprintf(err, len, "--slurm %s: cannot start squeue: %s", id, strerror(errno));
		return -1;
	}
	buf[0] = xmalloc(STK_SQUEUE_MAX);
	buf[1] = xmalloc(STK_SQUEUE_MAX);
	buf[0][0] = buf[1][0] = '\0';
	fds[0] = po[0];
	fds[1] = pe[0];
	r = stk_drain(fds, buf, STK_SQUEUE_MAX);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (r != 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if ((nl = strchr(buf[1], '\n')) != NULL)
		*nl = '\0';
	if (r != 0)
		snprintf(err, len, "--slurm %s: squeue did not answer in %d s: is slurmctld up?",
		    id, STK_SQUEUE_MS / 1000);
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		snprintf(err, len, "--slurm %s: squeue failed: %.300s", id,
		    buf[1][0] ? buf[1] : "(it said nothing)");
	else
		*out = xstrdup(buf[0]);
	free(buf[0]);
	free(buf[1]);
	return *out != NULL ? 0 : -1;
}

int
stk_slurm_nodes(const char *id, char **nodes, char *err, size_t len)
{
	char *out, *state, *list, *save = NULL;

	*nodes = NULL;
	if (stk_squeue(id, &out, err, len) != 0)
		return -1;
	state = strtok_r(out, " \n", &save);
	list = state ? strtok_r(NULL, " \n", &save) : NULL;
	if (state == NULL)
		snprintf(err, len, "--slurm %s: Slurm knows no such job now (it ended, or the id "
		    "is wrong: see squeue)", id);
	else if (strcmp(state, "RUNNING") != 0 && strcmp(state, "COMPLETING") != 0)
		snprintf(err, len, "--slurm %s: the job is %s, not running: it has no stacks to "
		    "read", id, state);
	else if (list == NULL || list[0] == '\0' || strcmp(list, "(null)") == 0)
		snprintf(err, len, "--slurm %s: squeue names no nodes for the job", id);
	else
		*nodes = xstrdup(list);
	free(out);
	return *nodes != NULL ? 0 : -1;
}
