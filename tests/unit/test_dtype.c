/*
 * Datatypes and operators: the names nccl-tests prints and parses, and the
 * half and bfloat16 conversions checked bit for bit against known patterns,
 * with round to nearest even at every tie.
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

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static uint32_t
f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

static float
u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

/* Names */

static const struct {
	enum dtype dt;
	const char *name;
	size_t size;
	int is_float;
} dtype_rows[] = {
	{ DT_INT8, "int8", 1, 0 },
	{ DT_UINT8, "uint8", 1, 0 },
	{ DT_INT32, "int32", 4, 0 },
	{ DT_UINT32, "uint32", 4, 0 },
	{ DT_INT64, "int64", 8, 0 },
	{ DT_UINT64, "uint64", 8, 0 },
	{ DT_FLOAT16, "half", 2, 1 },
	{ DT_BFLOAT16, "bfloat16", 2, 1 },
	{ DT_FLOAT32, "float", 4, 1 },
	{ DT_FLOAT64, "double", 8, 1 },
};

static void
test_dtype_name(void **state)
{
	assert_int_equal(ARRAY_LEN(dtype_rows), DT_COUNT);
	for (size_t i = 0; i < ARRAY_LEN(dtype_rows); i++) {
		assert_string_equal(dtype_name(dtype_rows[i].dt), dtype_rows[i].name);
		assert_int_equal(dtype_size(dtype_rows[i].dt), dtype_rows[i].size);
		assert_int_equal(!!dtype_is_float(dtype_rows[i].dt), dtype_rows[i].is_float);
	}
}

