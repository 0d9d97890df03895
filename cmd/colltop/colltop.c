/*
 * colltop: its options, and the choice of role (the dashboard, or a worker
 * the dashboard started). Any of --once, -n, --json and -b, or an output
 * that is not a terminal, makes it a batch run (as top -b). The letters are
 * top's and htop's, which its users come from: -b batch, -n iterations (top),
 * -d delay in tenths of a second (htop); the workers are --np, as mpirun's
 * -np (colltop's -n is top's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "msg.h"
#include "net.h"
#include "top.h"

enum { O_NP = 1, O_DELAY, O_INTERVAL, O_BATCH, O_ONCE, O_ITERATIONS, O_JSON, O_BYTES, O_PROBE_ITERS,
	O_BY_HOST, O_SORT, O_FILTER, O_FACTOR, O_SLOW_K, O_SLOW_MS, O_WARMUP, O_DEAD_AFTER,
	O_STALL, O_LISTEN, O_RAS, O_NO_GPU, O_NO_COLOR, O_ASCII, O_WORKER, O_CTL_PORT };

static const struct opt top_opts[] = {
	{ O_NP, 0, "np", OPT_VALUE, "N", "workers in all (default 2 here)", NULL },
	{ O_DELAY, 'd', "delay", OPT_VALUE, "TENTHS", "tenths of a second between updates "
	    "(default 10)", NULL },
	{ O_INTERVAL, 0, "interval", OPT_VALUE, "SECONDS", "interval in seconds (+ and - change "
	    "it live)", NULL },
	{ O_BATCH, 'b', "batch", OPT_FLAG, NULL, "text on stdout, not the screen (as top -b)",
	    NULL },
	{ O_ITERATIONS, 'n', "iterations", OPT_VALUE, "N", "N intervals in batch mode, then exit "
	    "(as top -n)", NULL },
	{ O_ONCE, 0, "once", OPT_FLAG, NULL, "the same as -n 1", NULL },
	{ O_JSON, 0, "json", OPT_FLAG, NULL, "batch mode, a JSON object per interval", NULL },
	{ O_BYTES, 0, "bytes", OPT_VALUE, "SIZE", "all-reduce probe size, 4 to 1G (default 64K)",
	    NULL },
	{ O_PROBE_ITERS, 0, "probe-iters", OPT_VALUE, "N", "all-reduces per interval (default 1)",
	    NULL },
	{ O_BY_HOST, 0, "by-host", OPT_FLAG, NULL, "start with a row per host (t toggles)",
	    NULL },
	{ O_SORT, 0, "sort", OPT_VALUE, "COLUMN", "sort by this column (rank, late_ms, gpu%, ...)",
	    NULL },
	{ O_FILTER, 0, "filter", OPT_VALUE, "TEXT", "show the rows holding this text", NULL },
	{ O_FACTOR, 0, "straggler-factor", OPT_VALUE, "K", "straggler: later than K x the median "
	    "(default 3)", NULL },
	{ O_SLOW_K, 0, "straggler-intervals", OPT_VALUE, "N", "for N intervals in a row "
	    "(default 3)", NULL },
	{ O_SLOW_MS, 0, "straggler-ms", OPT_VALUE, "MS", "and by MS milliseconds at least "
	    "(default 10)", NULL },
	{ O_WARMUP, 0, "warmup", OPT_VALUE, "N", "intervals not judged at the start (default 3)",
	    NULL },
	{ O_DEAD_AFTER, 0, "dead-after", OPT_VALUE, "SECONDS", "drop a worker silent this long "
	    "(1.5 intervals)", NULL },
	{ O_STALL, 0, "stall", OPT_VALUE, "SECONDS", "another job still this long: stalled "
	    "(default 5)", NULL },
	{ O_LISTEN, 0, "listen", OPT_VALUE, "[ADDR:]PORT", "serve Prometheus metrics at /metrics: "
	    "PORT alone on every address (as exporters do), 127.0.0.1:PORT on loopback only",
	    NULL },
	{ O_RAS, 0, "ras", OPT_FLAG, NULL, "follow NCCL RAS's event stream on this host "
	    "(NCCL 2.29+, NCCL_RAS_ADDR or localhost:28028): a dead peer is an alert", NULL },
	{ O_NO_GPU, 0, "no-gpu", OPT_FLAG, NULL, "do not load NVML", NULL },
	{ O_NO_COLOR, 0, "no-color", OPT_FLAG, NULL, "no colours (so does NO_COLOR)", NULL },
	{ O_ASCII, 0, "ascii", OPT_FLAG, NULL, "ASCII sparklines (the default outside UTF-8)",
	    NULL },
	HOSTOPT_TABLE("workers per host (default 1)"),
	OPT_HELP_ENTRY,
	OPT_VERSION_ENTRY,
	/*
	 * Internal, last (a NULL help hides an option from --help, completions
	 * and man pages): the dashboard starts its workers with these.
	 */
	{ O_WORKER, 0, "worker", OPT_FLAG, NULL, NULL, NULL },
	{ O_CTL_PORT, 0, "control-port", OPT_VALUE, "PORT", NULL, NULL },
	OPT_END_TABLE,
};

