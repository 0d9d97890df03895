/*
 * mpi_allreduce: the MPI_Allreduce counterpart of `collcheck allreduce`, for
 * comparing coll with an MPI library on the same sizes and the same method.
 *
 *   mpirun -np 4 ./mpi_allreduce -b 8 -e 256M -f 4 -n 20 -w 5 [-c 0|1] [--json]
 *
 * Method (mirrors core/probe.c): send and receive buffers of -e bytes are
 * allocated and touched once. For each size, first out-of-place then in-place
 * (MPI_IN_PLACE on the receive buffer): optionally one checked all-reduce (-c 1),
 * then -w untimed all-reduces, MPI_Barrier, then -n timed all-reduces between
 * two CLOCK_MONOTONIC reads. Each rank's mean time per op is gathered; the
 * reported time is the mean over ranks, plus the slowest rank and its time.
 * algbw = bytes / time (GB/s, 1e9); busbw = algbw * 2(n-1)/n.
 *
 * Only float sum is supported (-d float -o sum are accepted for symmetry).
 * --json writes the same document shape as `collcheck allreduce --json`, with
 * a few extra fields describing the MPI run: "library", "yield_when_idle" (the
 * effective mpi_yield_when_idle read through MPI_T; -1 when not available) and
 * "yield_when_idle_env" (OMPI_MCA_mpi_yield_when_idle as set, or null).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct args {
	size_t minb, maxb;
	double factor;
	long iters, warmup, check;
	int json;
};

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Byte counts like collcheck: 8, 64K, 256M, 1G (1024-based suffixes). */
static int
parse_size(const char *s, size_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (s == NULL || *s == '-' || *s == '\0')
		return -1;
	v = strtoull(s, &end, 10);
	if (end == s)
		return -1;
	if (*end != '\0') {
		switch (*end) {
		case 'K': case 'k': mul = 1ull << 10; break;
		case 'M': case 'm': mul = 1ull << 20; break;
		case 'G': case 'g': mul = 1ull << 30; break;
		default: return -1;
		}
		if (end[1] != '\0')
			return -1;
	}
	if (v > (1ull << 40) / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static int
parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (s == NULL)
		return -1;
	v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: mpi_allreduce [-b MIN] [-e MAX] [-f F] [-n ITERS] [-w WARMUP] "
	    "[-c 0|1] [-d float] [-o sum] [--json]\n"
	    "  -b SIZE   smallest size (default 8)\n"
	    "  -e SIZE   largest size (default 32M)\n"
	    "  -f F      multiply the size by F each step (default 2)\n"
	    "  -n N      timed iterations per size (default 20)\n"
	    "  -w N      untimed iterations first (default 5)\n"
	    "  -c 0|1    check results, count #wrong (default 1)\n"
	    "  --json    write the results as JSON\n");
}

/* 0: ok, 1: help shown, -1: error (message printed). */
static int
parse_args(struct args *a, int argc, char **argv)
{
	*a = (struct args){ 8, 32u << 20, 2.0, 20, 5, 1, 0 };
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;

		if (strcmp(o, "--json") == 0) {
			a->json = 1;
			continue;
		}
		if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
			usage(stdout);
			return 1;
		}
		if (v == NULL || o[0] != '-' || o[1] == '\0' || o[2] != '\0') {
			fprintf(stderr, "mpi_allreduce: bad or incomplete option '%s'\n", o);
			return -1;
		}
		switch (o[1]) {
		case 'b': bad = parse_size(v, &a->minb); break;
		case 'e': bad = parse_size(v, &a->maxb); break;
		case 'f': {
			char *end;
			a->factor = strtod(v, &end);
			bad = end == v || *end != '\0' || a->factor <= 1 || a->factor > 1024;
			break;
		}
		case 'n': bad = parse_long(v, 1, 1000000, &a->iters); break;
		case 'w': bad = parse_long(v, 0, 1000000, &a->warmup); break;
		case 'c': bad = parse_long(v, 0, 1, &a->check); break;
		case 'd': bad = strcmp(v, "float") != 0; break;
		case 'o': bad = strcmp(v, "sum") != 0; break;
		default: bad = 1; break;
		}
		if (bad) {
			fprintf(stderr, "mpi_allreduce: bad value '%s' for %s\n", v, o);
			return -1;
		}
		i++;
	}
	if (a->minb > a->maxb) {
		fprintf(stderr, "mpi_allreduce: -b must not be larger than -e\n");
		return -1;
	}
	return 0;
}

/* collcheck's float sum pattern: small integers, so every sum is exact. */
static void
fill(float *buf, size_t count, int rank)
{
	for (size_t i = 0; i < count; i++)
		buf[i] = (float)((i + (size_t)rank * 7) % 5) - 2.0f;
}

