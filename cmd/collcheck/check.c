/*
 * collcheck (alone), collcheck env and collcheck links: their options and
 * the choice of role. With COLL_UNIQUE_ID set the process is a worker (its
 * front end, or collrun, started it); otherwise it is the front end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gpubw.h"

enum { O_VERBOSE = 1, O_JSON, O_PROMETHEUS, O_BASELINE, O_SAVE_BASELINE, O_CONFIG, O_SIZE, O_ITERS,
	O_TIMEOUT, O_NO_COLOR, O_WORKER, O_SINCE, O_DRAIN };

#define CHECK_COMMON_OPTS \
	{ O_VERBOSE, 'v', "verbose", OPT_FLAG, NULL, "show every fact of every host, grouped " \
	    "by value", NULL }, \
	{ O_JSON, 0, "json", OPT_FLAG, NULL, "write the facts, findings and measurements as " \
	    "JSON", NULL }, \
	{ O_PROMETHEUS, 0, "prometheus", OPT_VALUE, "FILE", "also write the findings to FILE " \
	    "for node_exporter's textfile collector (written beside it, then renamed)", "@file" }, \
	{ O_BASELINE, 0, "baseline", OPT_VALUE, "FILE", "compare every host with the facts " \
	    "saved from a good one", "@file" }, \
	{ O_SAVE_BASELINE, 0, "save-baseline", OPT_VALUE, "FILE", "save the facts the hosts " \
	    "agree on (the majority's) as a baseline", "@file" }, \
	{ O_CONFIG, 0, "config", OPT_VALUE, "FILE", "thresholds and rules: 'clock_offset_ms = " \
	    "100', 'link_bw_factor = 0.5', 'ignore = env.OMPI_*', 'severity env.UCX_* = info'", \
	    "@file" }, \
	{ O_SINCE, 0, "since", OPT_VALUE, "TIME", "the kernel log's events from this time on " \
	    "(2h, 30m, 2026-11-28T10:00; default since boot)", NULL }, \
	{ O_DRAIN, 0, "drain", OPT_FLAG, NULL, "drain each host with an ERROR finding in " \
	    "Slurm (scontrol), the finding as its reason; warnings and unreachable hosts never", \
	    NULL }, \
	{ O_TIMEOUT, 'T', "timeout", OPT_VALUE, "SECONDS", "give up on the check after this " \
	    "long (default 120)", NULL }, \
	{ O_NO_COLOR, 0, "no-color", OPT_FLAG, NULL, "no colours, even on a terminal " \
	    "(NO_COLOR does the same)", NULL }, \
	/* set by the front end: a worker that hands rank 0's record to it */ \
	{ O_WORKER, 0, "worker", OPT_FLAG, NULL, NULL, NULL }, \
	HOSTOPT_TABLE("ranks per host (default 1); links then measures between ranks"), \
	OPT_HELP_ENTRY

#define CHECK_LINK_OPTS \
	{ O_SIZE, 's', "size", OPT_VALUE, "SIZE", "bytes each way per bandwidth iteration " \
	    "(default 4M)", NULL }, \
	{ O_ITERS, 0, "iters", OPT_VALUE, "N", "bandwidth iterations per pair (default 5)", \
	    NULL }

#define CHECK_GPU_OPTS \
	{ O_SIZE, 's', "size", OPT_VALUE, "SIZE", "bytes per copy (default 256M)", NULL }, \
	{ O_ITERS, 0, "iters", OPT_VALUE, "N", "timed copies per measurement, after one " \
	    "warm-up (default 5)", NULL }

static const struct opt check_opts[] = { CHECK_LINK_OPTS, CHECK_COMMON_OPTS, OPT_END_TABLE };
static const struct opt check_gpu_opts[] = { CHECK_GPU_OPTS, CHECK_COMMON_OPTS, OPT_END_TABLE };
static const struct opt check_env_opts[] = { CHECK_COMMON_OPTS, OPT_END_TABLE };

static int
check_all_run(int argc, char **argv)
{
	return check_main(&cmd_collcheck_all, CHECK_ENV | CHECK_LINKS | CHECK_ALLREDUCE, argc,
	    argv);
}

static int
check_env_run(int argc, char **argv)
{
	return check_main(&cmd_collcheck_env, CHECK_ENV, argc, argv);
}

static int
check_links_run(int argc, char **argv)
{
	return check_main(&cmd_collcheck_links, CHECK_LINKS, argc, argv);
}

static int
check_gpus_run(int argc, char **argv)
{
	return check_main(&cmd_collcheck_gpus, CHECK_GPUS, argc, argv);
}

const struct cmd cmd_collcheck_all = {
	.tool = "collcheck",
	.name = "all",
	.usage = "collcheck [all] [-H HOSTS | --hostfile FILE] [-N PER_HOST] [-v] [--json] "
	    "[--baseline FILE] [options]",
	.summary = "The whole check (what collcheck alone runs): env, then links, then a short "
	    "all-reduce sweep,\none worker per host; exit 0 healthy, 1 problems found, 3 could not "
	    "run.",
	.opts = check_opts,
	.run = check_all_run,
};

const struct cmd cmd_collcheck_env = {
	.tool = "collcheck",
	.name = "env",
	.usage = "collcheck env [-H HOSTS | --hostfile FILE] [-v] [--json] [--baseline FILE | "
	    "--save-baseline FILE] [options]",
	.summary = "Gather every host's facts (driver, CUDA, NCCL, GPUs, RDMA ports, PCIe, "
	    "network, NCCL_* and\nother variables, limits, clock offset) in one round and name "
	    "the hosts that differ.",
	.opts = check_env_opts,
	.run = check_env_run,
};

