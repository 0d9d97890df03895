/*
 * collcheck allreduce: the nccl-tests all-reduce sweep over the coll core.
 *
 * Under collrun every process is a rank (COLL_UNIQUE_ID is set); run alone it
 * becomes the front end and starts -N local ranks of itself. Flags follow
 * all_reduce_perf (-b -e -f -i -n -w -c -d -o); -N is the rank count, since
 * nccl-tests already gives -n to iterations. Columns are nccl-tests', plus
 * the slowest rank of each size and its time.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "coll.h"
#include "comm.h"
#include "err.h"
#include "job.h"
#include "probe.h"

enum { O_MIN = 1, O_MAX, O_FACTOR, O_STEP, O_ITERS, O_WARMUP, O_CHECK, O_DTYPE, O_OP, O_RANKS,
	O_TIMEOUT, O_JSON, O_HELP };

static const struct opt ar_opts[] = {
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
	{ O_DTYPE, 'd', "datatype", OPT_VALUE, "TYPE", "int8 uint8 int32 uint32 int64 uint64 "
	    "half bfloat16 float double, or all (default float)",
	    "int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double all" },
	{ O_OP, 'o', "op", OPT_VALUE, "OP", "sum prod min max avg, or all (default sum)",
	    "sum prod min max avg all" },
	{ O_RANKS, 'N', "ranks", OPT_VALUE, "N", "run alone: start N local ranks (default 1)",
	    NULL },
	{ O_TIMEOUT, 'T', "timeout", OPT_VALUE, "SECONDS", "give up on a rank after this long "
	    "without progress (default 300)", NULL },
	{ O_JSON, 0, "json", OPT_FLAG, NULL, "write the results as JSON", NULL },
	{ O_HELP, 'h', "help", OPT_FLAG, NULL, "show this help", NULL },
	OPT_END_TABLE,
};

static int ar_run(int argc, char **argv);

const struct cmd cmd_collcheck_allreduce = {
	.tool = "collcheck",
	.name = "allreduce",
	.usage = "collcheck allreduce [-N RANKS] [-b MIN] [-e MAX] [-f F | -i STEP] [-n ITERS] "
	    "[-w WARMUP] [-c 0|1] [-d TYPE] [-o OP] [--json]",
	.summary = "Sweep all-reduce sizes like nccl-tests and report time, algbw, busbw and "
	    "#wrong per size,\nwith the slowest rank. Run under collrun, or alone with -N local ranks.",
	.opts = ar_opts,
	.run = ar_run,
};

struct ar_args {
	size_t minb, maxb, step;
	double factor;
	long iters, warmup, check, ranks;
	double timeout_s;
	int dt_all, op_all, json;
	enum dtype dt;
	enum redop op;
};

static int
ar_parse_one(struct ar_args *a, int id, const char *val, char *err, size_t len)
{
	int v;

	switch (id) {
	case O_MIN: return opt_size("-b", val, &a->minb, err, len);
	case O_MAX: return opt_size("-e", val, &a->maxb, err, len);
	case O_STEP: return opt_size("-i", val, &a->step, err, len);
	case O_FACTOR: return opt_double("-f", val, 1, 1024, &a->factor, err, len);
	case O_ITERS: return opt_int("-n", val, 1, 1000000, &a->iters, err, len);
	case O_WARMUP: return opt_int("-w", val, 0, 1000000, &a->warmup, err, len);
	case O_CHECK: return opt_int("-c", val, 0, 1, &a->check, err, len);
	case O_RANKS: return opt_int("-N", val, 1, 4096, &a->ranks, err, len);
	case O_TIMEOUT: return opt_double("-T", val, 0.1, 1e6, &a->timeout_s, err, len);
	case O_JSON: a->json = 1; return 0;
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

static int
ar_parse(struct ar_args *a, int argc, char **argv)
{
	struct opt_state st;
	const char *val;
	char err[256];
	int id;

	*a = (struct ar_args){ .minb = 8, .maxb = 32u << 20, .factor = 2, .iters = 20,
	    .warmup = 5, .check = 1, .ranks = 1, .dt = DT_FLOAT32, .op = OP_SUM };
	opt_init(&st, ar_opts, argc, argv, 0);
	while ((id = opt_next(&st, &val)) != OPT_DONE) {
		if (id == OPT_ERROR)
			return cmd_usage_error(&cmd_collcheck_allreduce, st.err);
		if (id == O_HELP) {
			cmd_usage(&cmd_collcheck_allreduce, stdout);
			return -1;
		}
		if (ar_parse_one(a, id, val, err, sizeof err) != 0)
			return cmd_usage_error(&cmd_collcheck_allreduce, err);
	}
	if (st.ind < argc)
		return cmd_usage_error(&cmd_collcheck_allreduce, "unexpected argument");
	if (a->minb > a->maxb)
		return cmd_usage_error(&cmd_collcheck_allreduce, "-b must not be larger than -e");
	if (a->factor <= 1 && a->step == 0)
		a->step = 1u << 20;
	return EXIT_OK;
}

static size_t
ar_next_size(const struct ar_args *a, size_t s)
{
	size_t n = a->step ? s + a->step : (size_t)((double)s * a->factor);

	return n > s ? n : s + 1;
}

static void
ar_print_header(struct comm *c, const struct ar_args *a)
{
	printf("# collcheck allreduce: %d ranks, minBytes %zu maxBytes %zu step: %g(%s) "
	    "warmup iters: %ld iters: %ld validation: %ld\n#\n# Using devices\n", comm_size(c),
	    a->minb, a->maxb, a->step ? (double)a->step : a->factor, a->step ? "bytes" : "factor",
	    a->warmup, a->iters, a->check);
	for (int r = 0; r < comm_size(c); r++)
		printf("#  Rank %2d Pid %7d on %10s host memory, tcp\n", r, comm_pid(c, r),
		    comm_host(c, r));
	printf("#\n#%74s%33s%24s\n", "out-of-place", "in-place", "slowest");
	printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %5s  %7s\n",
	    "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
	    "algbw", "busbw", "#wrong", "rank", "time");
	printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %5s  %7s\n",
	    "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
	    "(GB/s)", "", "", "(us)");
	fflush(stdout);
}

static void
ar_print_row(const struct probe_result *r, enum dtype dt, enum redop op)
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
	    "%5d  %7.2f\n", r->bytes, r->count, dtype_name(dt), redop_name(op), -1, r->m[0].time_us,
	    r->m[0].algbw, r->m[0].busbw, w[0], r->m[1].time_us, r->m[1].algbw, r->m[1].busbw, w[1],
	    slow->slow_rank, slow->slow_us);
	fflush(stdout);
}

static json_t *
ar_json_meas(const struct probe_meas *m)
{
	return json_pack("{s:f, s:f, s:f, s:I, s:i, s:f}", "time_us", m->time_us, "algbw",
	    m->algbw, "busbw", m->busbw, "wrong", (json_int_t)m->wrong, "slowest_rank",
	    m->slow_rank, "slowest_us", m->slow_us);
}

static json_t *
ar_json_row(const struct probe_result *r, enum dtype dt, enum redop op)
{
	return json_pack("{s:I, s:I, s:s, s:s, s:i, s:o, s:o}", "size", (json_int_t)r->bytes,
	    "count", (json_int_t)r->count, "type", dtype_name(dt), "redop", redop_name(op),
	    "root", -1, "out_of_place", ar_json_meas(&r->m[0]), "in_place",
	    ar_json_meas(&r->m[1]));
}

struct ar_totals {
	double busbw_sum;
	int rows;
	int64_t wrong;
	json_t *rows_json;
};

static int
ar_sweep(struct comm *c, const struct ar_args *a, enum dtype dt, enum redop op,
    struct ar_totals *t)
{
	struct probe_opts po = { (int)a->iters, (int)a->warmup, (int)a->check, dt, op };
	struct probe p;
	struct probe_result res;
	int rc = COLL_OK, me = comm_rank(c);

	if (probe_init(&p, c, &po, a->maxb) != COLL_OK) {
		fprintf(stderr, "collcheck: cannot allocate %d buffers of %zu bytes for -e %zu: use a "
		    "smaller -e\n", a->check ? 4 : 2, a->maxb, a->maxb);
		return COLL_ENOMEM;
	}
	for (size_t s = a->minb; s <= a->maxb && rc == COLL_OK; s = ar_next_size(a, s)) {
		if (s / dtype_size(dt) == 0)
			continue;
		if ((rc = probe_allreduce(&p, s, &res)) != COLL_OK)
			break;
		t->busbw_sum += res.m[1].busbw;
		t->rows++;
		for (int i = 0; i < 2; i++)
			t->wrong += res.m[i].wrong > 0 ? res.m[i].wrong : 0;
		if (me == 0 && !a->json)
			ar_print_row(&res, dt, op);
		if (me == 0 && a->json)
			json_array_append_new(t->rows_json, ar_json_row(&res, dt, op));
	}
	probe_free(&p);
	return rc;
}

static void
ar_print_footer(struct comm *c, const struct ar_args *a, const struct ar_totals *t)
{
	double avg = t->rows ? t->busbw_sum / t->rows : 0;

	if (a->json) {
		json_t *doc = json_pack("{s:s, s:i, s:o, s:f, s:I}", "collective", "allreduce",
		    "nranks", comm_size(c), "results", json_incref(t->rows_json), "avg_busbw", avg,
		    "wrong", (json_int_t)t->wrong);
		json_dumpf(doc, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(doc);
		return;
	}
	printf("# Out of bounds values : %" PRId64 " %s\n", t->wrong, t->wrong ? "FAILED" : "OK");
	printf("# Avg bus bandwidth    : %g \n#\n", avg);
}

static int
ar_worker(const struct ar_args *a)
{
	struct coll_config cfg = COLL_CONFIG_INIT;
	struct ar_totals t = { 0, 0, 0, json_array() };
	struct comm *c = NULL;
	int rc;

	cfg.timeout_ms = a->timeout_s > 0 ? (int)(a->timeout_s * 1000) : 0;
	if ((rc = comm_init_env(&c, &cfg)) != COLL_OK) {
		fprintf(stderr, "collcheck: cannot join the job: %s\n", c ? comm_last_error(c) :
		    rc == COLL_EVERSION ? "COLL_UNIQUE_ID has another format version: use the same "
		    "coll version everywhere" : "COLL_UNIQUE_ID, COLL_RANK or COLL_SIZE is malformed");
		comm_destroy(c);
		json_decref(t.rows_json);
		return EXIT_CANNOT;
	}
	if (comm_rank(c) == 0 && !a->json)
		ar_print_header(c, a);
	int d0 = a->dt_all ? 0 : (int)a->dt, d1 = a->dt_all ? DT_COUNT : d0 + 1;
	int o0 = a->op_all ? 0 : (int)a->op, o1 = a->op_all ? OP_COUNT : o0 + 1;

	for (int d = d0; d < d1 && rc == COLL_OK; d++)
		for (int o = o0; o < o1 && rc == COLL_OK; o++)
			rc = ar_sweep(c, a, (enum dtype)d, (enum redop)o, &t);
	if (rc != COLL_OK && rc != COLL_ENOMEM)
		fprintf(stderr, "collcheck: %s\n", comm_last_error(c));
	else if (comm_rank(c) == 0)
		ar_print_footer(c, a, &t);
	comm_destroy(c);
	json_decref(t.rows_json);
	if (rc != COLL_OK)
		return EXIT_CANNOT;
	return cmd_finish_stdout(t.wrong ? EXIT_PROBLEMS : EXIT_OK);
}

/* Alone: be the front end and start the ranks as copies of this program. */
static int
ar_front(const struct ar_args *a, int argc, char **argv)
{
	char self[4096], **wargv = calloc((size_t)argc + 2, sizeof *wargv);
	struct job_opts jo = { .tool = "collcheck", .nranks = (int)a->ranks, .label = 1,
	    .rank0_stdout_only = 1, .grace_s = 3, .join_timeout_ms = comm_env_timeout_ms() };
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	int code;

	if (n <= 0 || wargv == NULL) {
		fprintf(stderr, "collcheck: cannot find its own executable\n");
		free(wargv);
		return EXIT_CANNOT;
	}
	self[n] = '\0';
	wargv[0] = self;
	wargv[1] = "allreduce";
	for (int i = 1; i < argc; i++)
		wargv[i + 1] = argv[i];
	jo.argv = wargv;
	code = job_run(&jo);
	free(wargv);
	return code;
}

static int
ar_run(int argc, char **argv)
{
	struct ar_args a;
	int r = ar_parse(&a, argc, argv);

	if (r != EXIT_OK)
		return r < 0 ? cmd_finish_stdout(EXIT_OK) : r;
	if (getenv("COLL_UNIQUE_ID") == NULL)
		return ar_front(&a, argc, argv);
	return ar_worker(&a);
}
