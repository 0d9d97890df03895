/*
 * collcheck allreduce, allgather, reducescatter, broadcast, reduce, alltoall:
 * the nccl-tests sweeps (all_reduce_perf and its siblings) over the coll core
 * or over NCCL.
 *
 * Under collrun every process is a rank (COLL_UNIQUE_ID is set); run alone it
 * becomes the front end and starts -N local ranks of itself. Flags follow
 * *_perf (-b -e -f -i -n -w -c -d -o -r); -N is the rank count, since
 * nccl-tests already gives -n to iterations. Columns are nccl-tests', plus
 * the slowest rank of each size and its time. --engine picks who runs the
 * collectives: NCCL on the GPUs, coll's own CUDA kernels on the GPUs (cuda),
 * or coll's own over TCP in host memory (the default where NCCL or a GPU is
 * missing); the timings, checks and the sweep's bookkeeping travel through
 * coll's communicator either way.
 *
 * --on-failure shrink goes on without ranks that die: the survivors shrink
 * the communicator to themselves (the root agrees on who is gone) and redo
 * the size that was interrupted, which every survivor then agrees on, since
 * one may have finished a size its peers were cut off in. Rows after that
 * are of the smaller job. Ranks are named as at the start, whatever the
 * shrinks renumbered. Every rank keeps the rows and events, as any may end up
 * the new rank 0 that prints them.
 */
#include <inttypes.h>
#include <signal.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "coll.h"
#include "comm.h"
#include "cuda_engine.h"
#include "err.h"
#include "job.h"
#include "nccl_engine.h"
#include "perf_intr.h"
#include "probe.h"
#include "retried.h"
#include "xmalloc.h"

/* How long a failed op waits for the root to name the dead, beyond the core's own wait. */
#define PERF_VERDICT_WAIT_MS 1000

enum { O_MIN = 1, O_MAX, O_FACTOR, O_STEP, O_ITERS, O_WARMUP, O_CHECK, O_DTYPE, O_OP, O_RANKS,
	O_NP, O_TIMEOUT, O_ON_FAILURE, O_JSON, O_ROOT, O_ENGINE };

enum perf_on_failure { PERF_STOP, PERF_SHRINK };
enum perf_engine { PERF_AUTO, PERF_COLL, PERF_NCCL, PERF_CUDA };

static const struct opt perf_opts[] = {
	{ O_MIN, 'b', "minbytes", OPT_VALUE, "SIZE", "smallest size (default 8)", NULL },
	{ O_MAX, 'e', "maxbytes", OPT_VALUE, "SIZE", "largest size (default 32M)", NULL },
	{ O_FACTOR, 'f', "stepfactor", OPT_VALUE, "F", "multiply the size by F each step "
	    "(default 2)", NULL },
	{ O_STEP, 'i', "stepbytes", OPT_VALUE, "SIZE", "add SIZE each step instead of -f", NULL },
	{ O_ITERS, 'n', "iters", OPT_VALUE, "N", "timed iterations per size (default 20)", NULL },
	{ O_WARMUP, 'w', "warmup_iters", OPT_VALUE, "N", "untimed iterations first (default 5)",
	    NULL },
	{ O_CHECK, 'c', "check", OPT_VALUE, "0|1", "check results, count #wrong (default 1)",
	    "0 1" },
	{ O_DTYPE, 'd', "datatype", OPT_VALUE, "TYPE", "float (default), double, half, "
	    "bfloat16, [u]int8/32/64 or all",
	    "int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double all" },
	{ O_OP, 'o', "op", OPT_VALUE, "OP", "sum prod min max avg, or all (default sum)",
	    "sum prod min max avg all" },
	{ O_ROOT, 'r', "root", OPT_VALUE, "RANK", "root of broadcast and reduce (default 0)",
	    NULL },
	{ O_ENGINE, 0, "engine", OPT_VALUE, "KIND", "auto (NCCL where it can, the default), "
	    "coll (TCP), nccl or cuda", "auto coll nccl cuda" },
	{ O_RANKS, 'N', "per-host", OPT_VALUE, "N", "run alone: N local ranks (default 1)",
	    NULL },
	{ O_NP, 0, "np", OPT_VALUE, "N", "total ranks (also -np); here the same as -N", NULL },
	{ O_TIMEOUT, 'T', "timeout", OPT_VALUE, "SECONDS", "give up on a stalled rank (default "
	    "300)", NULL },
	{ O_ON_FAILURE, 0, "on-failure", OPT_VALUE, "MODE", "stop (default), or shrink to the "
	    "survivors and go on", "stop shrink" },
	{ O_JSON, 0, "json", OPT_FLAG, NULL, "write the results as JSON", NULL },
	OPT_HELP_ENTRY,
	OPT_END_TABLE,
};

static int perf_run(enum probe_coll k, int argc, char **argv);

#define PERF_USAGE(nm, extra) "collcheck " nm " [-N PER_HOST | --np N] [-b MIN] [-e MAX] [-f F | -i STEP] " \
	"[-n ITERS] [-w WARMUP] [-c 0|1] [-d TYPE]" extra " [--engine auto|coll|nccl|cuda] " \
	"[--on-failure stop|shrink] [--json]"
#define PERF_SUMMARY(what) "Sweep " what " sizes like nccl-tests and report time, algbw, busbw " \
	"and #wrong per size,\nwith the slowest rank. Run under collrun, or alone with -N local " \
	"ranks.\nLetters as in nccl-tests (-n iterations, -f step factor), ranks as in mpirun."
