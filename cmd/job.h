/*
 * Running a job from the front end: start the root service, launch the ranks
 * (locally, over SSH or through srun), stream and label their output, forward
 * signals, fail fast (or keep going), record the job for collstack, and clean
 * up (status pages, job record) however it ends. collrun is this plus its
 * flags; collcheck uses it to start local workers.
 */
#ifndef COLL_JOB_H
#define COLL_JOB_H

#include "launch.h"

/*
 * A front end that reads its ranks instead of showing them (collcheck): each
 * hook is called before the job's own handling; output returns 1 for a line
 * it took, which is then not printed.
 */
struct job_hooks {
	int (*output)(void *arg, int rank, int stream, const char *line, size_t len);
	void (*exited)(void *arg, int rank, int state, int code);
	void (*host_failed)(void *arg, int host, const char *why);
	void *arg;
	int quiet;		/* the hooks report failed ranks and hosts: print none */
	/* The job's unique id, once its root listens (colltop authenticates rank 0 with it). */
	void (*started)(void *arg, const char *uid);
};

struct job_opts {
	const char *tool;	/* prefix of our own messages */
	int nranks;
	char **argv;		/* program and its arguments */
	char *const *env;	/* "NAME=value" for every rank (collrun -x); NULL: none */
	int label;		/* prefix each line with [rank] (and host for ssh): 1, 0 or
				 * JOB_LABEL_TTY: the lines of a stream that is a terminal */
	int rank0_stdout_only;	/* show only rank 0's stdout (collcheck's table) */
	int gather;		/* print identical stdout once per group, at the end */
	double timeout_s;	/* whole job; 0: none */
	double grace_s;		/* after a failure, before the others are killed */
	int keep_going;		/* a failed rank leaves the others running to their end */
	int join_timeout_ms;
	enum launch_kind kind;
	int nhosts;		/* 0: one local host */
	const char *const *hosts;
	const int *rank_host;
	const char *ssh_config;
	int connect_timeout_ms;
	int fanout;
	int tree;		/* ssh: past this many hosts, start them through relays (0: never) */
	int accept_new;
	const char *prefix;	/* remote ranks run PREFIX/bin/collrun, PATH and LD_LIBRARY_PATH first */
	int by_path;		/* we were started by a path: our own dirs go first remotely */
	const char *nodelist;	/* slurm: srun --nodelist */
	const char *slurm_jobid;	/* slurm: a step in this running job (srun --jobid --overlap) */
	int per_host;		/* slurm: --ntasks-per-node */
	int cyclic;		/* slurm: --distribution=cyclic */
	const struct job_hooks *hooks;	/* NULL: none */
};

#define JOB_LABEL_TTY 2
#define JOB_EXIT_TIMEOUT 124
#define JOB_EXIT_UNREACHABLE 255

/* How a rank ended, for a message after "rank N": "exited with code 3", "was lost: ...". */
void job_end_words(int state, int code, char *buf, size_t len);
/* Run the job to its end; the exit code to use (the failing rank's, 128+signal, ...). */
int job_run(const struct job_opts *o);

#endif
