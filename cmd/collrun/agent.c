/*
 * collrun --agent: what the SSH launcher runs on a remote host for each rank.
 * It is internal (not in the option table): the launcher builds its command
 * line, `collrun --agent -e NAME=VALUE ... -- PROGRAM ARGS`.
 *
 * It starts the program in a new session (its own process group), tells the
 * launcher the group id on its first stderr line, and watches its stdin, the
 * SSH channel: when that closes (collrun stopped the rank, or the connection
 * to collrun dropped) it ends the whole group, SIGTERM then SIGKILL, so no
 * rank outlives its launcher. It exits the way the program did, re-raising a
 * fatal signal so that sshd reports it.
 *
 * Under srun (--slurm) one command line serves every task: the agent takes
 * the rank and local rank from SLURM_PROCID and SLURM_LOCALID, the local size
 * from the step's task layout, and reports the program's end on its last
 * stderr line, since srun does not tell which task ended how. Slurm's own
 * step teardown replaces the stdin watch there.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "cmd.h"
#include "err.h"
#include "hostlist.h"
#include "uid.h"

#define AGENT_GRACE_MS 2000

/* Export a variable under all its names: ours and torchrun's. */
static void
agent_export(const char *coll, const char *torch, const char *value)
{
	setenv(coll, value, 1);
	if (torch != NULL)
		setenv(torch, value, 1);
}

/* COLL_RANK, LOCAL_RANK, ... from what slurmd gives each task. */
static int
agent_slurm_env(void)
{
	const char *procid = getenv("SLURM_PROCID"), *localid = getenv("SLURM_LOCALID");
	const char *nodeid = getenv("SLURM_NODEID"), *nodes = getenv("SLURM_STEP_NODELIST");
	struct hostlist hl = { 0 };
	char err[256], size[16];
	int node;

	if (procid == NULL || localid == NULL || nodeid == NULL || nodes == NULL) {
		fprintf(stderr, "collrun --agent --slurm: not inside a Slurm step (no SLURM_PROCID)\n");
		return -1;
	}
	agent_export("COLL_RANK", "RANK", procid);
	agent_export("COLL_LOCAL_RANK", "LOCAL_RANK", localid);
	agent_export("GROUP_RANK", NULL, nodeid);
	node = atoi(nodeid);
	if (hostlist_parse_slurm(&hl, nodes, getenv("SLURM_STEP_TASKS_PER_NODE"), err,
	    sizeof err) == COLL_OK && node >= 0 && node < hl.n) {
		snprintf(size, sizeof size, "%d", hl.hosts[node].slots);
		agent_export("COLL_LOCAL_SIZE", "LOCAL_WORLD_SIZE", size);
		if (getenv("MASTER_ADDR") == NULL)
			setenv("MASTER_ADDR", hl.hosts[0].name, 1);
	}
	hostlist_free(&hl);
	return 0;
}

/* The unique id, first line of stdin (it holds a secret: never in argv). */
static int
agent_uid_stdin(void)
{
	static char line[UID_STR_LEN + 32];
	size_t n = 0;
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };

	while (n + 1 < sizeof line) {
		if (poll(&pfd, 1, 30000) <= 0 || read(STDIN_FILENO, line + n, 1) != 1)
			return -1;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = '\0';
	return setenv("COLL_UNIQUE_ID", line, 1);
}

static int
agent_args(int argc, char **argv, int *prog, int *slurm)
{
	int i = 2;

	if (i < argc && strcmp(argv[i], "--slurm") == 0) {
		*slurm = 1;
		i++;
	}
	if (i < argc && strcmp(argv[i], "--uid-stdin") == 0) {
		if (agent_uid_stdin() != 0)
			return -1;
		i++;
	}
	while (i + 1 < argc && strcmp(argv[i], "-e") == 0) {
		if (strchr(argv[i + 1], '=') == NULL || putenv(argv[i + 1]) != 0)
			return -1;
		i += 2;
	}
	if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc)
		return -1;
	*prog = i + 1;
	return 0;
}

static pid_t
agent_spawn(char **argv)
{
	char host[256] = "?";
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	setsid();
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[0], argv);
	gethostname(host, sizeof host - 1);
	fprintf(stderr, "collrun: cannot run '%s' on %s: %s\n", argv[0], host, strerror(errno));
	_exit(127);
}

/* Exit as the program did; a signal is raised again so that sshd reports it. */
static int
agent_exit_like(int status)
{
	struct rlimit none = { 0, 0 };
	sigset_t all;

	if (!WIFSIGNALED(status))
		return WEXITSTATUS(status);
	setrlimit(RLIMIT_CORE, &none);
	signal(WTERMSIG(status), SIG_DFL);
	sigemptyset(&all);
	sigaddset(&all, WTERMSIG(status));
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	raise(WTERMSIG(status));
	return 128 + WTERMSIG(status);
}

static int
agent_watch(pid_t child, int slurm)
{
	int pidfd = (int)syscall(SYS_pidfd_open, child, 0), status = 0, stdin_open = !slurm;
	uint64_t kill_at = 0;
	char buf[4096];

	for (;;) {
		struct pollfd pfd[2] = { { pidfd, POLLIN, 0 }, { STDIN_FILENO, POLLIN, 0 } };
		int t = kill_at ? (int)(kill_at > clock_now_ms() ? kill_at - clock_now_ms() : 0) : 1000;

		if (poll(pfd, stdin_open ? 2 : 1, pidfd >= 0 ? t : 100) == -1 && errno != EINTR)
			break;
		if (waitpid(child, &status, WNOHANG) == child)
			break;
		if (stdin_open && pfd[1].revents && read(STDIN_FILENO, buf, sizeof buf) <= 0) {
			/* The launcher is gone or wants the rank stopped. */
			stdin_open = 0;
			kill(-child, SIGTERM);
			kill_at = clock_now_ms() + AGENT_GRACE_MS;
		}
		if (kill_at && clock_now_ms() >= kill_at)
			kill(-child, SIGKILL);
	}
	/* Whatever the program left in its group goes with it. */
	kill(-child, SIGKILL);
	if (pidfd >= 0)
		close(pidfd);
	if (slurm) {
		fprintf(stderr, "coll-agent: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
		    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		fflush(stderr);
	}
	return agent_exit_like(status);
}

int
agent_main(int argc, char **argv)
{
	pid_t child;
	int prog, slurm = 0, code;

	if (agent_args(argc, argv, &prog, &slurm) != 0) {
		fprintf(stderr, "collrun --agent: internal use only: collrun --agent [--slurm] "
		    "[--uid-stdin] [-e NAME=VALUE]... -- PROGRAM [ARGS...]\n");
		return EXIT_USAGE;
	}
	if (slurm && agent_slurm_env() != 0)
		return EXIT_CANNOT;
	signal(SIGPIPE, SIG_IGN);
	child = agent_spawn(argv + prog);
	if (child == -1) {
		fprintf(stderr, "collrun: cannot fork: %s\n", strerror(errno));
		return EXIT_CANNOT;
	}
	fprintf(stderr, "coll-agent: pgid %d\n", (int)child);
	fflush(stderr);
	code = agent_watch(child, slurm);
	return code;
}
