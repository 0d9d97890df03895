/*
 * The front end: decide which job (job.c) and which hosts, start one worker
 * per host through the job runner (this very binary with --worker, by SSH,
 * srun or locally), read rank 0's record from its stdout, judge and print.
 * A host that cannot be reached is named with why; the job cannot be read
 * without it, so the exit is 3 (-x leaves it out).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collstack.h"
#include "err.h"
#include "front.h"
#include "job.h"
#include "launch.h"
#include "xmalloc.h"

#define STK_RECORD_MAX (1024u << 20)

struct stk_front {
	struct front_record rec;	/* rank 0's stdout */
	int nhosts;
	char **host_why;	/* per host: why it could not be used */
	char *fatal;
};

static int
stk_front_output(void *arg, int rank, int stream, const char *line, size_t len)
{
	struct stk_front *f = arg;

	return front_record_take(&f->rec, rank, stream, line, len);
}

static void
stk_front_exited(void *arg, int rank, int state, int code)
{
	struct stk_front *f = arg;
	char words[160];

	if ((state == LAUNCH_EXITED && code == 0) || state == LAUNCH_FAILED || f->fatal != NULL)
		return;
	job_end_words(state, code, words, sizeof words);
	f->fatal = xasprintf("the worker of rank %d %s (its words are above)", rank, words);
}

static void
stk_front_host_failed(void *arg, int host, const char *why)
{
	struct stk_front *f = arg;

	if (host >= 0 && host < f->nhosts && f->host_why[host] == NULL)
		f->host_why[host] = xstrdup(why);
}

/*
 * Which job, and where: fills a->jobid and, from the record, the hosts.
 * With nothing named, the stalled job here (discover.c), which may be one
 * coll did not launch: its selection into pick. -2: several, listed.
 */
static int
stk_front_job(struct stk_args *a, char **hosts, char *pick, size_t picklen)
{
	char err[512], *launcher = NULL;
	int r;

	*hosts = NULL;
	if (a->sel == SEL_JOB && a->job == NULL && (r = stk_discover(a, pick, picklen)) < 0)
		return -2;
	/* A collrun job found goes on as --job ID: its record says its hosts. */
	if (a->sel != SEL_JOB)
		return 0;
	if (stk_job_find(a->job, a->user, a->jobid, sizeof a->jobid, hosts, &launcher, err,
	    sizeof err) != 0) {
		fprintf(stderr, "collstack: %s\n", err);
		return -1;
	}
	/* The job's own hosts, unless the user named where to look. */
	if (!hostopt_given(&a->ho) && *hosts != NULL)
		a->ho.hosts = *hosts;
	if (strcmp(launcher, "slurm") == 0 && !hostopt_given(&a->ho))
		fprintf(stderr, "collstack: job %s ran through srun: run collstack inside its "
		    "allocation (or give --slurm JOBID) to reach every node\n", a->jobid);
	free(launcher);
	return 0;
}

/*
 * --slurm: the job's nodes from squeue unless we run inside it (then they
 * are in our environment), and the workers as a step of that job.
 */
static int
stk_front_slurm(struct stk_args *a, char **nodes, char **jobid)
{
	const char *id = getenv("SLURM_JOB_ID");
	char err[512];

	*nodes = *jobid = NULL;
	if (a->sel != SEL_SLURM || a->ho.hosts != NULL || a->ho.hostfile != NULL)
		return 0;
	if (id == NULL || strcmp(id, a->slurm) != 0) {
		if (stk_slurm_nodes(a->slurm, jobid, nodes, err, sizeof err) != 0) {
			fprintf(stderr, "collstack: %s\n", err);
			return -1;
		}
		a->ho.slurm_nodes = *nodes;
		a->slurm = *jobid;	/* an array's task: the id its tasks carry */
	}
	/* srun always as a step of the job: a new job would wait, and scancel would reach theirs. */
	if (a->ho.launcher == NULL || strcmp(a->ho.launcher, "auto") == 0 ||
	    strcmp(a->ho.launcher, "slurm") == 0) {
		a->ho.launcher = "slurm";
		a->ho.jo.slurm_jobid = a->slurm;
	}
	return 0;
}

