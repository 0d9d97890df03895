/*
 * The local launcher. Each rank runs in its own process group so that a
 * signal reaches everything it started; its exit is watched through a pidfd,
 * which poll(2) can wait on next to the output pipes, so no SIGCHLD handler
 * has to be installed in a library.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "launch.h"
#include "xmalloc.h"

extern char **environ;

struct launch_line {
	char *buf;
	size_t len;
	int fd;
};

struct launch_proc {
	pid_t pid;
	int pidfd;
	int state;
	int code;
	int reported;
	struct launch_line out[2];	/* stdout, stderr */
};

struct launch {
	int nranks;
	struct launch_cb cb;
	struct launch_proc *procs;
	struct pollfd *pfd;
	int *pmap;
};

int
launch_resolve(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *end;

	if (strchr(prog, '/') != NULL) {
		snprintf(out, len, "%s", prog);
		return access(out, X_OK) == 0 ? COLL_OK : COLL_ENOTFOUND;
	}
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		snprintf(out, len, "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "", prog);
		if (access(out, X_OK) == 0)
			return COLL_OK;
	}
	return COLL_ENOTFOUND;
}

/* The environment of one rank: ours, less the variables we set, plus those. */
static char **
launch_env(const struct launch_opts *o, int rank)
{
	static const char *ours[] = { "COLL_UNIQUE_ID=", "COLL_RANK=", "COLL_SIZE=",
	    "COLL_LOCAL_RANK=", "COLL_LOCAL_SIZE=", "COLL_JOBID=", "RANK=", "WORLD_SIZE=",
	    "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=", "MASTER_PORT=", "GROUP_RANK=",
	    NULL };
	size_t n = 0, k = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = xcalloc(n + 16, sizeof *env);
	for (size_t i = 0; i < n; i++) {
		int skip = 0;
		for (int j = 0; ours[j] != NULL && !skip; j++)
			skip = strncmp(environ[i], ours[j], strlen(ours[j])) == 0;
		if (!skip)
			env[k++] = xstrdup(environ[i]);
	}
	env[k++] = xasprintf("COLL_UNIQUE_ID=%s", o->uid);
	env[k++] = xasprintf("COLL_RANK=%d", rank);
	env[k++] = xasprintf("COLL_SIZE=%d", o->nranks);
	env[k++] = xasprintf("COLL_LOCAL_RANK=%d", rank);
	env[k++] = xasprintf("COLL_LOCAL_SIZE=%d", o->nranks);
	env[k++] = xasprintf("COLL_JOBID=%016llx", (unsigned long long)o->jobid);
	env[k++] = xasprintf("RANK=%d", rank);
	env[k++] = xasprintf("WORLD_SIZE=%d", o->nranks);
	env[k++] = xasprintf("LOCAL_RANK=%d", rank);
	env[k++] = xasprintf("LOCAL_WORLD_SIZE=%d", o->nranks);
	env[k++] = xasprintf("GROUP_RANK=0");
	env[k++] = xasprintf("MASTER_ADDR=%s", o->master_addr);
	env[k++] = xasprintf("MASTER_PORT=%d", o->master_port);
	return env;
}

static void
launch_env_free(char **env)
{
	for (char **e = env; *e != NULL; e++)
		free(*e);
	free(env);
}

/* In the child: only async-signal-safe calls until execve. */
static void
launch_child(const struct launch_opts *o, char **env, int pout[2], int perr[2], int rank)
{
	sigset_t none;
	int devnull;

	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
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
	{
		static const char msg[] = "collrun: cannot execute the program\n";
		if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0)
			_exit(127);
	}
	_exit(127);
}

static int
launch_one(struct launch *l, const struct launch_opts *o, int rank)
{
	struct launch_proc *p = &l->procs[rank];
	int pout[2], perr[2];
	char **env = launch_env(o, rank);
	pid_t pid;

	if (pipe2(pout, O_CLOEXEC) == -1) {
		launch_env_free(env);
		return COLL_ESYS;
	}
	if (pipe2(perr, O_CLOEXEC) == -1) {
		close(pout[0]);
		close(pout[1]);
		launch_env_free(env);
		return COLL_ESYS;
	}
	pid = fork();
	if (pid == 0)
		launch_child(o, env, pout, perr, rank);
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
	p->out[0].fd = pout[0];
	p->out[1].fd = perr[0];
	fcntl(pout[0], F_SETFL, O_NONBLOCK);
	fcntl(perr[0], F_SETFL, O_NONBLOCK);
	return COLL_OK;
}

int
launch_start(struct launch **out, const struct launch_opts *o, const struct launch_cb *cb)
{
	struct launch *l = xcalloc(1, sizeof *l);
	int r = COLL_OK;

	l->nranks = o->nranks;
	l->cb = *cb;
	l->procs = xcalloc((size_t)o->nranks, sizeof *l->procs);
	l->pfd = xcalloc((size_t)o->nranks * 3 + 1, sizeof *l->pfd);
	l->pmap = xcalloc((size_t)o->nranks * 3 + 1, sizeof *l->pmap);
	for (int i = 0; i < o->nranks; i++)
		l->procs[i].pidfd = l->procs[i].out[0].fd = l->procs[i].out[1].fd = -1;
	for (int i = 0; i < o->nranks && r == COLL_OK; i++)
		r = launch_one(l, o, i);
	if (r != COLL_OK) {
		int e = errno;
		launch_signal(l, SIGKILL);
		while (launch_poll(l, 1000, -1) > 0)
			;
		launch_free(l);
		errno = e;
		return r;
	}
	*out = l;
	return COLL_OK;
}

