/*
 * The part of the CUDA driver API that coll calls, written from cuda.h's
 * documented values so that nothing of CUDA is needed to build: libcuda.so.1
 * is found with dlopen at run time, by the NCCL engine and by coll's own CUDA
 * engine alike. No runtime (cudart): kernels are loaded as a fatbin with
 * cuModuleLoadData.
 */
#ifndef COLL_CU_API_H
#define COLL_CU_API_H

#include <stddef.h>

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

enum { CU_OK = 0, CU_NOT_READY = 600, CU_STREAM_NON_BLOCKING = 1 };
/* cuDeviceGetAttribute: the PCI location, to print where each rank runs. */
enum { CU_ATTR_PCI_BUS = 33, CU_ATTR_PCI_DEVICE = 34, CU_ATTR_PCI_DOMAIN = 50,
	CU_ATTR_SM_COUNT = 16 };
enum { CU_EVENT_DISABLE_TIMING = 2, CU_MEMHOSTALLOC_PORTABLE = 1, CU_MEMHOSTALLOC_DEVICEMAP = 2,
	CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1 };

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
};

/* A function of a dlopen'ed library and where its pointer goes in the API struct. */
struct cu_sym {
	const char *name;
	size_t off;
	int optional;
};

/* Fill the struct at api from h; NULL, or the name of the first function h lacks. */
const char *cu_sym_bind(void *api, void *h, const struct cu_sym *t, size_t n);

/* Load libcuda.so.1; 0, or -1 with why (what needs it is named by for: "the NCCL engine"). */
int cu_api_load(struct cu_api *a, const char *for_what, char *err, size_t len);
void cu_api_unload(struct cu_api *a);
/* Whether the functions of coll's own engine are there too. */
int cu_api_has_engine(const struct cu_api *a);
/* "out of memory (CUDA error 2)", or "CUDA error 7" when the driver cannot say. */
const char *cu_api_error(const struct cu_api *a, int code, char *buf, size_t len);

#endif