#define PERF_CMD(var, fn, k, nm, extra, what) \
	static int fn(int argc, char **argv) { return perf_run(k, argc, argv); } \
	const struct cmd var = { .tool = "collcheck", .name = nm, \
	    .usage = PERF_USAGE(nm, extra), .summary = PERF_SUMMARY(what), .opts = perf_opts, .run = fn }

PERF_CMD(cmd_collcheck_allreduce, perf_run_allreduce, PROBE_ALLREDUCE, "allreduce", " [-o OP]",
    "all-reduce");
PERF_CMD(cmd_collcheck_allgather, perf_run_allgather, PROBE_ALLGATHER, "allgather", "",
    "all-gather");
PERF_CMD(cmd_collcheck_reducescatter, perf_run_reducescatter, PROBE_REDUCE_SCATTER,
    "reducescatter", " [-o OP]", "reduce-scatter");
PERF_CMD(cmd_collcheck_broadcast, perf_run_broadcast, PROBE_BROADCAST, "broadcast", " [-r ROOT]",
    "broadcast");
PERF_CMD(cmd_collcheck_reduce, perf_run_reduce, PROBE_REDUCE, "reduce", " [-o OP] [-r ROOT]",
    "reduce");
PERF_CMD(cmd_collcheck_alltoall, perf_run_alltoall, PROBE_ALLTOALL, "alltoall", "", "all-to-all");

static const struct cmd *const perf_cmds[PROBE_NCOLL] = {
	[PROBE_ALLREDUCE] = &cmd_collcheck_allreduce, [PROBE_ALLGATHER] = &cmd_collcheck_allgather,
	[PROBE_REDUCE_SCATTER] = &cmd_collcheck_reducescatter,
	[PROBE_BROADCAST] = &cmd_collcheck_broadcast, [PROBE_REDUCE] = &cmd_collcheck_reduce,
	[PROBE_ALLTOALL] = &cmd_collcheck_alltoall,
};

struct perf_args {
	enum probe_coll coll;
	const struct cmd *cmd;
	enum perf_engine engine;
	size_t minb, maxb, step;
	double factor;
	long iters, warmup, check, ranks, np, root;
	double timeout_s;
	int dt_all, op_all, json, step_given, factor_given;
	enum perf_on_failure on_failure;
	enum dtype dt;
	enum redop op;
};

static int
perf_parse_one(void *args, int id, const char *val, char *err, size_t len)
{
	struct perf_args *a = args;
	int v;

	switch (id) {
	case O_MIN: return opt_size("-b", val, &a->minb, err, len);
	case O_MAX: return opt_size("-e", val, &a->maxb, err, len);
	case O_STEP:
		a->step_given = 1;
		return opt_size("-i", val, &a->step, err, len);
	case O_FACTOR:
		a->factor_given = 1;
		return opt_double("-f", val, 1, 1024, &a->factor, err, len);
	case O_ITERS: return opt_int("-n", val, 1, 1000000, &a->iters, err, len);
	case O_WARMUP: return opt_int("-w", val, 0, 1000000, &a->warmup, err, len);
	case O_CHECK: return opt_int("-c", val, 0, 1, &a->check, err, len);
	case O_RANKS: return opt_int("-N", val, 1, 4096, &a->ranks, err, len);
	case O_NP: return opt_int("--np", val, 1, 4096, &a->np, err, len);
	case O_ROOT: return opt_int("-r", val, 0, 1 << 30, &a->root, err, len);
	case O_ENGINE:
		if (strcmp(val, "auto") == 0 || strcmp(val, "coll") == 0 || strcmp(val, "nccl") == 0 ||
		    strcmp(val, "cuda") == 0) {
			a->engine = val[0] == 'a' ? PERF_AUTO : val[1] == 'o' ? PERF_COLL :
			    val[0] == 'n' ? PERF_NCCL : PERF_CUDA;
			return 0;
		}
		snprintf(err, len, "unknown --engine '%s': use auto, coll, nccl or cuda", val);
		return -1;
	case O_TIMEOUT: return opt_double("-T", val, 0.1, 1e6, &a->timeout_s, err, len);
	case O_JSON: a->json = 1; return 0;
	case O_ON_FAILURE:
		if (strcmp(val, "stop") == 0 || strcmp(val, "shrink") == 0) {
			a->on_failure = strcmp(val, "shrink") == 0 ? PERF_SHRINK : PERF_STOP;
			return 0;
		}
		snprintf(err, len, "unknown --on-failure '%s': use stop or shrink", val);
		return -1;
	case O_DTYPE:
		if ((a->dt_all = strcmp(val, "all") == 0) || (v = dtype_parse(val)) >= 0) {
			a->dt = a->dt_all ? DT_FLOAT32 : (enum dtype)v;
			return 0;
		}
		snprintf(err, len, "unknown datatype '%s': use int8 uint8 int32 uint32 int64 uint64 "
		    "half bfloat16 float double or all", val);
		return -1;
	case O_OP:
		if ((a->op_all = strcmp(val, "all") == 0) || (v = redop_parse(val)) >= 0) {
			a->op = a->op_all ? OP_SUM : (enum redop)v;
			return 0;
		}
		snprintf(err, len, "unknown op '%s': use sum prod min max avg or all", val);
		return -1;
	}
	return 0;
}

/* What the options say together; refused rather than quietly changed. */
static int
perf_parse_check(struct perf_args *a)
{
	if (a->step_given && a->step == 0)
		return cmd_usage_error(a->cmd, "-i 0 would never grow the size: give a step of at "
		    "least 1 byte, or -f for a factor");
	if (a->step_given && a->factor_given)
		return cmd_usage_error(a->cmd, "give -f (a factor) or -i (a step in bytes), not both");
	if (!a->step_given && a->factor <= 1)
		return cmd_usage_error(a->cmd, "-f 1 would never grow the size: give a factor "
		    "above 1, or -i for a step in bytes");
	/* Without hosts every rank runs here: -N and --np both count them all. */
	if (a->np != 0 && a->ranks != 0 && a->np != a->ranks)
		return cmd_usage_error(a->cmd, "all ranks run on this host, where -N and --np "
		    "mean the same: give one");
	if (a->np != 0)
		a->ranks = a->np;
	if (a->ranks == 0)
		a->ranks = 1;
	return EXIT_OK;
}

