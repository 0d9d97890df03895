/*
 * Finding NCCL and the CUDA driver at run time. The library path is kept to
 * be reported: which libnccl a job got is one of the first things to know
 * when two nodes disagree.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_abi.h"

struct sym {
	const char *name;
	size_t off;
	int optional;
};

#define S(field, name) { name, offsetof(struct nccl_api, field), 0 }
#define OPT(field, name) { name, offsetof(struct nccl_api, field), 1 }

static const struct sym nccl_syms[] = {
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

static const struct sym cuda_syms[] = {
	S(cu_init, "cuInit"), S(cu_device_get_count, "cuDeviceGetCount"),
	S(cu_device_get, "cuDeviceGet"), S(cu_device_get_name, "cuDeviceGetName"),
	S(cu_device_get_attribute, "cuDeviceGetAttribute"),
	S(cu_primary_ctx_retain, "cuDevicePrimaryCtxRetain"),
	S(cu_primary_ctx_release, "cuDevicePrimaryCtxRelease_v2"),
	S(cu_ctx_set_current, "cuCtxSetCurrent"), S(cu_ctx_synchronize, "cuCtxSynchronize"), S(cu_mem_alloc, "cuMemAlloc_v2"),
	S(cu_mem_free, "cuMemFree_v2"), S(cu_memcpy_htod, "cuMemcpyHtoD_v2"),
	S(cu_memcpy_dtoh, "cuMemcpyDtoH_v2"), S(cu_stream_create, "cuStreamCreate"),
	S(cu_stream_destroy, "cuStreamDestroy_v2"), S(cu_stream_query, "cuStreamQuery"),
	S(cu_get_error_string, "cuGetErrorString"),
};

static int
api_bind(struct nccl_api *a, void *h, const struct sym *t, size_t n, const char *lib, char *err,
    size_t len)
{
	for (size_t i = 0; i < n; i++) {
		void *f = dlsym(h, t[i].name);

		if (f == NULL && !t[i].optional) {
			snprintf(err, len, "%s has no %s: it is too old (%s)", lib, t[i].name,
			    t == nccl_syms ? "NCCL 2.17 or newer is needed" :
			    "a CUDA 11 driver or newer is needed");
			return -1;
		}
		/* A function pointer kept as the object pointer dlsym returns (POSIX allows it). */
		memcpy((char *)a + t[i].off, &f, sizeof f);
	}
	return 0;
}

int
nccl_api_load(struct nccl_api *a, char *err, size_t len)
{
	const char *name = getenv("COLL_NCCL_LIB");
	struct link_map *lm = NULL;

	memset(a, 0, sizeof *a);
	if (name == NULL || *name == '\0')
		name = "libnccl.so.2";
	if ((a->cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) == NULL) {
		snprintf(err, len, "no CUDA driver (libcuda.so.1): %s; the NCCL engine needs "
		    "NVIDIA GPUs, use --engine coll", dlerror());
		return -1;
	}
	/* Never unmapped: NCCL leaves threads of its own behind (network plugins, proxies). */
	if ((a->lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE)) == NULL) {
		snprintf(err, len, "cannot load NCCL (%s): %s; install it or set COLL_NCCL_LIB to "
		    "its path", name, dlerror());
		nccl_api_unload(a);
		return -1;
	}
	if (api_bind(a, a->cuda, cuda_syms, sizeof cuda_syms / sizeof *cuda_syms,
	    "libcuda.so.1", err, len) != 0 ||
	    api_bind(a, a->lib, nccl_syms, sizeof nccl_syms / sizeof *nccl_syms, name, err,
	    len) != 0) {
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
	if (a->cuda != NULL)
		dlclose(a->cuda);
	memset(a, 0, sizeof *a);
}

const char *
nccl_api_cu_error(const struct nccl_api *a, int code, char *buf, size_t len)
{
	const char *s = NULL;

	if (a->cu_get_error_string == NULL || a->cu_get_error_string(code, &s) != CU_OK ||
	    s == NULL) {
		snprintf(buf, len, "CUDA error %d", code);
		return buf;
	}
	snprintf(buf, len, "%s (CUDA error %d)", s, code);
	return buf;
}
