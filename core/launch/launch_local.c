/*
 * The local launcher. Each rank runs in its own process group so that a
 * signal reaches everything it started; its exit is watched through a pidfd,
 * which the event loop (loop.h) watches next to the output pipes, so no
 * SIGCHLD handler has to be installed in a library.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "launch.h"
#include "linebuf.h"
#include "loop.h"
#include "xmalloc.h"

extern char **environ;

struct local_line_ctx {
	struct launch *l;
	int rank;
	int stream;
};

struct local_stream {
	int fd;
	struct linebuf lb;
	struct local_line_ctx ctx;	/* whose stream it is, for the loop's callback */
};

struct local_proc {
	pid_t pid;
	int pidfd;
	int state;
	int code;
	int ended;		/* its pidfd was readable this round */
	struct local_stream out[2];	/* stdout, stderr */
};

struct local {
	struct launch *self;
	int nranks;
	int *lrank, *lsize;	/* per rank: its place among its host's ranks (local_index) */
	struct local_proc *procs;
	struct loop *loop;
};

/*
 * Every rank's place among its host's ranks, in one pass: launch_place's
 * scan per rank made the start O(ranks^2), minutes at 100,000 ranks.
 */
static int
local_host(const struct launch_opts *o, int rank)
{
	return o->rank_host != NULL && o->rank_host[rank] > 0 ? o->rank_host[rank] : 0;
}

static void
local_index(struct local *lc, const struct launch_opts *o)
{
	int nhosts = 1, *count;

	for (int r = 0; r < o->nranks; r++)
		if (local_host(o, r) >= nhosts)
			nhosts = local_host(o, r) + 1;
	count = xcalloc((size_t)nhosts, sizeof *count);
	lc->lrank = xcalloc((size_t)o->nranks, sizeof *lc->lrank);
	lc->lsize = xcalloc((size_t)o->nranks, sizeof *lc->lsize);
	for (int r = 0; r < o->nranks; r++)
		lc->lrank[r] = count[local_host(o, r)]++;
	for (int r = 0; r < o->nranks; r++)
		lc->lsize[r] = count[local_host(o, r)];
	free(count);
}

/* Our environment less the variables we set, then those. */
static char **
local_env(const struct local *lc, const struct launch_opts *o, int rank)
{
	char uidstr[UID_STR_LEN], **ours, **env;
	size_t n = 0, k = 0, m = 0;
	int lrank, lsize;

	uid_format(o->uid, uidstr, sizeof uidstr);
	lrank = lc->lrank[rank];
	lsize = lc->lsize[rank];
	ours = launch_env_vars(o, rank, lrank, lsize, uidstr);
	while (environ[n] != NULL)
		n++;
	while (ours[m] != NULL)
		m++;
	env = xcalloc(n + m + 1, sizeof *env);
	for (size_t i = 0; i < n; i++) {
		int skip = 0;
		for (size_t j = 0; j < m && !skip; j++)
			skip = strncmp(environ[i], ours[j], (size_t)(strchr(ours[j], '=') - ours[j]) + 1) == 0;
		if (!skip)
			env[k++] = xstrdup(environ[i]);
	}
	for (size_t j = 0; j < m; j++)
		env[k++] = ours[j];
	free(ours);
	return env;
}

/* Why execve failed, as a constant string: strerror is not async-signal-safe. */
static const char *
local_exec_why(int e)
{
	switch (e) {
	case ENOENT:
		return "no such file (a script's #! interpreter may be missing)";
	case EACCES:
		return "permission denied";
	case ETXTBSY:
		return "the file is open for writing (a build still running?)";
	case ENOEXEC:
		return "not an executable format";
	case E2BIG:
		return "its arguments and environment are too long";
	case ENOMEM:
		return "out of memory";
	default:
		return "execve failed";
	}
}

/* Pieces of a line to standard error, with write(2) only. */
static void
local_say(const char *const *parts, int n)
{
	for (int i = 0; i < n; i++)
		if (write(STDERR_FILENO, parts[i], strlen(parts[i])) < 0)
			return;
}

/* In the child: only async-signal-safe calls until execve. */
static void
local_child(const struct launch_opts *o, char **env, int pout[2], int perr[2], int rank)
{
	const char *msg[5] = { "collrun: cannot execute ", o->path, ": ", NULL, "\n" };
	sigset_t none;
	int devnull;

	setpgid(0, 0);
	/*
	 * Signals came blocked from the fork: the launcher's handlers go first,
	 * or a signal to the new group before execve ran them here, in the
	 * rank, as if the user had signalled the launcher.
	 */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (!(o->keep_stdin && rank == 0) && (devnull = open("/dev/null", O_RDONLY)) >= 0) {
		dup2(devnull, STDIN_FILENO);
		close(devnull);
	}
	dup2(pout[1], STDOUT_FILENO);
	dup2(perr[1], STDERR_FILENO);
	close(pout[0]);
	close(perr[0]);
	close(pout[1]);
	close(perr[1]);
	execve(o->path, o->argv, env);
	msg[3] = local_exec_why(errno);
	local_say(msg, 5);
	_exit(127);
}

