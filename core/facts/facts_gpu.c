/*
 * The GPU stack: NVIDIA driver, CUDA driver and runtime, NCCL (which file the
 * loader finds, and its ncclGetVersion), and each GPU through NVML. Every
 * library is loaded with dlopen, declared here by the few calls used (their
 * C ABI is stable), so the suite builds and runs where none is installed,
 * and says "skipped: ..." for what is absent.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "facts_impl.h"

#define NVML_SUCCESS 0
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0

typedef void *nvml_dev;

/* nvmlPciInfo_t, as NVML 11+ lays it out. */
struct nvml_pci {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

struct facts_nvml {
	void *h;
	int (*init)(void);
	int (*shutdown)(void);
	const char *(*error)(int);
	int (*driver)(char *, unsigned int);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, nvml_dev *);
	int (*name)(nvml_dev, char *, unsigned int);
	int (*uuid)(nvml_dev, char *, unsigned int);
	int (*pci)(nvml_dev, struct nvml_pci *);
	int (*gen)(nvml_dev, unsigned int *), (*gen_max)(nvml_dev, unsigned int *);
	int (*width)(nvml_dev, unsigned int *), (*width_max)(nvml_dev, unsigned int *);
	int (*ecc_mode)(nvml_dev, int *, int *);
	int (*ecc_errors)(nvml_dev, int, int, unsigned long long *);
	int (*remapped)(nvml_dev, unsigned int *, unsigned int *, unsigned int *, unsigned int *);
	int (*events)(nvml_dev, unsigned long long *);
	int (*persistence)(nvml_dev, int *);
	int (*nvlink)(nvml_dev, unsigned int, int *);
};

static void *
facts_sym(void *h, const char *name, const char *alt)
{
	void *p = dlsym(h, name);

	return p != NULL || alt == NULL ? p : dlsym(h, alt);
}

