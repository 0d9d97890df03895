/*
 * Reduction kernels: every datatype under every operator on small arrays with
 * known results, integer wrap-around, NaN through min and max, the avg finish,
 * and the promise of reduce.h that every op is commutative bit for bit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dtype.h"
#include "reduce.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define N 4
#define BIT(dt) (1u << (dt))
#define T_ALL ((1u << DT_COUNT) - 1)
#define T_FLOATS (BIT(DT_FLOAT16) | BIT(DT_BFLOAT16) | BIT(DT_FLOAT32) | BIT(DT_FLOAT64))
#define T_SIGNED (BIT(DT_INT8) | BIT(DT_INT32) | BIT(DT_INT64) | T_FLOATS)

static const char *
op_str(int op)
{
	return redop_name((enum redop)op);
}

/*
 * Values every type in the mask holds exactly, so one row checks each of them:
 * a op b == want element by element (avg is the sum; reduce_avg_finish divides).
 */
static const struct {
	unsigned types;
	enum redop op;
	double a[N], b[N], want[N];
} value_rows[] = {
	{ T_ALL, OP_SUM, { 0, 1, 2, 3 }, { 4, 5, 6, 100 }, { 4, 6, 8, 103 } },
	{ T_ALL, OP_AVG, { 0, 1, 2, 3 }, { 4, 5, 6, 100 }, { 4, 6, 8, 103 } },
	{ T_ALL, OP_PROD, { 0, 1, 2, 3 }, { 4, 5, 6, 7 }, { 0, 5, 12, 21 } },
	{ T_ALL, OP_MIN, { 0, 1, 9, 3 }, { 4, 1, 6, 7 }, { 0, 1, 6, 3 } },
	{ T_ALL, OP_MAX, { 0, 1, 9, 3 }, { 4, 1, 6, 7 }, { 4, 1, 9, 7 } },
	{ T_SIGNED, OP_SUM, { -1, -2, 5, -100 }, { 1, -3, -7, 27 }, { 0, -5, -2, -73 } },
	{ T_SIGNED, OP_AVG, { -1, -2, 5, -100 }, { 1, -3, -7, 27 }, { 0, -5, -2, -73 } },
	{ T_SIGNED, OP_PROD, { -1, -2, 5, -3 }, { 1, -3, -7, 9 }, { -1, 6, -35, -27 } },
	{ T_SIGNED, OP_MIN, { -1, -2, 5, -100 }, { 1, -3, -7, 27 }, { -1, -3, -7, -100 } },
	{ T_SIGNED, OP_MAX, { -1, -2, 5, -100 }, { 1, -3, -7, 27 }, { 1, -2, 5, 27 } },
	{ T_FLOATS, OP_SUM, { 0.5, -0.25, 1.5, INFINITY }, { 0.25, 0.25, -3, 1 },
	  { 0.75, 0, -1.5, INFINITY } },
	{ T_FLOATS, OP_SUM, { INFINITY, -INFINITY, 0, 0 }, { -INFINITY, -1, 0, 0 },
	  { NAN, -INFINITY, 0, 0 } },
	{ T_FLOATS, OP_PROD, { 0.5, -0.25, 1.5, 2 }, { 0.5, 4, -2, 0.125 },
	  { 0.25, -1, -3, 0.25 } },
	{ T_FLOATS, OP_PROD, { INFINITY, INFINITY, -2, 0 }, { 0, -1, 0.5, 7 },
	  { NAN, -INFINITY, -1, 0 } },
	{ T_FLOATS, OP_MIN, { 0.5, -0.25, 1.5, -4 }, { 0.25, -0.5, 2, INFINITY },
	  { 0.25, -0.5, 1.5, -4 } },
	{ T_FLOATS, OP_MAX, { 0.5, -0.25, 1.5, -4 }, { 0.25, -0.5, 2, INFINITY },
	  { 0.5, -0.25, 2, INFINITY } },
	{ T_FLOATS, OP_MIN, { -INFINITY, INFINITY, 0, 1 }, { 1, INFINITY, 1, -INFINITY },
	  { -INFINITY, INFINITY, 0, -INFINITY } },
	/* 16-bit floats widen, combine and round back to nearest even. */
	{ BIT(DT_FLOAT16), OP_SUM, { 2048, 65504, 1, 0x1p-24 }, { 1, 16, 0x1p-11, 0x1p-24 },
	  { 2048, INFINITY, 1, 0x1p-23 } },
	{ BIT(DT_FLOAT16), OP_SUM, { 2048, -65504, 1, 0x1p-14 }, { 3, -32, 0x3p-11, -0x1p-24 },
	  { 2052, -INFINITY, 1 + 0x1p-9, 0x1p-14 - 0x1p-24 } },
	{ BIT(DT_FLOAT16), OP_PROD, { 256, 0x1p-12, -300, 0.5 }, { 256, 0x1p-13, 300, 0x1p-23 },
	  { INFINITY, 0, -INFINITY, 0x1p-24 } },
	{ BIT(DT_BFLOAT16), OP_SUM, { 256, 1, 0x1.fep127, 1 }, { 1, 0x1p-8, 0x1p120, 0x3p-8 },
	  { 256, 1, INFINITY, 1 + 0x1p-6 } },
	{ BIT(DT_BFLOAT16), OP_PROD, { 0x1p100, 3, 0x1p-100, -1 }, { 0x1p100, 3, 0x1p-100, 0 },
	  { INFINITY, 9, 0, 0 } },	/* 2^-200 underflows the float product */
	{ BIT(DT_FLOAT32), OP_SUM, { 1, 16777216, FLT_MAX, 0x1p-149 },
	  { 0x1p-24, 1, FLT_MAX, 0x1p-149 }, { 1, 16777216, INFINITY, 0x1p-148 } },
	{ BIT(DT_FLOAT64), OP_SUM, { 1, 0x1p53, DBL_MAX, 0x1p-1074 },
	  { 0x1p-53, 1, DBL_MAX, 0x1p-1074 }, { 1, 0x1p53, INFINITY, 0x1p-1073 } },
	{ BIT(DT_FLOAT64), OP_PROD, { 0x1p600, 0.1, 3, 1e-300 }, { 0x1p600, 10, 1.0 / 3, 1e-300 },
	  { INFINITY, 1, 1, 0 } },
};

