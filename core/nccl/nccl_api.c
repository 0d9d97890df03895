/*
 * NCCL for the engine: plat_nccl's table, copied with the library's path
 * kept to be reported (which libnccl a job got is one of the first things to
 * know when two nodes disagree).
 */
#include <string.h>

#include "err.h"
#include "nccl_abi.h"

int
nccl_api_load(struct nccl_api *a, char *err, size_t len)
{
	const struct nccl_api *t;

	memset(a, 0, sizeof *a);
	if (plat_nccl_load(&t, err, len) != COLL_OK)
		return -1;
	*a = *t;
	return 0;
}

void
nccl_api_unload(struct nccl_api *a)
{
	/* The library stays: NCCL leaves threads of its own behind (plat_nccl). */
	memset(a, 0, sizeof *a);
}