/* mpirun's -np N, as --np: a word the one-letter options would read as -n p. */
static void
perf_argv_np(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-np") == 0)
			argv[i] = (char *)"--np";
}

static int
perf_parse(struct perf_args *a, enum probe_coll k, int argc, char **argv)
{
	const struct cmd *cmd = perf_cmds[k];
	const struct opt_parser p = { .cmd = cmd, .value = perf_parse_one, .args = a,
	    .operands = OPT_OPERANDS_NONE };
	int code;

	*a = (struct perf_args){ .coll = k, .cmd = cmd, .minb = 8, .maxb = 32u << 20, .factor = 2,
	    .iters = 20, .warmup = 5, .check = 1, .dt = DT_FLOAT32, .op = OP_SUM };
	perf_argv_np(argc, argv);
	if ((code = opt_parse(&p, argc, argv, NULL)) != EXIT_OK)
		return code;
	if (a->minb > a->maxb)
		return cmd_usage_error(cmd, "-b must not be larger than -e");
	if (a->engine == PERF_NCCL && a->on_failure == PERF_SHRINK)
		return cmd_usage_error(cmd, "--on-failure shrink needs --engine coll: an NCCL "
		    "communicator is aborted, not shrunk, when a rank dies");
	if (a->engine == PERF_CUDA && a->on_failure == PERF_SHRINK)
		return cmd_usage_error(cmd, "--on-failure shrink needs --engine coll: the CUDA "
		    "engine's ranks map each other's memory and stop, not shrink, when one dies");
	if (a->engine == PERF_AUTO && a->on_failure == PERF_SHRINK)
		a->engine = PERF_COLL;
	return perf_parse_check(a);
}

static size_t
perf_next_size(const struct perf_args *a, size_t s)
{
	size_t n = a->step ? s + a->step : (size_t)((double)s * a->factor);

	return n > s ? n : s + 1;
}

/* where: each rank's engine, as it describes its buffers and links; note: why not NCCL. */
static void
perf_print_header(struct comm *c, const struct perf_args *a, const char *engine,
    const struct coll_blobs *where, const char *note)
{
	char step[48];

	/* Bytes as an integer, as nccl-tests prints them: %g made 1M "1.04858e+06". */
	if (a->step)
		snprintf(step, sizeof step, "%zu(bytes)", a->step);
	else
		snprintf(step, sizeof step, "%g(factor)", a->factor);
	printf("# collcheck %s: %d ranks, engine %s, minBytes %zu maxBytes %zu step: %s "
	    "warmup iters: %ld iters: %ld validation: %ld\n", probe_coll_name(a->coll),
	    comm_size(c), engine, a->minb, a->maxb, step, a->warmup, a->iters, a->check);
	if (note != NULL)
		printf("# %s\n", note);
	printf("#\n# Using devices\n");
	for (int r = 0; r < comm_size(c); r++)
		printf("#  Rank %2d Pid %7d on %10s %.*s\n", r, comm_pid(c, r), comm_host(c, r),
		    r < where->n ? (int)where->len[r] : 1, r < where->n ?
		    (const char *)where->data + where->off[r] : "?");
	printf("#\n#%74s%33s%24s\n", "out-of-place", "in-place", "slowest");
	printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %5s  %7s\n",
	    "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
	    "algbw", "busbw", "#wrong", "rank", "time");
	printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %5s  %7s\n",
	    "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
	    "(GB/s)", "", "", "(us)");
	fflush(stdout);
}

/* nccl-tests prints "none" for the op of a collective that does not reduce, -1 for no root. */
static const char *
perf_op_name(const struct perf_args *a, enum redop op)
{
	return probe_coll_reduces(a->coll) ? redop_name(op) : "none";
}

static int
perf_root(const struct perf_args *a)
{
	return probe_coll_rooted(a->coll) ? (int)a->root : -1;
}

static void
perf_print_row(const struct perf_args *a, const struct probe_result *r, enum dtype dt,
    enum redop op)
{
	const struct probe_meas *slow = r->m[1].slow_us > r->m[0].slow_us ? &r->m[1] : &r->m[0];
	char w[2][24];

	for (int i = 0; i < 2; i++) {
		if (r->m[i].wrong < 0)
			snprintf(w[i], sizeof w[i], "N/A");
		else
			snprintf(w[i], sizeof w[i], "%" PRId64, r->m[i].wrong);
	}
	printf("%12zu  %12zu  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6s  %7.2f  %6.2f  %6.2f  %6s  "
	    "%5d  %7.2f\n", r->bytes, r->count, dtype_name(dt), perf_op_name(a, op), perf_root(a),
	    r->m[0].time_us,
	    r->m[0].algbw, r->m[0].busbw, w[0], r->m[1].time_us, r->m[1].algbw, r->m[1].busbw, w[1],
	    slow->slow_rank, slow->slow_us);
	fflush(stdout);
}

static json_t *
perf_json_meas(const struct probe_meas *m)
{
	return json_pack("{s:f, s:f, s:f, s:I, s:i, s:f}", "time_us", m->time_us, "algbw",
	    m->algbw, "busbw", m->busbw, "wrong", (json_int_t)m->wrong, "slowest_rank",
	    m->slow_rank, "slowest_us", m->slow_us);
}