static void
test_dtype_parse(void **state)
{
	static const struct {
		const char *in;
		int want;
	} rows[] = {
		/* nccl-tests' names */
		{ "int8", DT_INT8 }, { "uint8", DT_UINT8 }, { "int32", DT_INT32 },
		{ "uint32", DT_UINT32 }, { "int64", DT_INT64 }, { "uint64", DT_UINT64 },
		{ "half", DT_FLOAT16 }, { "bfloat16", DT_BFLOAT16 }, { "float", DT_FLOAT32 },
		{ "double", DT_FLOAT64 },
		/* aliases */
		{ "float16", DT_FLOAT16 }, { "float32", DT_FLOAT32 }, { "float64", DT_FLOAT64 },
		{ "bf16", DT_BFLOAT16 }, { "char", DT_INT8 }, { "uchar", DT_UINT8 },
		{ "int", DT_INT32 }, { "uint", DT_UINT32 }, { "long", DT_INT64 },
		{ "ulong", DT_UINT64 },
		/* unknown */
		{ "", -1 }, { "int16", -1 }, { "uint16", -1 }, { "Float", -1 }, { "HALF", -1 },
		{ "fp16", -1 }, { "fp32", -1 }, { "float ", -1 }, { " float", -1 },
		{ "int8x", -1 }, { "in", -1 }, { "all", -1 },
		{ "float8", -1 }, { "double64", -1 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		int r = dtype_parse(rows[i].in);

		if (r != rows[i].want)
			fail_msg("dtype_parse(\"%s\") = %d, want %d", rows[i].in, r, rows[i].want);
	}
}

static void
test_dtype_name_parse_round_trip(void **state)
{
	for (int dt = 0; dt < DT_COUNT; dt++)
		assert_int_equal(dtype_parse(dtype_name((enum dtype)dt)), dt);
}

static void
test_redop_parse(void **state)
{
	static const struct {
		const char *in;
		int want;
	} rows[] = {
		{ "sum", OP_SUM }, { "prod", OP_PROD }, { "min", OP_MIN }, { "max", OP_MAX },
		{ "avg", OP_AVG },
		{ "", -1 }, { "Sum", -1 }, { "SUM", -1 }, { "add", -1 }, { "mul", -1 },
		{ "product", -1 }, { "mean", -1 }, { "all", -1 }, { "su", -1 }, { "sum ", -1 },
		{ "premulsum", -1 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		int r = redop_parse(rows[i].in);

		if (r != rows[i].want)
			fail_msg("redop_parse(\"%s\") = %d, want %d", rows[i].in, r, rows[i].want);
	}
	for (int op = 0; op < OP_COUNT; op++)
		assert_int_equal(redop_parse(redop_name((enum redop)op)), op);
}

/* IEEE binary16 */

static const struct {
	float f;
	uint16_t h;
} to_half_rows[] = {
	{ 0.0f, 0x0000 },
	{ -0.0f, 0x8000 },
	{ 1.0f, 0x3c00 },
	{ -1.0f, 0xbc00 },
	{ -2.0f, 0xc000 },
	{ 0.5f, 0x3800 },
	{ 0.1f, 0x2e66 },
	{ 3.14159265f, 0x4248 },
	{ 65504.0f, 0x7bff },		/* largest half */
	{ -65504.0f, 0xfbff },
	{ 65519.0f, 0x7bff },		/* under the midpoint to 2^16 */
	{ 65520.0f, 0x7c00 },		/* the midpoint: ties to even, which is infinity */
	{ -65520.0f, 0xfc00 },
	{ 65536.0f, 0x7c00 },
	{ 1e10f, 0x7c00 },
	{ FLT_MAX, 0x7c00 },
	{ INFINITY, 0x7c00 },
	{ -INFINITY, 0xfc00 },
	{ 0x1p-14f, 0x0400 },		/* smallest normal */
	{ 0x1p-14f - 0x1p-24f, 0x03ff },	/* largest subnormal */
	{ 0x1p-14f - 0x1p-25f, 0x0400 },	/* tie between them: even is 0x400 */
	{ 0x1p-24f, 0x0001 },		/* smallest subnormal */
	{ -0x1p-24f, 0x8001 },
	{ 0x1p-25f, 0x0000 },		/* tie between 0 and 2^-24: even is 0 */
	{ -0x1p-25f, 0x8000 },
	{ 0x1p-25f + 0x1p-40f, 0x0001 },	/* just over the tie */
	{ 0x3p-25f, 0x0002 },		/* tie between 1 and 2 ulps: even is 2 */
	{ 0x5p-25f, 0x0002 },		/* tie between 2 and 3 ulps: even is 2 */
	{ 0x1p-30f, 0x0000 },
	{ FLT_MIN, 0x0000 },
	{ 0x1p-149f, 0x0000 },		/* float's smallest subnormal */
	{ 1.0f + 0x1p-10f, 0x3c01 },
	{ 1.0f + 0x1p-11f, 0x3c00 },	/* tie: even is 1.0 */
	{ 1.0f + 0x3p-11f, 0x3c02 },	/* tie: even rounds up */
	{ 1.0f + 0x1p-11f + 0x1p-20f, 0x3c01 },	/* just over the tie */
	{ 1.0f + 0x1p-11f - 0x1p-20f, 0x3c00 },	/* just under it */
	{ -(1.0f + 0x3p-11f), 0xbc02 },
	{ 2049.0f, 0x6800 },		/* tie between 2048 and 2050 */
	{ 2051.0f, 0x6802 },		/* tie between 2050 and 2052 */
	{ 2047.5f, 0x6800 },		/* tie between 2047 and 2048: even is 2048 */
	{ 0x1.ffcp0f, 0x3fff },		/* largest half under 2 */
	{ 0x1.ffep0f, 0x4000 },		/* tie at the top of a binade carries into the exponent */
};

static const struct {
	uint16_t h;
	float f;
} from_half_rows[] = {
	{ 0x0000, 0.0f },
	{ 0x8000, -0.0f },
	{ 0x3c00, 1.0f },
	{ 0xbc00, -1.0f },
	{ 0xc000, -2.0f },
	{ 0x3800, 0.5f },
	{ 0x3555, 0.333251953125f },
	{ 0x7bff, 65504.0f },
	{ 0xfbff, -65504.0f },
	{ 0x0400, 0x1p-14f },
	{ 0x03ff, 0x1p-14f - 0x1p-24f },
	{ 0x0001, 0x1p-24f },
	{ 0x8001, -0x1p-24f },
	{ 0x0200, 0x1p-15f },
	{ 0x7c00, INFINITY },
	{ 0xfc00, -INFINITY },
	{ 0x3c01, 1.0f + 0x1p-10f },
	{ 0x6800, 2048.0f },
};

static void
test_float_to_half(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(to_half_rows); i++) {
		uint16_t h = dtype_float_to_half(to_half_rows[i].f);

		if (h != to_half_rows[i].h)
			fail_msg("float_to_half(%a) = 0x%04x, want 0x%04x",
			    (double)to_half_rows[i].f, h, to_half_rows[i].h);
	}
}

static void
test_half_to_float(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(from_half_rows); i++) {
		float f = dtype_half_to_float(from_half_rows[i].h);

		if (f2u(f) != f2u(from_half_rows[i].f))
			fail_msg("half_to_float(0x%04x) = %a, want %a", from_half_rows[i].h,
			    (double)f, (double)from_half_rows[i].f);
	}
}