static int
local_pipes(int pout[2], int perr[2])
{
	if (pipe2(pout, O_CLOEXEC) == -1)
		return COLL_ESYS;
	if (pipe2(perr, O_CLOEXEC) == -1) {
		close(pout[0]);
		close(pout[1]);
		return COLL_ESYS;
	}
	return COLL_OK;
}

static void local_read(struct local *lc, struct local_stream *st);

static void
local_on_stream(struct loop *lp, int fd, int events, void *arg)
{
	struct local_stream *st = arg;

	(void)lp, (void)fd, (void)events;
	local_read(st->ctx.l->impl, st);
}

/* Ends are only noted here: local_poll reaps them once every stream of the round is read. */
static void
local_on_end(struct loop *lp, int fd, int events, void *arg)
{
	(void)lp, (void)fd, (void)events;
	((struct local_proc *)arg)->ended = 1;
}

static int
local_watch(struct local *lc, struct local_proc *p)
{
	for (int s = 0; s < 2; s++)
		if (loop_watch(lc->loop, p->out[s].fd, LOOP_READ, local_on_stream, &p->out[s]) != COLL_OK)
			return COLL_ESYS;
	if (p->pidfd >= 0 && loop_watch(lc->loop, p->pidfd, LOOP_READ, local_on_end, p) != COLL_OK)
		return COLL_ESYS;
	return COLL_OK;
}

static int
local_one(struct local *lc, const struct launch_opts *o, int rank)
{
	struct local_proc *p = &lc->procs[rank];
	int pout[2], perr[2];
	sigset_t all, old;
	char **env;
	pid_t pid;

	if (local_pipes(pout, perr) != COLL_OK)
		return COLL_ESYS;
	env = local_env(lc, o, rank);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid == 0)
		local_child(o, env, pout, perr, rank);
	sigprocmask(SIG_SETMASK, &old, NULL);
	launch_env_free(env);
	close(pout[1]);
	close(perr[1]);
	if (pid == -1) {
		close(pout[0]);
		close(perr[0]);
		return COLL_ESYS;
	}
	setpgid(pid, pid);	/* also here: no race with a signal sent right away */
	p->pid = pid;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	for (int s = 0; s < 2; s++)
		p->out[s].ctx = (struct local_line_ctx){ lc->self, rank, s + 1 };
	p->out[0].fd = pout[0];
	p->out[1].fd = perr[0];
	fcntl(pout[0], F_SETFL, O_NONBLOCK);
	fcntl(perr[0], F_SETFL, O_NONBLOCK);
	return local_watch(lc, p);
}

static void local_signal(struct launch *l, int sig);
static int local_poll(struct launch *l, int timeout_ms, int wake_fd);
static void local_free(struct launch *l);

static int
local_start(struct launch *l, const struct launch_opts *o)
{
	struct local *lc = xcalloc(1, sizeof *lc);
	int r = COLL_OK;

	l->impl = lc;
	lc->self = l;
	lc->nranks = o->nranks;
	lc->procs = xcalloc((size_t)o->nranks, sizeof *lc->procs);
	for (int i = 0; i < o->nranks; i++)
		lc->procs[i].pidfd = lc->procs[i].out[0].fd = lc->procs[i].out[1].fd = -1;
	if ((lc->loop = loop_new()) == NULL)
		r = COLL_ESYS;
	local_index(lc, o);
	for (int i = 0; i < o->nranks && r == COLL_OK; i++) {
		r = local_one(lc, o, i);
		if (r == COLL_OK && l->cb.starting != NULL && l->cb.starting(l->cb.arg, i + 1,
		    o->nranks) != 0)
			r = COLL_EABORTED;
	}
	if (r != COLL_OK) {
		int e = errno;
		local_signal(l, SIGKILL);
		while (local_poll(l, 1000, -1) > 0)
			;
		local_free(l);
		errno = e;
	}
	return r;
}

static void
local_line(void *arg, const char *line, size_t len)
{
	struct local_line_ctx *x = arg;

	x->l->cb.output(x->l->cb.arg, x->rank, x->stream, line, len);
}