static json_t *
perf_json_row(const struct perf_args *a, const struct probe_result *r, enum dtype dt,
    enum redop op, int nranks)
{
	return json_pack("{s:I, s:I, s:s, s:s, s:i, s:i, s:o, s:o}", "size",
	    (json_int_t)r->bytes, "count", (json_int_t)r->count, "type", dtype_name(dt), "redop",
	    perf_op_name(a, op), "root", perf_root(a), "nranks", nranks, "out_of_place",
	    perf_json_meas(&r->m[0]), "in_place", perf_json_meas(&r->m[1]));
}

/* Sums over the rows kept; the last row's share, so that a redone size can take it back. */
struct perf_totals {
	double busbw_sum;
	int rows;
	int64_t wrong;
	double last_busbw;
	int64_t last_wrong;
	json_t *rows_json;
	json_t *events;
};

/* A point of the sweep: datatype, op and size. */
struct perf_cursor {
	int d, o;
	size_t s;
};

/* One rank's sweep. */
struct perf_state {
	const struct perf_args *a;
	struct comm *c;
	struct probe p;
	struct probe_engine eng;	/* NCCL's or the CUDA one's, when it runs the collectives */
	const char *engine;		/* "coll", "nccl" or "cuda" */
	int n0;				/* ranks at the start */
	int me0;			/* this rank at the start */
	int *orig;			/* current rank -> rank at the start */
	struct perf_cursor cur, prev;	/* the step under way, and the one before */
	int64_t step;			/* cur's index in the sweep */
	uint64_t own_ops;		/* collectives of ours on c, besides the probe's */
	struct perf_totals t;
	struct retried_set retried;	/* this rank's, of communicators shrunk away */
	int gen;			/* shrinks so far: each communicator numbers its ops anew */
	struct retried_set retries;	/* rank 0: every rank's, at the end */
	char err[COLL_ERR_LEN + 128];	/* why it stopped, when comm_last_error(c) cannot say */
};

static char *perf_footer(const struct perf_state *st, int interrupted);

/* Where a rank was when its op failed; every survivor sends its own. */
enum { PERF_ORIG, PERF_STEP, PERF_SEQ, PERF_PHASE, PERF_ITER, PERF_INPLACE, PERF_POS_N };

/* Whether a size gives each of n ranks at least one element, as the collective splits it. */
static int
perf_size_holds(const struct perf_args *a, size_t s, enum dtype dt, int n)
{
	struct probe_shape sh;

	probe_shape(a->coll, s, dtype_size(dt), n, &sh);
	return sh.param > 0;
}

/* The ops to sweep: one (printed "none") for a collective that does not reduce. */
static int
perf_op_first(const struct perf_args *a)
{
	return a->op_all || !probe_coll_reduces(a->coll) ? 0 : (int)a->op;
}

/* Datatypes, then ops, then sizes; sizes that hold no element are skipped. */
static int
perf_cursor_valid(const struct perf_args *a, struct perf_cursor *k, int n)
{
	int o0 = perf_op_first(a);
	int o1 = a->op_all && probe_coll_reduces(a->coll) ? OP_COUNT : o0 + 1;
	int d1 = a->dt_all ? DT_COUNT : (int)a->dt + 1;

	while (k->d < d1) {
		if (k->s > a->maxb) {
			k->s = a->minb;
			if (++k->o >= o1) {
				k->o = o0;
				k->d++;
			}
		} else if (!perf_size_holds(a, k->s, (enum dtype)k->d, n)) {
			k->s = perf_next_size(a, k->s);
		} else {
			return 1;
		}
	}
	return 0;
}

static int
perf_cursor_first(const struct perf_args *a, struct perf_cursor *k, int n)
{
	*k = (struct perf_cursor){ a->dt_all ? 0 : (int)a->dt, perf_op_first(a), a->minb };
	return perf_cursor_valid(a, k, n);
}

static int
perf_cursor_next(const struct perf_args *a, struct perf_cursor *k, int n)
{
	k->s = perf_next_size(a, k->s);
	return perf_cursor_valid(a, k, n);
}

/* The bytes of the larger buffer at this point, as the row's size column says. */
static size_t
perf_cursor_bytes(const struct perf_args *a, const struct perf_cursor *k, int n)
{
	size_t esz = dtype_size((enum dtype)k->d);
	struct probe_shape sh;

	probe_shape(a->coll, k->s, esz, n, &sh);
	return (sh.send > sh.recv ? sh.send : sh.recv) * esz;
}

static void
perf_record(struct perf_state *st, const struct probe_result *res)
{
	struct perf_totals *t = &st->t;
	enum dtype dt = (enum dtype)st->cur.d;
	enum redop op = (enum redop)st->cur.o;

	t->last_busbw = res->m[1].busbw;
	t->last_wrong = 0;
	for (int i = 0; i < 2; i++)
		t->last_wrong += res->m[i].wrong > 0 ? res->m[i].wrong : 0;
	t->busbw_sum += t->last_busbw;
	t->wrong += t->last_wrong;
	t->rows++;
	json_array_append_new(t->rows_json, perf_json_row(st->a, res, dt, op, comm_size(st->c)));
	if (comm_rank(st->c) == 0 && !st->a->json)
		perf_print_row(st->a, res, dt, op);
	if (comm_rank(st->c) == 0)
		perf_intr_set(perf_footer(st, 1));
}

/* Take back the last row: its size is being redone. */
static void
perf_unrecord(struct perf_totals *t)
{
	if (t->rows == 0)
		return;
	t->busbw_sum -= t->last_busbw;
	t->wrong -= t->last_wrong;
	t->rows--;
	json_array_remove(t->rows_json, json_array_size(t->rows_json) - 1);
}

