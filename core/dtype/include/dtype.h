/* Datatypes and reduction operators of the collectives, with the names nccl-tests prints. */
#ifndef COLL_DTYPE_H
#define COLL_DTYPE_H

#include <stddef.h>
#include <stdint.h>

enum dtype {
	DT_INT8, DT_UINT8, DT_INT32, DT_UINT32, DT_INT64, DT_UINT64,
	DT_FLOAT16, DT_BFLOAT16, DT_FLOAT32, DT_FLOAT64,
	DT_COUNT
};

enum redop { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_AVG, OP_COUNT };

size_t dtype_size(enum dtype dt);
/* nccl-tests' name: int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double. */
const char *dtype_name(enum dtype dt);
/* Accepts nccl-tests' names and the aliases float16 float32 float64; -1 if unknown. */
int dtype_parse(const char *s);
int dtype_is_float(enum dtype dt);
const char *redop_name(enum redop op);
int redop_parse(const char *s);

/* IEEE binary16 and bfloat16 conversions, round to nearest even, NaN kept. */
float dtype_half_to_float(uint16_t h);
uint16_t dtype_float_to_half(float f);
float dtype_bf16_to_float(uint16_t h);
uint16_t dtype_float_to_bf16(float f);

/* Read element i of buf as a double, and store a double into element i. */
double dtype_get(const void *buf, size_t i, enum dtype dt);
void dtype_set(void *buf, size_t i, enum dtype dt, double v);

#endif
