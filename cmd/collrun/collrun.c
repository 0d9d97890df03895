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
 * SLURM_JOB_NODELIST; without any, every rank runs here. mpirun's spellings
 * (-np, -hostfile, -x, --tag-output, --oversubscribe) work too (mpiargs.c).
 *
 * Lines are labelled [rank] on a terminal only: a pipe or a file gets the
 * program's output as it is (one JSON document stays one), as with mpirun,
 * which labels when asked (--tag-output, our --label).
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
#include "mpiargs.h"
#include "outwait.h"
#include "precheck.h"
#include "xmalloc.h"

/* The core's bound (the wire's): more ranks could never join one communicator. */
#define COLLRUN_MAX_RANKS COLL_MAX_RANKS

enum { O_NP = 1, O_LABEL, O_NO_LABEL, O_GATHER, O_TIMEOUT, O_GRACE, O_KEEP_GOING, O_EXPORT };

static const struct opt collrun_opts[] = {
	{ O_NP, 'n', "np", OPT_VALUE, "N", "ranks in all (default: the hosts' slots, or 1)",
	    NULL },
	HOSTOPT_TABLE_X("ranks per host (instead of slots)", 0),
	{ O_EXPORT, 'x', NULL, OPT_VALUE, "VAR[=VALUE]", "give every rank this variable, "
	    "remote ones too", NULL },
	{ O_LABEL, 0, "label", OPT_FLAG, NULL, "prefix lines with [rank] (default: on a "
	    "terminal)", NULL },
	{ O_NO_LABEL, 0, "no-label", OPT_FLAG, NULL, "no [rank] prefix, even on a terminal",
	    NULL },
	{ O_GATHER, 'g', "gather", OPT_FLAG, NULL, "print identical outputs once, under their "
	    "hosts and ranks", NULL },
	{ O_TIMEOUT, 'T', "timeout", OPT_VALUE, "SECONDS", "stop the job after this long "
	    "(exit 124)", NULL },
	{ O_GRACE, 0, "grace", OPT_VALUE, "SECONDS", "after a rank fails, wait this long, then "
	    "stop the others (default 3)", NULL },
	{ O_KEEP_GOING, 'k', "keep-going", OPT_FLAG, NULL, "after a rank fails, let the others "
	    "run to their end", NULL },
	OPT_HELP_ENTRY,
	OPT_VERSION_ENTRY,
	OPT_END_TABLE,
};

static int collrun_run(int argc, char **argv);

const struct cmd cmd_collrun = {
	.tool = "collrun",
	.name = NULL,
	.usage = "collrun [-n N] [-H HOSTS | --hostfile FILE] [options] PROGRAM [ARGS...]",
	.summary = "Start N ranks of PROGRAM here, over SSH or through srun; stream their output.\n"
	    "Each rank gets COLL_UNIQUE_ID, COLL_RANK, COLL_SIZE, RANK, WORLD_SIZE,\n"
	    "LOCAL_RANK, MASTER_ADDR, ...; remote ranks also get the -x variables, and PATH\n"
	    "and LD_LIBRARY_PATH with --prefix's dirs first; the rest of their environment\n"
	    "is their login's (SSH) or srun's (Slurm). mpirun's -np, -hostfile, -x work too.",
	.opts = collrun_opts,
	.run = collrun_run,
};

struct collrun_args {
	struct hostopt ho;
	char **env;		/* -x: "NAME=VALUE" */
	int nenv;
};

static int
collrun_export(struct collrun_args *c, const char *val, char *err, size_t len)
{
	char *var = mpiargs_export(val, err, len);

	if (var == NULL)
		return -1;
	c->env = xreallocarray(c->env, (size_t)c->nenv + 2, sizeof *c->env);
	c->env[c->nenv++] = var;
	c->env[c->nenv] = NULL;
	c->ho.jo.env = c->env;
	return 0;
}

static int
collrun_value(void *args, int id, const char *val, char *err, size_t len)
{
	struct collrun_args *c = args;
	struct hostopt *a = &c->ho;

	switch (id) {
	case O_NP: return opt_int("-n", val, 1, COLLRUN_MAX_RANKS, &a->np, err, len);
	case O_LABEL: a->jo.label = 1; return 0;
	case O_NO_LABEL: a->jo.label = 0; return 0;
	case O_GATHER: a->jo.gather = 1; return 0;
	case O_KEEP_GOING: a->jo.keep_going = 1; return 0;
	case O_EXPORT: return collrun_export(c, val, err, len);
	case O_TIMEOUT: return opt_double("--timeout", val, 0.001, 1e7, &a->jo.timeout_s, err, len);
	case O_GRACE: return opt_double("--grace", val, 0, 3600, &a->jo.grace_s, err, len);
	}
	return 0;
}

static int
collrun_parse(struct collrun_args *c, int argc, char **argv)
{
	const struct opt_parser p = { .cmd = &cmd_collrun, .ho = &c->ho, .value = collrun_value,
	    .args = c, .operands = OPT_OPERANDS_REST };
	int code, rest;

	if ((code = opt_parse(&p, argc, argv, &rest)) != EXIT_OK)
		return code;
	if (rest >= argc)
		return cmd_usage_error(&cmd_collrun, "no program given");
	c->ho.jo.argv = argv + rest;
	return EXIT_OK;
}

static void
collrun_release(struct collrun_args *c)
{
	hostopt_release(&c->ho);
	for (int i = 0; i < c->nenv; i++)
		free(c->env[i]);
	free(c->env);
}

static int
collrun_job(struct collrun_args *c)
{
	char err[512];
	int code;

	if (hostopt_prepare(&c->ho, err, sizeof err) != 0)
		return cmd_usage_error(&cmd_collrun, err);
	if ((code = precheck_program(&c->ho.jo)) != EXIT_OK)
		return code;
	precheck_cpus(&c->ho.jo);
	/* Our stdout may be non-blocking by another's doing: wait for room, never fail on it. */
	outwait_stdout();
	return job_run(&c->ho.jo);
}

static int
collrun_run(int argc, char **argv)
{
	struct collrun_args c = { .ho = { .jo = { .tool = "collrun", .label = JOB_LABEL_TTY,
	    .grace_s = 3, .fanout = 64 } } };
	char **v;
	int code;

	if (argc > 1 && strcmp(argv[1], "--agent") == 0)
		return agent_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--relay") == 0)
		return relay_main(argc, argv);
	c.ho.jo.by_path = strchr(argv[0], '/') != NULL;
	v = mpiargs_normalize(collrun_opts, argc, argv);
	if ((code = collrun_parse(&c, argc, v)) == EXIT_OK)
		code = collrun_job(&c);
	else if (code < 0)
		code = EXIT_OK;
	collrun_release(&c);
	mpiargs_free(v, argc, argv);
	/* A closed pipe was the job's end, not news: said by its code alone (141). */
	return code == EXIT_PIPE ? code : cmd_finish_stdout(code);
}