static int
same_value(double got, double want)
{
	if (isnan(want))
		return isnan(got);
	return got == want;
}

static void
test_reduce_values(void **state)
{
	int covered[DT_COUNT][OP_COUNT] = { { 0 } };

	for (size_t r = 0; r < ARRAY_LEN(value_rows); r++) {
		for (int dt = 0; dt < DT_COUNT; dt++) {
			uint8_t a[N * 8], b[N * 8], d[N * 8];

			if (!(value_rows[r].types & BIT(dt)))
				continue;
			for (size_t i = 0; i < N; i++) {
				dtype_set(a, i, (enum dtype)dt, value_rows[r].a[i]);
				dtype_set(b, i, (enum dtype)dt, value_rows[r].b[i]);
			}
			memset(d, 0xa5, sizeof d);
			reduce_apply(d, a, b, N, (enum dtype)dt, value_rows[r].op);
			for (size_t i = 0; i < N; i++) {
				double got = dtype_get(d, i, (enum dtype)dt);

				if (!same_value(got, value_rows[r].want[i]))
					fail_msg("row %zu %s %s [%zu]: %g %s %g = %g, want %g", r,
					    dtype_name((enum dtype)dt), op_str(value_rows[r].op), i,
					    value_rows[r].a[i], op_str(value_rows[r].op),
					    value_rows[r].b[i], got, value_rows[r].want[i]);
			}
			/* Nothing past count is written. */
			for (size_t i = N * dtype_size((enum dtype)dt); i < sizeof d; i++)
				assert_int_equal(d[i], 0xa5);
			covered[dt][value_rows[r].op] = 1;
		}
	}
	for (int dt = 0; dt < DT_COUNT; dt++)
		for (int op = 0; op < OP_COUNT; op++)
			if (!covered[dt][op])
				fail_msg("no row for %s %s", dtype_name((enum dtype)dt), op_str(op));
}

/*
 * Integers wrap (two's complement, no undefined behaviour) and compare in their
 * own type, not through double. Values are bit patterns, truncated to the type.
 */
