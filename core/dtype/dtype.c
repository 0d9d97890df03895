#include <math.h>
#include <string.h>

#include "dtype.h"

static const struct {
	const char *name;
	const char *alias;
	size_t size;
	int is_float;
} dtype_table[DT_COUNT] = {
	[DT_INT8] = { "int8", "char", 1, 0 },
	[DT_UINT8] = { "uint8", "uchar", 1, 0 },
	[DT_INT32] = { "int32", "int", 4, 0 },
	[DT_UINT32] = { "uint32", "uint", 4, 0 },
	[DT_INT64] = { "int64", "long", 8, 0 },
	[DT_UINT64] = { "uint64", "ulong", 8, 0 },
	[DT_FLOAT16] = { "half", "float16", 2, 1 },
	[DT_BFLOAT16] = { "bfloat16", "bf16", 2, 1 },
	[DT_FLOAT32] = { "float", "float32", 4, 1 },
	[DT_FLOAT64] = { "double", "float64", 8, 1 },
};

static const char *redop_names[OP_COUNT] = { "sum", "prod", "min", "max", "avg" };

size_t
dtype_size(enum dtype dt)
{
	return dtype_table[dt].size;
}

const char *
dtype_name(enum dtype dt)
{
	return dtype_table[dt].name;
}

int
dtype_is_float(enum dtype dt)
{
	return dtype_table[dt].is_float;
}

int
dtype_parse(const char *s)
{
	for (int i = 0; i < DT_COUNT; i++)
		if (strcmp(s, dtype_table[i].name) == 0 || strcmp(s, dtype_table[i].alias) == 0)
			return i;
	return -1;
}

const char *
redop_name(enum redop op)
{
	return redop_names[op];
}

int
redop_parse(const char *s)
{
	for (int i = 0; i < OP_COUNT; i++)
		if (strcmp(s, redop_names[i]) == 0)
			return i;
	return -1;
}

static uint32_t
dtype_f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float
dtype_u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

float
dtype_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;

	if (exp == 0x1f)
		return dtype_u2f(sign | 0x7f800000u | man << 13);
	if (exp == 0) {
		/* Subnormal: value is man * 2^-24, exact in float. */
		float v = (float)man * 5.9604644775390625e-8f;
		return sign ? -v : v;
	}
	return dtype_u2f(sign | (exp + 112) << 23 | man << 13);
}

uint16_t
dtype_float_to_half(float f)
{
	uint32_t u = dtype_f2u(f), sign = (u >> 16) & 0x8000, abs = u & 0x7fffffffu;

	if (abs > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00 | ((abs >> 13) & 0x3ff));
	if (abs >= 0x477ff000u)		/* rounds to or beyond 65520: infinity */
		return (uint16_t)(sign | 0x7c00);
	if (abs < 0x38800000u) {
		/* Subnormal or zero: scale so the float adder rounds to nearest even for us. */
		float v = dtype_u2f(abs) * 16777216.0f;	/* * 2^24 */
		return (uint16_t)(sign | (uint32_t)nearbyintf(v));
	}
	{
		uint32_t mant_odd = (abs >> 13) & 1;
		abs += 0xfffu + mant_odd;
		return (uint16_t)(sign | ((abs - 0x38000000u) >> 13));
	}
}

float
dtype_bf16_to_float(uint16_t h)
{
	return dtype_u2f((uint32_t)h << 16);
}

uint16_t
dtype_float_to_bf16(float f)
{
	uint32_t u = dtype_f2u(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

double
dtype_get(const void *buf, size_t i, enum dtype dt)
{
	switch (dt) {
	case DT_INT8: return ((const int8_t *)buf)[i];
	case DT_UINT8: return ((const uint8_t *)buf)[i];
	case DT_INT32: return ((const int32_t *)buf)[i];
	case DT_UINT32: return ((const uint32_t *)buf)[i];
	case DT_INT64: return (double)((const int64_t *)buf)[i];
	case DT_UINT64: return (double)((const uint64_t *)buf)[i];
	case DT_FLOAT16: return dtype_half_to_float(((const uint16_t *)buf)[i]);
	case DT_BFLOAT16: return dtype_bf16_to_float(((const uint16_t *)buf)[i]);
	case DT_FLOAT32: return ((const float *)buf)[i];
	case DT_FLOAT64: return ((const double *)buf)[i];
	default: return 0;
	}
}

void
dtype_set(void *buf, size_t i, enum dtype dt, double v)
{
	switch (dt) {
	case DT_INT8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
	case DT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
	case DT_INT32: ((int32_t *)buf)[i] = (int32_t)(int64_t)v; break;
	case DT_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v; break;
	case DT_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case DT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
	case DT_FLOAT16: ((uint16_t *)buf)[i] = dtype_float_to_half((float)v); break;
	case DT_BFLOAT16: ((uint16_t *)buf)[i] = dtype_float_to_bf16((float)v); break;
	case DT_FLOAT32: ((float *)buf)[i] = (float)v; break;
	case DT_FLOAT64: ((double *)buf)[i] = v; break;
	default: break;
	}
}