static const uint32_t float_nans[] = {
	0x7fc00000u,	/* quiet */
	0xffc00000u,	/* negative quiet (x86's default NaN) */
	0x7f800001u,	/* signalling, payload only in the low bits */
	0xff800001u,
	0x7fffffffu,
	0x7fa00000u,
	0x7f801fffu,	/* payload entirely below half's mantissa */
};

static void
test_half_nan(void **state)
{
	static const uint16_t half_nans[] = { 0x7e00, 0xfe00, 0x7c01, 0xfc01, 0x7fff, 0x7d00 };

	for (size_t i = 0; i < ARRAY_LEN(float_nans); i++) {
		uint16_t h = dtype_float_to_half(u2f(float_nans[i]));

		if ((h & 0x7c00) != 0x7c00 || (h & 0x3ff) == 0)
			fail_msg("float_to_half(NaN 0x%08x) = 0x%04x, not a NaN", float_nans[i], h);
		assert_int_equal(h >> 15, float_nans[i] >> 31);
	}
	for (size_t i = 0; i < ARRAY_LEN(half_nans); i++) {
		float f = dtype_half_to_float(half_nans[i]);

		assert_true(isnan(f));
		assert_int_equal(f2u(f) >> 31, half_nans[i] >> 15);
	}
}

/* Every half that is not a NaN survives half -> float -> half unchanged. */
static void
test_half_round_trip_all(void **state)
{
	for (uint32_t h = 0; h <= 0xffff; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0)
			continue;
		if (dtype_float_to_half(dtype_half_to_float((uint16_t)h)) != h)
			fail_msg("half 0x%04x does not round-trip", h);
	}
}

/*
 * Between every two neighbouring positive halves (and between 65504 and 2^16),
 * the midpoint rounds to the even one and the floats just either side of it
 * round to the nearer one; the same holds with the sign flipped.
 */
static void
test_half_midpoints(void **state)
{
	for (uint32_t h = 0; h < 0x7c00; h++) {
		float lo = dtype_half_to_float((uint16_t)h);
		float hi = h == 0x7bff ? 65536.0f : dtype_half_to_float((uint16_t)(h + 1));
		float mid = lo + (hi - lo) / 2;	/* exact: halves have 11 significant bits */
		uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
		const struct {
			float f;
			uint16_t want;
		} rows[] = {
			{ mid, even },
			{ nextafterf(mid, 0.0f), (uint16_t)h },
			{ nextafterf(mid, INFINITY), (uint16_t)(h + 1) },
		};

		for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
			uint16_t got = dtype_float_to_half(rows[i].f);
			uint16_t neg = dtype_float_to_half(-rows[i].f);

			if (got != rows[i].want || neg != (rows[i].want | 0x8000))
				fail_msg("float_to_half(±%a) = 0x%04x/0x%04x, want 0x%04x",
				    (double)rows[i].f, got, neg, rows[i].want);
		}
	}
}