static float
expected(size_t i, int nranks)
{
	float s = 0;

	for (int r = 0; r < nranks; r++)
		s += (float)((i + (size_t)r * 7) % 5) - 2.0f;
	return s;
}

/*
 * The effective value of an integer/boolean MPI_T control variable such as Open
 * MPI's mpi_yield_when_idle (which mpirun turns on when oversubscribed), or -1.
 */
static int
cvar_int(const char *want)
{
	int provided, n = 0, v = -1;

	if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
		return -1;
	if (MPI_T_cvar_get_num(&n) != MPI_SUCCESS)
		n = 0;
	for (int i = 0; i < n; i++) {
		char name[256], desc[8];
		int nlen = sizeof name, dlen = sizeof desc, verb, bind, scope, count;
		MPI_Datatype dt;
		MPI_T_enum en;
		MPI_T_cvar_handle h;

		if (MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen, &bind,
		    &scope) != MPI_SUCCESS || strcmp(name, want) != 0)
			continue;
		if (bind == MPI_T_BIND_NO_OBJECT &&
		    MPI_T_cvar_handle_alloc(i, NULL, &h, &count) == MPI_SUCCESS) {
			union { int i; unsigned u; _Bool b; char pad[64]; } buf;

			memset(&buf, 0, sizeof buf);
			if (count == 1 && MPI_T_cvar_read(h, &buf) == MPI_SUCCESS) {
				if (dt == MPI_INT)
					v = buf.i;
				else if (dt == MPI_UNSIGNED)
					v = (int)buf.u;
				else if (dt == MPI_C_BOOL)
					v = buf.b;
			}
			MPI_T_cvar_handle_free(&h);
		}
		break;
	}
	MPI_T_finalize();
	return v;
}

struct meas {
	double time_us, algbw, busbw, slow_us;
	long long wrong;	/* summed over ranks; -1 when not checked */
	int slow_rank;
};

static long long
check(float *send, float *recv, size_t count, int inplace, int rank,
    int nranks)
{
	long long wrong = 0, total = 0;
	float *src = inplace ? recv : send;

	fill(src, count, rank);
	MPI_Allreduce(inplace ? MPI_IN_PLACE : send, recv, (int)count, MPI_FLOAT, MPI_SUM,
	    MPI_COMM_WORLD);
	for (size_t i = 0; i < count; i++)
		wrong += recv[i] != expected(i, nranks);
	MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	return total;
}

static void
measure(const struct args *a, float *send, float *recv, size_t count, int inplace,
    int nranks, double *all, struct meas *m)
{
	const void *sb = inplace ? MPI_IN_PLACE : (const void *)send;
	double t0, us, sum = 0;

	for (long i = 0; i < a->warmup; i++)
		MPI_Allreduce(sb, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now_us();
	for (long i = 0; i < a->iters; i++)
		MPI_Allreduce(sb, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	us = (now_us() - t0) / (double)a->iters;

	MPI_Allgather(&us, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
	m->slow_rank = 0;
	for (int r = 0; r < nranks; r++) {
		sum += all[r];
		if (all[r] > all[m->slow_rank])
			m->slow_rank = r;
	}
	m->slow_us = all[m->slow_rank];
	m->time_us = sum / nranks;
	m->algbw = m->time_us > 0 ? (double)(count * sizeof(float)) / (m->time_us * 1e3) : 0;
	m->busbw = nranks > 1 ? m->algbw * 2.0 * (nranks - 1) / nranks : 0;
}

static void
json_meas(const struct meas *m)
{
	printf("{\"time_us\": %.3f, \"algbw\": %.6f, \"busbw\": %.6f, \"wrong\": %lld, "
	    "\"slowest_rank\": %d, \"slowest_us\": %.3f}", m->time_us, m->algbw, m->busbw,
	    m->wrong, m->slow_rank, m->slow_us);
}

static void
json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			putchar(' ');
		else
			putchar(*s);
	}
	putchar('"');
}

static void
print_header(const struct args *a, int nranks, const char *lib, int yield_cvar)
{
	printf("# mpi_allreduce: %d ranks, minBytes %zu maxBytes %zu step: %g(factor) "
	    "warmup iters: %ld iters: %ld validation: %ld\n# library: %s\n"
	    "# mpi_yield_when_idle (MPI_T, -1 = unknown): %d\n#\n", nranks, a->minb, a->maxb,
	    a->factor, a->warmup, a->iters, a->check, lib, yield_cvar);
	printf("#%59s%30s%33s\n", "out-of-place", "in-place", "slowest");
	printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %5s  %7s\n",
	    "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
	    "algbw", "busbw", "#wrong", "rank", "time");
	printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %5s  %7s\n",
	    "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
	    "(GB/s)", "", "", "(us)");
	fflush(stdout);
}

