/*
 * The evidence rule (docs/SECURITY.md): which processes speak for the job.
 *
 * Anyone on a host can start a process whose environment says
 * COLL_JOBID=<an id; ids are not secret>, COLL_RANK=2, or whose command line
 * matches --match, and write a status page or a dump for it. Root runs
 * collstack beside such users, and the verdict must not be theirs to steer.
 * So a process the selection found is a rank of the job only if
 *
 *   - it belongs to the job's owner: the user running collstack, or the one
 *     root names with --user (being root is no reason to take anyone's);
 *   - with --job, it also descends from the job's launcher: a collrun of that
 *     owner (collrun itself, its agent or a relay of its tree) or a collcheck
 *     (which launches its own jobs), or Slurm's slurmstepd, which only root runs;
 *   - it, and that launcher, are the owner's through and through: real and
 *     effective uid alike (a setuid program run by another user carries
 *     root's effective uid, and a name and environment its caller chose);
 *   - with --slurm, it descends from that job's slurmstepd (root's, named
 *     "slurmstepd: [JOBID.STEP]"), and Slurm runs the job's tasks as its
 *     user: that alone names the owner, so root needs no --user there.
 *
 * Pages, dumps and sockets are then believed only for the processes taken,
 * and only when their owner is the process's (find.c, frlive.c, ras.c). A
 * process the rule refused is listed as ignored, with why, and never reaches
 * the verdict.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collstack.h"
#include "user.h"
#include "xmalloc.h"

#define STK_IGNORED_MAX 8	/* listed per host; the rest are counted */
#define STK_ANCESTRY_MAX 64	/* a launcher further up than this is not one */

/* The owner --user names: a user name or a uid; -1 with why. */
int
stk_evidence_init(struct stk_evidence *e, const char *user, char *err, size_t len)
{
	struct passwd *pw;
	char *end;
	long v;

	memset(e, 0, sizeof *e);
	e->owner = geteuid();
	if (user == NULL)
		return 0;
	e->named = 1;
	if ((pw = getpwnam(user)) != NULL) {
		e->owner = pw->pw_uid;
	} else {
		v = strtol(user, &end, 10);
		if (user[0] < '0' || user[0] > '9' || *end != '\0' || v < 0 || v > 0x7fffffff) {
			snprintf(err, len, "--user '%.64s': no such user here; give a user name or "
			    "a uid", user);
			return -1;
		}
		e->owner = (uid_t)v;
	}
	if (e->owner != geteuid() && geteuid() != 0) {
		snprintf(err, len, "--user %.64s: only root may read another user's processes",
		    user);
		return -1;
	}
	return 0;
}

/*
 * Is the process uid's through and through? A setuid program run by another
 * user has that user's real uid and uid's effective one: its name and
 * environment are its caller's to choose, so it speaks for no one.
 */
static int
stk_evidence_owned(const struct stack_pinfo *p, uid_t uid)
{
	return p->uid == uid && p->ruid == uid;
}

/*
 * Is p running a program of this name? Its comm is only the name it was
 * started by, which a link of any name to any program gives; the file it
 * runs is what the kernel says /proc/PID/exe is.
 */
static int
stk_evidence_exe(const struct stack_pinfo *p, const char *name)
{
	char path[64], exe[4096], *base;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%d/exe", (int)p->pid);
	if ((n = readlink(path, exe, sizeof exe - 1)) <= 0)
		return 0;
	exe[n] = '\0';
	if (n > 10 && strcmp(exe + n - 10, " (deleted)") == 0)
		exe[n - 10] = '\0';	/* a launcher replaced by a rebuild is still one */
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	/* Debian installs slurmstepd as slurmstepd-wlm, named through alternatives. */
	return strcmp(p->comm, name) == 0 && strncmp(base, name, strlen(name)) == 0 &&
	    (base[strlen(name)] == '\0' || base[strlen(name)] == '-');
}