static const struct {
	enum dtype dt;
	enum redop op;
	uint64_t a, b, want;
} int_rows[] = {
	{ DT_INT8, OP_SUM, 0x7f, 0x01, 0x80 },		/* 127 + 1 = -128 */
	{ DT_INT8, OP_SUM, 0x80, 0xff, 0x7f },		/* -128 + -1 = 127 */
	{ DT_INT8, OP_AVG, 0x7f, 0x7f, 0xfe },		/* sums wrap before avg divides */
	{ DT_INT8, OP_PROD, 0x10, 0x10, 0x00 },		/* 16 * 16 = 256 = 0 */
	{ DT_INT8, OP_PROD, 0x80, 0xff, 0x80 },		/* -128 * -1 = -128 */
	{ DT_INT8, OP_PROD, 0x40, 0x03, 0xc0 },		/* 64 * 3 = 192 = -64 */
	{ DT_INT8, OP_MIN, 0x80, 0x7f, 0x80 },
	{ DT_INT8, OP_MAX, 0x80, 0x7f, 0x7f },
	{ DT_UINT8, OP_SUM, 0xff, 0x01, 0x00 },
	{ DT_UINT8, OP_SUM, 0xff, 0xff, 0xfe },
	{ DT_UINT8, OP_PROD, 0x10, 0x10, 0x00 },
	{ DT_UINT8, OP_PROD, 200, 2, 144 },
	{ DT_UINT8, OP_PROD, 0xff, 0xff, 0x01 },
	{ DT_UINT8, OP_MIN, 0x80, 0x7f, 0x7f },		/* unsigned: 128 > 127 */
	{ DT_UINT8, OP_MAX, 0xff, 0x00, 0xff },
	{ DT_INT32, OP_SUM, 0x7fffffff, 1, 0x80000000 },
	{ DT_INT32, OP_SUM, 0x80000000, 0x80000000, 0 },
	{ DT_INT32, OP_PROD, 0x10000, 0x10000, 0 },
	{ DT_INT32, OP_PROD, 0x80000000, 0xffffffff, 0x80000000 },	/* INT_MIN * -1 */
	{ DT_INT32, OP_PROD, 0x7fffffff, 0x7fffffff, 1 },
	{ DT_INT32, OP_MIN, 0x80000000, 0x7fffffff, 0x80000000 },
	{ DT_INT32, OP_MAX, 0xffffffff, 0x00000000, 0x00000000 },	/* -1 < 0 */
	{ DT_UINT32, OP_SUM, 0xffffffff, 1, 0 },
	{ DT_UINT32, OP_PROD, 0xffffffff, 0xffffffff, 1 },
	{ DT_UINT32, OP_MIN, 0x80000000, 0x7fffffff, 0x7fffffff },
	{ DT_UINT32, OP_MAX, 0xffffffff, 0x00000000, 0xffffffff },
	{ DT_INT64, OP_SUM, 0x7fffffffffffffffull, 1, 0x8000000000000000ull },
	{ DT_INT64, OP_SUM, 0x8000000000000000ull, 0xffffffffffffffffull,
	  0x7fffffffffffffffull },
	{ DT_INT64, OP_SUM, 0x20000000000001ull, 0x20000000000001ull, 0x40000000000002ull },
	{ DT_INT64, OP_PROD, 1ull << 32, 1ull << 32, 0 },
	{ DT_INT64, OP_PROD, 0x8000000000000000ull, 0xffffffffffffffffull,
	  0x8000000000000000ull },
	{ DT_INT64, OP_MIN, 0x8000000000000000ull, 0x7fffffffffffffffull,
	  0x8000000000000000ull },
	{ DT_INT64, OP_MAX, 0x20000000000001ull, 0x20000000000000ull, 0x20000000000001ull },
	{ DT_UINT64, OP_SUM, 0xffffffffffffffffull, 1, 0 },
	{ DT_UINT64, OP_SUM, 0xffffffffffffffffull, 0xffffffffffffffffull,
	  0xfffffffffffffffeull },
	{ DT_UINT64, OP_PROD, 1ull << 32, 1ull << 32, 0 },
	{ DT_UINT64, OP_PROD, 0xffffffffffffffffull, 0xffffffffffffffffull, 1 },
	{ DT_UINT64, OP_MIN, 0x8000000000000000ull, 0x7fffffffffffffffull,
	  0x7fffffffffffffffull },
	{ DT_UINT64, OP_MAX, 0xffffffffffffffffull, 0xfffffffffffffffeull,
	  0xffffffffffffffffull },
};

