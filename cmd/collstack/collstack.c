/*
 * collstack: its options, and the choice of role (front end, or a worker
 * the front end started).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collstack.h"
#include "xmalloc.h"

enum { O_JOB = 1, O_PID, O_MATCH, O_SLURM, O_FR, O_JSON, O_DOT, O_SVG, O_NO_COLOR, O_TIMEOUT,
	O_NO_FR_DUMP, O_CUDA, O_THREADS, O_USER, O_WORKER };

static const struct opt stk_opts[] = {
	{ O_JOB, 'j', "job", OPT_VALUE, "ID", "the collrun job with this id (or its start)",
	    NULL },
	{ O_PID, 'p', "pid", OPT_VALUE, "PIDS", "these processes (11,12,13), on each host", NULL },
	{ O_MATCH, 'm', "match", OPT_VALUE, "REGEX", "processes whose command line matches",
	    NULL },
	{ O_SLURM, 0, "slurm", OPT_VALUE, "JOBID", "the tasks of this running Slurm job", NULL },
	{ O_USER, 'u', "user", OPT_VALUE, "NAME", "as root, read this user's processes", NULL },
	{ O_FR, 0, "fr", OPT_VALUE, "PATH", "read PyTorch flight recorder dumps instead", NULL },
	{ O_JSON, 0, "json", OPT_FLAG, NULL, "write the verdict, tasks and tree as JSON", NULL },
	{ O_DOT, 0, "dot", OPT_FLAG, NULL, "write the tree for Graphviz", NULL },
	{ O_SVG, 0, "svg", OPT_FLAG, NULL, "draw the tree as SVG (needs Graphviz)", NULL },
	{ O_NO_COLOR, 0, "no-color", OPT_FLAG, NULL, "no colours (so does NO_COLOR)", NULL },
	{ O_TIMEOUT, 'T', "timeout", OPT_VALUE, "SECONDS", "give up after this long (default "
	    "60)", NULL },
	{ O_NO_FR_DUMP, 0, "no-fr-dump", OPT_FLAG, NULL, "ask PyTorch ranks for no flight recorder dump", NULL },
	{ O_CUDA, 0, "cuda", OPT_FLAG, NULL, "also list GPU kernels, through cuda-gdb (slow)",
	    NULL },
	{ O_THREADS, 0, "threads", OPT_VALUE, "N", "per-host read threads (default: CPUs, max 16)", NULL },
	/* Internal: the front end starts its workers with it; hidden (help NULL). */
	{ O_WORKER, 0, "worker", OPT_FLAG, NULL, NULL, NULL },
	HOSTOPT_TABLE("workers per host: 1, the only value"),
	OPT_HELP_ENTRY,
	OPT_VERSION_ENTRY,
	OPT_END_TABLE,
};

/* What the option loop fills: the arguments, and how many selections and operands came. */
struct stk_parse {
	struct stk_args *a;
	int nsel, nops;
};

/* One output format: --json with --dot is refused, not one of them silently dropped. */
static int
stk_format(struct stk_args *a, enum stk_format f, char *err, size_t len)
{
	static const char *const name[] = { "", "--json", "--dot", "--svg" };

	if (a->fmt != FMT_TEXT && a->fmt != f) {
		snprintf(err, len, "%s and %s: give one output format", name[a->fmt], name[f]);
		return -1;
	}
	a->fmt = f;
	return 0;
}

static int
stk_value(void *args, int id, const char *val, char *err, size_t len)
{
	struct stk_parse *p = args;
	struct stk_args *a = p->a;
	int *nsel = &p->nsel;

	switch (id) {
	case O_JOB: a->sel = SEL_JOB; a->job = val; ++*nsel; return 0;
	case O_PID: a->sel = SEL_PID; a->pids = val; ++*nsel; return 0;
	case O_MATCH: a->sel = SEL_MATCH; a->match = val; ++*nsel; return 0;
	case O_SLURM: a->sel = SEL_SLURM; a->slurm = val; ++*nsel; return 0;
	case O_FR: a->sel = SEL_FR; a->fr_first = val; ++*nsel; return 0;
	case O_JSON: return stk_format(a, FMT_JSON, err, len);
	case O_DOT: return stk_format(a, FMT_DOT, err, len);
	case O_SVG: return stk_format(a, FMT_SVG, err, len);
	case O_NO_COLOR: a->color = 0; return 0;
	case O_USER: a->user = val; return 0;
	case O_WORKER: a->worker = 1; return 0;
	case O_NO_FR_DUMP: a->no_fr_dump = 1; return 0;
	case O_CUDA: a->cuda = 1; return 0;
	case O_TIMEOUT: return opt_double("-T", val, 0.5, 1e6, &a->timeout_s, err, len);
	case O_THREADS: return opt_int("--threads", val, 1, 256, &a->threads, err, len);
	}
	return 0;
}

static void
stk_operand(void *args, const char *arg)
{
	struct stk_parse *p = args;

	p->a->fr[1 + p->nops++] = arg;
}

