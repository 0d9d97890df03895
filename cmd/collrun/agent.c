/*
 * collrun --agent: what the SSH and Slurm launchers run for each rank. It is
 * internal (not in the option table): the launcher builds its command line,
 * `collrun --agent [--slurm] [--uid-stdin [--env-stdin]] [--path DIR] [--libpath DIR]
 * [-e NAME=VALUE]... -- PROGRAM ARGS`. The unique id and the user's -x
 * variables (--env-stdin, envwire.h) come on stdin: anyone can read argv.
 *
 * It starts the program in a new session (its own process group) with its
 * stdout and stderr on pipes of the agent's own, and speaks agentproto.h on
 * its stdout: every byte the program writes is wrapped in an output record,
 * so no line the program prints can pass for the agent's own word (its pid
 * or its end). Over SSH the agent's stdin is the channel: after the unique
 * id come signal records, and its end (collrun stopped the rank, or the
 * connection to collrun dropped) ends the whole group, SIGTERM then SIGKILL,
 * so no rank outlives its launcher. The agent signals nothing but its own
 * child's group. It exits the way the program did, re-raising a fatal signal
 * so that sshd reports it too (under srun, 0 once the record is sent: see
 * agent_watch).
 *
 * Under srun (--slurm) one command line serves every task: the agent takes
 * the rank and local rank from SLURM_PROCID and SLURM_LOCALID and the local
 * size from the step's task layout; Slurm's own step teardown replaces the
 * stdin watch there, and the program keeps the task's stdin.
 *
 * --path and --libpath put the launching installation's bin and lib first
 * in PATH and LD_LIBRARY_PATH, so `collrun -H ... collcheck` finds the same
 * suite on every host (Open MPI's --prefix).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "agentproto.h"
#include "clock.h"
#include "cmd.h"
#include "envwire.h"
#include "err.h"
#include "hostlist.h"
#include "launch.h"
#include "linebuf.h"
#include "loop.h"
#include "net.h"
#include "uid.h"

#define AGENT_GRACE_MS 2000
/* After the program ended, how long its leftovers may hold its pipes open. */
#define AGENT_DRAIN_MS 1000

/*
 * Under srun a step's signals reach every process of each task, the agent's
 * too: the user's scancel, collrun stopping the job through scancel (which
 * reaches the nodes one by one), Slurm ending the step. The program decides
 * what they mean; the agent lives on to pass on its last words and its end.
 * A second SIGTERM is collrun's last word before it has Slurm kill the step
 * (collrun sends SIGTERM once, and again only to kill): the agent SIGKILLs
 * the program itself, so the rank's end is still told, not lost with it.
 */
static const int agent_step_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define AGENT_NSTEP_SIGNALS (sizeof agent_step_signals / sizeof agent_step_signals[0])

static volatile sig_atomic_t agent_step_terms;	/* SIGTERMs so far */

struct agent {
	pid_t child;
	int slurm;
	int pidfd;
	int pipe[2];		/* read ends of the program's stdout and stderr; -1 at EOF */
	int stdin_open;		/* ssh: the channel, carrying signal records */
	struct linebuf cmd;	/* stdin split into records */
	int stopped;		/* the launcher is gone or asked us to stop */
	int gone;		/* the launcher no longer reads us */
	uint64_t kill_at;	/* SIGKILL the group then (0: none due) */
	int term_killed;	/* srun: SIGKILLed on a second SIGTERM */
	int exited;
	int status;
	uint64_t drain_until;
	size_t backlog;		/* bytes unread in the pipes when the program ended */
};

/* Export a variable under all its names: ours and torchrun's. */
static void
agent_export(const char *coll, const char *torch, const char *value)
{
	setenv(coll, value, 1);
	if (torch != NULL)
		setenv(torch, value, 1);
}

/*
 * A root on every address (collrun was given no interface) is reached from
 * each node at the address srun reached that node from, which slurmd hands
 * the task as SLURM_LAUNCH_NODE_IPADDR: the launching machine's host name
 * may resolve to loopback, or to a network the nodes are not on.
 */