static int
perf_step(struct perf_state *st)
{
	struct probe_result res;
	int rc;

	st->p.o.dt = (enum dtype)st->cur.d;
	st->p.o.op = (enum redop)st->cur.o;
	if ((rc = probe_run(&st->p, st->cur.s, &res)) == COLL_OK)
		perf_record(st, &res);
	return rc;
}

/* Stop with this message instead of the communicator's. */
static int
perf_stop(struct perf_state *st, int rc, const char *msg)
{
	snprintf(st->err, sizeof st->err, "%s", msg);
	return rc;
}

/* The survivors of c, with the root's agreement, in *nc; anything but dead ranks stops. */
static int
perf_shrink(struct perf_state *st, struct comm *c, int rc, struct comm **nc)
{
	int *failed = NULL, n, r;
	char msg[COLL_ERR_LEN + 64];

	*nc = NULL;
	if (rc == COLL_EROOTLOST || comm_get_async_error(c) == COLL_EROOTLOST ||
	    (n = comm_wait_failed(c, PERF_VERDICT_WAIT_MS, &failed)) == 0)
		return perf_stop(st, rc, comm_last_error(c));
	r = comm_shrink(c, failed, n, nc, NULL, COLL_SHRINK_ABORT);
	free(failed);
	if (r != COLL_OK) {
		snprintf(msg, sizeof msg, "cannot go on without the dead: %s",
		    comm_last_error(*nc != NULL ? *nc : c));
		comm_destroy(*nc);
		*nc = NULL;
		return perf_stop(st, r, msg);
	}
	if (*nc == NULL) {
		snprintf(msg, sizeof msg, "rank %d was left out of the shrink, counted among the "
		    "failed: %s", st->me0, comm_last_error(c));
		return perf_stop(st, COLL_ERANKDEAD, msg);
	}
	return COLL_OK;
}

/*
 * Whose position to go by: the earliest step, since that is the one to redo,
 * and in it the furthest op, the one the dead never joined. Its index.
 */
static int
perf_pick(const int64_t *all, int n)
{
	int best = 0;

	for (int j = 1; j < n; j++) {
		const int64_t *a = &all[j * PERF_POS_N], *b = &all[best * PERF_POS_N];

		if (a[PERF_STEP] < b[PERF_STEP] || (a[PERF_STEP] == b[PERF_STEP] && a[PERF_SEQ] > b[PERF_SEQ]))
			best = j;
	}
	return best;
}

/* Where in a size an op failed ("in-place iteration 12"); the op's name. */
static const char *
perf_where(const struct perf_args *a, const int64_t *pos, char *buf, size_t len)
{
	const char *half = pos[PERF_INPLACE] ? "in-place" : "out-of-place";
	const char *name = probe_coll_name(a->coll);
	int it = (int)pos[PERF_ITER];

	switch (pos[PERF_PHASE]) {
	case PROBE_CHECK: snprintf(buf, len, "%s result check", half); return name;
	case PROBE_WARMUP: snprintf(buf, len, "%s warm-up iteration %d", half, it); return name;
	case PROBE_BARRIER: snprintf(buf, len, "%s barrier before timing", half); return "barrier";
	case PROBE_TIMED: snprintf(buf, len, "%s iteration %d", half, it); return name;
	case PROBE_COMBINE: snprintf(buf, len, "%s timing exchange", half); return "allgather";
	}
	snprintf(buf, len, "its start");
	return "op";
}

/*
 * Why they left, in the numbering of the start: the root's verdict that opens
 * the error ("rank 3 (host h, pid P) died or lost its connection"), without
 * what this rank was doing; or, where the error does not carry it, the news.
 */
static void
perf_reason(struct perf_state *st, struct comm *base, int first_left, char *buf, size_t len)
{
	const char *e = comm_last_error(base), *end = strstr(e, "; rank "), *rest;
	char *after;
	long r;

	if (strncmp(e, "rank ", 5) == 0) {
		r = strtol(e + 5, &after, 10);
		rest = after;
		if (after != e + 5 && r >= 0 && r < comm_size(base) &&
		    strncmp(rest, " (host ", 7) == 0) {
			snprintf(buf, len, "rank %d%.*s", st->orig[r],
			    (int)(end != NULL ? end - rest : (ptrdiff_t)strlen(rest)), rest);
			return;
		}
	}
	snprintf(buf, len, "the root service announced rank %d (host %s, pid %d) dead",
	    st->orig[first_left], comm_host(base, first_left), comm_pid(base, first_left));
}

/* The line new rank 0 prints: who left, where, why, and how many go on. */
static void
perf_print_event(struct perf_state *st, struct comm *base, const int *leftb, int nleft,
    const int64_t *pos, const char *reason, int after)
{
	char who[1024] = "", item[384], where[96];
	const char *opname = perf_where(st->a, pos, where, sizeof where);
	size_t off = 0, len;

	for (int i = 0; i < nleft; i++) {
		snprintf(item, sizeof item, "%s%d (host %s, pid %d)", i ? ", " : "",
		    st->orig[leftb[i]], comm_host(base, leftb[i]), comm_pid(base, leftb[i]));
		/* Room for this one and, after it, " and N more". */
		if ((len = strlen(item)) + 32 > sizeof who - off) {
			snprintf(who + off, sizeof who - off, " and %d more", nleft - i);
			break;
		}
		memcpy(who + off, item, len + 1);
		off += len;
	}
	fprintf(st->a->json ? stderr : stdout, "# rank%s %s left at size %zu, %s (%s seq %" PRId64
	    "): %s; continuing with %d ranks\n", nleft > 1 ? "s" : "", who,
	    perf_cursor_bytes(st->a, &st->cur, comm_size(base)), where, opname, pos[PERF_SEQ],
	    reason, after);
	fflush(st->a->json ? stderr : stdout);
}