static void
test_reduce_int_wrap(void **state)
{
	for (size_t r = 0; r < ARRAY_LEN(int_rows); r++) {
		size_t sz = dtype_size(int_rows[r].dt);
		uint8_t a[8] = { 0 }, b[8] = { 0 }, d[8] = { 0 };
		uint64_t ab = 0, ba = 0, mask = sz == 8 ? ~0ull : (1ull << (8 * sz)) - 1;

		memcpy(a, &int_rows[r].a, sz);		/* little-endian host */
		memcpy(b, &int_rows[r].b, sz);
		reduce_apply(d, a, b, 1, int_rows[r].dt, int_rows[r].op);
		memcpy(&ab, d, sz);
		reduce_apply(d, b, a, 1, int_rows[r].dt, int_rows[r].op);
		memcpy(&ba, d, sz);
		if (ab != (int_rows[r].want & mask) || ba != ab)
			fail_msg("%s %s 0x%llx, 0x%llx: 0x%llx / 0x%llx, want 0x%llx",
			    dtype_name(int_rows[r].dt), op_str(int_rows[r].op),
			    (unsigned long long)int_rows[r].a, (unsigned long long)int_rows[r].b,
			    (unsigned long long)ab, (unsigned long long)ba,
			    (unsigned long long)int_rows[r].want);
	}
}

/* NaN on either side of min or max gives NaN, whichever order (and so do sum, prod). */
static void
test_reduce_nan(void **state)
{
	static const enum dtype fdts[] = { DT_FLOAT16, DT_BFLOAT16, DT_FLOAT32, DT_FLOAT64 };
	static const double others[] = { 1, -1, 0, -0.0, INFINITY, -INFINITY, 1e-30, NAN };

	for (size_t t = 0; t < ARRAY_LEN(fdts); t++) {
		for (int op = 0; op < OP_COUNT; op++) {
			uint8_t a[ARRAY_LEN(others) * 8], b[ARRAY_LEN(others) * 8];
			uint8_t d1[sizeof a], d2[sizeof a];

			for (size_t i = 0; i < ARRAY_LEN(others); i++) {
				dtype_set(a, i, fdts[t], NAN);
				dtype_set(b, i, fdts[t], others[i]);
			}
			reduce_apply(d1, a, b, ARRAY_LEN(others), fdts[t], (enum redop)op);
			reduce_apply(d2, b, a, ARRAY_LEN(others), fdts[t], (enum redop)op);
			for (size_t i = 0; i < ARRAY_LEN(others); i++) {
				if (!isnan(dtype_get(d1, i, fdts[t])) ||
				    !isnan(dtype_get(d2, i, fdts[t])))
					fail_msg("%s %s of NaN and %g: %g / %g, want NaN",
					    dtype_name(fdts[t]), op_str(op), others[i],
					    dtype_get(d1, i, fdts[t]), dtype_get(d2, i, fdts[t]));
			}
		}
	}
}

