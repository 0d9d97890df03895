/*
 * Running a job from the front end: start the root service, launch the ranks,
 * stream and label their output, forward signals, fail fast, record the job
 * for collstack, and clean up (status pages, job record) however it ends.
 * collrun is this plus its flags; collcheck uses it to start local workers.
 */
#ifndef COLL_JOB_H
#define COLL_JOB_H

struct job_opts {
	const char *tool;	/* prefix of our own messages */
	int nranks;
	char **argv;		/* program and its arguments */
	int label;		/* prefix each line with [rank] */
	int rank0_stdout_only;	/* show only rank 0's stdout (collcheck's table) */
	double timeout_s;	/* whole job; 0: none */
	double grace_s;		/* after a failure, before the others are killed */
	int join_timeout_ms;
};

#define JOB_EXIT_TIMEOUT 124

/* Run the job to its end; the exit code to use (the failing rank's, 128+signal, ...). */
int job_run(const struct job_opts *o);

#endif
