/*
 * collcheck health: this host alone, for Slurm's HealthCheckProgram, a
 * prolog or an epilog. No communicator, no other rank, no network: the facts
 * a host can judge by itself (its kernel log's Xid, SXid, AER and NIC events,
 * its error counters against its own --baseline, its GPUs, PCIe links and
 * RDMA ports) are read here and judged by the rules the whole check applies,
 * so a finding reads the same in both. One line per finding, then one that
 * sums up; exit 0 without an ERROR (warnings are printed, not acted on: a
 * prolog's non-zero exit drains the node), 1 with one, 2 usage, 3 cannot.
 * --drain drains this host itself (SLURMD_NODENAME, else its host name).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "msg.h"
#include "xmalloc.h"

enum { L_JSON = 1, L_PROMETHEUS, L_BASELINE, L_SAVE_BASELINE, L_CONFIG, L_SINCE, L_DRAIN,
	L_NO_COLOR };

static const struct opt local_opts[] = {
	{ L_JSON, 0, "json", OPT_FLAG, NULL, "write the facts and findings as JSON", NULL },
	{ L_DRAIN, 0, "drain", OPT_FLAG, NULL, "drain this node in Slurm (scontrol) when it has "
	    "an ERROR finding, the finding as the reason", NULL },
	{ L_BASELINE, 0, "baseline", OPT_VALUE, "FILE", "compare this host with the facts saved "
	    "from it (or a good one): its counters grow against their own", "@file" },
	{ L_SAVE_BASELINE, 0, "save-baseline", OPT_VALUE, "FILE", "save this host's facts and "
	    "counters as a baseline", "@file" },
	{ L_CONFIG, 0, "config", OPT_VALUE, "FILE", "thresholds and rules, as collcheck's "
	    "('severity kmsg.xid.*.13 = info', 'ignore = ctr.rdma.*')", "@file" },
	{ L_SINCE, 0, "since", OPT_VALUE, "TIME", "the kernel log's events from this time on "
	    "(2h, 30m, 2026-11-28T10:00; default since boot)", NULL },
	{ L_PROMETHEUS, 0, "prometheus", OPT_VALUE, "FILE", "also write the findings to FILE "
	    "for node_exporter's textfile collector", "@file" },
	{ L_NO_COLOR, 0, "no-color", OPT_FLAG, NULL, "no colours, even on a terminal", NULL },
	OPT_HELP_ENTRY,
	OPT_END_TABLE,
};

static int
local_value(void *args, int id, const char *val, char *err, size_t len)
{
	struct check_args *a = args;

	switch (id) {
	case L_JSON: a->json = 1; return 0;
	case L_DRAIN: a->drain = 1; return 0;
	case L_NO_COLOR: a->color = 0; return 0;
	case L_BASELINE: a->baseline = val; return 0;
	case L_SAVE_BASELINE: a->save_baseline = val; return 0;
	case L_CONFIG: a->config = val; return 0;
	case L_PROMETHEUS: a->prometheus = val; return 0;
	case L_SINCE: return health_since_parse(val, &a->since, err, len);
	}
	return 0;
}

static int
local_parse(struct check_args *a, int argc, char **argv)
{
	const struct opt_parser p = { .cmd = a->cmd, .value = local_value, .args = a,
	    .operands = OPT_OPERANDS_NONE };
	char err[512];
	int code;

	if ((code = opt_parse(&p, argc, argv, NULL)) != EXIT_OK)
		return code;
	if (a->baseline != NULL && a->save_baseline != NULL)
		return cmd_usage_error(a->cmd, "give --baseline or --save-baseline, not both");
	if ((a->prometheus != NULL && check_prom_dir(a->prometheus, err, sizeof err) != 0) ||
	    (a->config != NULL && check_conf_read(&a->conf, a->config, err, sizeof err) != 0)) {
		fprintf(stderr, "collcheck: %s\n", err);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/*
 * This host's facts, less what only a job has (its variables, nccl.conf) or
 * only a comparison across hosts needs (the network's addresses): the readers
 * a health check wants, each bounded, none on the network.
 */
static void
local_facts(struct facts *f, double since)
{
	struct facts_roots roots;

	facts_roots_env(&roots);
	roots.since = since;
	facts_read_host(f, &roots);
	facts_read_limits(f, &roots);
	facts_read_gpu(f, &roots);
	facts_read_pci(f, &roots);
	facts_read_rdma(f, &roots);
	facts_read_counters(f, &roots);
	facts_read_kmsg(f, &roots);
}

/* The key's first part ("gpu" of "gpu.0.ecc"), to match what local_facts read. */
static int
local_same_kind(const struct facts *f, const char *key)
{
	size_t n = strcspn(key, ".");

	for (int i = 0; i < f->n; i++)
		if (strncmp(f->v[i].key, key, n) == 0 && (f->v[i].key[n] == '.' ||
		    f->v[i].key[n] == '\0'))
			return 1;
	return 0;
}