/* avg: the sum divided by the number of ranks; integers truncate toward zero. */
static const struct {
	enum dtype dt;
	int n;
	double in[N], want[N];
} avg_rows[] = {
	{ DT_INT8, 2, { 7, -7, 127, -128 }, { 3, -3, 63, -64 } },
	{ DT_INT8, 4, { 127, -128, 5, -5 }, { 31, -32, 1, -1 } },
	{ DT_UINT8, 2, { 255, 7, 0, 3 }, { 127, 3, 0, 1 } },
	{ DT_UINT8, 3, { 255, 2, 1, 100 }, { 85, 0, 0, 33 } },
	{ DT_INT32, 2, { 7, -7, 9, -9 }, { 3, -3, 4, -4 } },
	{ DT_INT32, 3, { 2147483647, -2147483648.0, 10, -10 }, { 715827882, -715827882, 3, -3 } },
	{ DT_UINT32, 2, { 4294967295.0, 1, 3, 0 }, { 2147483647, 0, 1, 0 } },
	{ DT_UINT32, 7, { 4294967295.0, 6, 7, 50 }, { 613566756, 0, 1, 7 } },
	{ DT_INT64, 2, { 7, -7, 1e15 + 1, -1e15 - 1 }, { 3, -3, 5e14, -5e14 } },
	{ DT_UINT64, 3, { 10, 2, 9e15, 1 }, { 3, 0, 3e15, 0 } },
	{ DT_INT32, 1, { 7, -7, 0, 1 }, { 7, -7, 0, 1 } },
	{ DT_FLOAT32, 2, { 7, -7, 1, 0 }, { 3.5, -3.5, 0.5, 0 } },
	{ DT_FLOAT32, 3, { 1, -1, 3, 0x1p-149 }, { (double)(1.0f / 3.0f), (double)(-1.0f / 3.0f),
	  1, 0 } },
	{ DT_FLOAT64, 2, { 7, -7, 1, DBL_MAX }, { 3.5, -3.5, 0.5, DBL_MAX / 2 } },
	{ DT_FLOAT64, 3, { 1, -1, 3, INFINITY }, { 1.0 / 3, -1.0 / 3, 1, INFINITY } },
	{ DT_FLOAT16, 2, { 3, 1, 65504, 0x1p-24 }, { 1.5, 0.5, 32752, 0 } },	/* 2^-25 ties to 0 */
	{ DT_FLOAT16, 4, { 3, 1, -6, 0x3p-24 }, { 0.75, 0.25, -1.5, 0x1p-24 } },
	{ DT_BFLOAT16, 2, { 3, 1, 0x1p-133, -0x1.fep127 }, { 1.5, 0.5, 0, -0x1.fep126 } },
	{ DT_BFLOAT16, 4, { 3, 1, -6, 256 }, { 0.75, 0.25, -1.5, 64 } },
};

static void
test_reduce_avg_finish(void **state)
{
	int covered[DT_COUNT] = { 0 };

	for (size_t r = 0; r < ARRAY_LEN(avg_rows); r++) {
		uint8_t buf[N * 8];

		for (size_t i = 0; i < N; i++)
			dtype_set(buf, i, avg_rows[r].dt, avg_rows[r].in[i]);
		reduce_avg_finish(buf, N, avg_rows[r].dt, avg_rows[r].n);
		for (size_t i = 0; i < N; i++) {
			double got = dtype_get(buf, i, avg_rows[r].dt);

			if (!same_value(got, avg_rows[r].want[i]))
				fail_msg("row %zu %s: %.17g / %d = %.17g, want %.17g", r,
				    dtype_name(avg_rows[r].dt), avg_rows[r].in[i], avg_rows[r].n, got,
				    avg_rows[r].want[i]);
		}
		covered[avg_rows[r].dt] = 1;
	}
	for (int dt = 0; dt < DT_COUNT; dt++)
		if (!covered[dt])
			fail_msg("no avg row for %s", dtype_name((enum dtype)dt));
}

/* avg over four ranks: fold with OP_AVG, then finish once with n. */
static void
test_reduce_avg_fold(void **state)
{
	static const struct {
		enum dtype dt;
		double ranks[4][2];
		double want[2];
	} rows[] = {
		{ DT_INT32, { { 1, -1 }, { 2, -2 }, { 3, -3 }, { 4, -4 } }, { 2, -2 } },
		{ DT_UINT8, { { 60, 1 }, { 60, 1 }, { 60, 1 }, { 60, 2 } }, { 60, 1 } },
		{ DT_FLOAT32, { { 1, -1 }, { 2, -2 }, { 3, -3 }, { 4, -4 } }, { 2.5, -2.5 } },
		{ DT_FLOAT16, { { 1, 0.5 }, { 2, 0.5 }, { 3, 0.5 }, { 4, 0.5 } }, { 2.5, 0.5 } },
	};

	for (size_t r = 0; r < ARRAY_LEN(rows); r++) {
		uint8_t acc[2 * 8], x[2 * 8];

		for (size_t i = 0; i < 2; i++)
			dtype_set(acc, i, rows[r].dt, rows[r].ranks[0][i]);
		for (int k = 1; k < 4; k++) {
			for (size_t i = 0; i < 2; i++)
				dtype_set(x, i, rows[r].dt, rows[r].ranks[k][i]);
			reduce_apply(acc, acc, x, 2, rows[r].dt, OP_AVG);
		}
		reduce_avg_finish(acc, 2, rows[r].dt, 4);
		for (size_t i = 0; i < 2; i++)
			assert_true(dtype_get(acc, i, rows[r].dt) == rows[r].want[i]);
	}
}

