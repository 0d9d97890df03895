/*
 * Finding the job's processes on this host: by the job id collrun put in
 * their environment (COLL_JOBID), by Slurm job id (SLURM_JOB_ID), by a
 * regular expression over the command line, or by pid. A process belongs to
 * this host when it shares our UTS namespace (hosts built of namespaces on
 * one machine share /proc); collstack's own processes and their ancestors are
 * never taken. A launcher's wrapper that carries the same rank as its child
 * (a shell, an agent) gives way to the child.
 *
 * Then the status pages: one scan of each directory the processes write to
 * (their COLL_STATUS_DIR, else the default), pages matched by pid and owner.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "collstack.h"
#include "err.h"
#include "status.h"
#include "xmalloc.h"

struct stk_filter {
	const struct stk_args *a;
	regex_t re;
	int have_re;
	long *pids;
	int npids;
	pid_t *mine;		/* this process and its ancestors */
	int nmine;
	uint64_t uts;
	char *exe;		/* this program: its other processes are ours */
	pid_t *roots;		/* launchers asked for (--pid, --match): each stands for its job */
	int nroots;
};

static int
stk_parse_pids(struct stk_filter *f, const char *s, char *err, size_t len)
{
	char *dup = xstrdup(s), *save = NULL, *tok;
	int r = 0;

	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(tok, &end, 10);

		if (*tok < '0' || *tok > '9' || *end != '\0' || v <= 0 || v > 1 << 22) {
			snprintf(err, len, "--pid: '%s' is not a process id; give pids as 11,12,13",
			    tok);
			r = -1;
			break;
		}
		f->pids = xreallocarray(f->pids, (size_t)f->npids + 1, sizeof *f->pids);
		f->pids[f->npids++] = v;
	}
	if (r == 0 && f->npids == 0) {
		snprintf(err, len, "--pid: no process id given; give pids as 11,12,13");
		r = -1;
	}
	free(dup);
	return r;
}

static void
stk_ancestors(struct stk_filter *f)
{
	pid_t p = getpid();

	while (p > 1 && f->nmine < 64) {
		struct stack_pinfo pi;

		f->mine = xreallocarray(f->mine, (size_t)f->nmine + 1, sizeof *f->mine);
		f->mine[f->nmine++] = p;
		if (stack_pinfo_read(p, &pi) != COLL_OK)
			break;
		p = pi.ppid;
	}
}

static int
stk_filter_init(struct stk_filter *f, const struct stk_args *a, char *err, size_t len)
{
	int rc;

	memset(f, 0, sizeof *f);
	f->a = a;
	f->uts = stack_self_uts();
	f->exe = cmd_self();
	stk_ancestors(f);
	if (a->sel == SEL_MATCH) {
		if ((rc = regcomp(&f->re, a->match, REG_EXTENDED | REG_NOSUB)) != 0) {
			char why[128];

			regerror(rc, &f->re, why, sizeof why);
			snprintf(err, len, "--match: '%s' is not a regular expression: %s", a->match,
			    why);
			return -1;
		}
		f->have_re = 1;
	}
	if (a->sel == SEL_PID)
		return stk_parse_pids(f, a->pids, err, len);
	return 0;
}

static void
stk_filter_free(struct stk_filter *f)
{
	if (f->have_re)
		regfree(&f->re);
	free(f->pids);
	free(f->mine);
	free(f->exe);
	free(f->roots);
}

/* One of ours: collstack itself, its workers, the agents that started them. */
static int
stk_is_ours(const struct stk_filter *f, const struct stack_pinfo *pi)
{
	char path[64], exe[4096];
	ssize_t n;

	for (int i = 0; i < f->nmine; i++)
		if (f->mine[i] == pi->pid)
			return 1;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pi->pid);
	n = readlink(path, exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		if (f->exe != NULL && strcmp(exe, f->exe) == 0)
			return 1;
	}
	return strcmp(pi->comm, "collstack") == 0 || strcmp(pi->comm, "collrun") == 0;
}

/*
 * Launchers and agents (torchrun, mpirun, orted, srun, slurmstepd, collrun,
 * ...) and programs that carry a job's variables without being one of its
 * ranks: never a task, in any selection. Its name, or NULL.
 */
static const char *
stk_launcher(const struct stack_pinfo *pi)
{
	const char *name = stack_launcher_name(pi);

	if (name == NULL && (strcmp(pi->comm, "sshd") == 0 || strcmp(pi->comm, "collstack") == 0))
		name = pi->comm;
	return name;
}

#define STK_ROOT 2	/* stk_wanted: a launcher asked for, which stands for its job */