static int
agent_slurm_root(void)
{
	const char *s = getenv("COLL_UNIQUE_ID"), *ip = getenv("SLURM_LAUNCH_NODE_IPADDR");
	struct coll_uid uid;
	char buf[UID_STR_LEN];
	uint16_t port;

	if (s == NULL || uid_parse(&uid, s) != COLL_OK || !net_addr_is_any(&uid.root))
		return 0;
	port = net_addr_port(&uid.root);
	if (ip == NULL || net_addr_parse(&uid.root, ip, port) != COLL_OK) {
		fprintf(stderr, "collrun --agent --slurm: the rendezvous listens on every address "
		    "of the launching host, and srun gave no usable SLURM_LAUNCH_NODE_IPADDR ('%s'): "
		    "set COLL_SOCKET_IFNAME where collrun runs\n", ip ? ip : "");
		return -1;
	}
	uid_format(&uid, buf, sizeof buf);
	return setenv("COLL_UNIQUE_ID", buf, 1);
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
		/* Rank 0's node, whatever srun inherited from collrun (its own 127.0.0.1). */
		setenv("MASTER_ADDR", hl.hosts[0].name, 1);
	}
	hostlist_free(&hl);
	return agent_slurm_root();
}

/*
 * One line of stdin into line (cap bytes), its newline dropped: its length,
 * -1 (the end, or nothing within 30 s) or -2 (longer than cap). A byte at a
 * time: what follows on stdin is the launcher's records, for the loop to read.
 */
static ssize_t
agent_line_stdin(char *line, size_t cap)
{
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	size_t n = 0;

	for (;;) {
		if (n + 1 >= cap)
			return -2;
		if (poll(&pfd, 1, 30000) <= 0 || read(STDIN_FILENO, line + n, 1) != 1)
			return -1;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = '\0';
	return (ssize_t)n;
}

/* The unique id, first line of stdin (it holds a secret: never in argv). */
static int
agent_uid_stdin(void)
{
	static char line[UID_STR_LEN + 32];

	if (agent_line_stdin(line, sizeof line) < 0) {
		fprintf(stderr, "collrun --agent: no unique id on stdin within 30 s: is the "
		    "launcher the same coll version?\n");
		return -2;
	}
	return setenv("COLL_UNIQUE_ID", line, 1);
}

/* The most variables a launcher sends (collrun's own -x count is far below). */
#define AGENT_ENV_MAX 4096

/* The user's variables for the program, from stdin up to "." (envwire.h: never in argv). */
static int
agent_env_stdin(void)
{
	static char line[LINEBUF_MAX];
	ssize_t n;
	int count = 0;

	while ((n = agent_line_stdin(line, sizeof line)) >= 0 && strcmp(line, ".") != 0) {
		if (++count > AGENT_ENV_MAX) {
			fprintf(stderr, "collrun --agent: over %d variables on stdin: is the "
			    "launcher the same coll version?\n", AGENT_ENV_MAX);
			return -2;
		}
		char *var = malloc((size_t)n + 1);

		if (var == NULL || envwire_decode(line, (size_t)n, var, (size_t)n + 1) != 0 ||
		    putenv(var) != 0) {
			fprintf(stderr, "collrun --agent: a bad variable line on stdin: is the "
			    "launcher the same coll version?\n");
			free(var);
			return -2;
		}
	}
	if (n == -2) {
		fprintf(stderr, "collrun --agent: a variable line on stdin is over %zu bytes: is "
		    "the launcher the same coll version?\n", sizeof line);
		return -2;
	}
	if (n < 0) {
		fprintf(stderr, "collrun --agent: the variables on stdin did not end (nothing more "
		    "within 30 s, or the end): is the launcher the same coll version?\n");
		return -2;
	}
	return 0;
}

/*
 * Under srun: the user's -x variables came in srun's environment under
 * LAUNCH_SLURM_XPREFIX, named in LAUNCH_SLURM_XNAMES (launch_slurm.c); the
 * program gets them as named. Only those: a COLL_X_* the user had in their
 * own environment stays as it is.
 */
static int
agent_env_unprefix(void)
{
	const char *list = getenv(LAUNCH_SLURM_XNAMES);
	char *names, *save = NULL, pre[320];

	if (list == NULL)
		return 0;
	if ((names = strdup(list)) == NULL)
		return -1;
	unsetenv(LAUNCH_SLURM_XNAMES);
	for (char *n = strtok_r(names, ",", &save); n != NULL; n = strtok_r(NULL, ",", &save)) {
		const char *v;

		snprintf(pre, sizeof pre, "%s%s", LAUNCH_SLURM_XPREFIX, n);
		if ((v = getenv(pre)) == NULL)
			continue;
		setenv(n, v, 1);
		unsetenv(pre);
	}
	free(names);
	return 0;
}

/* Put DIR first in the list variable NAME ("DIR" alone when it was unset). */
static void
agent_prepend(const char *name, const char *dir)
{
	const char *old = getenv(name);
	char *v;

	if (old == NULL || *old == '\0')
		v = strdup(dir);
	else if (asprintf(&v, "%s:%s", dir, old) == -1)
		v = NULL;
	if (v != NULL)
		setenv(name, v, 1);
	free(v);
}

static int
agent_args(int argc, char **argv, int *prog, int *slurm)
{
	const char *dirs[2] = { NULL, NULL };	/* --path, --libpath */
	int i = 2;

	if (i < argc && strcmp(argv[i], "--slurm") == 0) {
		*slurm = 1;
		i++;
		if (agent_env_unprefix() != 0)
			return -2;
	}
	if (i < argc && strcmp(argv[i], "--uid-stdin") == 0) {
		if (agent_uid_stdin() != 0)
			return -2;
		i++;
	}
	if (i < argc && strcmp(argv[i], "--env-stdin") == 0) {
		if (agent_env_stdin() != 0)
			return -2;
		i++;
	}
	for (; i + 1 < argc && (strcmp(argv[i], "--path") == 0 ||
	    strcmp(argv[i], "--libpath") == 0); i += 2)
		dirs[argv[i][2] != 'p'] = argv[i + 1];
	while (i + 1 < argc && strcmp(argv[i], "-e") == 0) {
		if (strchr(argv[i + 1], '=') == NULL || putenv(argv[i + 1]) != 0)
			return -1;
		i += 2;
	}
	/* After the variables: a PATH given with -x keeps the installation first too. */
	if (dirs[0] != NULL)
		agent_prepend("PATH", dirs[0]);
	if (dirs[1] != NULL)
		agent_prepend("LD_LIBRARY_PATH", dirs[1]);
	if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc)
		return -1;
	*prog = i + 1;
	return 0;
}

