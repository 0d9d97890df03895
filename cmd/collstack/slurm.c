/*
 * collstack --slurm JOBID from anywhere Slurm's commands work: squeue names
 * the job's nodes and state, and the workers run as a step of that job
 * (srun --jobid --overlap, so they do not wait for the CPUs its tasks hold).
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

extern char **environ;

#include "clock.h"
#include "collstack.h"
#include "err.h"
#include "launch.h"
#include "xmalloc.h"

#define STK_SQUEUE_MAX (1u << 20)
#define STK_SQUEUE_MS 30000

/* Read both pipes to their ends (or the deadline), and close them; 0, or -1 if cut short. */
static int
stk_drain(int fds[2], char *buf[2], size_t cap)
{
	uint64_t until = clock_now_ms() + STK_SQUEUE_MS;
	size_t len[2] = { 0, 0 };
	int left_open = 2, r = 0;

	while (left_open > 0 && r == 0) {
		struct pollfd p[2];
		int n = 0, left = (int)(until - clock_now_ms());

		if (clock_now_ms() >= until) {
			r = -1;
			break;
		}
		for (int i = 0; i < 2; i++)
			p[i] = (struct pollfd){ fds[i], POLLIN, 0 };
		/* An error here cannot come from good descriptors: treated as no answer. */
		if ((n = poll(p, 2, left)) < 0 && errno != EINTR)
			r = -1;
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
			left_open--;
		}
	}
	for (int i = 0; i < 2; i++) {
		buf[i][len[i]] = '\0';
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return r;
}

/* The environment less every SQUEUE_* setting: a user's filters could hide the job. */
static char **
stk_squeue_env(void)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = xcalloc(n + 1, sizeof *env);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "SQUEUE_", 7) != 0)
			env[k++] = environ[i];
	return env;
}

/* The child: squeue for the job, one line per job. */
static void
stk_squeue_exec(const char *path, const char *id, char **env, int out, int err)
{
	char *argv[] = { "squeue", "--noheader", "--jobs", (char *)id, "--format", "%A %T %N",
		NULL };

	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	execve(path, argv, env);
	_exit(127);
}

/* Run squeue for the job: its lines "JOBID STATE NODES" on out, or -1 with why. */
static int
stk_squeue(const char *id, char **out, char *err, size_t len)
{
	char path[4096], *buf[2], *nl;
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, status = -1, r;
	char **env;
	pid_t pid;

	*out = NULL;
	if (launch_resolve("squeue", path, sizeof path) != COLL_OK) {
		snprintf(err, len, "--slurm %s: squeue is not in PATH (install slurm-client), or "
		    "give the job's nodes with -H", id);
		return -1;
	}
	/* Made before the fork: the child only execs. */
	env = stk_squeue_env();
	if (pipe2(po, O_CLOEXEC) == -1 || pipe2(pe, O_CLOEXEC) == -1 || (pid = fork()) < 0) {
		snprintf(err, len, "--slurm %s: cannot start squeue: %s", id, strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (po[i] >= 0)
				close(po[i]);
			if (pe[i] >= 0)
				close(pe[i]);
		}
		free(env);
		return -1;
	}
	if (pid == 0)
		stk_squeue_exec(path, id, env, po[1], pe[1]);
	free(env);
	close(po[1]);
	close(pe[1]);
	buf[0] = xmalloc(STK_SQUEUE_MAX);
	buf[1] = xmalloc(STK_SQUEUE_MAX);
	buf[0][0] = buf[1][0] = '\0';
	r = stk_drain((int[2]){ po[0], pe[0] }, buf, STK_SQUEUE_MAX);
	if (r != 0)
		kill(pid, SIGKILL);
	while ((r == 0 ? waitpid(pid, &status, 0) : waitpid(pid, NULL, 0)) == -1 &&
	    errno == EINTR)
		;
	if ((nl = strchr(buf[1], '\n')) != NULL)
		*nl = '\0';
	if (r != 0)
		snprintf(err, len, "--slurm %s: squeue did not answer in %d s: is slurmctld up?",
		    id, STK_SQUEUE_MS / 1000);
	else if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		snprintf(err, len, "--slurm %s: squeue failed: %.300s", id,
		    buf[1][0] ? buf[1] : "(it said nothing)");
	else
		*out = xstrdup(buf[0]);
	free(buf[0]);
	free(buf[1]);
	return *out != NULL ? 0 : -1;
}

int
stk_slurm_nodes(const char *id, char **jobid, char **nodes, char *err, size_t len)
{
	char *out, *line = NULL, *job, *state, *list, *save = NULL, *ls = NULL;
	int lines = 0;

	*nodes = *jobid = NULL;
	if (stk_squeue(id, &out, err, len) != 0)
		return -1;
	for (char *t = strtok_r(out, "\n", &ls); t != NULL; t = strtok_r(NULL, "\n", &ls))
		if (lines++ == 0)
			line = t;
	job = line ? strtok_r(line, " ", &save) : NULL;
	state = job ? strtok_r(NULL, " ", &save) : NULL;
	list = state ? strtok_r(NULL, " ", &save) : NULL;
	if (state == NULL)
		snprintf(err, len, "--slurm %s: Slurm knows no such job now (it ended, or the id "
		    "is wrong: see squeue)", id);
	else if (lines > 1)
		snprintf(err, len, "--slurm %s: that is %d jobs (an array or a heterogeneous job): "
		    "name one, as squeue -r shows it (%s_N)", id, lines, id);
	else if (strcmp(state, "RUNNING") != 0 && strcmp(state, "COMPLETING") != 0)
		snprintf(err, len, "--slurm %s: the job is %s, not running: it has no stacks to "
		    "read", id, state);
	else if (list == NULL || list[0] == '\0' || strcmp(list, "(null)") == 0)
		snprintf(err, len, "--slurm %s: squeue names no nodes for the job", id);
	else {
		*nodes = xstrdup(list);
		*jobid = xstrdup(job);
	}
	free(out);
	return *nodes != NULL ? 0 : -1;
}