const struct cmd cmd_collcheck_links = {
	.tool = "collcheck",
	.name = "links",
	.usage = "collcheck links [-H HOSTS | --hostfile FILE] [-N PER_HOST] [-s SIZE] [-n ITERS] "
	    "[--json] [options]",
	.summary = "Measure bandwidth and latency between every pair of hosts (ranks with -N), "
	    "disjoint pairs\nat once, and name the pairs and hosts below the others.",
	.opts = check_opts,
	.run = check_links_run,
};

/*
 * Its own command, not part of the whole check: it takes every GPU of a host
 * for seconds (as DCGM's diagnostics and nvbandwidth do, each run on its
 * own), which a check run beside jobs must not.
 */
const struct cmd cmd_collcheck_gpus = {
	.tool = "collcheck",
	.name = "gpus",
	.usage = "collcheck gpus [-H HOSTS | --hostfile FILE] [-s SIZE] [--iters N] [--json] "
	    "[--config FILE] [options]",
	.summary = "Measure each GPU's copies to and from the host and between every pair of "
	    "its host's GPUs\n(CUDA copy engines, not NCCL); name a GPU or pair below its model's "
	    "floor or its peers.",
	.opts = check_gpu_opts,
	.run = check_gpus_run,
};

static int
check_value(void *args, int id, const char *val, char *err, size_t len)
{
	struct check_args *a = args;

	switch (id) {
	case O_VERBOSE: a->verbose = 1; return 0;
	case O_JSON: a->json = 1; return 0;
	case O_NO_COLOR: a->color = 0; return 0;
	case O_WORKER: a->worker = 1; return 0;
	case O_DRAIN: a->drain = 1; return 0;
	case O_BASELINE: a->baseline = val; return 0;
	case O_SAVE_BASELINE: a->save_baseline = val; return 0;
	case O_CONFIG: a->config = val; return 0;
	case O_PROMETHEUS: a->prometheus = val; return 0;
	case O_SIZE: return opt_size("-s", val, &a->link_bytes, err, len);
	case O_ITERS: return opt_int("--iters", val, 1, 100000, &a->link_iters, err, len);
	case O_TIMEOUT: return opt_double("-T", val, 0.5, 1e6, &a->timeout_s, err, len);
	case O_SINCE: return health_since_parse(val, &a->since, err, len);
	}
	return 0;
}

static int
check_parse(struct check_args *a, int argc, char **argv)
{
	const struct opt_parser p = { .cmd = a->cmd, .ho = &a->ho, .value = check_value,
	    .args = a, .operands = OPT_OPERANDS_NONE };
	char err[512];
	int code;

	if ((code = opt_parse(&p, argc, argv, NULL)) != EXIT_OK)
		return code;
	if (a->link_bytes == 0 || a->link_bytes > (1u << 30))
		return cmd_usage_error(a->cmd, "-s must be between 1 byte and 1G");
	if (a->baseline != NULL && a->save_baseline != NULL)
		return cmd_usage_error(a->cmd, "give --baseline or --save-baseline, not both");
	/* Said before minutes of checking, not after. */
	if (a->prometheus != NULL && !a->worker &&
	    check_prom_dir(a->prometheus, err, sizeof err) != 0) {
		fprintf(stderr, "collcheck: %s\n", err);
		return EXIT_USAGE;
	}
	/* Workers of a front end leave the files to it: they may not exist on their host. */
	if (a->config != NULL && !a->worker &&
	    check_conf_read(&a->conf, a->config, err, sizeof err) != 0) {
		fprintf(stderr, "collcheck: %s\n", err);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/*
 * One host and no -N: links and the all-reduce would run 1 rank and measure
 * nothing, yet say OK. 2 local ranks are the fewest that take the whole path
 * (bootstrap, transport, the reduction's check); said in one line.
 */
static void
check_default_ranks(struct check_args *a)
{
	if (!(a->what & CHECK_LINKS) || hostopt_given(&a->ho) || a->ho.per_host != 0 ||
	    a->ho.np != 0)
		return;
	a->ho.per_host = 2;
	if (!a->json)
		fprintf(stderr, "collcheck: no -H: 2 ranks on this host (1 would measure nothing)\n");
}

int
check_main(const struct cmd *cmd, unsigned what, int argc, char **argv)
{
	struct check_args a = { .cmd = cmd, .what = what, .link_bytes = 4u << 20,
	    .link_iters = 5, .timeout_s = 120, .color = 1,
	    .ho = { .jo = { .tool = "collcheck", .grace_s = 0, .fanout = 64 } } };
	const char *nc = getenv("NO_COLOR");
	int code;

	if (what & CHECK_GPUS)
		a.link_bytes = GPUBW_DEFAULT_BYTES;
	check_conf_defaults(&a.conf);
	if ((code = check_parse(&a, argc, argv)) != EXIT_OK) {
		check_conf_free(&a.conf);
		return code < 0 ? cmd_finish_stdout(EXIT_OK) : code;
	}
	if ((nc != NULL && nc[0] != '\0') || !isatty(STDOUT_FILENO))
		a.color = 0;
	if (getenv("COLL_UNIQUE_ID") != NULL) {
		code = check_worker(&a);
	} else {
		check_default_ranks(&a);
		code = check_front(&a, argc, argv);
	}
	check_conf_free(&a.conf);
	return cmd_finish_stdout(code);
}