/* Write all of buf to our stdout, the launcher; -1 once it is gone. */
static int
agent_send(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(STDOUT_FILENO, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

static int
agent_send_number(enum agentproto_kind kind, long v)
{
	char rec[AGENTPROTO_LINE];

	return agent_send(rec, agentproto_encode_number(rec, kind, v));
}

/* The child's side: own session, output on our pipes, stdin from the channel never. */
static void
agent_child(struct agent *a, int out[3][2], char **argv, pid_t agent)
{
	char host[256] = "?";
	sigset_t none;
	int null;

	/*
	 * The program dies with the agent, however the agent ended: a step kill
	 * under srun SIGKILLs the agent, and Slurm's proctrack/linuxproc, which
	 * finds a step's processes by their parents, would lose a program
	 * orphaned before its sweep (collstack's worker, holding ptrace on ranks).
	 */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != agent)
		_exit(127);

	/*
	 * Over SSH the program gets a session of its own, so one signal to the
	 * group reaches all it started. Under srun it stays in the task's group,
	 * where Slurm's process tracking finds and signals it.
	 */
	if (!a->slurm)
		setsid();
	/* The group exists now: the agent may signal it (the end of out[2] tells it so). */
	close(out[2][1]);
	close(out[2][0]);
	signal(SIGPIPE, SIG_DFL);
	for (size_t i = 0; i < AGENT_NSTEP_SIGNALS; i++)
		signal(agent_step_signals[i], SIG_DFL);
	/* A mask inherited from whoever started us must not hide a stop's SIGTERM. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	dup2(out[0][1], STDOUT_FILENO);
	dup2(out[1][1], STDERR_FILENO);
	for (int s = 0; s < 2; s++) {
		close(out[s][0]);
		close(out[s][1]);
	}
	/* Over SSH our stdin carries the launcher's records: the program must not eat them. */
	if (!a->slurm && (null = open("/dev/null", O_RDONLY)) >= 0) {
		dup2(null, STDIN_FILENO);
		close(null);
	}
	execvp(argv[0], argv);
	gethostname(host, sizeof host - 1);
	fprintf(stderr, "collrun: cannot run '%s' on %s: %s\n", argv[0], host, strerror(errno));
	_exit(127);
}

/*
 * Start the program. Its stdout and stderr come to us on out[0] and out[1];
 * out[2] closes once it has its own process group, so a signal record read
 * right after this finds the group there (kill(-pid) of a group not yet made
 * would fail and the signal would be lost).
 */
static int
agent_spawn(struct agent *a, char **argv)
{
	int out[3][2], made = 0;
	pid_t agent = getpid();
	char c;

	for (; made < 3; made++)
		if (pipe2(out[made], O_CLOEXEC) != 0)
			break;
	if (made == 3 && (a->child = fork()) == 0)
		agent_child(a, out, argv, agent);
	for (int s = 0; s < made; s++)
		close(out[s][1]);
	if (made == 3 && a->child > 0)
		while (read(out[2][0], &c, 1) == -1 && errno == EINTR)
			;
	for (int s = 0; s < made; s++) {
		if (s < 2 && made == 3 && a->child > 0)
			a->pipe[s] = out[s][0];
		else
			close(out[s][0]);
	}
	return made == 3 && a->child > 0 ? 0 : -1;
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

/* Signal what the program started: its group over SSH, itself under srun. */
static void
agent_kill(const struct agent *a, int sig)
{
	/* Once reaped, the pid may be someone else's: never signal it again. */
	if (!a->exited)
		kill(a->slurm ? a->child : -a->child, sig);
}

/* The launcher is gone or wants the rank stopped: end the group, gently first. */
static void
agent_stop(struct agent *a)
{
	a->stdin_open = 0;
	if (!a->stopped) {
		agent_kill(a, SIGTERM);
		a->kill_at = clock_now_ms() + AGENT_GRACE_MS;
	}
	a->stopped = 1;
}

/*
 * After the end, what the pipes held then is the program's: it is drained
 * however slowly the launcher reads (each send may block), a stop included,
 * since the launcher still wants the last words. Bytes beyond that backlog
 * come from something that outlived the program: they get no extra time.
 */
static void
agent_drained(struct agent *a, size_t n)
{
	if (!a->exited || a->backlog == 0)
		return;
	a->backlog -= n < a->backlog ? n : a->backlog;
	a->drain_until = clock_now_ms() + AGENT_DRAIN_MS;
}

/* Forward what the program wrote as records: whole lines end theirs, a rest goes on. */
static void
agent_forward(struct agent *a, int s)
{
	/* At worst every byte is a newline, and each becomes a 3-byte record. */
	static char buf[16384], rec[3 * 16384 + AGENTPROTO_LINE];
	ssize_t n = read(a->pipe[s], buf, sizeof buf);
	size_t off = 0, len = 0;

	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		close(a->pipe[s]);
		a->pipe[s] = -1;
		return;
	}
	while (off < (size_t)n) {
		char *nl = memchr(buf + off, '\n', (size_t)n - off);
		size_t k = nl ? (size_t)(nl - buf) - off : (size_t)n - off;

		len += agentproto_encode_output(rec + len, s + 1, buf + off, k, nl != NULL);
		off += k + (nl != NULL);
	}
	if (agent_send(rec, len) != 0) {
		a->gone = 1;
		agent_stop(a);
	}
	agent_drained(a, (size_t)n);
}

static void
agent_command(void *arg, const char *line, size_t len)
{
	struct agent *a = arg;
	struct agentproto_msg m;

	if (agentproto_parse(line, len, &m) == COLL_OK && m.kind == AGENTPROTO_KILL)
		agent_kill(a, (int)m.value);
}

static void
agent_read_stdin(struct agent *a)
{
	size_t room;
	char *p = linebuf_space(&a->cmd, &room);
	ssize_t n = read(STDIN_FILENO, p, room);

	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		agent_stop(a);
		return;
	}
	linebuf_commit(&a->cmd, (size_t)n, agent_command, a);
}

