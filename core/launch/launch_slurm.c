/*
 * The Slurm launcher: one local srun runs every rank through the agent
 * (collrun --agent --slurm), with --label so that each output line says
 * which task wrote it. Each agent speaks agentproto.h on its stdout: the
 * program's output, its process id and how it ended (which srun alone does
 * not tell) arrive as records, which srun --label passes whole since each is
 * shorter than its 1024-byte line limit. The agent's stderr is its own
 * diagnostics, shown as the rank's stderr. srun is
 * started by the local backend, so its own output and exit are watched by
 * the same loop; --kill-on-bad-exit=1 makes Slurm end the step when a rank
 * fails, and under keep_going =0 lets the others run on, whatever
 * KillOnBadExit slurm.conf sets.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentrx.h"
#include "err.h"
#include "launch.h"
#include "xmalloc.h"

struct slurm {
	struct launch srun;		/* the local launch of srun itself */
	int nranks;
	int *done;
	struct agentrx *rx;	/* per rank: its records, pid and end */
	char **argv;
	char **xenv;		/* the user's -x variables, as LAUNCH_SLURM_XPREFIX NAME=VALUE */
	char jobname[64];	/* coll-<jobid>: srun's job (own_job) or step name */
	const char *alloc;	/* the allocation we run in (SLURM_JOB_ID), or NULL */
	int step;		/* a step in someone's running job: never scancel it */
	int own_job;		/* srun made the job (no allocation around us): ours to cancel */
	int kills;		/* SIGKILLs asked for so far */
	int termed;		/* SIGTERMs sent through scancel so far */
};

static void
slurm_report(struct launch *l, int rank, int state, int code)
{
	struct slurm *sl = l->impl;

	if (rank < 0 || rank >= sl->nranks || sl->done[rank])
		return;
	sl->done[rank] = 1;
	l->cb.exited(l->cb.arg, rank, state, code);
}

/* A record from a rank's agent; its end is reported once its output is out. */
static void
slurm_agent_line(struct launch *l, int rank, const char *text, size_t len)
{
	struct slurm *sl = l->impl;
	struct agentrx *rx = &sl->rx[rank];

	agentrx_line(rx, text, len);
	if (rx->ended && !sl->done[rank]) {
		agentrx_flush(rx);
		slurm_report(l, rank, rx->state, rx->code);
	}
}

/* srun --label writes "N: text" (N right-aligned); anything else is srun's own. */
static void
slurm_output(void *arg, int srun_rank, int stream, const char *line, size_t len)
{
	struct launch *l = arg;
	struct slurm *sl = l->impl;
	size_t i = 0, digits;
	long rank = 0;

	(void)srun_rank;
	while (i < len && line[i] == ' ')
		i++;
	for (digits = i; i < len && isdigit((unsigned char)line[i]) && rank < sl->nranks; i++)
		rank = rank * 10 + (line[i] - '0');
	if (i == digits || i + 1 >= len + 1 || i + 2 > len || line[i] != ':' ||
	    line[i + 1] != ' ' || rank >= sl->nranks) {
		l->cb.output(l->cb.arg, -1, stream, line, len);
		return;
	}
	if (stream == LAUNCH_STDOUT)
		slurm_agent_line(l, (int)rank, line + i + 2, len - i - 2);
	else
		l->cb.output(l->cb.arg, (int)rank, stream, line + i + 2, len - i - 2);
}

/*
 * srun ended: ranks that never started end as srun did; a rank that started
 * and did not say how it ended is lost (its node died, or its agent was
 * killed): whatever srun's status, it is not that rank's.
 */
static void
slurm_srun_exited(void *arg, int srun_rank, int state, int code)
{
	struct launch *l = arg;
	struct slurm *sl = l->impl;

	(void)srun_rank;
	for (int r = 0; r < sl->nranks; r++) {
		agentrx_flush(&sl->rx[r]);
		if (sl->rx[r].ended)
			slurm_report(l, r, sl->rx[r].state, sl->rx[r].code);
		else if (sl->rx[r].pid > 0)
			slurm_report(l, r, LAUNCH_LOST, 0);
		else
			slurm_report(l, r, state, code);
	}
}

