/*
 * collstack with nothing named: the stalled job on this host. The jobs here
 * are the processes of the owner (this user, or --user's: real and effective
 * uid alike, as the evidence rule asks) that carry a rank, grouped by what
 * started them: a collrun job (its COLL_JOBID, whose record in the job
 * directory says it runs; one without is not looked at), else the launcher nearest above them (torchrun, mpirun,
 * slurmstepd: the Slurm job they carry), else their parent, where they write
 * NCCL plugin or coll status pages. Only processes that write their pages
 * where collstack reads them (COLL_STATUS_DIR, else /dev/shm: one place per
 * user unless set) are looked at, so that a private status directory keeps
 * its jobs apart (tests running side by side). A job's status pages say
 * whether it advances: one whose freshest page has not moved for
 * STK_FIND_STALL_S does not; one between the verdict's STK_STALL_S and
 * that is looked at again once it is decided, so that collstack run just
 * after a hang takes the hung job (issue 37: a healthy job started after it
 * was read instead).
 *
 * The one job that does not advance is taken, and named with how it was
 * found; where several do (or none does and there are several), each is
 * listed with the flag that picks it, and none is chosen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collstack.h"
#include "msg.h"
#include "status.h"
#include "xmalloc.h"

#define STK_FIND_STALL_S 2.0		/* no collective progress for this long: the job does not advance */
#define STK_CAND_MAX 64

struct stk_cand {
	char what[96];		/* "torchrun job 3f2c... (launcher pid 12)" */
	char how[64];		/* how it was found */
	char flag[40];		/* the flag that picks it: "--pid 12" */
	enum stk_select sel;
	char arg[32];		/* the flag's value */
	int nranks, npages;
	double idle_s;		/* the freshest page's; unknown without pages */
};

struct stk_disc {
	struct stk_cand c[STK_CAND_MAX];
	int n;
	struct stk_pageset ps;
	char (*ids)[24];	/* the running collrun jobs' ids, from their records */
	int nids;
};

/* The candidate a process belongs to, added if new; NULL when the list is full. */
static struct stk_cand *
stk_disc_cand(struct stk_disc *d, enum stk_select sel, const char *arg)
{
	for (int i = 0; i < d->n; i++)
		if (d->c[i].sel == sel && strcmp(d->c[i].arg, arg) == 0)
			return &d->c[i];
	if (d->n == STK_CAND_MAX)
		return NULL;
	memset(&d->c[d->n], 0, sizeof d->c[d->n]);
	d->c[d->n].sel = sel;
	snprintf(d->c[d->n].arg, sizeof d->c[d->n].arg, "%s", arg);
	snprintf(d->c[d->n].flag, sizeof d->c[d->n].flag, "%s %s", sel == SEL_JOB ? "--job" :
	    sel == SEL_SLURM ? "--slurm" : "--pid", arg);
	return &d->c[d->n++];
}

/* A collrun job: by its COLL_JOBID, which its record names. */
static struct stk_cand *
stk_disc_collrun(struct stk_disc *d, const char *jobid)
{
	struct stk_cand *c = stk_disc_cand(d, SEL_JOB, jobid);

	if (c != NULL && c->what[0] == '\0') {
		snprintf(c->what, sizeof c->what, "collrun job %s", jobid);
		snprintf(c->how, sizeof c->how, "its collrun job record");
	}
	return c;
}

