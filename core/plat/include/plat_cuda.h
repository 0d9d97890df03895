/*
 * The CUDA driver (libcuda.so.1, the driver's own: it must match the kernel
 * module, so it is found by the loader, never by a variable), declared from
 * cuda.h's documented values so that nothing of CUDA is needed to build; the
 * part that coll calls, for the NCCL engine, coll's own CUDA engine and
 * collcheck's facts. No runtime (cudart): kernels are loaded as a fatbin with
 * cuModuleLoadData.
 *
 * Loaded once per process and kept, with RTLD_GLOBAL as the engines always
 * loaded it: libnccl and its CUDA runtime, loaded after it into the same
 * process, find the driver's symbols already in the global scope.
 */
#ifndef COLL_PLAT_CUDA_H
#define COLL_PLAT_CUDA_H

#include <stddef.h>

#define PLAT_CUDA_LIB "libcuda.so.1"

typedef void *cu_stream_t;
typedef void *cu_ctx_t;
typedef void *cu_module_t;
typedef void *cu_function_t;
typedef void *cu_event_t;
typedef unsigned long long cu_ptr_t;

/* CUipcMemHandle: 64 opaque bytes that another process of the host opens. */
struct cu_ipc_handle {
	unsigned char data[64];
};

enum { CU_OK = 0, CU_NOT_READY = 600, CU_STREAM_NON_BLOCKING = 1,
	CU_PEER_ACCESS_ALREADY_ENABLED = 704 };
/* cuDeviceGetAttribute: the PCI location, to print where each rank runs. */
enum { CU_ATTR_PCI_BUS = 33, CU_ATTR_PCI_DEVICE = 34, CU_ATTR_PCI_DOMAIN = 50,
	CU_ATTR_SM_COUNT = 16 };
enum { CU_EVENT_DISABLE_TIMING = 2, CU_MEMHOSTALLOC_PORTABLE = 1, CU_MEMHOSTALLOC_DEVICEMAP = 2,
	CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1 };

/*
 * The driver's table. Its name is the engines' (cu_dev.h, cuda_engine.c,
 * nccl_engine.c hold one each); lib is the process's one handle, never closed.
 */
struct cu_api {
	void *lib;
	int (*init)(unsigned);
	int (*device_get_count)(int *);
	int (*device_get)(int *, int);
	int (*device_get_name)(char *, int, int);
	int (*device_get_attribute)(int *, int, int);
	int (*primary_ctx_retain)(cu_ctx_t *, int);
	int (*primary_ctx_release)(int);
	int (*ctx_set_current)(cu_ctx_t);
	int (*ctx_synchronize)(void);
	int (*mem_alloc)(cu_ptr_t *, size_t);
	int (*mem_free)(cu_ptr_t);
	int (*memcpy_htod)(cu_ptr_t, const void *, size_t);
	int (*memcpy_dtoh)(void *, cu_ptr_t, size_t);
	int (*stream_create)(cu_stream_t *, unsigned);
	int (*stream_destroy)(cu_stream_t);
	int (*stream_query)(cu_stream_t);
	int (*get_error_string)(int, const char **);
	/* Only coll's own engine needs these; a driver without them fails there alone. */
	int (*module_load_data)(cu_module_t *, const void *);
	int (*module_unload)(cu_module_t);
	int (*module_get_function)(cu_function_t *, cu_module_t, const char *);
	int (*launch_kernel)(cu_function_t, unsigned, unsigned, unsigned, unsigned, unsigned,
	    unsigned, unsigned, cu_stream_t, void **, void **);
	int (*ipc_get_mem_handle)(struct cu_ipc_handle *, cu_ptr_t);
	int (*ipc_open_mem_handle)(cu_ptr_t *, struct cu_ipc_handle, unsigned);
	int (*ipc_close_mem_handle)(cu_ptr_t);
	int (*mem_host_alloc)(void **, size_t, unsigned);
	int (*mem_free_host)(void *);
	int (*mem_host_get_device_pointer)(cu_ptr_t *, void *, unsigned);
	int (*memcpy_htod_async)(cu_ptr_t, const void *, size_t, cu_stream_t);
	int (*memcpy_dtoh_async)(void *, cu_ptr_t, size_t, cu_stream_t);
	int (*memset_d8_async)(cu_ptr_t, unsigned char, size_t, cu_stream_t);
	int (*event_create)(cu_event_t *, unsigned);
	int (*event_destroy)(cu_event_t);
	int (*event_record)(cu_event_t, cu_stream_t);
	int (*event_query)(cu_event_t);
	int (*stream_wait_event)(cu_stream_t, cu_event_t, unsigned);
	/* collcheck's facts: the driver's version, read even where the rest is too old. */
	int (*driver_get_version)(int *);
	/*
	 * collcheck gpus (cu_bw.c): timed copies between GPUs. Bound apart from the
	 * engines' table, so that a driver without them still runs every engine.
	 */
	int (*device_can_access_peer)(int *, int, int);
	int (*ctx_enable_peer_access)(cu_ctx_t, unsigned);
	int (*memcpy_peer_async)(cu_ptr_t, cu_ctx_t, cu_ptr_t, cu_ctx_t, size_t, cu_stream_t);
	int (*event_elapsed_time)(float *, cu_event_t, cu_event_t);
};

/*
 * The driver's table into *t (thread-safe; loaded on the first call): the
 * functions every engine needs are there, those only coll's own engine uses
 * may be NULL (plat_cuda_has_engine). COLL_OK; COLL_ENOTFOUND when
 * libcuda.so.1 cannot be loaded, why "no CUDA driver (libcuda.so.1): " and
 * the loader's words; COLL_EVERSION when it lacks a function, why naming it.
 */
int plat_cuda_load(const struct cu_api **t, char *why, size_t len);
/* Whether the functions of coll's own engine are there too. */
int plat_cuda_has_engine(const struct cu_api *t);
/* Whether the timed copies of collcheck gpus can run: NULL, or the first function missing. */
const char *plat_cuda_bw_missing(const struct cu_api *t);
/* cuDriverGetVersion (12080 for 12.8), however old the rest is; 0, or -1 without a driver. */
int plat_cuda_driver_version(int *v);
/*
 * The CUDA runtime a job's loader would find (libcudart.so, then .so.13, .12,
 * .11.0): its cudaRuntimeGetVersion and file (path, "" when unknown). Opened
 * for the question and closed again: coll itself never calls the runtime. 0,
 * or -1 when none answers.
 */
int plat_cuda_runtime_version(int *v, char *path, size_t plen);

#endif