/* What waits unread in a pipe; 0 once it is closed. */
static size_t
agent_pipe_unread(int fd)
{
	int n = 0;

	if (fd < 0 || ioctl(fd, FIONREAD, &n) != 0 || n < 0)
		return 0;
	return (size_t)n;
}

/*
 * The program ended: its group goes with it, and its pipes drain until they
 * close or stay idle for AGENT_DRAIN_MS (a process that left the group may
 * hold them open forever).
 */
static void
agent_reap(struct agent *a)
{
	siginfo_t si = { 0 };

	if (a->exited)
		return;
	/* Look without reaping: the pid stays ours while its group is killed. */
	if (waitid(P_PID, (id_t)a->child, &si, WEXITED | WNOHANG | WNOWAIT) == -1) {
		if (errno != ECHILD)
			return;
		a->status = 255 << 8;	/* reaped behind our back: its status is lost */
	} else if (si.si_pid != a->child) {
		return;
	} else {
		/* Whatever the program left in its group goes with it (Slurm's teardown does that there). */
		if (!a->slurm)
			kill(-a->child, SIGKILL);
		waitpid(a->child, &a->status, 0);
	}
	a->exited = 1;
	a->backlog = agent_pipe_unread(a->pipe[0]) + agent_pipe_unread(a->pipe[1]);
	a->drain_until = clock_now_ms() + AGENT_DRAIN_MS;
}