/* A small fixed-seed generator, so that a failure reproduces. */
static uint64_t
rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A double of random sign and magnitude under 1e4 (sometimes zero). */
static double
rng_value(uint64_t *s)
{
	uint64_t r = rng_next(s);
	double mant = (double)(r >> 11) / 9007199254740992.0;	/* [0, 1) */
	int exp = (int)(r % 10) - 6;

	if (r % 97 == 0)
		return 0;
	return ((r >> 10) & 1 ? -1 : 1) * mant * pow(10, exp + 1);
}

#define RAND_COUNT 4099	/* odd, so vector loops also run their tails */

/* reduce_apply(a, b) and reduce_apply(b, a) are identical bit for bit on random data. */
static void
test_reduce_commutative_random(void **state)
{
	static uint8_t a[RAND_COUNT * 8], b[RAND_COUNT * 8], d1[RAND_COUNT * 8],
	    d2[RAND_COUNT * 8];
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	for (int dt = 0; dt < DT_COUNT; dt++) {
		for (int op = 0; op < OP_COUNT; op++) {
			size_t bytes = RAND_COUNT * dtype_size((enum dtype)dt);

			for (size_t i = 0; i < RAND_COUNT; i++) {
				if (dtype_is_float((enum dtype)dt)) {
					dtype_set(a, i, (enum dtype)dt, rng_value(&seed));
					dtype_set(b, i, (enum dtype)dt, rng_value(&seed));
				} else {
					uint64_t x = rng_next(&seed), y = rng_next(&seed);

					memcpy(a + i * dtype_size((enum dtype)dt), &x,
					    dtype_size((enum dtype)dt));
					memcpy(b + i * dtype_size((enum dtype)dt), &y,
					    dtype_size((enum dtype)dt));
				}
			}
			reduce_apply(d1, a, b, RAND_COUNT, (enum dtype)dt, (enum redop)op);
			reduce_apply(d2, b, a, RAND_COUNT, (enum dtype)dt, (enum redop)op);
			if (memcmp(d1, d2, bytes) != 0)
				fail_msg("%s %s is not commutative on random data",
				    dtype_name((enum dtype)dt), op_str(op));
		}
	}
}

/* In place (dst is a or b), as the collectives call it, gives the same bytes. */
static void
test_reduce_in_place(void **state)
{
	static uint8_t a[RAND_COUNT * 8], b[RAND_COUNT * 8], want[RAND_COUNT * 8],
	    x[RAND_COUNT * 8];
	uint64_t seed = 12345;

	for (size_t i = 0; i < sizeof a; i++) {
		a[i] = (uint8_t)rng_next(&seed);
		b[i] = (uint8_t)rng_next(&seed);
	}
	for (int dt = 0; dt < DT_COUNT; dt++) {
		for (int op = 0; op < OP_COUNT; op++) {
			size_t bytes = RAND_COUNT * dtype_size((enum dtype)dt);

			if (dtype_is_float((enum dtype)dt))
				for (size_t i = 0; i < RAND_COUNT; i++) {
					dtype_set(a, i, (enum dtype)dt, rng_value(&seed));
					dtype_set(b, i, (enum dtype)dt, rng_value(&seed));
				}
			reduce_apply(want, a, b, RAND_COUNT, (enum dtype)dt, (enum redop)op);
			memcpy(x, a, bytes);
			reduce_apply(x, x, b, RAND_COUNT, (enum dtype)dt, (enum redop)op);
			assert_memory_equal(x, want, bytes);
			memcpy(x, b, bytes);
			reduce_apply(x, a, x, RAND_COUNT, (enum dtype)dt, (enum redop)op);
			assert_memory_equal(x, want, bytes);
		}
	}
}

/*
 * The special values where "a op b" and "b op a" can differ in bits: zeros of
 * either sign under min and max, and NaNs of different sign or payload.
 * reduce.h promises identical bits in either order.
 */
struct special_row {
	enum dtype dt;
	enum redop op;
	uint64_t a, b;	/* bit patterns */
	const char *what;
};

