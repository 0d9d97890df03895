/*
 * Finding the CUDA driver at run time. The functions every engine needs are
 * required; those only coll's own engine launches kernels and maps peers
 * with are optional here and checked by that engine, so that a driver too
 * old for it still runs NCCL.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cu_api.h"

#define S(field, name) { name, offsetof(struct cu_api, field), 0 }
#define OPT(field, name) { name, offsetof(struct cu_api, field), 1 }

static const struct cu_sym cu_syms[] = {
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

const char *
cu_sym_bind(void *api, void *h, const struct cu_sym *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *f = dlsym(h, t[i].name);

		if (f == NULL && !t[i].optional)
			return t[i].name;
		/* A function pointer kept as the object pointer dlsym returns (POSIX allows it). */
		memcpy((char *)api + t[i].off, &f, sizeof f);
	}
	return NULL;
}

int
cu_api_load(struct cu_api *a, const char *for_what, char *err, size_t len)
{
	const char *missing;

	memset(a, 0, sizeof *a);
	if ((a->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) == NULL) {
		snprintf(err, len, "no CUDA driver (libcuda.so.1): %s; %s needs NVIDIA GPUs, use "
		    "--engine coll", dlerror(), for_what);
		return -1;
	}
	if ((missing = cu_sym_bind(a, a->lib, cu_syms, sizeof cu_syms / sizeof *cu_syms)) !=
	    NULL) {
		snprintf(err, len, "libcuda.so.1 has no %s: it is too old (a CUDA 11 driver or "
		    "newer is needed)", missing);
		cu_api_unload(a);
		return -1;
	}
	return 0;
}

void
cu_api_unload(struct cu_api *a)
{
	if (a->lib != NULL)
		dlclose(a->lib);
	memset(a, 0, sizeof *a);
}

int
cu_api_has_engine(const struct cu_api *a)
{
	for (size_t i = 0; i < sizeof cu_syms / sizeof *cu_syms; i++) {
		void *f;

		memcpy(&f, (const char *)a + cu_syms[i].off, sizeof f);
		if (f == NULL)
			return 0;
	}
	return 1;
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