static int
facts_nvml_load(struct facts_nvml *n, char *why, size_t len)
{
	const char *e;

	memset(n, 0, sizeof *n);
	if ((n->h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) == NULL) {
		e = dlerror();
		snprintf(why, len, "no NVML (%s)", e != NULL ? e : "libnvidia-ml.so.1 not found");
		return -1;
	}
	*(void **)&n->init = facts_sym(n->h, "nvmlInit_v2", "nvmlInit");
	*(void **)&n->shutdown = facts_sym(n->h, "nvmlShutdown", NULL);
	*(void **)&n->error = facts_sym(n->h, "nvmlErrorString", NULL);
	*(void **)&n->driver = facts_sym(n->h, "nvmlSystemGetDriverVersion", NULL);
	*(void **)&n->count = facts_sym(n->h, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	*(void **)&n->handle = facts_sym(n->h, "nvmlDeviceGetHandleByIndex_v2",
	    "nvmlDeviceGetHandleByIndex");
	*(void **)&n->name = facts_sym(n->h, "nvmlDeviceGetName", NULL);
	*(void **)&n->uuid = facts_sym(n->h, "nvmlDeviceGetUUID", NULL);
	*(void **)&n->pci = facts_sym(n->h, "nvmlDeviceGetPciInfo_v3", NULL);
	*(void **)&n->gen = facts_sym(n->h, "nvmlDeviceGetCurrPcieLinkGeneration", NULL);
	*(void **)&n->gen_max = facts_sym(n->h, "nvmlDeviceGetMaxPcieLinkGeneration", NULL);
	*(void **)&n->width = facts_sym(n->h, "nvmlDeviceGetCurrPcieLinkWidth", NULL);
	*(void **)&n->width_max = facts_sym(n->h, "nvmlDeviceGetMaxPcieLinkWidth", NULL);
	*(void **)&n->ecc_mode = facts_sym(n->h, "nvmlDeviceGetEccMode", NULL);
	*(void **)&n->ecc_errors = facts_sym(n->h, "nvmlDeviceGetTotalEccErrors", NULL);
	*(void **)&n->remapped = facts_sym(n->h, "nvmlDeviceGetRemappedRows", NULL);
	*(void **)&n->events = facts_sym(n->h, "nvmlDeviceGetCurrentClocksEventReasons",
	    "nvmlDeviceGetCurrentClocksThrottleReasons");
	*(void **)&n->persistence = facts_sym(n->h, "nvmlDeviceGetPersistenceMode", NULL);
	*(void **)&n->nvlink = facts_sym(n->h, "nvmlDeviceGetNvLinkState", NULL);
	if (!n->init || !n->shutdown || !n->count || !n->handle) {
		snprintf(why, len, "NVML lacks nvmlInit or nvmlDeviceGetCount");
		dlclose(n->h);
		return -1;
	}
	return 0;
}

/* The reasons that mean the GPU is held back by something wrong, by name. */
static void
facts_events_text(unsigned long long m, char *buf, size_t len)
{
	static const struct { unsigned long long bit; const char *name; } ev[] = {
		{ 0x4, "sw_power_cap" }, { 0x8, "hw_slowdown" }, { 0x20, "sw_thermal" },
		{ 0x40, "hw_thermal" }, { 0x80, "hw_power_brake" },
	};
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
		if ((m & ev[i].bit) && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "",
			    ev[i].name);
	if (off == 0)
		snprintf(buf, len, "none");
}

static void
facts_nvml_dev(struct facts *f, struct facts_nvml *n, unsigned int i, nvml_dev d)
{
	char key[FACTS_KEY_MAX], s[256];
	unsigned int a, b, c, e;
	unsigned long long ull;
	int x, y, active = 0, links = 0;
	struct nvml_pci pci;

#define K(suffix) (snprintf(key, sizeof key, "gpu.%u.%s", i, suffix), key)
	if (n->name && n->name(d, s, sizeof s) == NVML_SUCCESS)
		facts_add(f, K("model"), "%s", s);
	if (n->uuid && n->uuid(d, s, sizeof s) == NVML_SUCCESS)
		facts_add(f, K("uuid"), "%s", s);
	memset(&pci, 0, sizeof pci);
	if (n->pci && n->pci(d, &pci) == NVML_SUCCESS)
		facts_add(f, K("bus_id"), "%.32s", pci.bus_id);
	if (n->gen && n->width && n->gen(d, &a) == NVML_SUCCESS && n->width(d, &b) ==
	    NVML_SUCCESS)
		facts_add(f, K("pcie"), "gen%u x%u", a, b);
	if (n->gen_max && n->width_max && n->gen_max(d, &a) == NVML_SUCCESS &&
	    n->width_max(d, &b) == NVML_SUCCESS)
		facts_add(f, K("pcie_max"), "gen%u x%u", a, b);
	if (n->ecc_mode && n->ecc_mode(d, &x, &y) == NVML_SUCCESS)
		facts_add(f, K("ecc"), "%s", x ? "on" : "off");
	else
		facts_skip(f, K("ecc"), "not supported");
	if (n->ecc_errors && n->ecc_errors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
	    NVML_VOLATILE_ECC, &ull) == NVML_SUCCESS)
		facts_add(f, K("ecc_uncorrected"), "%llu", ull);
	if (n->remapped && n->remapped(d, &a, &b, &c, &e) == NVML_SUCCESS)
		facts_add(f, K("remapped_rows"), "%u correctable, %u uncorrectable%s%s", a, b,
		    c ? ", pending" : "", e ? ", failed" : "");
	if (n->events && n->events(d, &ull) == NVML_SUCCESS) {
		facts_events_text(ull, s, sizeof s);
		facts_add(f, K("clock_events"), "%s", s);
	}
	if (n->persistence && n->persistence(d, &x) == NVML_SUCCESS)
		facts_add(f, K("persistence"), "%s", x ? "on" : "off");
	for (unsigned int l = 0; n->nvlink && l < NVML_NVLINK_MAX_LINKS; l++)
		if (n->nvlink(d, l, &x) == NVML_SUCCESS) {
			links++;
			active += x != 0;
		}
	if (links > 0)
		facts_add(f, K("nvlink"), "%d of %d active", active, links);
	else
		facts_skip(f, K("nvlink"), "no NVLink");
#undef K
}

static void
facts_read_nvml(struct facts *f)
{
	struct facts_nvml n;
	char why[512], s[96];
	unsigned int count = 0;
	int rc;

	if (facts_nvml_load(&n, why, sizeof why) != 0) {
		facts_skip(f, "gpu.count", "%s", why);
		return;
	}
	if ((rc = n.init()) != NVML_SUCCESS) {
		facts_skip(f, "gpu.count", "NVML did not start: %s", n.error ? n.error(rc) : "?");
		dlclose(n.h);
		return;
	}
	if (n.driver && n.driver(s, sizeof s) == NVML_SUCCESS)
		facts_add(f, "nvidia.driver", "%s", s);
	if (n.count(&count) == NVML_SUCCESS) {
		facts_add(f, "gpu.count", "%u", count);
		for (unsigned int i = 0; i < count && i < 64; i++) {
			nvml_dev d;

			if (n.handle(i, &d) == NVML_SUCCESS)
				facts_nvml_dev(f, &n, i, d);
		}
	}
	n.shutdown();
	dlclose(n.h);
}