static int
stk_front_report(struct stk_args *a, struct stk_front *f, int jobcode)
{
	struct stk_result r;
	struct stk_verdict v;
	char err[512];
	int code;

	for (int h = 0; h < f->nhosts; h++)
		if (f->host_why[h] != NULL)
			fprintf(stderr, "collstack: host %s cannot be used: %s (leave it out with "
			    "-x %s)\n", a->ho.names[h], f->host_why[h], a->ho.names[h]);
	if (f->rec.overflow) {
		fprintf(stderr, "collstack: rank 0's record is larger than %u MiB\n",
		    STK_RECORD_MAX >> 20);
		return EXIT_CANNOT;
	}
	if (f->rec.len == 0) {
		if (jobcode == JOB_EXIT_TIMEOUT)
			fprintf(stderr, "collstack: the workers ran past -T %g s: raise -T\n",
			    a->timeout_s);
		else
			fprintf(stderr, "collstack: %s\n", f->fatal ? f->fatal :
			    "the workers did not report");
		return EXIT_CANNOT;
	}
	if (stk_record_read(&r, f->rec.buf, f->rec.len, err, sizeof err) != 0) {
		fprintf(stderr, "collstack: %s\n", err);
		stk_result_free(&r);
		return EXIT_CANNOT;
	}
	stk_verdict(&r, &v);
	code = stk_render(&r, &v, a);
	stk_verdict_free(&v);
	stk_result_free(&r);
	return code;
}

/* The workers' selection, last in their argv so that it wins over a --job prefix the user gave. */
static void
stk_front_last(const struct stk_args *a, struct front_argv *w)
{
	if (a->sel == SEL_JOB) {
		w->last[0] = "--job";
		w->last[1] = a->jobid;
	} else if (a->sel == SEL_SLURM) {
		w->last[0] = "--slurm";
		w->last[1] = a->slurm;
	} else if (a->sel == SEL_PID && a->found != NULL) {
		w->last[0] = "--pid";
		w->last[1] = a->pids;
	}
}

int
stk_front(struct stk_args *a, int argc, char **argv)
{
	struct stk_front f = { .rec = { .max = STK_RECORD_MAX } };
	struct job_hooks hooks = { stk_front_output, stk_front_exited, stk_front_host_failed,
		&f, 1, NULL };
	struct front_argv w = { 0 };
	char **wargv = NULL, *hosts = NULL, *nodes = NULL, *slurm_id = NULL, pick[32];
	int code = EXIT_CANNOT, jobcode, r;

	if ((r = stk_front_job(a, &hosts, pick, sizeof pick)) != 0 ||
	    stk_front_slurm(a, &nodes, &slurm_id) != 0) {
		code = r == -2 ? EXIT_USAGE : EXIT_CANNOT;
		goto out;
	}
	/*
	 * --pid on this host alone, and none of them runs: there is no task to
	 * read, and a verdict would blame a process that is not there. (Some of
	 * them gone, with others running, is a finding: they are listed gone.)
	 */
	if (a->sel == SEL_PID && !hostopt_given(&a->ho) && stk_select_alive(a) == 0) {
		fprintf(stderr, "collstack: no such process: --pid %s: none of them runs on this "
		    "host (give a running rank's pid, or -H HOST for another host's)\n", a->pids);
		code = EXIT_CANNOT;
		goto out;
	}
	if ((code = front_prepare(a->cmd, &a->ho, a->timeout_s)) != EXIT_OK)
		goto out;
	/* A local worker is our child: told our pid, it ends at once if orphaned before its check. */
	if (a->ho.jo.kind == LAUNCH_LOCAL) {
		char pid[24];

		snprintf(pid, sizeof pid, "%d", (int)getpid());
		setenv("COLL_STACK_FRONT_PID", pid, 1);
	} else {
		unsetenv("COLL_STACK_FRONT_PID");
	}
	stk_front_last(a, &w);
	code = EXIT_CANNOT;
	if ((wargv = front_argv(a->cmd, &w, argc, argv)) == NULL)
		goto out;
	f.nhosts = a->ho.jo.nhosts;
	f.host_why = xcalloc((size_t)f.nhosts + 1, sizeof *f.host_why);
	a->ho.jo.argv = wargv;
	a->ho.jo.hooks = &hooks;
	jobcode = job_run(&a->ho.jo);
	code = stk_front_report(a, &f, jobcode);
out:
	for (int h = 0; h < f.nhosts; h++)
		free(f.host_why[h]);
	free(f.host_why);
	front_record_free(&f.rec);
	free(f.fatal);
	front_argv_free(wargv);
	free(hosts);
	free(nodes);
	free(slurm_id);
	free(a->found);
	a->found = NULL;
	hostopt_release(&a->ho);
	return code;
}