/* Read what a stream has; at EOF hand over the rest and close it. */
static void
local_read(struct local *lc, struct local_stream *st)
{
	size_t room;
	ssize_t n;
	char *p;

	for (;;) {
		p = linebuf_space(&st->lb, &room);
		n = read(st->fd, p, room);
		if (n > 0) {
			linebuf_commit(&st->lb, (size_t)n, local_line, &st->ctx);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		linebuf_flush(&st->lb, local_line, &st->ctx);
		loop_unwatch(lc->loop, st->fd);
		close(st->fd);
		st->fd = -1;
		return;
	}
}

static void
local_reap(struct launch *l, int rank)
{
	struct local *lc = l->impl;
	struct local_proc *p = &lc->procs[rank];
	int status;

	if (p->state != LAUNCH_RUNNING || waitpid(p->pid, &status, WNOHANG) != p->pid)
		return;
	if (WIFSIGNALED(status)) {
		p->state = LAUNCH_SIGNALED;
		p->code = WTERMSIG(status);
	} else {
		p->state = LAUNCH_EXITED;
		p->code = WEXITSTATUS(status);
	}
	if (p->pidfd >= 0) {
		loop_unwatch(lc->loop, p->pidfd);
		close(p->pidfd);
	}
	p->pidfd = -1;
	/* Deliver what the rank wrote before it ended, then the news of its end. */
	for (int s = 0; s < 2; s++)
		if (p->out[s].fd >= 0)
			local_read(lc, &p->out[s]);
	l->cb.exited(l->cb.arg, rank, p->state, p->code);
}

static int local_running(const struct launch *l);

/* Has this rank ended by a signal? (Peeks without reaping it.) */
static int
local_killed(struct local *lc, int rank)
{
	siginfo_t si = { 0 };

	if (lc->procs[rank].state != LAUNCH_RUNNING ||
	    waitid(P_PID, (id_t)lc->procs[rank].pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
		return 0;
	return si.si_pid != 0 && (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED);
}

static void
local_on_wake(struct loop *lp, int fd, int events, void *arg)
{
	/* Nothing to do: the round ends, and the caller looks at what woke it. */
	(void)lp, (void)fd, (void)events, (void)arg;
}

static int
local_poll(struct launch *l, int timeout_ms, int wake_fd)
{
	struct local *lc = l->impl;

	if (lc->loop == NULL || loop_count(lc->loop) == 0)
		return local_running(l);
	if (wake_fd >= 0)
		loop_watch(lc->loop, wake_fd, LOOP_READ, local_on_wake, NULL);
	/* Every ready stream is read in the round; the ends wait for the passes below. */
	loop_once(lc->loop, timeout_ms);
	if (wake_fd >= 0)
		loop_unwatch(lc->loop, wake_fd);
	/* Ends seen together: a rank killed by a signal is more likely the cause. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < lc->nranks; i++)
			if (lc->procs[i].ended && local_killed(lc, i) == !pass)
				local_reap(l, i);
	for (int i = 0; i < lc->nranks; i++)
		lc->procs[i].ended = 0;
	/* Without pidfd support fall back to polling for exits. */
	for (int i = 0; i < lc->nranks; i++)
		if (lc->procs[i].pidfd < 0)
			local_reap(l, i);
	return local_running(l);
}

static void
local_signal(struct launch *l, int sig)
{
	struct local *lc = l->impl;

	/* Also a group whose leader ended but whose children still hold its output. */
	for (int i = 0; i < lc->nranks; i++) {
		const struct local_proc *p = &lc->procs[i];

		if (p->pid > 0 && (p->state == LAUNCH_RUNNING || p->out[0].fd >= 0 ||
		    p->out[1].fd >= 0))
			kill(-p->pid, sig);
	}
}

static int
local_running(const struct launch *l)
{
	const struct local *lc = l->impl;
	int n = 0;

	for (int i = 0; i < lc->nranks; i++) {
		const struct local_proc *p = &lc->procs[i];
		n += p->pid > 0 && (p->state == LAUNCH_RUNNING || p->out[0].fd >= 0 ||
		    p->out[1].fd >= 0);
	}
	return n;
}

static pid_t
local_pid(const struct launch *l, int rank)
{
	return ((const struct local *)l->impl)->procs[rank].pid;
}

static void
local_free(struct launch *l)
{
	struct local *lc = l->impl;

	for (int i = 0; i < lc->nranks; i++) {
		struct local_proc *p = &lc->procs[i];
		for (int s = 0; s < 2; s++) {
			if (p->out[s].fd >= 0)
				close(p->out[s].fd);
			linebuf_free(&p->out[s].lb);
		}
		if (p->pidfd >= 0)
			close(p->pidfd);
	}
	loop_free(lc->loop);
	free(lc->lrank);
	free(lc->lsize);
	free(lc->procs);
	free(lc);
	l->impl = NULL;
}

const struct launch_ops launch_local_ops = {
	local_start, local_poll, local_signal, local_running, local_pid, local_free,
};