static void
print_row(size_t bytes, size_t count, const struct meas m[2])
{
	const struct meas *slow = m[1].slow_us > m[0].slow_us ? &m[1] : &m[0];
	char w[2][24];

	for (int i = 0; i < 2; i++) {
		if (m[i].wrong < 0)
			snprintf(w[i], sizeof w[i], "N/A");
		else
			snprintf(w[i], sizeof w[i], "%lld", m[i].wrong);
	}
	printf("%12zu  %12zu  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6s  %7.2f  %6.2f  %6.2f  %6s  "
	    "%5d  %7.2f\n", bytes, count, "float", "sum", -1, m[0].time_us, m[0].algbw,
	    m[0].busbw, w[0], m[1].time_us, m[1].algbw, m[1].busbw, w[1], slow->slow_rank,
	    slow->slow_us);
	fflush(stdout);
}

/* The summary after the last row: nccl-tests' two lines, or the JSON document's tail. */
static void
print_footer(const struct args *a, const char *lib, int yield_cvar, double avg, long long wrong_total)
{
	const char *yield = getenv("OMPI_MCA_mpi_yield_when_idle");

	if (a->json) {
		printf("\n  ],\n  \"avg_busbw\": %.6f,\n  \"wrong\": %lld,\n  \"library\": ",
		    avg, wrong_total);
		json_string(lib);
		printf(",\n  \"yield_when_idle\": %d,\n  \"yield_when_idle_env\": ", yield_cvar);
		if (yield)
			json_string(yield);
		else
			printf("null");
		printf("\n}\n");
	} else {
		printf("# Out of bounds values : %lld %s\n", wrong_total,
		    wrong_total ? "FAILED" : "OK");
		printf("# Avg bus bandwidth    : %g \n#\n", avg);
	}
}

int
main(int argc, char **argv)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	struct args a;
	int rank, nranks, len, rows = 0, pr, yield_cvar;
	long long wrong_total = 0;
	double busbw_sum = 0, *all;
	float *send, *recv;
	size_t cap;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	pr = parse_args(&a, argc, argv);
	if (pr != 0) {
		MPI_Finalize();
		return pr > 0 ? 0 : 2;
	}
	MPI_Get_library_version(lib, &len);
	lib[strcspn(lib, "\n")] = '\0';
	yield_cvar = cvar_int("mpi_yield_when_idle");

	cap = a.maxb >= sizeof(float) ? a.maxb / sizeof(float) * sizeof(float) : sizeof(float);
	send = malloc(cap);
	recv = malloc(cap);
	all = calloc((size_t)nranks, sizeof *all);
	if (send == NULL || recv == NULL || all == NULL) {
		fprintf(stderr, "mpi_allreduce: rank %d: cannot allocate 2 x %zu bytes\n", rank, cap);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	/* Touch the pages now so the first timed op does not pay for faults. */
	memset(send, 0, cap);
	memset(recv, 0, cap);

	if (rank == 0 && !a.json)
		print_header(&a, nranks, lib, yield_cvar);
	if (rank == 0 && a.json)
		printf("{\n  \"collective\": \"allreduce\",\n  \"nranks\": %d,\n  \"results\": [",
		    nranks);

	for (size_t s = a.minb; s <= a.maxb;) {
		size_t count = s / sizeof(float), bytes = count * sizeof(float), next;
		struct meas m[2];

		if (count > 0 && count <= (size_t)INT32_MAX) {
			for (int inplace = 0; inplace < 2; inplace++) {
				m[inplace].wrong = a.check ?
				    check(send, recv, count, inplace, rank, nranks) : -1;
				measure(&a, send, recv, count, inplace, nranks, all, &m[inplace]);
				if (m[inplace].wrong > 0)
					wrong_total += m[inplace].wrong;
			}
			busbw_sum += m[1].busbw;
			if (rank == 0 && !a.json)
				print_row(bytes, count, m);
			if (rank == 0 && a.json) {
				printf("%s\n    {\"size\": %zu, \"count\": %zu, \"type\": \"float\", "
				    "\"redop\": \"sum\", \"root\": -1, \"out_of_place\": ", rows ? "," : "",
				    bytes, count);
				json_meas(&m[0]);
				printf(", \"in_place\": ");
				json_meas(&m[1]);
				printf("}");
				fflush(stdout);
			}
			rows++;
		}
		next = (size_t)((double)s * a.factor);
		s = next > s ? next : s + 1;
	}

	if (rank == 0)
		print_footer(&a, lib, yield_cvar, rows ? busbw_sum / rows : 0, wrong_total);
	free(send);
	free(recv);
	free(all);
	MPI_Finalize();
	return wrong_total ? 1 : 0;
}