static int
agent_wait_ms(const struct agent *a)
{
	uint64_t now = clock_now_ms(), until = a->exited ? a->drain_until : a->kill_at;

	if (a->pidfd < 0 && !a->exited)
		return 100;
	if (until == 0)
		return 1000;
	return until > now ? (int)(until - now) : 0;
}

/* Under srun a second SIGTERM kills the program (once: the pidfd tells when it is gone). */
static void
agent_note_signal(struct agent *a)
{
	if (agent_step_terms >= 2 && !a->term_killed) {
		agent_kill(a, SIGKILL);
		a->term_killed = 1;
	}
}

static void
agent_on_pipe(struct loop *l, int fd, int events, void *arg)
{
	struct agent *a = arg;
	int s = fd == a->pipe[1];

	(void)events;
	agent_forward(a, s);
	if (a->pipe[s] < 0)
		loop_unwatch(l, fd);
}

static void
agent_on_stdin(struct loop *l, int fd, int events, void *arg)
{
	(void)l, (void)fd, (void)events;
	agent_read_stdin(arg);
}

/* The pidfd only wakes the round: agent_reap looks after every round. */
static void
agent_on_end(struct loop *l, int fd, int events, void *arg)
{
	(void)l, (void)fd, (void)events, (void)arg;
}

/* Under srun: a SIGTERM counted in the loop, so none slips in just before the wait. */
static void
agent_on_term(struct loop *l, int signo, void *arg)
{
	(void)l, (void)signo, (void)arg;
	agent_step_terms++;
}

/* Before each wait: the pidfd until the end is seen, stdin while it carries records. */
static void
agent_masks(struct loop *l, void *arg)
{
	const struct agent *a = arg;

	if (a->pidfd >= 0)
		loop_mask(l, a->pidfd, a->exited ? 0 : LOOP_READ);
	loop_mask(l, STDIN_FILENO, a->stdin_open ? LOOP_READ : 0);
}

/* The program's pipes, its pidfd and (over SSH) stdin; NULL if no loop can be made. */
static struct loop *
agent_loop_new(struct agent *a)
{
	struct loop *l = loop_new();

	if (l == NULL)
		return NULL;
	for (int s = 0; s < 2; s++)
		if (a->pipe[s] >= 0)
			loop_watch(l, a->pipe[s], LOOP_READ, agent_on_pipe, a);
	if (a->pidfd >= 0)
		loop_watch(l, a->pidfd, LOOP_READ, agent_on_end, a);
	loop_watch(l, STDIN_FILENO, 0, agent_on_stdin, a);
	if (a->slurm)
		loop_signal(l, SIGTERM, agent_on_term, a);
	loop_before(l, agent_masks, a);
	return l;
}

