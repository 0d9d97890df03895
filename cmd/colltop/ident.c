/*
 * Who a status page's process is in its job, for a job coll did not launch
 * (torchrun, mpirun, srun): NCCL's profiler plugin names its pages with job
 * id 0 and the communicator's ranks, so colltop would show every such job
 * as 0000000000000000 and number its ranks per communicator. The launcher
 * set the rest in the process's environment (core/stack/proc.c reads it):
 * its world rank, and the job's key, from the first of
 *
 *   COLL_JOBID                 coll's own id
 *   SLURM_JOB_ID (+ the step)  "slurm:1234.0": the same on every node
 *   TORCHELASTIC_RUN_ID        "run:ID": torchrun's rendezvous, every node
 *   the nearest launcher above "torchrun:4711": this host only (a
 *                              multi-node mpirun's orted differs per host)
 *
 * torch's default run id "none" names no job (every torchrun without
 * --rdzv-id carries it), so it falls to the launcher.
 *
 * What may be read: only the page's own process's environment, and only
 * when that process is the page owner's by real and effective uid (root
 * reads a user's page; a page naming another user's process says nothing
 * of it). Its ancestors are read for their name alone (stat, cmdline,
 * exe): a launcher's name is anyone's to take, so it groups a user's own
 * processes into a job and never makes a rank of anyone else's.
 */
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "stack.h"
#include "top.h"

#define IDENT_DEPTH 16	/* ancestors looked at for a launcher */

/* Is pid a process of owner by real and effective uid (no environment read yet)? */
static int
ident_owned(pid_t pid, uid_t owner)
{
	char path[64], line[256];
	unsigned long r, e;
	int yes = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			yes = r == (unsigned long)owner && e == (unsigned long)owner;
			break;
		}
	fclose(f);
	return yes;
}

/* An ancestor's name, state and parent, without its environment. */
static int
ident_ancestor(pid_t pid, struct stack_pinfo *pi)
{
	char path[64];
	ssize_t n;
	FILE *f;

	memset(pi, 0, sizeof *pi);
	pi->pid = pid;
	if ((pi->state = stack_state(pid, &pi->ppid)) == 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	if ((f = fopen(path, "re")) != NULL) {
		if (fgets(pi->comm, sizeof pi->comm, f) != NULL)
			pi->comm[strcspn(pi->comm, "\n")] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	n = (ssize_t)fread(pi->cmdline, 1, sizeof pi->cmdline - 1, f);
	fclose(f);
	for (ssize_t i = 0; i < n; i++)
		pi->cmdline[i] = pi->cmdline[i] == '\0' ? ' ' : pi->cmdline[i];
	while (n > 0 && pi->cmdline[n - 1] == ' ')
		pi->cmdline[--n] = '\0';
	return 0;
}

/* The nearest launcher above pi: "torchrun:4711" into id->launcher. */
static void
ident_launcher(const struct stack_pinfo *pi, struct top_ident *id)
{
	struct stack_pinfo a;
	pid_t p = pi->ppid;
	const char *name;

	for (int d = 0; d < IDENT_DEPTH && p > 1; d++) {
		if (ident_ancestor(p, &a) != 0)
			return;
		if ((name = stack_launcher_name(&a)) != NULL) {
			snprintf(id->launcher, sizeof id->launcher, "%s:%d", name, (int)p);
			return;
		}
		p = a.ppid;
	}
}

/* The job's key, in the order the header gives. */
static void
ident_key(const struct stack_pinfo *pi, struct top_ident *id)
{
	if (pi->jobid[0] != '\0')
		snprintf(id->key, sizeof id->key, "%.20s", pi->jobid);
	else if (pi->slurm_job[0] != '\0' && pi->slurm_step >= 0)
		snprintf(id->key, sizeof id->key, "slurm:%.20s.%d", pi->slurm_job, pi->slurm_step);
	else if (pi->slurm_job[0] != '\0')
		snprintf(id->key, sizeof id->key, "slurm:%.20s", pi->slurm_job);
	else if (pi->run_id[0] != '\0' && strcmp(pi->run_id, "none") != 0)
		snprintf(id->key, sizeof id->key, "run:%.39s", pi->run_id);
	else if (id->launcher[0] != '\0') {
		snprintf(id->key, sizeof id->key, "%s", id->launcher);
		id->local = 1;
	}
	snprintf(id->slurm, sizeof id->slurm, "%s", pi->slurm_job);
}

int
ident_read(pid_t pid, uid_t owner, struct top_ident *id)
{
	struct stack_pinfo pi;

	*id = (struct top_ident){ .pid = pid, .wrank = -1 };
	if (pid <= 0 || !ident_owned(pid, owner))
		return -1;
	if (stack_pinfo_read(pid, &pi) != COLL_OK || !pi.env_read)
		return -1;
	/* The pid may have been reused between the two reads: only the owner's says who it is. */
	if (pi.uid != owner || pi.ruid != owner)
		return -1;
	id->wrank = pi.rank;
	ident_launcher(&pi, id);
	ident_key(&pi, id);
	id->known = 1;
	return 0;
}
