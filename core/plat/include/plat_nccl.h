/*
 * NCCL (libnccl), declared from its public header's documented values so
 * that nothing of it is needed to build: the part the NCCL engine calls, and
 * ncclGetVersion for collcheck's facts. Which library is one variable's:
 * COLL_NCCL_LIBRARY (a name the loader searches for, or a path), else
 * libnccl.so.2; COLL_NCCL_LIB, its older name, is read when it is unset.
 *
 * Loaded once per process and never unmapped (RTLD_NODELETE): NCCL leaves
 * threads of its own behind (network plugins, proxies). RTLD_GLOBAL, as the
 * engine always loaded it, for the plugins NCCL loads in turn.
 */
#ifndef COLL_PLAT_NCCL_H
#define COLL_PLAT_NCCL_H

#include <stddef.h>

#include "plat_cuda.h"

#define PLAT_NCCL_VAR "COLL_NCCL_LIBRARY"
#define PLAT_NCCL_VAR_OLD "COLL_NCCL_LIB"
#define PLAT_NCCL_LIB "libnccl.so.2"

typedef struct { char internal[128]; } nccl_uid_t;
typedef void *nccl_comm_t;

enum { NCCL_OK = 0, NCCL_INPROGRESS = 7 };

/* ncclConfig_t as of NCCL 2.17; newer libraries read it by its size and version. */
struct nccl_config {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cga_cluster_size;
	int min_ctas;
	int max_ctas;
	const char *net_name;
	int split_share;
};

#define NCCL_CONFIG_MAGIC 0xcafebeefu
#define NCCL_CONFIG_VERSION 21700u
#define NCCL_UNDEF_INT (-2147483647 - 1)

/* The library's table. Its name is the engine's (nccl_engine.c); lib is never closed. */
struct nccl_api {
	void *lib;
	char path[256];
	int version;		/* NCCL_VERSION_CODE: 22803 for 2.28.3 */
	int (*get_version)(int *);
	const char *(*get_error_string)(int);
	const char *(*get_last_error)(nccl_comm_t);
	int (*get_unique_id)(nccl_uid_t *);
	int (*comm_init_rank_config)(nccl_comm_t *, int, nccl_uid_t, int, struct nccl_config *);
	int (*comm_split)(nccl_comm_t, int, int, nccl_comm_t *, struct nccl_config *);
	int (*comm_get_async_error)(nccl_comm_t, int *);
	int (*comm_finalize)(nccl_comm_t);
	int (*comm_destroy)(nccl_comm_t);
	int (*comm_abort)(nccl_comm_t);
	int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm_t, cu_stream_t);
	int (*all_gather)(const void *, void *, size_t, int, nccl_comm_t, cu_stream_t);
	int (*reduce_scatter)(const void *, void *, size_t, int, int, nccl_comm_t, cu_stream_t);
	int (*broadcast)(const void *, void *, size_t, int, int, nccl_comm_t, cu_stream_t);
	int (*reduce)(const void *, void *, size_t, int, int, int, nccl_comm_t, cu_stream_t);
	int (*alltoall)(const void *, void *, size_t, int, nccl_comm_t, cu_stream_t);	/* 2.28+ */
	int (*send)(const void *, size_t, int, int, nccl_comm_t, cu_stream_t);
	int (*recv)(void *, size_t, int, int, nccl_comm_t, cu_stream_t);
	int (*group_start)(void);
	int (*group_end)(void);
};

/*
 * NCCL's table into *t (thread-safe; loaded on the first call). COLL_OK;
 * COLL_ENOTFOUND when the library cannot be loaded, why naming it, the
 * loader's words and COLL_NCCL_LIBRARY; COLL_EVERSION when it lacks a
 * function the engine needs, why naming both.
 */
int plat_nccl_load(const struct nccl_api **t, char *why, size_t len);
/*
 * For the facts, however much else the library lacks: the name asked for into
 * *name, and the file the loader took into path (when it loaded). COLL_OK with
 * the version (NCCL_VERSION_CODE) in *v; COLL_ENOTFOUND when it cannot be
 * loaded; COLL_EVERSION when it has no working ncclGetVersion.
 */
int plat_nccl_version(int *v, const char **name, char *path, size_t plen);

#endif