static void
agent_loop(struct agent *a)
{
	struct loop *l = agent_loop_new(a);

	if (l == NULL) {
		fprintf(stderr, "collrun --agent: cannot watch the program: %s\n", strerror(errno));
		return;
	}
	for (;;) {
		if (loop_once(l, agent_wait_ms(a)) < 0)
			break;
		agent_note_signal(a);
		agent_reap(a);
		if (a->exited && ((a->pipe[0] < 0 && a->pipe[1] < 0) || a->gone ||
		    clock_now_ms() >= a->drain_until))
			break;
		if (!a->exited && a->kill_at && clock_now_ms() >= a->kill_at) {
			agent_kill(a, SIGKILL);
			a->kill_at = 0;	/* once: the pidfd tells when it is gone */
		}
	}
	loop_free(l);
}

static int
agent_watch(struct agent *a)
{
	int sent;

	a->pidfd = (int)syscall(SYS_pidfd_open, a->child, 0);
	a->stdin_open = !a->slurm;
	agent_loop(a);
	if (!a->exited) {
		agent_kill(a, SIGKILL);
		waitpid(a->child, &a->status, 0);
	}
	for (int s = 0; s < 2; s++)
		if (a->pipe[s] >= 0)
			close(a->pipe[s]);
	if (a->pidfd >= 0)
		close(a->pidfd);
	linebuf_free(&a->cmd);
	if (WIFSIGNALED(a->status))
		sent = agent_send_number(AGENTPROTO_SIGNAL, WTERMSIG(a->status));
	else
		sent = agent_send_number(AGENTPROTO_EXIT, WEXITSTATUS(a->status));
	/*
	 * Under srun, once collrun has the end in the record, srun is told 0:
	 * collrun stops the others itself, after its grace, and says why; a
	 * failure told to srun would have its --kill-on-bad-exit SIGKILL every
	 * task, agents too, and no other rank could say how it ended. srun
	 * still kills the step if an agent itself dies: its rank is lost.
	 */
	if (a->slurm && sent == 0)
		return EXIT_OK;
	return agent_exit_like(a->status);
}

static void
agent_on_step_term(int sig)
{
	(void)sig;
	agent_step_terms++;
}

/* Under srun: the step's signals are the program's; SIGTERMs are counted. */
static void
agent_step_signals_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < AGENT_NSTEP_SIGNALS; i++) {
		int sig = agent_step_signals[i];

		sa.sa_handler = sig == SIGTERM ? agent_on_step_term : SIG_IGN;
		sigaction(sig, &sa, NULL);
	}
}

int
agent_main(int argc, char **argv)
{
	struct agent a = { .pipe = { -1, -1 } };
	int prog, r;
	long step;
	char *end = NULL;

	if ((r = agent_args(argc, argv, &prog, &a.slurm)) == -2)
		return EXIT_CANNOT;
	if (r != 0) {
		fprintf(stderr, "collrun --agent: internal use only: collrun --agent [--slurm] "
		    "[--uid-stdin] [--env-stdin] [--path DIR] [--libpath DIR] [-e NAME=VALUE]... -- "
		    "PROGRAM [ARGS...]\n");
		return EXIT_USAGE;
	}
	if (a.slurm && agent_slurm_env() != 0)
		return EXIT_CANNOT;
	/*
	 * Our stdout is the channel to the launcher: a program of the same user
	 * must not reach it through /proc/<agent>/fd/1 and write records there.
	 * The program gets its own dumpable flag back at exec.
	 */
	prctl(PR_SET_DUMPABLE, 0);
	/* An ignored SIGCHLD, inherited, would have the kernel reap the program for us. */
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	if (a.slurm)
		agent_step_signals_init();
	if (agent_spawn(&a, argv + prog) != 0) {
		fprintf(stderr, "collrun --agent: cannot start the program: %s\n", strerror(errno));
		return EXIT_CANNOT;
	}
	/* Our step, so that collrun's scancel reaches it alone in a larger allocation. */
	step = a.slurm && getenv("SLURM_STEP_ID") ? strtol(getenv("SLURM_STEP_ID"), &end, 10) : -1;
	if (step >= 0 && step <= 0x7fffffff && *end == '\0')
		agent_send_number(AGENTPROTO_STEP, step);
	if (agent_send_number(AGENTPROTO_PID, a.child) != 0) {
		a.gone = 1;
		agent_stop(&a);
	}
	return agent_watch(&a);
}
