/*
 * The front end: start the workers through the job runner and fold rank 0's
 * frames into the model, in the job runner's thread (the job's own signal
 * handling stays where it was); the screen runs in a thread of its own, so
 * that keys and redraws never wait on the workers.
 *
 * Frames longer than the job runner's 64 KiB line come in pieces: they are
 * put back together until they parse. Whatever ranks or the job runner say on
 * stderr while the screen is up goes to a file and is printed when the
 * screen is gone: nothing is lost and the screen is not torn.
 *
 * A stop asked for with q goes to rank 0, which stops every worker at the
 * end of the interval; if the workers cannot be reached (rank 0 lost, no
 * control connection) the job is ended as collrun ends one, by signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "front.h"
#include "job.h"
#include "launch.h"
#include "msg.h"
#include "top.h"
#include "xmalloc.h"

#define FRONT_QUIT_GRACE_MS 3000

/* A frame's pieces so far: no bound here, front_fold drops what never parses. */
static struct front_record front_line = { .max = SIZE_MAX };
static int front_saved_err = -1;	/* for front_fatal_stderr */

void
front_fatal_stderr(void)
{
	if (front_saved_err >= 0)
		dup2(front_saved_err, STDERR_FILENO);
}

static double
front_now(void)
{
	return (double)clock_now_ns() / 1e9;
}

void
front_lock_model(struct top_front *f)
{
	pthread_mutex_lock(f->lock);
}

void
front_unlock_model(struct top_front *f)
{
	pthread_mutex_unlock(f->lock);
}

/*
 * Standard output failed in batch mode: the reader went away (colltop -b |
 * head) or the disk is full. Stop the workers, as top stops, and quietly:
 * the job runner's word about the signal that stops them is for nobody, so
 * stderr goes to /dev/null until front_run says what there is to say.
 */
static void
front_out_failed(struct top_front *f, int e)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	f->out_errno = e;
	f->quit = 1;
	fflush(stderr);
	if (null >= 0 && (f->out_saved_err = dup(STDERR_FILENO)) >= 0)
		dup2(null, STDERR_FILENO);
	if (null >= 0)
		close(null);
	if (!f->early) {
		f->early = 1;
		kill(getpid(), SIGTERM);
	}
}

/* After the job: stderr back, and a full disk said (a broken pipe is not: exit 141). */
static int
front_out_said(struct top_front *f)
{
	if (f->out_errno == 0)
		return -1;
	if (f->out_saved_err >= 0) {
		dup2(f->out_saved_err, STDERR_FILENO);
		close(f->out_saved_err);
		f->out_saved_err = -1;
	}
	f->a->out_said = 1;
	return cmd_stdout_failed(f->out_errno, EXIT_OK);
}

/*
 * Batch mode's text of the frame just folded in, written out once the
 * model's lock is let go: a reader of stdout that stalls (a full pipe) must
 * not stall /metrics' scrapes, which render under that lock.
 */
static void
front_batch_out(struct top_front *f, char *buf, size_t len)
{
	int e = 0;

	errno = 0;
	if (buf != NULL && len > 0 && fwrite(buf, 1, len, stdout) != len)
		e = errno != 0 ? errno : EIO;
	if (e == 0 && fflush(stdout) != 0)
		e = errno != 0 ? errno : EIO;
	free(buf);
	if (e == 0)
		return;
	front_lock_model(f);
	front_out_failed(f, e);
	front_unlock_model(f);
}

static void
front_fold(struct top_front *f)
{
	char err[256], *out = NULL;
	size_t outlen = 0;
	FILE *mf = NULL;
	int r;

	front_lock_model(f);
	r = model_frame(&f->m, front_line.buf, front_line.len, front_now(), err, sizeof err);
	if (r == 0) {
		f->dirty = 1;
		if (f->a->batch && f->out_errno == 0 && (mf = open_memstream(&out, &outlen)) != NULL)
			(void)(f->a->json ? batch_json(&f->m, mf) : batch_text(&f->m, mf));
	} else {
		snprintf(f->last_parse, sizeof f->last_parse, "%.200s", err);
	}
	front_unlock_model(f);
	if (mf != NULL && fclose(mf) == 0)
		front_batch_out(f, out, outlen);
	else if (mf != NULL)
		free(out);
	if (r == 0 || front_line.len > TOP_FRAME_MAX)
		front_line.len = 0;
}

