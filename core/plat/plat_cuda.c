#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "plat_cuda.h"
#include "plat_lib.h"

#define S(f, n) PLAT_SYM(struct cu_api, f, n)
#define OPT(f, n) PLAT_OPT(struct cu_api, f, n)

/* Required: what every engine needs. Optional: what only coll's own engine uses. */
static const struct plat_sym plat_cuda_syms[] = {
	S(init, "cuInit"), S(device_get_count, "cuDeviceGetCount"),
	S(device_get, "cuDeviceGet"), S(device_get_name, "cuDeviceGetName"),
	S(device_get_attribute, "cuDeviceGetAttribute"),
	S(primary_ctx_retain, "cuDevicePrimaryCtxRetain"),
	S(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2"),
	S(ctx_set_current, "cuCtxSetCurrent"), S(ctx_synchronize, "cuCtxSynchronize"),
	S(mem_alloc, "cuMemAlloc_v2"), S(mem_free, "cuMemFree_v2"),
	S(memcpy_htod, "cuMemcpyHtoD_v2"), S(memcpy_dtoh, "cuMemcpyDtoH_v2"),
	S(stream_create, "cuStreamCreate"), S(stream_destroy, "cuStreamDestroy_v2"),
	S(stream_query, "cuStreamQuery"), S(get_error_string, "cuGetErrorString"),
	OPT(module_load_data, "cuModuleLoadData"), OPT(module_unload, "cuModuleUnload"),
	OPT(module_get_function, "cuModuleGetFunction"), OPT(launch_kernel, "cuLaunchKernel"),
	OPT(ipc_get_mem_handle, "cuIpcGetMemHandle"),
	OPT(ipc_open_mem_handle, "cuIpcOpenMemHandle_v2"),
	OPT(ipc_close_mem_handle, "cuIpcCloseMemHandle"),
	OPT(mem_host_alloc, "cuMemHostAlloc"), OPT(mem_free_host, "cuMemFreeHost"),
	OPT(mem_host_get_device_pointer, "cuMemHostGetDevicePointer_v2"),
	OPT(memcpy_htod_async, "cuMemcpyHtoDAsync_v2"),
	OPT(memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2"),
	OPT(memset_d8_async, "cuMemsetD8Async"),
	OPT(event_create, "cuEventCreate"), OPT(event_destroy, "cuEventDestroy_v2"),
	OPT(event_record, "cuEventRecord"), OPT(event_query, "cuEventQuery"),
	OPT(stream_wait_event, "cuStreamWaitEvent"),
};
#define PLAT_CUDA_ENGINE_SYMS (sizeof plat_cuda_syms / sizeof *plat_cuda_syms)

/* collcheck gpus: apart, so that plat_cuda_has_engine does not ask for them. */
static const struct plat_sym plat_cuda_bw_syms[] = {
	OPT(device_can_access_peer, "cuDeviceCanAccessPeer"),
	OPT(ctx_enable_peer_access, "cuCtxEnablePeerAccess"),
	OPT(memcpy_peer_async, "cuMemcpyPeerAsync"),
	OPT(event_elapsed_time, "cuEventElapsedTime"),
};
#define PLAT_CUDA_BW_SYMS (sizeof plat_cuda_bw_syms / sizeof *plat_cuda_bw_syms)

static struct {
	struct cu_api t;
	int rc;
	char why[512];
} plat_cuda;
static pthread_once_t plat_cuda_once = PTHREAD_ONCE_INIT;

static void
plat_cuda_open(void)
{
	static const struct plat_sym version = OPT(driver_get_version, "cuDriverGetVersion");
	const char *name, *missing;
	char e[400];

	plat_cuda.rc = COLL_ENOTFOUND;
	if ((plat_cuda.t.lib = plat_lib_open(NULL, PLAT_CUDA_LIB, RTLD_NOW | RTLD_GLOBAL, &name,
	    e, sizeof e)) == NULL) {
		snprintf(plat_cuda.why, sizeof plat_cuda.why, "no CUDA driver (%s): %s", name, e);
		return;
	}
	(void)plat_lib_bind(&plat_cuda.t, plat_cuda.t.lib, &version, 1);
	(void)plat_lib_bind(&plat_cuda.t, plat_cuda.t.lib, plat_cuda_bw_syms, PLAT_CUDA_BW_SYMS);
	if ((missing = plat_lib_bind(&plat_cuda.t, plat_cuda.t.lib, plat_cuda_syms,
	    PLAT_CUDA_ENGINE_SYMS)) != NULL) {
		snprintf(plat_cuda.why, sizeof plat_cuda.why, "%s has no %s: it is too old (a CUDA "
		    "11 driver or newer is needed)", name, missing);
		plat_cuda.rc = COLL_EVERSION;
		return;
	}
	plat_cuda.rc = COLL_OK;
}

int
plat_cuda_load(const struct cu_api **t, char *why, size_t len)
{
	pthread_once(&plat_cuda_once, plat_cuda_open);
	*t = plat_cuda.rc == COLL_OK ? &plat_cuda.t : NULL;
	if (plat_cuda.rc != COLL_OK)
		snprintf(why, len, "%s", plat_cuda.why);
	return plat_cuda.rc;
}

/* The name of the first function of syms that t lacks, or NULL. */
static const char *
plat_cuda_first_null(const struct cu_api *t, const struct plat_sym *syms, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *f;

		memcpy(&f, (const char *)t + syms[i].off, sizeof f);
		if (f == NULL)
			return syms[i].name;
	}
	return NULL;
}

int
plat_cuda_has_engine(const struct cu_api *t)
{
	return plat_cuda_first_null(t, plat_cuda_syms, PLAT_CUDA_ENGINE_SYMS) == NULL;
}

const char *
plat_cuda_bw_missing(const struct cu_api *t)
{
	static const char *const engine[] = { "cuMemHostAlloc", "cuMemFreeHost",
	    "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuEventCreate", "cuEventDestroy_v2",
	    "cuEventRecord", "cuEventQuery" };
	const char *m = plat_cuda_first_null(t, plat_cuda_bw_syms, PLAT_CUDA_BW_SYMS);

	if (m != NULL)
		return m;
	/* The engine's optional ones it uses too. */
	for (size_t i = 0; i < PLAT_CUDA_ENGINE_SYMS; i++)
		for (size_t k = 0; k < sizeof engine / sizeof *engine; k++)
			if (strcmp(plat_cuda_syms[i].name, engine[k]) == 0 &&
			    plat_cuda_first_null(t, &plat_cuda_syms[i], 1) != NULL)
				return engine[k];
	return NULL;
}

int
plat_cuda_driver_version(int *v)
{
	pthread_once(&plat_cuda_once, plat_cuda_open);
	*v = 0;
	if (plat_cuda.t.driver_get_version == NULL || plat_cuda.t.driver_get_version(v) != 0)
		return -1;
	return 0;
}

int
plat_cuda_runtime_version(int *v, char *path, size_t plen)
{
	static const char *const rt[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12",
	    "libcudart.so.11.0" };
	int (*get)(int *);

	*v = 0;
	path[0] = '\0';
	for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
		void *h = dlopen(rt[i], RTLD_NOW | RTLD_LOCAL);
		int ok;

		if (h == NULL)
			continue;
		*(void **)&get = dlsym(h, "cudaRuntimeGetVersion");
		if ((ok = get != NULL && get(v) == 0))
			(void)plat_lib_path(h, path, plen);
		dlclose(h);
		if (ok)
			return 0;
	}
	return -1;
}
