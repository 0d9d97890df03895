/*
 * Reduction kernels: dst[i] = a[i] op b[i]. Every op is commutative bit for
 * bit (min and max return NaN when either side is NaN), so ranks that combine
 * the same values in either order get identical results. Integer arithmetic
 * wraps. avg is a sum followed by reduce_avg_finish() on the total.
 */
#ifndef COLL_REDUCE_H
#define COLL_REDUCE_H

#include <stddef.h>

#include "dtype.h"

void reduce_apply(void *dst, const void *a, const void *b, size_t count, enum dtype dt,
    enum redop op);
/* Divide a sum by n in place (integer types truncate). */
void reduce_avg_finish(void *buf, size_t count, enum dtype dt, int n);

#endif