static int
stk_wanted(const struct stk_filter *f, const struct stack_pinfo *pi)
{
	const struct stk_args *a = f->a;

	switch (a->sel) {
	case SEL_JOB:
		return pi->rank >= 0 && strcmp(pi->jobid, a->jobid) == 0 && !stk_launcher(pi);
	case SEL_SLURM:
		return strcmp(pi->slurm_job, a->slurm) == 0 && pi->rank >= 0 && !stk_launcher(pi);
	case SEL_MATCH:
		if (regexec(&f->re, pi->cmdline, 0, NULL, 0) != 0 || stk_is_ours(f, pi))
			return 0;
		return stack_launcher_name(pi) != NULL ? STK_ROOT : !stk_launcher(pi);
	case SEL_PID:
		for (int i = 0; i < f->npids; i++)
			if (f->pids[i] == pi->pid)
				return stack_launcher_name(pi) != NULL ? STK_ROOT : 1;
		return 0;
	case SEL_FR:		/* offline: no process is read */
		return 0;
	}
	return 0;
}

static int
stk_is_ancestor(const struct stk_local *l, pid_t anc, pid_t pid)
{
	for (int depth = 0; depth < 16 && pid > 1; depth++) {
		int k;

		for (k = 0; k < l->n && l->pi[k].pid != pid; k++)
			;
		if (k == l->n)
			return 0;
		pid = l->pi[k].ppid;
		if (pid == anc)
			return 1;
	}
	return 0;
}

/*
 * A rank's process and another process with the same rank, one above the
 * other: a wrapper (a shell, env, an agent: one thread, waiting for its
 * child) gives way to the child; otherwise the children are the rank's own
 * (a data loader's workers, a compiler pool, subprocess) and give way to it.
 */
static int
stk_is_waiting_wrapper(const struct stack_pinfo *pi)
{
	return pi->nthreads == 1 && (pi->syscall == SYS_wait4 || pi->syscall == SYS_waitid);
}

static void
stk_drop_wrappers(struct stk_local *l)
{
	char *drop = xcalloc((size_t)l->n + 1, 1);
	int w = 0;

	for (int i = 0; i < l->n; i++)
		for (int k = 0; k < l->n; k++) {
			const struct stack_pinfo *anc = &l->pi[i], *desc = &l->pi[k];

			if (k == i || anc->rank < 0 || desc->rank != anc->rank ||
			    !stk_is_ancestor(l, anc->pid, desc->pid))
				continue;
			drop[stk_is_waiting_wrapper(anc) ? i : k] = 1;
		}
	for (int i = 0; i < l->n; i++)
		if (!drop[i])
			l->pi[w++] = l->pi[i];
	l->n = w;
	free(drop);
}

static void
stk_local_add(struct stk_local *out, const struct stack_pinfo *pi)
{
	out->pi = xreallocarray(out->pi, (size_t)out->n + 1, sizeof *out->pi);
	out->pi[out->n++] = *pi;
}

int
stk_select_check(const struct stk_args *a, char *err, size_t len)
{
	struct stk_filter f;
	int r = stk_filter_init(&f, a, err, len);

	stk_filter_free(&f);
	return r;
}

int
stk_select_alive(const struct stk_args *a)
{
	struct stk_filter f;
	char err[256];
	int alive = 0;

	if (stk_filter_init(&f, a, err, sizeof err) != 0) {
		stk_filter_free(&f);
		return -1;
	}
	/* EPERM: it runs, as another user's; only ESRCH means there is none. */
	for (int i = 0; i < f.npids; i++)
		alive += kill((pid_t)f.pids[i], 0) == 0 || errno == EPERM;
	stk_filter_free(&f);
	return alive;
}

/* Every process of the host, for ancestry; the count, or -1 with why. */
int
stk_proctab_read(struct stk_proctab *t, uid_t owner, char *err, size_t len)
{
	pid_t *pids = NULL;
	int n;

	memset(t, 0, sizeof *t);
	if ((n = stack_pids(&pids)) < 0) {
		snprintf(err, len, "cannot list /proc: %s", strerror(errno));
		return -1;
	}
	t->pi = xcalloc((size_t)n + 1, sizeof *t->pi);
	for (int i = 0; i < n; i++)
		if (stack_pinfo_read_of(pids[i], owner, &t->pi[t->n]) == COLL_OK)
			t->n++;
	free(pids);
	return t->n;
}