/* Record who left between base and cur (all: cur's positions), and tell of it once. */
static void
perf_event(struct perf_state *st, struct comm *base, struct comm *cur, const int64_t *all,
    int pick)
{
	int nb = comm_size(base), n = comm_size(cur), nleft = 0;
	uint8_t *stays = xcalloc((size_t)st->n0, 1);
	int *leftb = xcalloc((size_t)nb, sizeof *leftb);
	json_t *left = json_array();
	char reason[COLL_ERR_LEN + 32];

	for (int j = 0; j < n; j++)
		if (all[j * PERF_POS_N + PERF_ORIG] >= 0 && all[j * PERF_POS_N + PERF_ORIG] < st->n0)
			stays[all[j * PERF_POS_N + PERF_ORIG]] = 1;
	for (int b = 0; b < nb; b++)
		if (!stays[st->orig[b]]) {
			leftb[nleft++] = b;
			json_array_append_new(left, json_integer(st->orig[b]));
		}
	perf_reason(st, base, nleft ? leftb[0] : 0, reason, sizeof reason);
	json_array_append_new(st->t.events, json_pack("{s:I, s:o, s:i, s:s}", "size",
	    (json_int_t)perf_cursor_bytes(st->a, &st->cur, comm_size(base)), "left", left,
	    "ranks_after", n, "reason", reason));
	if (comm_rank(cur) == 0)
		perf_print_event(st, base, leftb, nleft, &all[pick * PERF_POS_N], reason, n);
	free(stays);
	free(leftb);
}

/* Agree where to go on (redo the earliest step any survivor was in), then go on over cur. */
static int
perf_resume(struct perf_state *st, struct comm *base, struct comm *cur, const int64_t *all)
{
	int n = comm_size(cur), pick = perf_pick(all, n), *orig;
	int64_t redo = all[pick * PERF_POS_N + PERF_STEP];

	if (st->step == redo + 1) {
		st->cur = st->prev;	/* finished here, cut off elsewhere: measure it again */
		st->step--;
		perf_unrecord(&st->t);
	} else if (st->step != redo) {
		comm_destroy(cur);
		return perf_stop(st, COLL_EMISMATCH, "the survivors disagree on where the sweep "
		    "stopped: start it again");
	}
	perf_event(st, base, cur, all, pick);
	retried_take(&st->retried, base, st->gen++, st->orig);
	orig = xcalloc((size_t)n, sizeof *orig);
	for (int j = 0; j < n; j++)
		orig[j] = (int)all[j * PERF_POS_N + PERF_ORIG];
	free(st->orig);
	st->orig = orig;
	comm_destroy(base);
	st->c = cur;
	probe_set_comm(&st->p, cur);
	st->own_ops = 1;
	return COLL_OK;
}

/* Ops failed because ranks died: shrink to the survivors (again, if more die meanwhile). */
static int
perf_recover(struct perf_state *st, int rc)
{
	struct comm *base = st->c, *cur = base, *nc;
	int64_t mine[PERF_POS_N] = { st->me0, st->step, (int64_t)(st->p.pos.ops + st->own_ops),
	    st->p.pos.phase, st->p.pos.iter, st->p.pos.inplace };
	int64_t *all = NULL;

	for (;;) {
		rc = perf_shrink(st, cur, rc, &nc);
		if (cur != base)
			comm_destroy(cur);
		if (rc != COLL_OK)
			break;
		cur = nc;
		all = xreallocarray(all, (size_t)comm_size(cur) * PERF_POS_N, sizeof *all);
		if ((rc = coll_allgather(cur, mine, all, PERF_POS_N, DT_INT64)) == COLL_OK) {
			rc = perf_resume(st, base, cur, all);
			break;
		}
	}
	free(all);
	return rc;
}

static int
perf_sweep(struct perf_state *st)
{
	int rc = COLL_OK, more = perf_cursor_first(st->a, &st->cur, comm_size(st->c));

	while (more) {
		if ((rc = perf_step(st)) == COLL_OK) {
			st->prev = st->cur;
			st->step++;
			more = perf_cursor_next(st->a, &st->cur, comm_size(st->c));
		} else if (st->a->on_failure != PERF_SHRINK || (rc = perf_recover(st, rc)) != COLL_OK) {
			break;
		}
	}
	return rc;
}

/* The end of the table, or the JSON document; interrupted: of the rows so far. */
static char *
perf_footer(const struct perf_state *st, int interrupted)
{
	const struct perf_totals *t = &st->t;
	double avg = t->rows ? t->busbw_sum / t->rows : 0;
	json_t *doc;
	char *s, *text;

	if (!st->a->json)
		return xasprintf("%s# Out of bounds values : %" PRId64 " %s\n# Avg bus bandwidth    : "
		    "%g \n#\n", interrupted ? "# interrupted: the rows above are the sizes measured\n" :
		    "", t->wrong, t->wrong ? "FAILED" : "OK", avg);
	doc = json_pack("{s:s, s:s, s:i, s:O, s:f, s:I, s:O}", "collective",
	    probe_coll_name(st->a->coll), "engine", st->engine, "nranks", st->n0, "results",
	    t->rows_json, "avg_busbw", avg, "wrong", (json_int_t)t->wrong, "events", t->events);
	if (interrupted)
		json_object_set_new(doc, "interrupted", json_true());
	else
		json_object_set_new(doc, "retries", retried_json(&st->retries));
	s = json_dumps(doc, JSON_INDENT(2));
	json_decref(doc);
	text = xasprintf("%s\n", s != NULL ? s : "{}");
	free(s);
	return text;
}