/* -d as htop takes it: tenths of a second (-d 10 is 1 s). */
static int
top_tenths(struct top_args *a, const char *val, char *err, size_t len)
{
	double t;

	if (opt_double("-d", val, 1, 36000, &t, err, len) != 0) {
		snprintf(err, len, "-d '%.32s': the interval in tenths of a second, 1 to 36000, as "
		    "htop (-d 10 is 1 s; --interval takes seconds)", val);
		msg_clean(err);
		return -1;
	}
	a->interval_s = t / 10;
	return 0;
}

static int
top_value_num(struct top_args *a, int id, const char *val, char *err, size_t len)
{
	switch (id) {
	case O_NP: return opt_int("--np", val, 1, COLL_MAX_RANKS, &a->ho.np, err, len);
	case O_DELAY: return top_tenths(a, val, err, len);
	case O_INTERVAL: return opt_double("--interval", val, 0.1, 3600, &a->interval_s, err, len);
	case O_ITERATIONS: a->batch = 1;
		return opt_int("-n/--iterations", val, 1, 1000000000, &a->iterations, err,
		    len);
	case O_BYTES: return opt_size("--bytes", val, &a->bytes, err, len);
	case O_PROBE_ITERS: return opt_int("--probe-iters", val, 1, 1000, &a->iters, err, len);
	case O_FACTOR: return opt_double("--straggler-factor", val, 1, 1e6, &a->factor, err, len);
	case O_SLOW_K: return opt_int("--straggler-intervals", val, 1, 1000000, &a->slow_k, err,
	    len);
	case O_SLOW_MS: return opt_double("--straggler-ms", val, 0, 1e7, &a->min_late_ms, err,
	    len);
	case O_WARMUP: return opt_int("--warmup", val, 0, 1000000, &a->warmup, err, len);
	case O_DEAD_AFTER: return opt_double("--dead-after", val, 0.5, 1e5, &a->dead_after_s,
	    err, len);
	case O_STALL: return opt_double("--stall", val, 0.1, 1e6, &a->stall_s, err, len);
	case O_CTL_PORT: return opt_int("--control-port", val, 1, 65535, &a->ctl_port, err, len);
	}
	return 1;
}

static int
top_value(void *args, int id, const char *val, char *err, size_t len)
{
	struct top_args *a = args;
	int r;

	if ((r = top_value_num(a, id, val, err, len)) <= 0)
		return r;
	switch (id) {
	case O_BATCH: a->batch = 1; return 0;
	case O_ONCE: a->batch = 1; a->iterations = 1; return 0;
	case O_JSON: a->batch = a->json = 1; return 0;
	case O_BY_HOST: a->by_host = 1; return 0;
	case O_SORT: a->sort = val; return 0;
	case O_FILTER: a->filter = val; return 0;
	case O_LISTEN: a->listen = val; return 0;
	case O_RAS: a->ras = 1; return 0;
	case O_NO_GPU: a->no_gpu = 1; return 0;
	case O_NO_COLOR: a->color = 0; return 0;
	case O_ASCII: a->ascii = 1; return 0;
	case O_WORKER: a->worker = 1; return 0;
	}
	return 0;
}