static void
slurm_no_host(void *arg, int host, const char *why)
{
	(void)arg;
	(void)host;
	(void)why;
}

static void
slurm_argv_add(char ***argv, int *n, char *word)
{
	*argv = xreallocarray(*argv, (size_t)*n + 2, sizeof **argv);
	(*argv)[(*n)++] = word;
	(*argv)[*n] = NULL;
}

static char **
slurm_argv(const struct launch_opts *o, const char *uidstr)
{
	/* Only the job-wide variables are taken: each task's own come from Slurm's. */
	char **argv = NULL, **env = launch_env_vars(o, 0, 0, 0, uidstr);
	int n = 0;

	slurm_argv_add(&argv, &n, xstrdup("srun"));
	slurm_argv_add(&argv, &n, xasprintf("--job-name=coll-%016llx",
	    (unsigned long long)o->uid->jobid));
	/* A step beside the job's own, on CPUs its tasks hold: it must not wait for them. */
	if (o->jobid != NULL) {
		slurm_argv_add(&argv, &n, xasprintf("--jobid=%s", o->jobid));
		slurm_argv_add(&argv, &n, xstrdup("--overlap"));
	}
	slurm_argv_add(&argv, &n, xasprintf("--ntasks=%d", o->nranks));
	if (o->per_host > 0)
		slurm_argv_add(&argv, &n, xasprintf("--ntasks-per-node=%d", o->per_host));
	if (o->nodelist != NULL)
		slurm_argv_add(&argv, &n, xasprintf("--nodelist=%s", o->nodelist));
	slurm_argv_add(&argv, &n, xasprintf("--distribution=%s", o->cyclic ? "cyclic" : "block"));
	slurm_argv_add(&argv, &n, xasprintf("--kill-on-bad-exit=%d", !o->keep_going));
	slurm_argv_add(&argv, &n, xstrdup("--label"));
	slurm_argv_add(&argv, &n, xstrdup("--export=ALL"));
	slurm_argv_add(&argv, &n, xstrdup(o->agent));
	slurm_argv_add(&argv, &n, xstrdup("--agent"));
	slurm_argv_add(&argv, &n, xstrdup("--slurm"));
	if (o->bindir != NULL) {
		slurm_argv_add(&argv, &n, xstrdup("--path"));
		slurm_argv_add(&argv, &n, xstrdup(o->bindir));
	}
	if (o->libdir != NULL) {
		slurm_argv_add(&argv, &n, xstrdup("--libpath"));
		slurm_argv_add(&argv, &n, xstrdup(o->libdir));
	}
	/*
	 * What is the same for every rank; the agent adds the rest from SLURM_*.
	 * The unique id holds the secret: it reaches the tasks in srun's
	 * environment (readable by its owner only), never in argv; so do the
	 * user's -x variables (slurm_xenv). --export=ALL: a site's or job's
	 * SLURM_EXPORT_ENV=NONE would leave the tasks without either.
	 */
	for (char **e = env; *e != NULL; e++) {
		if (strncmp(*e, "COLL_SIZE=", 10) &&
		    strncmp(*e, "WORLD_SIZE=", 11) && strncmp(*e, "COLL_JOBID=", 11) &&
		    strncmp(*e, "MASTER_PORT=", 12))
			continue;
		slurm_argv_add(&argv, &n, xstrdup("-e"));
		slurm_argv_add(&argv, &n, xstrdup(*e));
	}
	slurm_argv_add(&argv, &n, xstrdup("--"));
	for (char *const *a = o->argv; *a != NULL; a++)
		slurm_argv_add(&argv, &n, xstrdup(*a));
	launch_env_free(env);
	return argv;
}

/*
 * The user's -x variables for srun's environment, each under a prefix that
 * the agent takes off in the task (agent.c): as themselves they would
 * change srun and the agent too (-x LD_PRELOAD=..., PATH, SLURM_*).
 */