/* Checks the front end makes before starting anything. */
static int
stk_check(struct stk_args *a, int nsel, char *err, size_t len)
{
	if (a->ho.per_host > 1) {
		snprintf(err, len, "-N %ld: collstack runs one worker per host", a->ho.per_host);
		return -1;
	}
	/* Slots in a host list or file are for ranks, not for collstack's workers. */
	a->ho.per_host = 1;
	if (nsel > 1 && !a->worker) {
		snprintf(err, len, "give one of --job, --pid, --match, --slurm and --fr");
		return -1;
	}
	if (a->sel == SEL_FR && (a->fmt == FMT_DOT || a->fmt == FMT_SVG)) {
		snprintf(err, len, "--fr writes text or --json, not a tree for Graphviz");
		return -1;
	}
	if (a->sel == SEL_JOB && a->job != NULL && (a->job[0] == '\0' || strlen(a->job) > 16 ||
	    strspn(a->job, "0123456789abcdef") != strlen(a->job))) {
		snprintf(err, len, "--job '%s' is not a job id: give the 16 hex digits collrun "
		    "printed (or their start)", a->job);
		return -1;
	}
	if (a->sel == SEL_SLURM && (a->slurm[0] == '\0' ||
	    strspn(a->slurm, "0123456789_") != strlen(a->slurm) || strlen(a->slurm) > 20)) {
		snprintf(err, len, "--slurm '%s' is not a Slurm job id", a->slurm);
		return -1;
	}
	if (a->user != NULL && !a->worker) {
		struct stk_evidence ev;

		if (stk_evidence_init(&ev, a->user, err, len) != 0)
			return -1;
	}
	/* A bad regular expression or pid list is said here, once, not by every worker. */
	if ((a->sel == SEL_MATCH || a->sel == SEL_PID) && !a->worker &&
	    stk_select_check(a, err, len) != 0)
		return -1;
	if (a->fmt == FMT_SVG && !a->worker && system("command -v dot >/dev/null 2>&1") != 0) {
		snprintf(err, len, "--svg needs Graphviz's dot: install graphviz, or use --dot and "
		    "draw it elsewhere");
		return -1;
	}
	return 0;
}

static int
stk_parse(struct stk_args *a, int argc, char **argv)
{
	struct stk_parse sp = { .a = a };
	const struct opt_parser p = { .cmd = a->cmd, .ho = &a->ho, .value = stk_value,
	    .operand = stk_operand, .args = &sp, .operands = OPT_OPERANDS_BETWEEN };
	char err[512];
	int code, nsel, nops;

	/* Operands are --fr's further dumps: collected here, refused below for the rest. */
	a->fr = xcalloc((size_t)argc + 1, sizeof *a->fr);
	if ((code = opt_parse(&p, argc, argv, NULL)) != EXIT_OK)
		return code;
	nsel = sp.nsel;
	nops = sp.nops;
	if (nops > 0 && a->sel != SEL_FR) {
		snprintf(err, sizeof err, "unexpected argument '%s'", a->fr[1]);
		return cmd_usage_error(a->cmd, err);
	}
	a->fr[0] = a->fr_first;
	a->nfr = 1 + nops;
	if (stk_check(a, nsel, err, sizeof err) != 0)
		return cmd_usage_error(a->cmd, err);
	if (a->sel == SEL_JOB && a->job != NULL)
		snprintf(a->jobid, sizeof a->jobid, "%s", a->job);
	return EXIT_OK;
}

static int
stk_main(int argc, char **argv)
{
	struct stk_args a = { .cmd = &cmd_collstack, .timeout_s = 60, .color = 1,
	    .ho = { .jo = { .tool = "collstack", .grace_s = 0, .fanout = 64 } } };
	const char *nc = getenv("NO_COLOR");
	int code;

	if ((code = stk_parse(&a, argc, argv)) != EXIT_OK) {
		free(a.fr);
		return code < 0 ? cmd_finish_stdout(EXIT_OK) : code;
	}
	if ((nc != NULL && nc[0] != '\0') || !isatty(STDOUT_FILENO))
		a.color = 0;
	if (a.sel == SEL_FR)
		code = stk_fr(&a);
	else if (getenv("COLL_UNIQUE_ID") != NULL)
		code = stk_worker(&a);
	else
		code = stk_front(&a, argc, argv);
	free(a.fr);
	return cmd_finish_stdout(code);
}

const struct cmd cmd_collstack = {
	.tool = "collstack",
	.name = NULL,
	.usage = "collstack [--job ID | --pid PIDS | --match REGEX | --slurm JOBID]\n"
	    "                 [-H HOSTS | --hostfile FILE] [--json | --dot | --svg] [options]\n"
	    "       collstack --fr PATH [PATH...] [--json]",
	.summary = "Every thread's stack of every rank of a job, merged into one tree by rank "
	    "sets,\nwith a verdict naming the rank(s) the others wait for. With nothing named, "
	    "the\nstalled job here. Exit 0 the job advances, 1 a hang, 2 several stalled "
	    "jobs\n(listed), 3 the ranks could not be read.",
	.opts = stk_opts,
	.run = stk_main,
};