/* Hand over complete lines; at EOF (or when full) also the rest. */
static void
launch_emit(struct launch *l, int rank, int stream, struct launch_line *ln, int eof)
{
	size_t start = 0;
	char *nl;

	while ((nl = memchr(ln->buf + start, '\n', ln->len - start)) != NULL) {
		l->cb.output(l->cb.arg, rank, stream, ln->buf + start, (size_t)(nl - ln->buf) - start);
		start = (size_t)(nl - ln->buf) + 1;
	}
	if (ln->len - start >= LAUNCH_LINE_MAX || (eof && ln->len > start)) {
		l->cb.output(l->cb.arg, rank, stream, ln->buf + start, ln->len - start);
		start = ln->len;
	}
	memmove(ln->buf, ln->buf + start, ln->len - start);
	ln->len -= start;
}

/* Read what a stream has; returns 1 while it stays open. */
static int
launch_read(struct launch *l, int rank, int stream)
{
	struct launch_line *ln = &l->procs[rank].out[stream - 1];
	ssize_t n;

	if (ln->buf == NULL)
		ln->buf = xmalloc(LAUNCH_LINE_MAX);
	for (;;) {
		n = read(ln->fd, ln->buf + ln->len, LAUNCH_LINE_MAX - ln->len);
		if (n > 0) {
			ln->len += (size_t)n;
			launch_emit(l, rank, stream, ln, 0);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return 1;
		launch_emit(l, rank, stream, ln, 1);
		close(ln->fd);
		ln->fd = -1;
		return 0;
	}
}

static void
launch_reap(struct launch *l, int rank)
{
	struct launch_proc *p = &l->procs[rank];
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
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	/* Deliver what the rank wrote before it ended, then the news of its end. */
	for (int s = 0; s < 2; s++)
		if (p->out[s].fd >= 0)
			launch_read(l, rank, s + 1);
	p->reported = 1;
	l->cb.exited(l->cb.arg, rank, p->state, p->code);
}

static int
launch_fill(struct launch *l, int wake_fd)
{
	int n = 0;

	if (wake_fd >= 0) {
		l->pmap[n] = -1;
		l->pfd[n++] = (struct pollfd){ wake_fd, POLLIN, 0 };
	}
	for (int i = 0; i < l->nranks; i++) {
		struct launch_proc *p = &l->procs[i];

		for (int s = 0; s < 2; s++)
			if (p->out[s].fd >= 0) {
				l->pmap[n] = i * 3 + s;
				l->pfd[n++] = (struct pollfd){ p->out[s].fd, POLLIN, 0 };
			}
		if (p->state == LAUNCH_RUNNING && p->pidfd >= 0) {
			l->pmap[n] = i * 3 + 2;
			l->pfd[n++] = (struct pollfd){ p->pidfd, POLLIN, 0 };
		}
	}
	return n;
}

int
launch_poll(struct launch *l, int timeout_ms, int wake_fd)
{
	int n, r;

	n = launch_fill(l, wake_fd);
	if (n == (wake_fd >= 0))
		return launch_running(l);
	r = poll(l->pfd, (nfds_t)n, timeout_ms);
	if (r > 0) {
		for (int i = 0; i < n; i++) {
			int rank = l->pmap[i] / 3, what = l->pmap[i] % 3;

			if (l->pmap[i] < 0 || !l->pfd[i].revents)
				continue;
			if (what < 2)
				launch_read(l, rank, what + 1);
			else
				launch_reap(l, rank);
		}
	}
	/* Without pidfd support fall back to polling for exits. */
	for (int i = 0; i < l->nranks; i++)
		if (l->procs[i].pidfd < 0)
			launch_reap(l, i);
	return launch_running(l);
}

void
launch_signal(struct launch *l, int sig)
{
	for (int i = 0; i < l->nranks; i++)
		if (l->procs[i].pid > 0 && l->procs[i].state == LAUNCH_RUNNING)
			kill(-l->procs[i].pid, sig);
}

int
launch_running(const struct launch *l)
{
	int n = 0;

	for (int i = 0; i < l->nranks; i++) {
		const struct launch_proc *p = &l->procs[i];
		n += p->pid > 0 && (p->state == LAUNCH_RUNNING || p->out[0].fd >= 0 ||
		    p->out[1].fd >= 0);
	}
	return n;
}

pid_t
launch_pid(const struct launch *l, int rank)
{
	return l->procs[rank].pid;
}

void
launch_free(struct launch *l)
{
	if (l == NULL)
		return;
	for (int i = 0; i < l->nranks; i++) {
		struct launch_proc *p = &l->procs[i];
		for (int s = 0; s < 2; s++) {
			if (p->out[s].fd >= 0)
				close(p->out[s].fd);
			free(p->out[s].buf);
		}
		if (p->pidfd >= 0)
			close(p->pidfd);
	}
	free(l->procs);
	free(l->pfd);
	free(l->pmap);
	free(l);
}