static char **
slurm_xenv(const struct launch_opts *o)
{
	size_t n = 0, len = sizeof LAUNCH_SLURM_XNAMES + 1;
	char **env, *names;

	while (o->env != NULL && o->env[n] != NULL)
		len += strcspn(o->env[n++], "=") + 1;
	env = xcalloc(n + 2, sizeof *env);
	names = xmalloc(len);
	snprintf(names, len, "%s=", LAUNCH_SLURM_XNAMES);
	for (size_t i = 0; i < n; i++) {
		env[i] = xasprintf("%s%s", LAUNCH_SLURM_XPREFIX, o->env[i]);
		/* The names are letters, digits and _ (mpiargs_export checks): a comma parts them. */
		snprintf(names + strlen(names), len - strlen(names), "%s%.*s", i ? "," : "",
		    (int)strcspn(o->env[i], "="), o->env[i]);
	}
	env[n] = names;
	return env;
}

static int
slurm_start(struct launch *l, const struct launch_opts *o)
{
	struct slurm *sl = xcalloc(1, sizeof *sl);
	struct launch_opts so;
	char uidstr[UID_STR_LEN], srun[4096];
	int r;

	if (launch_resolve("srun", srun, sizeof srun) != COLL_OK) {
		free(sl);
		return COLL_ENOTFOUND;
	}
	l->impl = sl;
	sl->nranks = o->nranks;
	sl->done = xcalloc((size_t)o->nranks, sizeof *sl->done);
	sl->rx = xcalloc((size_t)o->nranks, sizeof *sl->rx);
	for (int i = 0; i < o->nranks; i++)
		agentrx_init(&sl->rx[i], l, i);
	uid_format(o->uid, uidstr, sizeof uidstr);
	sl->argv = slurm_argv(o, uidstr);
	sl->step = o->jobid != NULL;
	sl->alloc = sl->step ? NULL : getenv("SLURM_JOB_ID");
	sl->own_job = !sl->step && sl->alloc == NULL;
	snprintf(sl->jobname, sizeof sl->jobname, "--name=coll-%016llx",
	    (unsigned long long)o->uid->jobid);
	so = (struct launch_opts){ .kind = LAUNCH_LOCAL, .nranks = 1, .path = srun,
	    .argv = sl->argv, .uid = o->uid, .master_addr = o->master_addr,
	    .master_port = o->master_port, .env = sl->xenv = slurm_xenv(o) };
	sl->srun.ops = &launch_local_ops;
	sl->srun.nranks = 1;
	sl->srun.cb = (struct launch_cb){ slurm_output, slurm_srun_exited, slurm_no_host, l, NULL };
	if ((r = launch_local_ops.start(&sl->srun, &so)) != COLL_OK) {
		launch_env_free(sl->argv);
		launch_env_free(sl->xenv);
		free(sl->done);
		free(sl->rx);
		free(sl);
		l->impl = NULL;
	}
	return r;
}

static int
slurm_poll(struct launch *l, int timeout_ms, int wake_fd)
{
	struct slurm *sl = l->impl;
	int left = 0;

	launch_local_ops.poll(&sl->srun, timeout_ms, wake_fd);
	for (int r = 0; r < sl->nranks; r++)
		left += !sl->done[r];
	return left + launch_local_ops.running(&sl->srun);
}

/* Run scancel with these words, without waiting for it. */
static void
slurm_scancel_exec(const char *w1, const char *w2)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* Detach so no zombie waits for us. */
		if (fork() == 0)
			execlp("scancel", "scancel", w1, w2, (char *)NULL);
		_exit(0);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
			;
}

/*
 * What scancel reaches of ours: the job srun made, by its name; in an
 * allocation, our step alone (JOBID.STEP, as its tasks' agents said), never
 * the job, whose other steps and batch shell are not ours. Empty until a
 * task has started: scancel cannot signal a job still queued, srun can.
 */
static void
slurm_target(const struct slurm *sl, char *buf, size_t len)
{
	int started = 0;

	buf[0] = '\0';
	for (int r = 0; r < sl->nranks; r++) {
		started |= sl->rx[r].pid > 0;
		if (!sl->own_job && sl->rx[r].step >= 0) {
			snprintf(buf, len, "%s.%ld", sl->alloc, sl->rx[r].step);
			return;
		}
	}
	if (sl->own_job && started)
		snprintf(buf, len, "%s", sl->jobname);
}