/* Pids asked for and not here: gone, when this is the only host. */
static void
stk_add_gone(const struct stk_filter *f, struct stk_local *out)
{
	for (int i = 0; f->a->sel == SEL_PID && !hostopt_given(&f->a->ho) && i < f->npids; i++) {
		int found = 0;

		for (int k = 0; k < out->n && !found; k++)
			found = out->pi[k].pid == f->pids[i];
		for (int k = 0; k < f->nroots && !found; k++)
			found = f->roots[k] == f->pids[i];
		for (int k = 0; k < out->nignored && !found; k++)
			found = strncmp(out->ignored[k], "pid ", 4) == 0 &&
			    atol(out->ignored[k] + 4) == f->pids[i];
		if (!found)
			stk_local_add(out, &(struct stack_pinfo){ .pid = (pid_t)f->pids[i],
			    .rank = -1, .local_rank = -1, .group_rank = -1, .slurm_step = -1 });
	}
}

const struct stack_pinfo *
stk_proctab_get(const struct stk_proctab *t, pid_t pid)
{
	size_t lo = 0, hi = (size_t)t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->pi[mid].pid == pid)
			return &t->pi[mid];
		if (t->pi[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Does pi run under anc (not itself)? */
static int
stk_under(const struct stk_proctab *t, pid_t anc, const struct stack_pinfo *pi)
{
	pid_t pid = pi->ppid;

	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		const struct stack_pinfo *p;

		if (pid == anc)
			return 1;
		if ((p = stk_proctab_get(t, pid)) == NULL)
			return 0;
		pid = p->ppid;
	}
	return 0;
}

static int
stk_local_has(const struct stk_local *l, pid_t pid)
{
	for (int i = 0; i < l->n; i++)
		if (l->pi[i].pid == pid)
			return 1;
	return 0;
}

/* The step of stk_find that takes a process the selection found, or leaves it out with why. */
static void
stk_take(const struct stk_evidence *ev, const struct stk_args *a, const struct stk_proctab *t,
    const struct stack_pinfo *pi, struct stk_local *out)
{
	char why[256];

	if (stk_evidence_check(ev, a, t, pi, why, sizeof why) != NULL)
		stk_evidence_ignore(out, why);
	else
		stk_local_add(out, pi);
}

/* Would the processes under root be taken: here, not ours, not launchers, not taken yet? */
static int
stk_root_kin(const struct stk_filter *f, const struct stk_proctab *t, pid_t root,
    const struct stack_pinfo *pi, int children)
{
	if (children ? pi->ppid != root : pi->rank < 0 || !stk_under(t, root, pi))
		return 0;
	return (pi->uts_ns == f->uts || pi->uts_ns == 0) && pi->pid != getpid() &&
	    !stk_launcher(pi) && !stk_is_ours(f, pi);
}

/*
 * A launcher asked for (its pid, or --match took it) stands for its job:
 * the processes under it that carry a rank, each by the evidence rule.
 * Where none does, its own children are the tasks, numbered, and why is said.
 */
static void
stk_root_expand(const struct stk_filter *f, const struct stk_evidence *ev,
    const struct stk_proctab *t, pid_t root, struct stk_local *out)
{
	const struct stack_pinfo *rp = stk_proctab_get(t, root);
	int found = 0;

	for (int children = 0; children < 2 && found == 0; children++)
		for (int i = 0; i < t->n; i++) {
			const struct stack_pinfo *pi = &t->pi[i];

			if (!stk_root_kin(f, t, root, pi, children))
				continue;
			found = children ? -1 : 1;
			if (!stk_local_has(out, pi->pid))
				stk_take(ev, f->a, t, pi, out);
		}
	if (found <= 0 && out->why == NULL && rp != NULL)
		out->why = xasprintf("launcher %s (pid %d) %s", stk_launcher(rp), (int)root,
		    found < 0 ? "started processes that carry no rank in their environment" :
		    f->a->sel == SEL_PID && strcmp(stk_launcher(rp), "srun") == 0 ?
		    "has no process under it on this host: give its job with --slurm JOBID" :
		    "has no process under it here");
}

struct stk_vote {
	pid_t pid;
	const char *name;
	int n;
};

const struct stack_pinfo *
stk_launcher_above(const struct stk_proctab *t, const struct stack_pinfo *pi)
{
	pid_t pid = pi->ppid;

	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		const struct stack_pinfo *p = stk_proctab_get(t, pid);

		if (p == NULL)
			return NULL;
		if (stack_launcher_name(p) != NULL)
			return p;
		pid = p->ppid;
	}
	return NULL;
}

/*
 * The job's launcher on this host, shown once: the launcher nearest above
 * the most of its ranks (torchrun, not the srun above it), else the one
 * asked for.
 */