/* bfloat16 */

static const struct {
	float f;
	uint16_t h;
} to_bf16_rows[] = {
	{ 0.0f, 0x0000 },
	{ -0.0f, 0x8000 },
	{ 1.0f, 0x3f80 },
	{ -1.0f, 0xbf80 },
	{ -2.0f, 0xc000 },
	{ 0.5f, 0x3f00 },
	{ 3.0f, 0x4040 },
	{ 0.1f, 0x3dcd },
	{ 3.14159265f, 0x4049 },
	{ 65504.0f, 0x4780 },		/* 65504 rounds to 65536 in bf16 */
	{ INFINITY, 0x7f80 },
	{ -INFINITY, 0xff80 },
	{ 0x1.fep127f, 0x7f7f },	/* largest bf16 */
	{ FLT_MAX, 0x7f80 },		/* past the last midpoint: infinity */
	{ -FLT_MAX, 0xff80 },
	{ 1.0f + 0x1p-7f, 0x3f81 },
	{ 1.0f + 0x1p-8f, 0x3f80 },	/* tie: even is 1.0 */
	{ 1.0f + 0x3p-8f, 0x3f82 },	/* tie: even rounds up */
	{ 1.0f + 0x1p-8f + 0x1p-20f, 0x3f81 },	/* just over the tie */
	{ 1.0f + 0x1p-8f - 0x1p-20f, 0x3f80 },	/* just under it */
	{ -(1.0f + 0x3p-8f), 0xbf82 },
	{ 257.0f, 0x4380 },		/* tie between 256 and 258 */
	{ 259.0f, 0x4382 },		/* tie between 258 and 260 */
	{ 0x1.ffp0f, 0x4000 },		/* tie at the top of a binade carries */
	{ FLT_MIN, 0x0080 },
	{ 0x1p-133f, 0x0001 },		/* smallest bf16 subnormal */
	{ 0x1p-149f, 0x0000 },		/* float's smallest subnormal */
	{ 0x1p-134f, 0x0000 },		/* tie between 0 and 2^-133: even is 0 */
	{ 0x3p-134f, 0x0002 },		/* tie between 1 and 2 ulps: even is 2 */
};

static void
test_float_to_bf16(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(to_bf16_rows); i++) {
		uint16_t h = dtype_float_to_bf16(to_bf16_rows[i].f);

		if (h != to_bf16_rows[i].h)
			fail_msg("float_to_bf16(%a) = 0x%04x, want 0x%04x",
			    (double)to_bf16_rows[i].f, h, to_bf16_rows[i].h);
	}
}

static void
test_bf16_to_float(void **state)
{
	static const struct {
		uint16_t h;
		float f;
	} rows[] = {
		{ 0x0000, 0.0f }, { 0x8000, -0.0f }, { 0x3f80, 1.0f }, { 0xbf80, -1.0f },
		{ 0xc000, -2.0f }, { 0x3f00, 0.5f }, { 0x4049, 3.140625f },
		{ 0x7f7f, 0x1.fep127f }, { 0x7f80, INFINITY }, { 0xff80, -INFINITY },
		{ 0x0001, 0x1p-133f }, { 0x0080, FLT_MIN }, { 0x3f81, 1.0f + 0x1p-7f },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		float f = dtype_bf16_to_float(rows[i].h);

		if (f2u(f) != f2u(rows[i].f))
			fail_msg("bf16_to_float(0x%04x) = %a, want %a", rows[i].h, (double)f,
			    (double)rows[i].f);
	}
}