/* What pi's job is: collrun's, a Slurm job's, a launcher's, or its parent's. */
static struct stk_cand *
stk_disc_of(struct stk_disc *d, const struct stk_proctab *t, const struct stack_pinfo *pi,
    int npages)
{
	const struct stack_pinfo *l = stk_launcher_above(t, pi);
	struct stk_cand *c;
	char arg[32];

	/*
	 * A COLL_JOBID without a running record in this user's job directory:
	 * a job collrun has ended (or one of another job directory's): not a
	 * candidate, as before.
	 */
	if (pi->jobid[0] != '\0') {
		for (int i = 0; i < d->nids; i++)
			if (strcmp(d->ids[i], pi->jobid) == 0)
				return stk_disc_collrun(d, pi->jobid);
		return NULL;
	}
	if (pi->slurm_job[0] != '\0' && strspn(pi->slurm_job, "0123456789_") ==
	    strlen(pi->slurm_job)) {
		c = stk_disc_cand(d, SEL_SLURM, pi->slurm_job);
		if (c != NULL && c->what[0] == '\0') {
			snprintf(c->what, sizeof c->what, "Slurm job %s", pi->slurm_job);
			snprintf(c->how, sizeof c->how, "its tasks here (SLURM_JOB_ID)");
		}
		return c;
	}
	if (l == NULL && npages == 0)
		return NULL;	/* a process with a rank and nothing else: no job to name */
	snprintf(arg, sizeof arg, "%d", (int)(l != NULL ? l->pid : pi->ppid));
	if ((c = stk_disc_cand(d, SEL_PID, arg)) == NULL || c->what[0] != '\0')
		return c;
	if (l != NULL) {
		snprintf(c->what, sizeof c->what, "%s job%s%.40s (launcher pid %d)",
		    stack_launcher_name(l), pi->run_id[0] ? " " : "", pi->run_id, (int)l->pid);
		msg_clean(c->what);	/* the run id is the environment's */
		snprintf(c->how, sizeof c->how, "its launcher's process tree");
	} else {
		snprintf(c->what, sizeof c->what, "the ranks under pid %d", (int)pi->ppid);
		snprintf(c->how, sizeof c->how, "their status pages");
	}
	return c;
}

/* The owner's processes here that carry a rank, each into its job with its pages. */
static void
stk_disc_scan(struct stk_disc *d, const struct stk_proctab *t, uid_t owner)
{
	uint64_t uts = stack_self_uts();

	for (int i = 0; i < t->n; i++) {
		const struct stack_pinfo *pi = &t->pi[i];
		struct stk_page *pg = NULL;
		struct stk_cand *c;
		int np;

		if (pi->rank < 0 || pi->uid != owner || pi->ruid != owner || pi->pid == getpid() ||
		    (pi->uts_ns != uts && pi->uts_ns != 0) ||
		    strcmp(pi->status_dir[0] ? pi->status_dir : "/dev/shm", status_dir()) != 0 ||
		    stack_launcher_name(pi) != NULL)
			continue;
		stk_pages_load(&d->ps, pi->status_dir, pi->uid);
		np = stk_pages_of(&d->ps, pi->pid, pi->uid, &pg);
		if ((c = stk_disc_of(d, t, pi, np)) != NULL) {
			c->nranks++;
			for (int k = 0; k < np; k++)
				if (c->npages++ == 0 || pg[k].idle_s < c->idle_s)
					c->idle_s = pg[k].idle_s;
		}
		free(pg);
	}
}

static int
stk_disc_stalled(const struct stk_cand *c)
{
	return c->npages > 0 && c->idle_s >= STK_FIND_STALL_S;
}

static void
stk_disc_state(const struct stk_cand *c, char *buf, size_t len)
{
	if (c->npages == 0)
		snprintf(buf, len, "%d rank%s here, no status pages: whether it advances is not "
		    "known", c->nranks, c->nranks == 1 ? "" : "s");
	else
		snprintf(buf, len, "%d rank%s here, %s %.0f s%s", c->nranks, c->nranks == 1 ? "" :
		    "s", stk_disc_stalled(c) ? "no collective progress for" :
		    "last collective progress", c->idle_s, stk_disc_stalled(c) ? "" : " ago");
}

/* Several: each with the flag that picks it, and none taken. */
static void
stk_disc_list(const struct stk_disc *d, int stalled)
{
	char state[128];

	if (stalled > 1)
		fprintf(stderr, "collstack: %d jobs here do not advance; pick one:\n", stalled);
	else
		fprintf(stderr, "collstack: %d jobs here, none of them alone stalled; pick one:\n",
		    d->n);
	for (int i = 0; i < d->n; i++) {
		if (stalled > 1 && !stk_disc_stalled(&d->c[i]))
			continue;
		stk_disc_state(&d->c[i], state, sizeof state);
		fprintf(stderr, "  collstack %-24s %s (found by %s): %s\n", d->c[i].flag,
		    d->c[i].what, d->c[i].how, state);
	}
}