/*
 * Is p the slurmstepd of the job (any job when id is NULL)? Only root runs
 * one; it takes the job's user as its effective uid for moments while it
 * sets up the tasks' files, so its real uid says whose it is.
 */
static int
stk_evidence_stepd(const struct stack_pinfo *p, const char *id)
{
	size_t n;

	if (p->ruid != 0 || !stk_evidence_exe(p, "slurmstepd"))
		return 0;
	if (id == NULL)
		return 1;
	n = strlen(id);
	return strncmp(p->cmdline, "slurmstepd: [", 13) == 0 &&
	    strncmp(p->cmdline + 13, id, n) == 0 && p->cmdline[13 + n] == '.';
}

/* A launcher of coll's that starts ranks with COLL_JOBID: collrun, and collcheck's own jobs. */
static int
stk_evidence_launcher(const struct stack_pinfo *p, uid_t owner)
{
	return stk_evidence_owned(p, owner) && (stk_evidence_exe(p, "collrun") ||
	    stk_evidence_exe(p, "collcheck"));
}

/* Does pid descend from a launcher of the job: a coll launcher of owner's, or a slurmstepd? */
static int
stk_evidence_descends(const struct stk_proctab *t, const struct stack_pinfo *pi, uid_t owner,
    const char *slurm)
{
	pid_t pid = pi->ppid;

	for (int depth = 0; depth < STK_ANCESTRY_MAX && pid > 1; depth++) {
		const struct stack_pinfo *p = stk_proctab_get(t, pid);

		if (p == NULL)
			return 0;
		if (stk_evidence_stepd(p, slurm))
			return 1;
		if (slurm == NULL && stk_evidence_launcher(p, owner))
			return 1;
		pid = p->ppid;
	}
	return 0;
}

/* NULL if the process may speak for the job, else why not (into why). */
const char *
stk_evidence_check(const struct stk_evidence *e, const struct stk_args *a,
    const struct stk_proctab *t, const struct stack_pinfo *pi, char *why, size_t len)
{
	char user[48], owner[48];
	int root_slurm = a->sel == SEL_SLURM && geteuid() == 0 && !e->named;

	user_name(pi->uid, user, sizeof user);
	user_name(e->owner, owner, sizeof owner);
	if (pi->ruid != pi->uid) {
		user_name(pi->ruid, owner, sizeof owner);
		snprintf(why, len, "pid %d runs as user %s but was started by user %s (a setuid "
		    "program): it speaks for no one", (int)pi->pid, user, owner);
		return why;
	}
	if (pi->uid != e->owner && !root_slurm) {
		if (a->sel == SEL_JOB)
			snprintf(why, len, "pid %d of user %s claims job %s, which is %s's",
			    (int)pi->pid, user, a->jobid, owner);
		else
			snprintf(why, len, "pid %d belongs to user %s, not %s: %s", (int)pi->pid, user,
			    owner, geteuid() == 0 ? "give --user to read another user's processes" :
			    "run collstack as that user or as root");
		return why;
	}
	if (a->sel == SEL_JOB && !stk_evidence_descends(t, pi, e->owner, NULL)) {
		snprintf(why, len, "pid %d of user %s claims job %s but was not started by its "
		    "collrun, collcheck or Slurm", (int)pi->pid, user, a->jobid);
		return why;
	}
	if (a->sel == SEL_SLURM && !stk_evidence_descends(t, pi, e->owner, a->slurm)) {
		snprintf(why, len, "pid %d of user %s claims Slurm job %s but does not run under "
		    "its slurmstepd", (int)pi->pid, user, a->slurm);
		return why;
	}
	return NULL;
}

/* Keep why for the report: the first few in full, then a count. */
void
stk_evidence_ignore(struct stk_local *l, const char *why)
{
	if (l->nignored >= STK_IGNORED_MAX) {
		l->nmore++;
		return;
	}
	l->ignored = xreallocarray(l->ignored, (size_t)l->nignored + 1, sizeof *l->ignored);
	l->ignored[l->nignored++] = xstrdup(why);
}