/*
 * A baseline saved by collcheck env holds what this mode never reads (env.*,
 * ncclconf.*): only the kinds of facts read here are compared, else every
 * NCCL_* of the baseline would read as missing on this host.
 */
static void
local_baseline_keep(struct facts *base, const struct facts *mine)
{
	struct facts kept;

	facts_init(&kept);
	for (int i = 0; i < base->n; i++)
		if (strchr(base->v[i].key, '@') != NULL || local_same_kind(mine, base->v[i].key))
			facts_append(&kept, base->v[i].key, base->v[i].val);
	facts_free(base);
	*base = kept;
}

/* The result of one host: this one, rank 0 of one, named as Slurm names it when it runs us. */
static void
local_result(struct check_result *r, struct facts *f)
{
	const char *name = facts_get(f, "host.name"), *node = getenv("SLURMD_NODENAME");

	r->nhosts = r->nranks = 1;
	r->hosts = xcalloc(1, sizeof *r->hosts);
	r->rank_host = xcalloc(1, sizeof *r->rank_host);
	r->hosts[0] = (struct check_host){ .name = xstrdup(name != NULL && !facts_is_skipped(name) ?
	    name : "localhost"), .pid = (int)getpid(), .facts = *f };
	r->hosts[0].node = node != NULL && node[0] != '\0' ? node : NULL;
	facts_init(f);
}

static int
local_check(struct check_args *a)
{
	struct check_result r = { 0 };
	struct facts f, base;
	char err[512];
	int code = EXIT_CANNOT;

	facts_init(&f);
	facts_init(&base);
	if (a->baseline != NULL && check_baseline_load(&base, a->baseline, err, sizeof err) != 0) {
		fprintf(stderr, "collcheck: %s\n", err);
		code = EXIT_USAGE;
		goto out;
	}
	local_facts(&f, a->since);
	local_result(&r, &f);
	local_baseline_keep(&base, &r.hosts[0].facts);
	check_analyse(&r, a, a->baseline != NULL ? &base : NULL);
	if (a->save_baseline != NULL && check_baseline_save(&r, a->save_baseline, err,
	    sizeof err) != 0) {
		fprintf(stderr, "collcheck: %s\n", err);
		goto out;
	}
	code = check_report(&r, a);
out:
	facts_free(&f);
	facts_free(&base);
	check_result_free(&r);
	return code;
}

static int
local_run(int argc, char **argv)
{
	struct check_args a = { .cmd = &cmd_collcheck_health, .local = 1, .color = 1 };
	const char *nc = getenv("NO_COLOR");
	int code;

	check_conf_defaults(&a.conf);
	if ((code = local_parse(&a, argc, argv)) == EXIT_OK) {
		if ((nc != NULL && nc[0] != '\0') || !isatty(STDOUT_FILENO))
			a.color = 0;
		code = local_check(&a);
	} else if (code < 0) {
		code = EXIT_OK;	/* --help */
	}
	check_conf_free(&a.conf);
	return cmd_finish_stdout(code);
}

void
local_print(const struct check_result *r, const struct check_args *a)
{
	const struct check_host *ch = &r->hosts[0];
	int n[SEV_UNREACHABLE + 1] = { 0 };
	char name[256];

	for (int sev = SEV_ERROR; sev >= SEV_INFO; sev--)
		for (int i = 0; i < r->nfind; i++)
			if (r->find[i].sev == sev) {
				n[sev]++;
				printf("%s%-5s%s  %s\n", a->color ? (sev == SEV_ERROR ? "\033[31m" :
				    sev == SEV_WARN ? "\033[33m" : "") : "", check_sev_name(sev),
				    a->color && sev >= SEV_WARN ? "\033[0m" : "", r->find[i].msg);
			}
	snprintf(name, sizeof name, "%s", ch->node != NULL ? ch->node : ch->name);
	msg_clean(name);
	printf("collcheck health: %s %s: %d error%s, %d warning%s, %d info%s\n", name,
	    check_sev_name(ch->sev >= SEV_WARN ? ch->sev : SEV_OK), n[SEV_ERROR],
	    n[SEV_ERROR] == 1 ? "" : "s", n[SEV_WARN], n[SEV_WARN] == 1 ? "" : "s", n[SEV_INFO],
	    n[SEV_INFO] == 1 ? "" : "s");
}

const struct cmd cmd_collcheck_health = {
	.tool = "collcheck",
	.name = "health",
	.usage = "collcheck health [--json] [--baseline FILE | --save-baseline FILE] [--drain] "
	    "[options]",
	.summary = "This host alone, in a second, for Slurm's HealthCheckProgram, prolog and "
	    "epilog: its kernel\nlog, error counters, GPUs, PCIe links and RDMA ports; exit 1 on "
	    "an ERROR finding (warnings\nare printed, exit 0), 3 could not run.",
	.opts = local_opts,
	.run = local_run,
};