/* Say a bad frame on the screen, and once on stderr in batch mode. */
static void
front_bad(struct top_front *f, int rank, const char *why)
{
	front_lock_model(f);
	snprintf(f->err, sizeof f->err, "rank %d wrote a line on stdout that is not a frame: "
	    "%.160s", rank, why);
	f->dirty = 1;
	if (f->a->batch && f->bad++ == 0)
		fprintf(stderr, "colltop: %s\n", f->err);
	front_unlock_model(f);
}

static int
front_output(void *arg, int rank, int stream, const char *line, size_t len)
{
	static const char start[] = "{\"it\":";
	struct top_front *f = arg;

	if (stream != LAUNCH_STDOUT) {
		front_lock_model(f);
		snprintf(f->err, sizeof f->err, "rank %d: %.*s", rank, (int)(len > 200 ? 200 : len),
		    line);
		msg_clean(f->err);	/* a rank may quote what a peer said */
		f->dirty = 1;
		front_unlock_model(f);
		return 0;
	}
	if (len >= sizeof start - 1 && memcmp(line, start, sizeof start - 1) == 0) {
		if (front_line.len > 0)
			front_bad(f, rank, f->last_parse);	/* the last one's pieces never parsed */
		front_line.len = 0;
	} else if (front_line.len == 0) {
		front_bad(f, rank, "not a frame");
		return 1;
	}
	front_record_add(&front_line, line, len);
	if (len > 0 && line[len - 1] == '}')
		front_fold(f);
	return 1;
}

/*
 * A worker or host lost before the first frame: the others would wait for it
 * at the join until its timeout, so the job ends now (as collrun ends one on
 * a signal) and the reason is said when it has.
 */
static void
front_fail_early(struct top_front *f)
{
	if (f->m.frames == 0 && !f->early) {
		f->early = 1;
		kill(getpid(), SIGTERM);
	}
}

static void
front_exited(void *arg, int rank, int state, int code)
{
	struct top_front *f = arg;
	char words[160];

	if (state == LAUNCH_EXITED && code == 0)
		return;
	job_end_words(state, code, words, sizeof words);
	front_lock_model(f);
	snprintf(f->err, sizeof f->err, "rank %d %s", rank, words);
	f->dirty = 1;
	if (!f->early)
		snprintf(f->why, sizeof f->why, "its rank %d %s (its words are above)", rank, words);
	front_fail_early(f);
	front_unlock_model(f);
}

static void
front_host_failed(void *arg, int host, const char *why)
{
	struct top_front *f = arg;
	const char *name = f->a->ho.jo.hosts[host];

	front_lock_model(f);
	if (f->m.frames > 0)
		model_ranks_lost(&f->m, f->a->ho.jo.rank_host, f->a->ho.jo.nranks, host, why);
	f->dirty = 1;
	if (!f->early)
		snprintf(f->why, sizeof f->why, "%.64s: %.300s: leave it out with -x %.64s", name,
		    why, name);
	msg_clean(f->why);
	front_fail_early(f);
	front_unlock_model(f);
}

static void
front_started(void *arg, const char *uid)
{
	struct top_front *f = arg;

	front_lock_model(f);
	snprintf(f->uid, sizeof f->uid, "%s", uid);
	front_unlock_model(f);
	if (f->srv != NULL)
		ctl_server_uid(f->srv, uid);
}

void
front_interval(struct top_front *f, double s)
{
	char line[64];

	s = s < 0.1 ? 0.1 : s > 3600 ? 3600 : s;
	f->interval_s = s;
	snprintf(line, sizeof line, "interval %d\n", (int)(s * 1000 + 0.5));
	if (f->cfd >= 0 && ctl_send(f->cfd, line) != 0) {
		front_lock_model(f);
		snprintf(f->err, sizeof f->err, "cannot reach rank 0 to change the interval");
		front_unlock_model(f);
	}
}

void
front_quit(struct top_front *f)
{
	if (f->cfd >= 0)
		ctl_send(f->cfd, "quit\n");
	f->quit = 1;
}

/* Send rank 0 what it missed: a key pressed before it was here, or told to one now gone. */
static void
front_catch_up(struct top_front *f, int fd)
{
	char line[64];

	if (f->quit) {
		ctl_send(fd, "quit\n");
	} else if (f->interval_s != f->a->interval_s) {
		snprintf(line, sizeof line, "interval %d\n", (int)(f->interval_s * 1000 + 0.5));
		ctl_send(fd, line);
	}
}

