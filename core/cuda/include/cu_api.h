/*
 * The CUDA driver as the engines take it: plat_cuda.h's table (the driver
 * found at run time, loaded once per process) with the engines' own words
 * for a host where it cannot run.
 */
#ifndef COLL_CU_API_H
#define COLL_CU_API_H

#include <stddef.h>

#include "plat_cuda.h"

/* The driver's table into a; 0, or -1 with why (what needs it is named by for: "the NCCL engine"). */
int cu_api_load(struct cu_api *a, const char *for_what, char *err, size_t len);
void cu_api_unload(struct cu_api *a);
/* Whether the functions of coll's own engine are there too. */
int cu_api_has_engine(const struct cu_api *a);
/* "out of memory (CUDA error 2)", or "CUDA error 7" when the driver cannot say. */
const char *cu_api_error(const struct cu_api *a, int code, char *buf, size_t len);

#endif
