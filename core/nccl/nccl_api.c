/*
 * Finding NCCL at run time (the CUDA driver is cu_api.c's). The library path
 * is kept to be reported: which libnccl a job got is one of the first things
 * to know when two nodes disagree.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_abi.h"

#define S(field, name) { name, offsetof(struct nccl_api, field), 0 }
#define OPT(field, name) { name, offsetof(struct nccl_api, field), 1 }

static const struct cu_sym nccl_syms[] = {
	S(get_version, "ncclGetVersion"), S(get_error_string, "ncclGetErrorString"),
	S(get_last_error, "ncclGetLastError"), S(get_unique_id, "ncclGetUniqueId"),
	S(comm_init_rank_config, "ncclCommInitRankConfig"), OPT(comm_split, "ncclCommSplit"),
	S(comm_get_async_error, "ncclCommGetAsyncError"), S(comm_finalize, "ncclCommFinalize"),
	S(comm_destroy, "ncclCommDestroy"), S(comm_abort, "ncclCommAbort"),
	S(all_reduce, "ncclAllReduce"), S(all_gather, "ncclAllGather"),
	S(reduce_scatter, "ncclReduceScatter"), S(broadcast, "ncclBroadcast"),
	S(reduce, "ncclReduce"), OPT(alltoall, "ncclAlltoAll"), S(send, "ncclSend"),
	S(recv, "ncclRecv"), S(group_start, "ncclGroupStart"), S(group_end, "ncclGroupEnd"),
};

int
nccl_api_load(struct nccl_api *a, char *err, size_t len)
{
	const char *name = getenv("COLL_NCCL_LIB"), *missing;
	struct link_map *lm = NULL;

	memset(a, 0, sizeof *a);
	if (name == NULL || *name == '\0')
		name = "libnccl.so.2";
	/* Never unmapped: NCCL leaves threads of its own behind (network plugins, proxies). */
	if ((a->lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE)) == NULL) {
		snprintf(err, len, "cannot load NCCL (%s): %s; install it or set COLL_NCCL_LIB to "
		    "its path", name, dlerror());
		return -1;
	}
	if ((missing = cu_sym_bind(a, a->lib, nccl_syms, sizeof nccl_syms / sizeof *nccl_syms)) !=
	    NULL) {
		snprintf(err, len, "%s has no %s: it is too old (NCCL 2.17 or newer is needed)", name,
		    missing);
		nccl_api_unload(a);
		return -1;
	}
	snprintf(a->path, sizeof a->path, "%s", name);
	if (dlinfo(a->lib, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL && lm->l_name[0] != '\0')
		snprintf(a->path, sizeof a->path, "%s", lm->l_name);
	if (a->get_version(&a->version) != NCCL_OK)
		a->version = 0;
	return 0;
}

void
nccl_api_unload(struct nccl_api *a)
{
	if (a->lib != NULL)
		dlclose(a->lib);
	memset(a, 0, sizeof *a);
}
