/*
 * The CUDA driver for the engines: plat_cuda's table, and what to do on a
 * host without one. The functions every engine needs are required there;
 * those only coll's own engine launches kernels and maps peers with are
 * checked by that engine, so that a driver too old for it still runs NCCL.
 */
#include <stdio.h>
#include <string.h>

#include "cu_api.h"
#include "err.h"

int
cu_api_load(struct cu_api *a, const char *for_what, char *err, size_t len)
{
	const struct cu_api *t;
	int rc = plat_cuda_load(&t, err, len);
	size_t off;

	memset(a, 0, sizeof *a);
	if (rc == COLL_ENOTFOUND && (off = strlen(err)) < len)
		snprintf(err + off, len - off, "; %s needs NVIDIA GPUs, use --engine coll", for_what);
	if (rc != COLL_OK)
		return -1;
	*a = *t;
	return 0;
}

void
cu_api_unload(struct cu_api *a)
{
	/* The library stays: it is the process's, loaded once (plat_cuda). */
	memset(a, 0, sizeof *a);
}

int
cu_api_has_engine(const struct cu_api *a)
{
	return plat_cuda_has_engine(a);
}

const char *
cu_api_error(const struct cu_api *a, int code, char *buf, size_t len)
{
	const char *s = NULL;

	if (a->get_error_string == NULL || a->get_error_string(code, &s) != CU_OK || s == NULL) {
		snprintf(buf, len, "CUDA error %d", code);
		return buf;
	}
	snprintf(buf, len, "%s (CUDA error %d)", s, code);
	return buf;
}
