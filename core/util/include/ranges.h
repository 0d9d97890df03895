/*
 * Rank ranges in the short form people read: ascending numbers folded into
 * "0-3,7". The root names the ranks that never joined this way, and the
 * tools name groups of ranks the same way, so the form lives here, below both.
 */
#ifndef COLL_RANGES_H
#define COLL_RANGES_H

#include <stddef.h>

/* Fold ascending numbers into "0-3,7"; truncated if out is short. */
void ranges_fold(const int *v, int n, char *out, size_t outlen);

#endif