static void
stk_launcher_pick(const struct stk_filter *f, const struct stk_proctab *t,
    struct stk_local *out)
{
	struct stk_vote *v = xcalloc((size_t)out->n + 1, sizeof *v), best = { 0 };
	int nv = 0, k;

	for (int i = 0; i < out->n; i++) {
		const struct stack_pinfo *l = stk_launcher_above(t, &out->pi[i]);

		if (l == NULL)
			continue;
		for (k = 0; k < nv && v[k].pid != l->pid; k++)
			;
		if (k == nv)
			v[nv++] = (struct stk_vote){ l->pid, stack_launcher_name(l), 0 };
		if (++v[k].n > best.n)
			best = v[k];
	}
	for (int i = 0; best.n == 0 && i < f->nroots; i++) {
		const struct stack_pinfo *rp = stk_proctab_get(t, f->roots[i]);

		if (rp != NULL && stack_launcher_name(rp) != NULL)
			best = (struct stk_vote){ rp->pid, stack_launcher_name(rp), 1 };
	}
	if (best.n > 0) {
		snprintf(out->launcher, sizeof out->launcher, "%s", best.name);
		out->launcher_pid = best.pid;
	}
	free(v);
}

/*
 * What --match took above a launcher it also took (timeout, env, a shell
 * that runs mpirun): the job's wrappers, carrying no rank, not its tasks.
 */
static void
stk_drop_above_roots(const struct stk_filter *f, const struct stk_proctab *t,
    struct stk_local *out)
{
	int w = 0;

	for (int i = 0; i < out->n; i++) {
		int above = 0;

		for (int k = 0; k < f->nroots && !above && out->pi[i].rank < 0; k++) {
			const struct stack_pinfo *rp = stk_proctab_get(t, f->roots[k]);

			above = rp != NULL && stk_under(t, out->pi[i].pid, rp);
		}
		if (!above)
			out->pi[w++] = out->pi[i];
	}
	out->n = w;
}

/*
 * A pid asked for that carries no rank while processes under it do: a
 * launcher of its own (a job script, a container's entry point, the parent
 * discovery names for ranks with no known launcher above them), which
 * stands for its job as a known launcher does.
 */
static int
stk_is_parent_of_ranks(const struct stk_filter *f, const struct stk_proctab *t,
    const struct stack_pinfo *rp)
{
	if (rp->rank >= 0)
		return 0;
	for (int i = 0; i < t->n; i++)
		if (stk_root_kin(f, t, rp->pid, &t->pi[i], 0))
			return 1;
	return 0;
}

static void
stk_root_add(struct stk_filter *f, pid_t pid)
{
	f->roots = xreallocarray(f->roots, (size_t)f->nroots + 1, sizeof *f->roots);
	f->roots[f->nroots++] = pid;
}

int
stk_find(const struct stk_args *a, struct stk_local *out, char *err, size_t len)
{
	struct stk_filter f;
	struct stk_proctab t = { 0 };
	struct stk_evidence ev;
	char why[256];

	memset(out, 0, sizeof *out);
	if (stk_filter_init(&f, a, err, len) != 0 ||
	    stk_evidence_init(&ev, a->user, err, len) != 0 ||
	    stk_proctab_read(&t, ev.owner, err, len) < 0) {
		stk_filter_free(&f);
		return -1;
	}
	for (int i = 0; i < t.n; i++) {
		const struct stack_pinfo *pi = &t.pi[i];
		int w;

		if ((pi->uts_ns != f.uts && pi->uts_ns != 0) || pi->pid == getpid())
			continue;
		if (!(w = stk_wanted(&f, pi)) || (a->sel != SEL_PID && stk_is_ours(&f, pi)))
			continue;
		if (w == 1 && a->sel == SEL_PID && stk_is_parent_of_ranks(&f, &t, pi))
			w = STK_ROOT;
		/* A launcher stands for its job only if it may speak for one. */
		if (w == STK_ROOT && stk_evidence_check(&ev, a, &t, pi, why, sizeof why) == NULL)
			stk_root_add(&f, pi->pid);
		else
			stk_take(&ev, a, &t, pi, out);
	}
	for (int i = 0; i < f.nroots; i++)
		stk_root_expand(&f, &ev, &t, f.roots[i], out);
	if (a->sel == SEL_MATCH)
		stk_drop_above_roots(&f, &t, out);
	stk_add_gone(&f, out);
	if (a->sel != SEL_PID || f.nroots > 0)
		stk_drop_wrappers(out);
	stk_launcher_pick(&f, &t, out);
	free(t.pi);
	stk_filter_free(&f);
	return 0;
}