static void
test_bf16_nan(void **state)
{
	static const uint16_t bf16_nans[] = { 0x7fc0, 0xffc0, 0x7f81, 0xff81, 0x7fff };

	for (size_t i = 0; i < ARRAY_LEN(float_nans); i++) {
		uint16_t h = dtype_float_to_bf16(u2f(float_nans[i]));

		if ((h & 0x7f80) != 0x7f80 || (h & 0x7f) == 0)
			fail_msg("float_to_bf16(NaN 0x%08x) = 0x%04x, not a NaN", float_nans[i], h);
		assert_int_equal(h >> 15, float_nans[i] >> 31);
	}
	for (size_t i = 0; i < ARRAY_LEN(bf16_nans); i++) {
		float f = dtype_bf16_to_float(bf16_nans[i]);

		assert_true(isnan(f));
		assert_int_equal(f2u(f) >> 31, bf16_nans[i] >> 15);
	}
}

static void
test_bf16_round_trip_all(void **state)
{
	for (uint32_t h = 0; h <= 0xffff; h++) {
		if ((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0)
			continue;
		if (dtype_float_to_bf16(dtype_bf16_to_float((uint16_t)h)) != h)
			fail_msg("bf16 0x%04x does not round-trip", h);
	}
}

/* bf16 is the top half of a float: the midpoint is bit 15, ties go to even. */
static void
test_bf16_midpoints(void **state)
{
	for (uint32_t h = 0; h < 0x7f80; h++) {
		uint32_t mid = h << 16 | 0x8000;
		uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
		const struct {
			uint32_t bits;
			uint16_t want;
		} rows[] = {
			{ mid, even }, { mid - 1, (uint16_t)h }, { mid + 1, (uint16_t)(h + 1) },
		};

		for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
			uint16_t got = dtype_float_to_bf16(u2f(rows[i].bits));
			uint16_t neg = dtype_float_to_bf16(u2f(rows[i].bits | 0x80000000u));

			if (got != rows[i].want || neg != (rows[i].want | 0x8000))
				fail_msg("float_to_bf16(±0x%08x) = 0x%04x/0x%04x, want 0x%04x",
				    rows[i].bits, got, neg, rows[i].want);
		}
	}
}

/* dtype_set then dtype_get gives back values every type can hold. */
static void
test_dtype_get_set(void **state)
{
	static const struct {
		double v;
		int is_signed;	/* needs a signed or float type */
	} rows[] = {
		{ 0, 0 }, { 1, 0 }, { 127, 0 }, { 100, 0 }, { -1, 1 }, { -128, 1 }, { -2.0, 1 },
	};

	for (int dt = 0; dt < DT_COUNT; dt++) {
		for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
			uint8_t buf[3 * 8];
			int is_unsigned = dt == DT_UINT8 || dt == DT_UINT32 || dt == DT_UINT64;

			if (rows[i].is_signed && is_unsigned)
				continue;
			memset(buf, 0xa5, sizeof buf);
			dtype_set(buf, 1, (enum dtype)dt, rows[i].v);
			assert_true(dtype_get(buf, 1, (enum dtype)dt) == rows[i].v);
			/* Only element 1 was written. */
			for (size_t j = 0; j < dtype_size((enum dtype)dt); j++) {
				assert_int_equal(buf[j], 0xa5);
				assert_int_equal(buf[2 * dtype_size((enum dtype)dt) + j], 0xa5);
			}
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dtype_name),
		cmocka_unit_test(test_dtype_parse),
		cmocka_unit_test(test_dtype_name_parse_round_trip),
		cmocka_unit_test(test_redop_parse),
		cmocka_unit_test(test_float_to_half),
		cmocka_unit_test(test_half_to_float),
		cmocka_unit_test(test_half_nan),
		cmocka_unit_test(test_half_round_trip_all),
		cmocka_unit_test(test_half_midpoints),
		cmocka_unit_test(test_float_to_bf16),
		cmocka_unit_test(test_bf16_to_float),
		cmocka_unit_test(test_bf16_nan),
		cmocka_unit_test(test_bf16_round_trip_all),
		cmocka_unit_test(test_bf16_midpoints),
		cmocka_unit_test(test_dtype_get_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