static int
top_check(struct top_args *a, char *err, size_t len)
{
	struct net_addr la;

	if (a->listen != NULL && listen_parse(a->listen, &la, err, len) != 0)
		return -1;
	if (a->sort != NULL && view_col_parse(0, a->sort) < 0 && view_col_parse(1, a->sort) < 0) {
		snprintf(err, len, "--sort '%s' names no column: use rank, host, state, lat_ms, "
		    "late_ms, busbw, net_rx, net_tx, net_err, rdma_rx, gpu%%, power_w, ...", a->sort);
		return -1;
	}
	if (a->bytes > (size_t)1 << 30) {
		snprintf(err, len, "--bytes %zu: the probe is at most 1G", a->bytes);
		return -1;
	}
	/* The probe sums floats: fewer than 4 bytes would be a silent 4. */
	if (a->bytes < sizeof(float)) {
		snprintf(err, len, "--bytes %zu: the probe is one float (4 bytes) at least", a->bytes);
		return -1;
	}
	/* Not given: --dead-after takes 0.5 s at the least. */
	if (a->dead_after_s == 0)
		a->dead_after_s = a->interval_s * 1.5 > 1 ? a->interval_s * 1.5 : 1;
	if (!a->ho.per_host && a->ho.np == 0)
		a->ho.per_host = hostopt_given(&a->ho) ? 1 : 0;
	if (a->ho.np == 0 && !hostopt_given(&a->ho))
		a->ho.np = 2;
	return 0;
}

static int
top_parse(struct top_args *a, int argc, char **argv)
{
	const struct opt_parser p = { .cmd = a->cmd, .ho = &a->ho, .value = top_value,
	    .args = a, .operands = OPT_OPERANDS_NONE };
	char err[512];
	int code;

	if ((code = opt_parse(&p, argc, argv, NULL)) != EXIT_OK)
		return code;
	if (top_check(a, err, sizeof err) != 0)
		return cmd_usage_error(a->cmd, err);
	return EXIT_OK;
}

static int
top_main(int argc, char **argv)
{
	struct top_args a = { .cmd = &cmd_colltop, .interval_s = 1, .bytes = 64 << 10, .iters = 1,
	    .color = 1, .factor = 3, .slow_k = 3, .min_late_ms = 10, .warmup = 3, .stall_s = 5,
	    .ho = { .jo = { .tool = "colltop", .fanout = 64 } } };
	const char *nc = getenv("NO_COLOR");
	int code;

	if ((code = top_parse(&a, argc, argv)) != EXIT_OK)
		return code < 0 ? cmd_finish_stdout(EXIT_OK) : code;
	if (nc != NULL && nc[0] != '\0')
		a.color = 0;
	if (a.worker) {
		if (getenv("COLL_UNIQUE_ID") == NULL) {
			fprintf(stderr, "colltop: --worker is for the workers the dashboard starts\n");
			return EXIT_USAGE;
		}
		return cmd_finish_stdout(worker_run(&a));
	}
	if (!isatty(STDOUT_FILENO))
		a.batch = 1;
	code = front_run(&a, argc, argv);
	return a.out_said ? code : cmd_finish_stdout(code);
}

const struct cmd cmd_colltop = {
	.tool = "colltop",
	.name = NULL,
	.usage = "colltop [--np N | -H HOSTS] [-d TENTHS] [-b] [-n N] [--json] [options]",
	.summary = "A live dashboard of a cluster's collectives: a small all-reduce each interval\n"
	    "names late ranks and the straggler, beside each host's network, RDMA and GPU\n"
	    "counters and the other jobs' progress (a stalled one named with its culprit).",
	.opts = top_opts,
	.run = top_main,
};
