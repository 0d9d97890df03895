/*
 * collrun: start ranks of a program, on this machine or on many hosts over
 * SSH, with a unique id to rendezvous with; label and stream their output,
 * forward signals, fail fast or keep going.
 *
 * Options end at the program name, as with mpirun and srun, so the program's
 * own flags need no "--". Failing fast is the default, since ranks waiting
 * on a dead one in a collective can only hang; -k (--keep-going, as make's)
 * lets the others run to their end, for ranks that can go on without it:
 * independent ones, or survivors that shrink their communicator to carry on.
 * Hosts come from -H, else --hostfile, else a Slurm allocation's
 * SLURM_JOB_NODELIST; without any, every rank runs here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "cmd.h"
#include "comm.h"
#include "err.h"
#include "hostopt.h"
#include "job.h"
#include "xmalloc.h"

/* The core's bound (the wire's): more ranks could never join one communicator. */
#define COLLRUN_MAX_RANKS COLL_MAX_RANKS

enum { O_NP = 1, O_NO_LABEL, O_GATHER, O_TIMEOUT, O_GRACE, O_KEEP_GOING };

static const struct opt collrun_opts[] = {
	{ O_NP, 'n', "np", OPT_VALUE, "N", "number of ranks (default: the hosts' slots, or 1)",
	    NULL },
	HOSTOPT_TABLE("ranks per host (instead of slots)"),
	{ O_NO_LABEL, 0, "no-label", OPT_FLAG, NULL, "do not prefix output lines with [rank host]",
	    NULL },
	{ O_GATHER, 'g', "gather", OPT_FLAG, NULL, "print identical outputs once, under their "
	    "hosts and ranks", NULL },
	{ O_TIMEOUT, 't', "timeout", OPT_VALUE, "SECONDS", "stop the whole job after this long "
	    "(exit 124)", NULL },
	{ O_GRACE, 0, "grace", OPT_VALUE, "SECONDS", "after a rank fails, wait this long before "
	    "killing the others (default 3)", NULL },
	{ O_KEEP_GOING, 'k', "keep-going", OPT_FLAG, NULL, "after a rank fails, let the others "
	    "run to their end (the first failure still sets the exit code)", NULL },
	OPT_HELP_ENTRY,
	OPT_VERSION_ENTRY,
	OPT_END_TABLE,
};

static int collrun_run(int argc, char **argv);

const struct cmd cmd_collrun = {
	.tool = "collrun",
	.name = NULL,
	.usage = "collrun [-n N] [-H HOSTS | --hostfile FILE] [-N PER_HOST] [options] "
	    "[--] PROGRAM [ARGS...]",
	.summary = "Start N ranks of PROGRAM here or on many hosts over SSH, with COLL_UNIQUE_ID,\n"
	    "COLL_RANK, COLL_SIZE, RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, ... and stream "
	    "their output.",
	.opts = collrun_opts,
	.run = collrun_run,
};

static int
collrun_value(void *args, int id, const char *val, char *err, size_t len)
{
	struct hostopt *a = args;

	switch (id) {
	case O_NP: return opt_int("-n", val, 1, COLLRUN_MAX_RANKS, &a->np, err, len);
	case O_NO_LABEL: a->jo.label = 0; return 0;
	case O_GATHER: a->jo.gather = 1; return 0;
	case O_KEEP_GOING: a->jo.keep_going = 1; return 0;
	case O_TIMEOUT: return opt_double("--timeout", val, 0.001, 1e7, &a->jo.timeout_s, err, len);
	case O_GRACE: return opt_double("--grace", val, 0, 3600, &a->jo.grace_s, err, len);
	}
	return 0;
}

static int
collrun_parse(struct hostopt *a, int argc, char **argv)
{
	const struct opt_parser p = { .cmd = &cmd_collrun, .ho = a, .value = collrun_value,
	    .args = a, .operands = OPT_OPERANDS_REST };
	int code, rest;

	if ((code = opt_parse(&p, argc, argv, &rest)) != EXIT_OK)
		return code;
	if (rest >= argc)
		return cmd_usage_error(&cmd_collrun, "no program given");
	a->jo.argv = argv + rest;
	return EXIT_OK;
}

static int
collrun_run(int argc, char **argv)
{
	struct hostopt a = { .jo = { .tool = "collrun", .label = 1, .grace_s = 3, .fanout = 64 } };
	int code;
	char err[512];

	if (argc > 1 && strcmp(argv[1], "--agent") == 0)
		return agent_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--relay") == 0)
		return relay_main(argc, argv);
	a.jo.by_path = strchr(argv[0], '/') != NULL;
	if ((code = collrun_parse(&a, argc, argv)) != EXIT_OK)
		return code < 0 ? cmd_finish_stdout(EXIT_OK) : code;
	if (hostopt_prepare(&a, err, sizeof err) != 0) {
		hostopt_release(&a);
		return cmd_usage_error(&cmd_collrun, err);
	}
	code = job_run(&a.jo);
	hostopt_release(&a);
	return cmd_finish_stdout(code);
}