/* scancel --signal=SIG what is ours; 0 if scancel was run, -1 if we have no target yet. */
static int
slurm_scancel(struct slurm *sl, int sig)
{
	char target[96], s[16];

	slurm_target(sl, target, sizeof target);
	if (target[0] == '\0')
		return -1;
	snprintf(s, sizeof s, "--signal=%d", sig);
	slurm_scancel_exec(s, target);
	if (sig == SIGTERM)
		sl->termed++;
	return 0;
}

/* Cancel what is ours: the job srun made for us, or our step of an allocation. */
static void
slurm_cancel(struct slurm *sl)
{
	char target[96];

	if (sl->own_job) {
		slurm_scancel_exec(sl->jobname, NULL);
		return;
	}
	slurm_target(sl, target, sizeof target);
	if (target[0] != '\0')
		slurm_scancel_exec(target, NULL);
}

/*
 * What a signal to the job becomes. Outside a step of someone's job the
 * tasks get SIGINT, SIGUSR1, SIGUSR2 and SIGTERM from scancel, and each
 * program decides what they mean: srun would answer SIGINT with its status
 * and SIGTERM with SIGKILL to the whole step, agents included, so that no
 * rank could say how it ended. SIGTERM goes once: a second one tells the
 * agents to SIGKILL their programs (and report it), and that is what the
 * SIGKILL stages start with, a second apart (collrun asks again each
 * second): SIGTERM through scancel (a second one if none went before) for
 * four seconds; then srun's SIGTERM (Slurm kills what is left of the step,
 * agents whose node no longer answers, and srun lives to release the job);
 * then what is ours cancelled (the job srun made, or our step) and srun
 * killed: an srun gone cannot release nodes one of which no longer answers.
 * In someone else's job, or before any task started, srun alone is
 * signalled, SIGINT as SIGTERM (that ends our step, not theirs).
 */
static void
slurm_signal(struct launch *l, int sig)
{
	struct slurm *sl = l->impl;
	int stage = sig == SIGKILL ? ++sl->kills : 0;

	if (sl->step) {
		launch_local_ops.signal(&sl->srun, sig == SIGINT ? SIGTERM : sig);
	} else if (sig == SIGTERM && sl->termed > 0) {
		return;
	} else if (sig == SIGINT || sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGTERM) {
		if (slurm_scancel(sl, sig) != 0)
			launch_local_ops.signal(&sl->srun, sig == SIGINT ? SIGTERM : sig);
	} else if (stage >= 1 && stage <= 4) {
		if (slurm_scancel(sl, SIGTERM) != 0)
			launch_local_ops.signal(&sl->srun, stage == 1 ? SIGTERM : SIGKILL);
		else if (sl->termed < 2)
			slurm_scancel(sl, SIGTERM);
	} else if (stage == 5) {
		launch_local_ops.signal(&sl->srun, SIGTERM);
	} else if (stage >= 6) {
		if (stage == 6)
			slurm_cancel(sl);
		launch_local_ops.signal(&sl->srun, SIGKILL);
	} else if (sig != SIGKILL) {
		launch_local_ops.signal(&sl->srun, sig);
	}
}

static int
slurm_running(const struct launch *l)
{
	const struct slurm *sl = l->impl;
	int left = 0;

	for (int r = 0; r < sl->nranks; r++)
		left += !sl->done[r];
	return left + launch_local_ops.running(&sl->srun);
}

static pid_t
slurm_pid(const struct launch *l, int rank)
{
	return ((const struct slurm *)l->impl)->rx[rank].pid;
}

static void
slurm_free(struct launch *l)
{
	struct slurm *sl = l->impl;

	launch_local_ops.free(&sl->srun);
	launch_env_free(sl->argv);
	launch_env_free(sl->xenv);
	for (int r = 0; r < sl->nranks; r++)
		agentrx_free(&sl->rx[r]);
	free(sl->rx);
	free(sl->done);
	free(sl);
	l->impl = NULL;
}

const struct launch_ops launch_slurm_ops = {
	slurm_start, slurm_poll, slurm_signal, slurm_running, slurm_pid, slurm_free,
};