/* The kernel module's version, for hosts where NVML cannot be loaded. */
static void
facts_read_driver(struct facts *f, const struct facts_roots *r)
{
	char buf[1024], ver[64];
	const char *p;

	if (facts_get(f, "nvidia.driver") != NULL)
		return;
	if (facts__read(r->proc, "/proc/driver/nvidia/version", buf, sizeof buf) < 0) {
		facts_skip(f, "nvidia.driver", "no NVIDIA driver (/proc/driver/nvidia/version)");
		return;
	}
	if ((p = strstr(buf, "Kernel Module")) != NULL &&
	    sscanf(p + 13, " %63s", ver) == 1)
		facts_add(f, "nvidia.driver", "%s", ver);
	else
		facts_skip(f, "nvidia.driver", "no version in /proc/driver/nvidia/version");
}

/* "12.8" from CUDA's 12080. */
static void
facts_cuda_version(struct facts *f, const char *key, int v)
{
	facts_add(f, key, "%d.%d", v / 1000, v % 1000 / 10);
}

/* Which file the loader took for a handle. */
static void
facts_lib_path(struct facts *f, const char *key, void *h)
{
	struct link_map *lm = NULL;

	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL && lm->l_name != NULL)
		facts_add(f, key, "%s", lm->l_name);
}

static void
facts_read_cuda(struct facts *f)
{
	static const char *const rt[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12",
	    "libcudart.so.11.0" };
	int (*get)(int *);
	void *h;
	int v = 0;

	if ((h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) != NULL &&
	    (*(void **)&get = dlsym(h, "cuDriverGetVersion")) != NULL && get(&v) == 0)
		facts_cuda_version(f, "cuda.driver", v);
	else
		facts_skip(f, "cuda.driver", "no CUDA driver (libcuda.so.1)");
	if (h != NULL)
		dlclose(h);
	for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
		if ((h = dlopen(rt[i], RTLD_NOW | RTLD_LOCAL)) == NULL)
			continue;
		if ((*(void **)&get = dlsym(h, "cudaRuntimeGetVersion")) != NULL && get(&v) == 0) {
			facts_cuda_version(f, "cuda.runtime", v);
			facts_lib_path(f, "cuda.runtime_path", h);
		}
		dlclose(h);
		if (facts_get(f, "cuda.runtime") != NULL)
			return;
	}
	facts_skip(f, "cuda.runtime", "no CUDA runtime (libcudart.so) on the loader's path");
}

/* NCCL as a job would find it: COLL_NCCL_LIBRARY, else libnccl.so.2 through the loader. */
static void
facts_read_nccl(struct facts *f)
{
	const char *lib = getenv("COLL_NCCL_LIBRARY");
	int (*get)(int *);
	void *h;
	int v = 0;

	if (lib == NULL || *lib == '\0')
		lib = "libnccl.so.2";
	if ((h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		facts_skip(f, "nccl.version", "no NCCL (%s not found)", lib);
		return;
	}
	facts_lib_path(f, "nccl.path", h);
	if ((*(void **)&get = dlsym(h, "ncclGetVersion")) == NULL || get(&v) != 0)
		facts_skip(f, "nccl.version", "%s has no working ncclGetVersion", lib);
	else if (v >= 10000)	/* NCCL_VERSION_CODE since 2.9: X*10000 + Y*100 + Z */
		facts_add(f, "nccl.version", "%d.%d.%d", v / 10000, v % 10000 / 100, v % 100);
	else
		facts_add(f, "nccl.version", "%d.%d.%d", v / 1000, v % 1000 / 100, v % 100);
	dlclose(h);
}

void
facts_read_gpu(struct facts *f, const struct facts_roots *r)
{
	/* The libraries are this host's own, whatever the roots say. */
	if (r->sys == NULL)
		facts_read_nvml(f);
	else
		facts_skip(f, "gpu.count", "NVML is not read under COLL_SYSFS_ROOT");
	facts_read_driver(f, r);
	facts_read_cuda(f);
	facts_read_nccl(f);
}
