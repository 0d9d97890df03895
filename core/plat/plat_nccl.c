#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "plat_lib.h"
#include "plat_nccl.h"

#define S(f, n) PLAT_SYM(struct nccl_api, f, n)
#define OPT(f, n) PLAT_OPT(struct nccl_api, f, n)

static const struct plat_sym plat_nccl_syms[] = {
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

static struct {
	struct nccl_api t;
	const char *name;
	int rc, has_version;
	char why[768];
} plat_nccl;
static pthread_once_t plat_nccl_once = PTHREAD_ONCE_INIT;

/* COLL_NCCL_LIBRARY, else the older COLL_NCCL_LIB, else the loader's libnccl.so.2. */
static const char *
plat_nccl_var(void)
{
	const char *v = getenv(PLAT_NCCL_VAR);

	return v != NULL && *v != '\0' ? PLAT_NCCL_VAR : PLAT_NCCL_VAR_OLD;
}

static void
plat_nccl_open(void)
{
	const char *missing;
	char e[512];

	plat_nccl.rc = COLL_ENOTFOUND;
	if ((plat_nccl.t.lib = plat_lib_open(plat_nccl_var(), PLAT_NCCL_LIB,
	    RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE, &plat_nccl.name, e, sizeof e)) == NULL) {
		snprintf(plat_nccl.why, sizeof plat_nccl.why, "cannot load NCCL (%s): %s; install "
		    "it or set %s to its path", plat_nccl.name, e, PLAT_NCCL_VAR);
		return;
	}
	snprintf(plat_nccl.t.path, sizeof plat_nccl.t.path, "%s", plat_nccl.name);
	(void)plat_lib_path(plat_nccl.t.lib, plat_nccl.t.path, sizeof plat_nccl.t.path);
	missing = plat_lib_bind(&plat_nccl.t, plat_nccl.t.lib, plat_nccl_syms,
	    sizeof plat_nccl_syms / sizeof *plat_nccl_syms);
	plat_nccl.has_version = plat_nccl.t.get_version != NULL &&
	    plat_nccl.t.get_version(&plat_nccl.t.version) == NCCL_OK;
	if (!plat_nccl.has_version)
		plat_nccl.t.version = 0;
	if (missing != NULL) {
		snprintf(plat_nccl.why, sizeof plat_nccl.why, "%s has no %s: it is too old (NCCL "
		    "2.17 or newer is needed)", plat_nccl.name, missing);
		plat_nccl.rc = COLL_EVERSION;
		return;
	}
	plat_nccl.rc = COLL_OK;
}

int
plat_nccl_load(const struct nccl_api **t, char *why, size_t len)
{
	pthread_once(&plat_nccl_once, plat_nccl_open);
	*t = plat_nccl.rc == COLL_OK ? &plat_nccl.t : NULL;
	if (plat_nccl.rc != COLL_OK)
		snprintf(why, len, "%s", plat_nccl.why);
	return plat_nccl.rc;
}

int
plat_nccl_version(int *v, const char **name, char *path, size_t plen)
{
	pthread_once(&plat_nccl_once, plat_nccl_open);
	*name = plat_nccl.name;
	*v = 0;
	if (plat_nccl.t.lib == NULL)
		return COLL_ENOTFOUND;
	snprintf(path, plen, "%s", plat_nccl.t.path);
	if (!plat_nccl.has_version)
		return COLL_EVERSION;
	*v = plat_nccl.t.version;
	return COLL_OK;
}
