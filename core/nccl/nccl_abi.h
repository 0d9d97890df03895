/*
 * NCCL as the engine takes it: plat_nccl.h's ABI and table (the library
 * found at run time, loaded once per process, named by COLL_NCCL_LIBRARY).
 */
#ifndef COLL_NCCL_ABI_H
#define COLL_NCCL_ABI_H

#include <stddef.h>

#include "cu_api.h"
#include "plat_nccl.h"

/* NCCL's table into a; 0, or -1 with why. */
int nccl_api_load(struct nccl_api *a, char *err, size_t len);
void nccl_api_unload(struct nccl_api *a);

#endif
