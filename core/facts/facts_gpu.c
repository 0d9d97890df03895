/*
 * The GPU stack: NVIDIA driver, CUDA driver and runtime, NCCL (which file the
 * loader finds, and its ncclGetVersion), and each GPU through NVML. The
 * libraries are plat's, loaded at run time, so the suite builds and runs
 * where none is installed, and says "skipped: ..." for what is absent.
 */
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "facts.h"
#include "plat_cuda.h"
#include "plat_file.h"
#include "plat_nccl.h"
#include "plat_nvml.h"

#define NVML_NVLINK_MAX_LINKS 18
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_SUCCESS PLAT_NVML_SUCCESS

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

/*
 * Each link's state and its error counters that are not zero, as counters
 * for collcheck to judge against the host's baseline ("ctr.nvlink.<gpu>.
 * <link>.<counter>": cmd/collcheck/health_ctr.c): replays and recoveries are
 * a link's retries, CRC errors what made them.
 */
static void
facts_nvml_links(struct facts *f, const struct plat_nvml *n, unsigned int i, plat_nvml_dev d)
{
	static const char *const ctr[] = { "replay", "recovery", "crc_flit", "crc_data" };
	char key[FACTS_KEY_MAX];
	unsigned long long v;
	int x, active = 0, links = 0;

	for (unsigned int l = 0; n->nvlink && l < NVML_NVLINK_MAX_LINKS; l++) {
		if (n->nvlink(d, l, &x) != NVML_SUCCESS)
			continue;
		links++;
		active += x != 0;
		snprintf(key, sizeof key, "ctr.nvlink.%u.%u.state", i, l);
		facts_add(f, key, "%s", x ? "up" : "down");
		for (int c = 0; n->nvlink_err && c < 4; c++) {
			snprintf(key, sizeof key, "ctr.nvlink.%u.%u.%s", i, l, ctr[c]);
			if (n->nvlink_err(d, l, c, &v) == NVML_SUCCESS && v > 0)
				facts_add(f, key, "%llu", v);
		}
	}
	snprintf(key, sizeof key, "gpu.%u.nvlink", i);
	if (links > 0)
		facts_add(f, key, "%d of %d active", active, links);
	else
		facts_skip(f, key, "no NVLink");
}

static void
facts_nvml_dev(struct facts *f, const struct plat_nvml *n, unsigned int i, plat_nvml_dev d)
{
	char key[FACTS_KEY_MAX], s[256];
	unsigned int a, b, c, e;
	unsigned long long ull;
	int x, y;
	struct plat_nvml_pci pci;

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
	facts_nvml_links(f, n, i, d);
#undef K
}

/* NVML, loaded by plat; facts pairs its own init and shutdown (NVML counts them). */
static const struct plat_nvml *
facts_nvml_start(struct facts *f)
{
	const struct plat_nvml *n;
	char why[512];
	int rc;

	if ((rc = plat_nvml_load(&n, why, sizeof why)) == COLL_ENOTFOUND) {
		facts_skip(f, "gpu.count", "no NVML (%s)", why);
		return NULL;
	}
	if (rc != COLL_OK || n->shutdown == NULL) {
		facts_skip(f, "gpu.count", "NVML lacks nvmlInit or nvmlDeviceGetCount");
		return NULL;
	}
	if ((rc = n->init()) != NVML_SUCCESS) {
		facts_skip(f, "gpu.count", "NVML did not start: %s", n->error ? n->error(rc) : "?");
		return NULL;
	}
	return n;
}

static void
facts_read_nvml(struct facts *f)
{
	const struct plat_nvml *n = facts_nvml_start(f);
	char s[96];
	unsigned int count = 0;

	if (n == NULL)
		return;
	if (n->driver && n->driver(s, sizeof s) == NVML_SUCCESS)
		facts_add(f, "nvidia.driver", "%s", s);
	if (n->count(&count) == NVML_SUCCESS) {
		facts_add(f, "gpu.count", "%u", count);
		for (unsigned int i = 0; i < count && i < 64; i++) {
			plat_nvml_dev d;

			if (n->handle(i, &d) == NVML_SUCCESS)
				facts_nvml_dev(f, n, i, d);
		}
	}
	n->shutdown();
}

/* The kernel module's version, for hosts where NVML cannot be loaded. */
static void
facts_read_driver(struct facts *f, const struct facts_roots *r)
{
	char buf[1024], ver[64];
	const char *p;

	if (facts_get(f, "nvidia.driver") != NULL)
		return;
	if (plat_file_text(r->root, "/proc/driver/nvidia/version", buf, sizeof buf) < 0) {
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

static void
facts_read_cuda(struct facts *f)
{
	char path[4096];
	int v = 0;

	if (plat_cuda_driver_version(&v) == 0)
		facts_cuda_version(f, "cuda.driver", v);
	else
		facts_skip(f, "cuda.driver", "no CUDA driver (libcuda.so.1)");
	if (plat_cuda_runtime_version(&v, path, sizeof path) != 0) {
		facts_skip(f, "cuda.runtime", "no CUDA runtime (libcudart.so) on the loader's path");
		return;
	}
	facts_cuda_version(f, "cuda.runtime", v);
	if (path[0] != '\0')
		facts_add(f, "cuda.runtime_path", "%s", path);
}

/* NCCL as a job would find it: COLL_NCCL_LIBRARY, else libnccl.so.2 through the loader. */
static void
facts_read_nccl(struct facts *f)
{
	char path[256];
	const char *lib;
	int v = 0, rc = plat_nccl_version(&v, &lib, path, sizeof path);

	if (rc == COLL_ENOTFOUND) {
		facts_skip(f, "nccl.version", "no NCCL (%s not found)", lib);
		return;
	}
	facts_add(f, "nccl.path", "%s", path);
	if (rc != COLL_OK)
		facts_skip(f, "nccl.version", "%s has no working ncclGetVersion", lib);
	else if (v >= 10000)	/* NCCL_VERSION_CODE since 2.9: X*10000 + Y*100 + Z */
		facts_add(f, "nccl.version", "%d.%d.%d", v / 10000, v % 10000 / 100, v % 100);
	else
		facts_add(f, "nccl.version", "%d.%d.%d", v / 1000, v % 1000 / 100, v % 100);
}

void
facts_read_gpu(struct facts *f, const struct facts_roots *r)
{
	/* The libraries are this host's own, whatever the roots say. */
	if (r->root == NULL)
		facts_read_nvml(f);
	else
		facts_skip(f, "gpu.count", "NVML is not read under " PLAT_FILE_ROOT_VAR);
	facts_read_driver(f, r);
	facts_read_cuda(f);
	facts_read_nccl(f);
}