/*
 * Take rank 0's control connection (a new rank 0 after a shrink connects
 * again) from the control thread, which did the handshake: nothing here
 * waits on a peer. Refusals are counted on the screen; stderr gets one line
 * about them at the end.
 */
static void
front_accept(struct top_front *f)
{
	struct ctl_refused r;
	int fd;

	if (f->srv == NULL)
		return;
	fd = ctl_server_take(f->srv, &r);
	front_lock_model(f);
	if (r.n != f->refused.n) {
		f->refused = r;
		snprintf(f->err, sizeof f->err, "refused %lu control connection%s: %s", r.n,
		    r.n == 1 ? "" : "s", r.last);
		f->dirty = 1;
	}
	if (fd >= 0) {
		if (f->cfd >= 0)
			close(f->cfd);
		f->cfd = fd;
		front_catch_up(f, fd);
	}
	front_unlock_model(f);
}

/* After the screen: the refused control connections, in one line (the why is cleaned). */
static void
front_accept_said(const struct top_front *f)
{
	const struct ctl_refused *r = &f->refused;

	if (r->n == 1)
		fprintf(stderr, "colltop: refused a control connection that did not prove the "
		    "job's secret: %s\n", r->first);
	else if (r->n > 1)
		fprintf(stderr, "colltop: refused %lu control connections that did not prove the "
		    "job's secret (the first: %s; the last: %s)\n", r->n, r->first, r->last);
}

static void *
front_ui_thread(void *arg)
{
	struct top_front *f = arg;
	struct ui *u = f->ui;
	uint64_t quit_at = 0;
	int done = 0, sent = 0, q;

	while (!done) {
		front_accept(f);
		if ((q = ui_step(u, f, 200)) != 0 && !f->quit) {
			f->intr = q == 2;
			front_quit(f);
			quit_at = clock_now_ms();
		}
		front_lock_model(f);
		done = f->done;
		front_unlock_model(f);
		/* Rank 0 reads the word at the end of an interval: give it one and more. */
		if (!done && f->quit && !sent && clock_now_ms() - quit_at > FRONT_QUIT_GRACE_MS +
		    (uint64_t)(2000 * f->interval_s)) {
			kill(getpid(), SIGTERM);	/* the workers did not stop: end the job */
			sent = 1;
		}
	}
	return NULL;
}

/* Send stderr to a file while the screen is up; -1 if it cannot be. */
static int
front_stderr_away(FILE **log)
{
	int saved;

	if ((*log = tmpfile()) == NULL)
		return -1;
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	if (saved < 0 || dup2(fileno(*log), STDERR_FILENO) < 0) {
		fclose(*log);
		*log = NULL;
		return -1;
	}
	return saved;
}