void
stk_local_free(struct stk_local *l)
{
	for (int i = 0; i < l->nignored; i++)
		free(l->ignored[i]);
	free(l->ignored);
	free(l->pi);
	free(l->why);
	memset(l, 0, sizeof *l);
}

static void
stk_page_from(struct stk_page *p, const struct status_page *pg)
{
	uint64_t now = clock_wall_ns();

	snprintf(p->commid, sizeof p->commid, "%016" PRIx64, pg->commid);
	p->nranks = pg->nranks;
	p->rank = pg->rank;
	p->state = pg->state;
	p->seq_started = pg->seq_started;
	p->seq_done = pg->seq_done;
	p->kind_started = pg->kind_started;
	p->kind_done = pg->kind_done;
	p->bytes = pg->bytes;
	p->wait_peer = pg->wait_peer;
	p->wait_dir = pg->wait_dir;
	p->idle_s = pg->progress_ns > 0 && now > pg->progress_ns ?
	    (double)(now - pg->progress_ns) / 1e9 : 0;
	snprintf(p->error, sizeof p->error, "%s", pg->error);
	p->nccl = pg->source == STATUS_SRC_NCCL;
	p->kernel = (pg->flags & STATUS_F_KERNEL) != 0;
	if (p->nccl) {
		/* Ranks meet at the op they call: NCCL's is the one enqueued. */
		p->seq_kernel = pg->seq_started;
		p->kind_kernel = pg->kind_started;
		p->seq_started = pg->seq_queued;
		/* Another user's process may have written them: bounded by the reader, cleaned here. */
		snprintf(p->dtype, sizeof p->dtype, "%s", pg->dtype);
		snprintf(p->algo, sizeof p->algo, "%s", pg->algo);
		snprintf(p->proto, sizeof p->proto, "%s", pg->proto);
		stk_clean_here(p->dtype);
		stk_clean_here(p->algo);
		stk_clean_here(p->proto);
		p->lib_version = pg->lib_version;
		p->kind_started = pg->kind_queued;
		if (!p->kernel && pg->seq_queued > 0) {
			p->seq_done = pg->seq_queued - 1;
			p->state = STATUS_RUNNING;
		}
	}
}

/* Each page is kept with its owner; stk_pages_of matches it to a process of that owner. */
static int
stk_pages_add(const struct status_page *pg, uid_t owner, void *arg)
{
	struct stk_pageset *ps = arg;

	ps->pages = xreallocarray(ps->pages, (size_t)ps->n + 1, sizeof *ps->pages);
	ps->uids = xreallocarray(ps->uids, (size_t)ps->n + 1, sizeof *ps->uids);
	ps->pages[ps->n] = *pg;
	ps->uids[ps->n++] = owner;
	return 0;
}

/* The pages in dir of one owner (a process's own pages are all that can speak for it). */
void
stk_pages_load(struct stk_pageset *ps, const char *dir, uid_t owner)
{
	if (dir == NULL || dir[0] == '\0')
		dir = status_dir();
	for (int i = 0; i < ps->ndirs; i++)
		if (strcmp(ps->dirs[i], dir) == 0 && ps->dir_uids[i] == owner)
			return;	/* read already */
	ps->dirs = xreallocarray(ps->dirs, (size_t)ps->ndirs + 1, sizeof *ps->dirs);
	ps->dir_uids = xreallocarray(ps->dir_uids, (size_t)ps->ndirs + 1, sizeof *ps->dir_uids);
	ps->dir_uids[ps->ndirs] = owner;
	ps->dirs[ps->ndirs++] = xstrdup(dir);
	status_scan_of(dir, owner, stk_pages_add, ps);
}

int
stk_pages_of(const struct stk_pageset *ps, pid_t pid, uid_t uid, struct stk_page **out)
{
	int n = 0;

	*out = NULL;
	for (int i = 0; i < ps->n; i++) {
		if (ps->pages[i].pid != pid || ps->uids[i] != uid)
			continue;
		*out = xreallocarray(*out, (size_t)n + 1, sizeof **out);
		stk_page_from(&(*out)[n++], &ps->pages[i]);
	}
	return n;
}

void
stk_pages_free(struct stk_pageset *ps)
{
	for (int i = 0; i < ps->ndirs; i++)
		free(ps->dirs[i]);
	free(ps->dirs);
	free(ps->dir_uids);
	free(ps->pages);
	free(ps->uids);
	memset(ps, 0, sizeof *ps);
}