static void
perf_print_footer(const struct perf_state *st)
{
	char *text = perf_footer(st, 0), line[512];

	fputs(text, stdout);
	free(text);
	/* After the table, as comments: a parser of nccl-tests' output skips them. */
	for (int i = 0; i < st->retries.n; i++) {
		retried_line(&st->retries.v[i], line, sizeof line);
		fprintf(st->a->json ? stderr : stdout, "# %s\n", line);
	}
	if (st->retries.more > 0)
		fprintf(st->a->json ? stderr : stdout, "# retried: %d more ops or links, not "
		    "listed\n", st->retries.more);
}

/* Every rank's retried ops to rank 0: the sweep came out right, but a link broke under it. */
static int
perf_retries(struct perf_state *st)
{
	retried_take(&st->retried, st->c, st->gen, st->orig);
	st->own_ops++;
	return retried_gather(st->c, st->n0, &st->retried, &st->retries);
}

static int
perf_join(struct perf_state *st)
{
	struct coll_config cfg = COLL_CONFIG_INIT;
	int rc;

	cfg.timeout_ms = st->a->timeout_s > 0 ? (int)(st->a->timeout_s * 1000) : 0;
	if ((rc = comm_init_env(&st->c, &cfg)) != COLL_OK) {
		fprintf(stderr, "collcheck: cannot join the job: %s\n", st->c ?
		    comm_last_error(st->c) : rc == COLL_EVERSION ? "COLL_UNIQUE_ID has another "
		    "format version: use the same coll version everywhere" : "COLL_UNIQUE_ID, "
		    "COLL_RANK or COLL_SIZE is malformed");
		return rc;
	}
	st->n0 = comm_size(st->c);
	st->me0 = comm_rank(st->c);
	st->orig = xcalloc((size_t)st->n0, sizeof *st->orig);
	for (int i = 0; i < st->n0; i++)
		st->orig[i] = i;
	return COLL_OK;
}

/* coll's own CUDA kernels, asked for by name: when they cannot be had the sweep stops. */
static int
perf_engine_cuda(struct perf_state *st, struct probe_opts *po)
{
	struct cuda_engine_opts co = { -1, st->a->timeout_s > 0 ? (int)(st->a->timeout_s *
	    1000) : 0 };
	char err[512];
	int rc;

	st->engine = "cuda";
	if ((rc = cuda_engine_open(&st->eng, st->c, &co, err, sizeof err)) != COLL_OK) {
		if (comm_get_async_error(st->c) == COLL_OK)
			fprintf(stderr, "collcheck: cannot run on coll's CUDA engine: %s\n", err);
		return rc;
	}
	po->engine = &st->eng;
	return COLL_OK;
}

/*
 * Why auto did not take NCCL, in one short line: the reason's first clause
 * ("rank 0: no CUDA driver (libcuda.so.1)"), without the loader's words and
 * the advice after it, which --engine nccl gives whole.
 */
static void
perf_engine_note(const char *err, char *note, size_t len)
{
	const char *start = strncmp(err, "rank ", 5) == 0 && strstr(err, ": ") ? strstr(err, ": ") + 2 :
	    err;
	const char *cut = strstr(start, ": "), *semi = strchr(err, ';');
	size_t n = strlen(err);

	if (cut != NULL)
		n = (size_t)(cut - err);
	if (semi != NULL && (size_t)(semi - err) < n)
		n = (size_t)(semi - err);
	snprintf(note, len, "engine coll: NCCL unavailable (%.*s)", (int)(n > 60 ? 60 : n), err);
}

/*
 * Open the engine asked for. auto takes NCCL when every rank can, else coll's
 * own, and says why in *note; nccl or cuda that cannot be had stops the sweep.
 */
static int
perf_engine(struct perf_state *st, struct probe_opts *po, char *note, size_t len)
{
	struct nccl_engine_opts no = { -1, st->a->timeout_s > 0 ? (int)(st->a->timeout_s *
	    1000) : 0 };
	char err[512];
	int rc;

	st->engine = "coll";
	if (st->a->engine == PERF_COLL)
		return COLL_OK;
	if (st->a->engine == PERF_CUDA)
		return perf_engine_cuda(st, po);
	if ((rc = nccl_engine_open(&st->eng, st->c, &no, err, sizeof err)) == COLL_OK) {
		po->engine = &st->eng;
		st->engine = "nccl";
		return COLL_OK;
	}
	if (comm_get_async_error(st->c) != COLL_OK)
		return rc;	/* the communicator itself failed: nothing to fall back on */
	if (st->a->engine == PERF_NCCL) {
		fprintf(stderr, "collcheck: cannot run on NCCL: %s\n", err);
		return rc;
	}
	perf_engine_note(err, note, len);
	return COLL_OK;
}

/* Every rank's engine as it describes itself, at rank 0, for the header. */
static int
perf_header(struct perf_state *st, const struct probe_opts *po, const char *note)
{
	struct coll_blobs where = { 0 };
	struct probe_engine own;
	const char *w;
	int rc;

	/* Before the buffers are made (seconds, for a large -e): the engine's own words. */
	if (po->engine == NULL)
		probe_engine_coll(&own, st->c);
	w = po->engine != NULL ? po->engine->where : own.where;
	st->own_ops++;
	if ((rc = coll_gatherv(st->c, w, strlen(w), 0, &where)) != COLL_OK)
		return rc;
	if (comm_rank(st->c) == 0 && !st->a->json)
		perf_print_header(st->c, st->a, st->engine, &where, note[0] ? note : NULL);
	coll_blobs_free(&where);
	return COLL_OK;
}