static void
front_stderr_back(FILE *log, int saved)
{
	char buf[4096];
	size_t n;

	if (saved < 0)
		return;
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(log);
	while ((n = fread(buf, 1, sizeof buf, log)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(log);
}

static int
front_any_lost(const struct top_model *m)
{
	for (int r = 0; r < m->nranks; r++)
		if (m->ranks[r].lost)
			return 1;
	return 0;
}

/* The workers' argv: where rank 0 takes the keys from, when there is a screen. */
static char **
front_wargv(struct top_front *f, int argc, char **argv, char *port)
{
	struct front_argv w = { 0 };

	if (f->lfd >= 0) {
		snprintf(port, 16, "%d", f->port);
		w.first[0] = "--control-port";
		w.first[1] = port;
	}
	return front_argv(f->a->cmd, &w, argc, argv);
}

static int
front_job(struct top_front *f, char **wargv)
{
	struct job_hooks hooks = { front_output, front_exited, front_host_failed, f, 1,
	    front_started };
	struct top_args *a = f->a;
	pthread_t ui;
	FILE *log = NULL;
	int saved = -1, code;

	a->ho.jo.argv = wargv;
	a->ho.jo.hooks = &hooks;
	if (a->batch)
		return job_run(&a->ho.jo);
	saved = front_stderr_away(&log);
	f->saved_err = front_saved_err = saved;
	if (pthread_create(&ui, NULL, front_ui_thread, f) != 0) {
		ui_close(f->ui);
		f->ui = NULL;
		f->saved_err = -1;
		front_stderr_back(log, saved);
		fprintf(stderr, "colltop: cannot start the screen's thread\n");
		return EXIT_CANNOT;
	}
	code = job_run(&a->ho.jo);
	front_lock_model(f);
	f->done = 1;
	front_unlock_model(f);
	pthread_join(ui, NULL);
	ui_close(f->ui);
	f->ui = NULL;
	f->saved_err = front_saved_err = -1;
	front_stderr_back(log, saved);
	return code;
}

/* The screen, and the control connection's listener (EXIT_CANNOT with err). */
static int
front_open(struct top_front *f, char *err, size_t len)
{
	struct top_args *a = f->a;

	/* Before the workers and the screen: a port in use is said on a terminal, at once. */
	if (a->listen != NULL && (f->lsrv = listen_start(f, err, len)) == NULL)
		return EXIT_CANNOT;
	if (!a->batch && ctl_listen(a->ho.jo.kind != LAUNCH_LOCAL, &f->lfd, &f->port, err, len) != 0)
		return EXIT_CANNOT;
	if (!a->batch && (f->srv = ctl_server_start(f->lfd, err, len)) == NULL)
		return EXIT_CANNOT;
	if (!a->batch && (f->ui = ui_open(a, err, len)) == NULL)
		return EXIT_CANNOT;
	if (a->ras && (f->ras = rasfollow_start(f, err, len)) == NULL)
		return EXIT_CANNOT;
	return EXIT_OK;
}

int
front_run(struct top_args *a, int argc, char **argv)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct top_front f = { .a = a, .lock = &lock, .lfd = -1, .cfd = -1, .saved_err = -1,
	    .out_saved_err = -1, .interval_s = a->interval_s };
	char err[512], port[16], **wargv = NULL;
	int code, out;

	a->ho.jo.keep_going = 1;
	a->ho.jo.grace_s = 1;
	model_init(&f.m, a);
	if ((code = front_prepare(a->cmd, &a->ho, a->ho.jo.timeout_s)) != EXIT_OK)
		goto out;
	if ((code = front_open(&f, err, sizeof err)) != EXIT_OK) {
		fprintf(stderr, "colltop: %s\n", err);
		goto out;
	}
	if ((wargv = front_wargv(&f, argc, argv, port)) == NULL) {
		code = EXIT_CANNOT;
		goto out;
	}
	code = front_job(&f, wargv);
	front_accept(&f);	/* the refusals since the screen last looked */
	ctl_server_stop(f.srv);
	f.srv = NULL;
	front_accept_said(&f);
	if ((out = front_out_said(&f)) >= 0) {
		code = out;
		goto out;
	}
	if (f.m.frames == 0 && f.early)
		fprintf(stderr, "colltop: cannot start the workers: %s\n", f.why);
	else if (f.m.frames == 0)
		fprintf(stderr, "colltop: the workers sent nothing (job exit code %d)%s%s\n", code,
		    f.err[0] ? ": " : "", f.err);
	code = f.m.frames == 0 ? EXIT_CANNOT : f.intr || code == 128 + SIGINT ? EXIT_INTERRUPTED :
	    front_any_lost(&f.m) ? EXIT_PROBLEMS : code == 0 || f.quit ? EXIT_OK : EXIT_PROBLEMS;
out:
	listen_stop(f.lsrv);	/* before the model it reads goes */
	rasfollow_stop(f.ras);
	ctl_server_stop(f.srv);
	if (f.ui != NULL)
		ui_close(f.ui);
	if (f.lfd >= 0)
		close(f.lfd);
	if (f.cfd >= 0)
		close(f.cfd);
	front_argv_free(wargv);
	front_record_free(&front_line);
	model_free(&f.m);
	hostopt_release(&a->ho);
	return code;
}

int
front_collstack(struct top_front *f, const struct view_cs *cs)
{
	char *self = cmd_self(), *slash, path[4200], *argv[VIEW_CS_ARGS + 1] = { NULL };
	pid_t pid;
	int st = 0;

	snprintf(path, sizeof path, "collstack");
	if (self != NULL && (slash = strrchr(self, '/')) != NULL) {
		*slash = '\0';
		snprintf(path, sizeof path, "%s/collstack", self);
		if (access(path, X_OK) != 0)
			snprintf(path, sizeof path, "collstack");
	}
	free(self);
	argv[0] = path;
	for (int i = 1; i < cs->argc && i < VIEW_CS_ARGS; i++)
		argv[i] = (char *)cs->argv[i];
	fflush(stdout);
	if ((pid = fork()) == 0) {
		if (f->saved_err >= 0)
			dup2(f->saved_err, STDERR_FILENO);	/* its words are for the terminal */
		execvp(path, argv);
		dprintf(STDERR_FILENO, "colltop: cannot run %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
