/*
 * collrun: start N ranks of a program with a unique id to rendezvous with,
 * label and stream their output, forward signals, fail fast.
 *
 * Options end at the program name, as with mpirun and srun, so the program's
 * own flags need no "--". There is deliberately no option to keep going
 * after a rank fails: a collective job with a dead rank can only hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "comm.h"
#include "job.h"

enum { O_NP = 1, O_NO_LABEL, O_TIMEOUT, O_GRACE, O_HELP, O_VERSION };

static const struct opt collrun_opts[] = {
	{ O_NP, 'n', "np", OPT_VALUE, "N", "number of ranks to start (default 1)", NULL },
	{ O_NO_LABEL, 0, "no-label", OPT_FLAG, NULL, "do not prefix output lines with [rank]", NULL },
	{ O_TIMEOUT, 't', "timeout", OPT_VALUE, "SECONDS", "stop the whole job after this long "
	    "(exit 124)", NULL },
	{ O_GRACE, 0, "grace", OPT_VALUE, "SECONDS", "after a rank fails, wait this long before "
	    "killing the others (default 3)", NULL },
	{ O_HELP, 'h', "help", OPT_FLAG, NULL, "show this help", NULL },
	{ O_VERSION, 'V', "version", OPT_FLAG, NULL, "show the version", NULL },
	OPT_END_TABLE,
};

static int collrun_run(int argc, char **argv);

const struct cmd cmd_collrun = {
	.tool = "collrun",
	.name = NULL,
	.usage = "collrun [-n N] [--no-label] [--timeout S] [--] PROGRAM [ARGS...]",
	.summary = "Start N ranks of PROGRAM on this machine with COLL_UNIQUE_ID, COLL_RANK, "
	    "COLL_SIZE,\nRANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, ... and stream their output.",
	.opts = collrun_opts,
	.run = collrun_run,
};

static int
collrun_run(int argc, char **argv)
{
	struct job_opts jo = { .tool = "collrun", .nranks = 1, .label = 1, .grace_s = 3 };
	struct opt_state st;
	const char *val;
	char err[256];
	long n;
	int id;

	opt_init(&st, collrun_opts, argc, argv, 1);
	while ((id = opt_next(&st, &val)) != OPT_DONE) {
		switch (id) {
		case OPT_ERROR:
			return cmd_usage_error(&cmd_collrun, st.err);
		case O_NP:
			if (opt_int("-n", val, 1, 65536, &n, err, sizeof err) != 0)
				return cmd_usage_error(&cmd_collrun, err);
			jo.nranks = (int)n;
			break;
		case O_NO_LABEL:
			jo.label = 0;
			break;
		case O_TIMEOUT:
			if (opt_double("--timeout", val, 0.001, 1e7, &jo.timeout_s, err, sizeof err))
				return cmd_usage_error(&cmd_collrun, err);
			break;
		case O_GRACE:
			if (opt_double("--grace", val, 0, 3600, &jo.grace_s, err, sizeof err))
				return cmd_usage_error(&cmd_collrun, err);
			break;
		case O_HELP:
			cmd_usage(&cmd_collrun, stdout);
			return cmd_finish_stdout(EXIT_OK);
		case O_VERSION:
			printf("collrun %s\n", COLL_VERSION);
			return cmd_finish_stdout(EXIT_OK);
		}
	}
	if (st.ind >= argc)
		return cmd_usage_error(&cmd_collrun, "no program given");
	jo.argv = argv + st.ind;
	jo.join_timeout_ms = comm_env_timeout_ms();
	if (jo.timeout_s > 0 && jo.timeout_s * 1000 < jo.join_timeout_ms)
		jo.join_timeout_ms = (int)(jo.timeout_s * 1000) + 1;
	return job_run(&jo);
}