/* Join, open the engine, say so and make the buffers: EXIT_OK, or the exit code. */
static int
perf_setup(struct perf_state *st, struct probe_opts *po)
{
	const struct perf_args *a = st->a;
	char note[640] = "";
	int rc;

	if (perf_join(st) != COLL_OK)
		return EXIT_CANNOT;
	if (probe_coll_rooted(a->coll) && a->root >= comm_size(st->c)) {
		if (comm_rank(st->c) == 0)
			fprintf(stderr, "collcheck: -r %ld is not a rank of this %d-rank job: use 0 "
			    "to %d\n", a->root, comm_size(st->c), comm_size(st->c) - 1);
		return EXIT_USAGE;
	}
	if ((rc = perf_engine(st, po, note, sizeof note)) != COLL_OK) {
		if (comm_get_async_error(st->c) != COLL_OK)
			fprintf(stderr, "collcheck: %s\n", comm_last_error(st->c));
		return EXIT_CANNOT;
	}
	if ((rc = perf_header(st, po, note)) != COLL_OK) {
		fprintf(stderr, "collcheck: %s\n", comm_last_error(st->c));
		return EXIT_CANNOT;
	}
	if ((rc = probe_init(&st->p, st->c, po, a->maxb)) != COLL_OK) {
		if (rc == COLL_ENOMEM || st->p.err[0] == '\0')
			fprintf(stderr, "collcheck: cannot allocate %d buffers of %zu bytes for -e %zu "
			    "(%s): use a smaller -e\n", a->check ? 5 : 3, a->maxb, a->maxb, st->engine);
		else
			fprintf(stderr, "collcheck: %s\n", st->p.err);
		return EXIT_CANNOT;
	}
	return EXIT_OK;
}

static int
perf_worker(const struct perf_args *a)
{
	struct perf_state st = { .a = a, .t = { .rows_json = json_array(), .events = json_array() } };
	struct probe_opts po = { .iters = (int)a->iters, .warmup = (int)a->warmup,
	    .check = (int)a->check, .dt = a->dt, .op = a->op, .coll = a->coll,
	    .root = (int)a->root };
	int rc, code;

	/* Before the core's threads: they inherit SIGINT blocked, this thread alone takes it. */
	perf_intr_install();
	if ((code = perf_setup(&st, &po)) != EXIT_OK)
		goto out;
	if (comm_rank(st.c) == 0)
		perf_intr_set(perf_footer(&st, 1));
	perf_intr_arm();
	code = EXIT_CANNOT;
	if ((rc = perf_sweep(&st)) == COLL_OK)
		rc = perf_retries(&st);
	if (rc != COLL_OK)
		fprintf(stderr, "collcheck: %s\n", st.err[0] ? st.err : probe_error(&st.p));
	else if (comm_rank(st.c) == 0)
		perf_print_footer(&st);
	perf_intr_release();
	if (rc == COLL_OK)
		code = cmd_finish_stdout(st.t.wrong || st.retries.n > 0 ? EXIT_PROBLEMS : EXIT_OK);
out:
	perf_intr_release();
	perf_intr_arm();
	probe_free(&st.p);
	if (st.eng.close != NULL)
		st.eng.close(&st.eng);
	comm_destroy(st.c);
	json_decref(st.t.rows_json);
	json_decref(st.t.events);
	retried_free(&st.retried);
	retried_free(&st.retries);
	free(st.orig);
	return code;
}

/*
 * A rank that ended on Ctrl-C (130 from its handler, or SIGINT itself before
 * it was caught) is not a failure to report: rank 0 has closed the table, and
 * one line per rank would bury it. From then on the job says nothing of ranks.
 */
static void
perf_front_exited(void *arg, int rank, int state, int code)
{
	struct job_hooks *h = arg;

	(void)rank;
	if ((state == LAUNCH_EXITED && code == 130) || (state == LAUNCH_SIGNALED &&
	    code == SIGINT))
		h->quiet = 1;
}

/* Alone: be the front end and start the ranks as copies of this program. */
static int
perf_front(const struct perf_args *a, int argc, char **argv)
{
	char *self = cmd_self(), **wargv = calloc((size_t)argc + 2, sizeof *wargv);
	struct job_hooks hooks = { .exited = perf_front_exited };
	struct job_opts jo = { .tool = "collcheck", .nranks = (int)a->ranks, .label = 1,
	    .rank0_stdout_only = 1, .grace_s = 3, .join_timeout_ms = comm_env_timeout_ms(),
	    .keep_going = a->on_failure == PERF_SHRINK, .hooks = &hooks };
	int code;

	if (self == NULL || wargv == NULL) {
		fprintf(stderr, "collcheck: cannot find its own executable\n");
		free(self);
		free(wargv);
		return EXIT_CANNOT;
	}
	wargv[0] = self;
	wargv[1] = (char *)probe_coll_name(a->coll);
	for (int i = 1; i < argc; i++)
		wargv[i + 1] = argv[i];
	jo.argv = wargv;
	hooks.arg = &hooks;
	code = job_run(&jo);
	free(self);
	free(wargv);
	return code;
}

static int
perf_run(enum probe_coll k, int argc, char **argv)
{
	struct perf_args a;
	int r = perf_parse(&a, k, argc, argv);

	if (r != EXIT_OK)
		return r < 0 ? cmd_finish_stdout(EXIT_OK) : r;
	if (getenv("COLL_UNIQUE_ID") == NULL)
		return perf_front(&a, argc, argv);
	return perf_worker(&a);
}