/* Take c: the selection its flag makes, and the line that names it. */
static void
stk_disc_take(struct stk_args *a, const struct stk_cand *c, char *pick, size_t len)
{
	char state[128];

	snprintf(pick, len, "%s", c->arg);
	a->sel = c->sel;
	if (c->sel == SEL_JOB) {
		a->job = pick;
		snprintf(a->jobid, sizeof a->jobid, "%s", pick);
	} else if (c->sel == SEL_SLURM) {
		a->slurm = pick;
	} else {
		a->pids = pick;
	}
	stk_disc_state(c, state, sizeof state);
	a->found = xasprintf("%s, found by %s (%s; pick it again with %s)", c->what, c->how,
	    state, c->flag);
}

/*
 * A job whose freshest page stood still longer than the verdict's STK_STALL_S
 * but not yet STK_FIND_STALL_S may be hung or between two slow steps: the
 * seconds until it is one or the other (0: every job is decided). Run right
 * after a hang (the verdict already names it), collstack waits that long and
 * looks again rather than list a hung job as one that may advance.
 */
static double
stk_disc_undecided(const struct stk_disc *d)
{
	double wait = 0;

	for (int i = 0; i < d->n; i++)
		if (d->c[i].npages > 0 && d->c[i].idle_s >= STK_STALL_S &&
		    d->c[i].idle_s < STK_FIND_STALL_S && STK_FIND_STALL_S - d->c[i].idle_s > wait)
			wait = STK_FIND_STALL_S - d->c[i].idle_s;
	return wait;
}

/* The jobs here, each with its pages' word on whether it advances; -1 cannot look. */
static int
stk_disc_look(struct stk_disc *d, const struct stk_args *a)
{
	struct stk_proctab t;
	struct stk_evidence ev;
	char err[256];

	if (stk_evidence_init(&ev, a->user, err, sizeof err) != 0 ||
	    stk_proctab_read(&t, ev.owner, err, sizeof err) < 0)
		return -1;
	d->nids = stk_job_ids(a->user, &d->ids);
	stk_disc_scan(d, &t, ev.owner);
	/* Running collrun jobs with no process here (their ranks on other hosts) count too. */
	for (int i = 0; i < d->nids; i++)
		(void)stk_disc_collrun(d, d->ids[i]);
	free(t.pi);
	return 0;
}

static void
stk_disc_clear(struct stk_disc *d)
{
	free(d->ids);
	stk_pages_free(&d->ps);
	memset(d, 0, sizeof *d);
}

int
stk_discover(struct stk_args *a, char *pick, size_t len)
{
	struct stk_disc *d = xcalloc(1, sizeof *d);
	double wait;
	int stalled = 0, at = -1, r = 1;

	if (stk_disc_look(d, a) != 0) {
		free(d);
		return 1;	/* the job records' path says what is wrong */
	}
	if ((wait = stk_disc_undecided(d)) > 0) {
		stk_disc_clear(d);
		usleep((useconds_t)((wait + 0.05) * 1e6));
		if (stk_disc_look(d, a) != 0) {
			free(d);
			return 1;
		}
	}
	for (int i = 0; i < d->n; i++)
		if (stk_disc_stalled(&d->c[i]) && stalled++ == 0)
			at = i;
	if (stalled == 0 && d->n == 1)
		at = 0;
	if (stalled > 1 || (at < 0 && d->n > 1)) {
		stk_disc_list(d, stalled);
		r = -1;
	} else if (at >= 0) {
		stk_disc_take(a, &d->c[at], pick, len);
		r = 0;
	}
	stk_disc_clear(d);
	free(d);
	return r;
}