static void
check_commutative(const struct special_row *rows, size_t n)
{
	int bad = 0;

	for (size_t r = 0; r < n; r++) {
		size_t sz = dtype_size(rows[r].dt);
		uint8_t a[8], b[8], d1[8], d2[8];

		memcpy(a, &rows[r].a, sz);
		memcpy(b, &rows[r].b, sz);
		reduce_apply(d1, a, b, 1, rows[r].dt, rows[r].op);
		reduce_apply(d2, b, a, 1, rows[r].dt, rows[r].op);
		if (memcmp(d1, d2, sz) != 0) {
			uint64_t x = 0, y = 0;

			memcpy(&x, d1, sz);
			memcpy(&y, d2, sz);
			print_error("%s %s %s: a op b = 0x%llx, b op a = 0x%llx\n",
			    dtype_name(rows[r].dt), op_str(rows[r].op), rows[r].what,
			    (unsigned long long)x, (unsigned long long)y);
			bad++;
		}
	}
	if (bad)
		fail_msg("%d of %zu rows are not commutative bit for bit", bad, n);
}

static void
test_reduce_commutative_signed_zero(void **state)
{
	static const struct special_row rows[] = {
		{ DT_FLOAT32, OP_MIN, 0x00000000, 0x80000000, "+0, -0" },
		{ DT_FLOAT32, OP_MAX, 0x00000000, 0x80000000, "+0, -0" },
		{ DT_FLOAT64, OP_MIN, 0, 0x8000000000000000ull, "+0, -0" },
		{ DT_FLOAT64, OP_MAX, 0, 0x8000000000000000ull, "+0, -0" },
		{ DT_FLOAT16, OP_MIN, 0x0000, 0x8000, "+0, -0" },
		{ DT_FLOAT16, OP_MAX, 0x0000, 0x8000, "+0, -0" },
		{ DT_BFLOAT16, OP_MIN, 0x0000, 0x8000, "+0, -0" },
		{ DT_BFLOAT16, OP_MAX, 0x0000, 0x8000, "+0, -0" },
		{ DT_FLOAT32, OP_SUM, 0x00000000, 0x80000000, "+0, -0" },
		{ DT_FLOAT32, OP_PROD, 0x00000000, 0x80000000, "+0, -0" },
	};

	check_commutative(rows, ARRAY_LEN(rows));
}

static void
test_reduce_commutative_nan_payload(void **state)
{
	static const struct special_row rows[] = {
		{ DT_FLOAT32, OP_SUM, 0x7fc00000, 0xffc00000, "+NaN, -NaN" },
		{ DT_FLOAT32, OP_PROD, 0x7fc00000, 0xffc00000, "+NaN, -NaN" },
		{ DT_FLOAT32, OP_MIN, 0x7fc00000, 0xffc00000, "+NaN, -NaN" },
		{ DT_FLOAT32, OP_MAX, 0x7fc00000, 0xffc00000, "+NaN, -NaN" },
		{ DT_FLOAT32, OP_SUM, 0x7fc00001, 0x7fc00002, "NaN payloads" },
		{ DT_FLOAT64, OP_SUM, 0x7ff8000000000000ull, 0xfff8000000000000ull,
		  "+NaN, -NaN" },
		{ DT_FLOAT64, OP_MIN, 0x7ff8000000000000ull, 0xfff8000000000000ull,
		  "+NaN, -NaN" },
		{ DT_FLOAT16, OP_SUM, 0x7e00, 0xfe00, "+NaN, -NaN" },
		{ DT_FLOAT16, OP_MAX, 0x7e00, 0xfe00, "+NaN, -NaN" },
		{ DT_BFLOAT16, OP_SUM, 0x7fc0, 0xffc0, "+NaN, -NaN" },
		{ DT_BFLOAT16, OP_MIN, 0x7fc0, 0xffc0, "+NaN, -NaN" },
	};

	check_commutative(rows, ARRAY_LEN(rows));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reduce_values),
		cmocka_unit_test(test_reduce_int_wrap),
		cmocka_unit_test(test_reduce_nan),
		cmocka_unit_test(test_reduce_avg_finish),
		cmocka_unit_test(test_reduce_avg_fold),
		cmocka_unit_test(test_reduce_commutative_random),
		cmocka_unit_test(test_reduce_in_place),
		cmocka_unit_test(test_reduce_commutative_signed_zero),
		cmocka_unit_test(test_reduce_commutative_nan_payload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
