/*
 * The part of NCCL's ABI that the engine calls, written from its public
 * header's documented values so that nothing of it is needed to build: the
 * library is found with dlopen at run time, as the CUDA driver is (cu_api.h).
 */
#ifndef COLL_NCCL_ABI_H
#define COLL_NCCL_ABI_H

#include <stddef.h>

#include "cu_api.h"

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

/* Load libnccl (COLL_NCCL_LIB, else libnccl.so.2); 0, or -1 with why. */
int nccl_api_load(struct nccl_api *a, char *err, size_t len);
void nccl_api_unload(struct nccl_api *a);

#endif
