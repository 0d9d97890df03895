/*
 * GPUs through NVML, loaded with dlopen so that hosts without the driver
 * still sample the rest. The few calls used are declared here as NVML 11+
 * lays them out. NVML is initialised once per process and kept: init takes
 * tens of milliseconds, and a dashboard samples every second.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_impl.h"
#include "xmalloc.h"

typedef void *sample_nvml_dev;

struct sample_nvml_util {
	unsigned int gpu, memory;
};

struct sample_nvml_mem {
	unsigned long long total, free, used;
};

/* nvmlFieldValue_t as NVML 11+ lays it out (40 bytes; value is a union of 8). */
struct sample_nvml_field {
	unsigned int field, scope;
	long long timestamp, latency_us;
	int type, ret;
	unsigned long long value;
};
_Static_assert(sizeof(struct sample_nvml_field) == 40, "nvmlFieldValue_t is 40 bytes");

/*
 * NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX and _RX: KiB moved since the driver
 * loaded, data only; scope UINT_MAX sums every link.
 */
#define SAMPLE_FI_NVLINK_TX 138
#define SAMPLE_FI_NVLINK_RX 139
#define SAMPLE_SCOPE_ALL 0xffffffffu

static struct {
	void *h;
	int ok;
	char why[160];
	int (*init)(void);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, sample_nvml_dev *);
	int (*name)(sample_nvml_dev, char *, unsigned int);
	int (*util)(sample_nvml_dev, struct sample_nvml_util *);
	int (*mem)(sample_nvml_dev, struct sample_nvml_mem *);
	int (*power)(sample_nvml_dev, unsigned int *);
	int (*limit)(sample_nvml_dev, unsigned int *);
	int (*temp)(sample_nvml_dev, int, unsigned int *);
	int (*reasons)(sample_nvml_dev, unsigned long long *);
	int (*pcie)(sample_nvml_dev, int, unsigned int *);
	int (*fields)(sample_nvml_dev, int, struct sample_nvml_field *);
} nv;

static pthread_once_t sample_nvml_once = PTHREAD_ONCE_INIT;

static void *
sample_sym(const char *name, const char *alt)
{
	void *p = dlsym(nv.h, name);

	return p != NULL || alt == NULL ? p : dlsym(nv.h, alt);
}

static void
sample_nvml_load(void)
{
	if ((nv.h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(nv.why, sizeof nv.why, "no NVML (libnvidia-ml.so.1): no NVIDIA driver here");
		return;
	}
	*(void **)&nv.init = sample_sym("nvmlInit_v2", "nvmlInit");
	*(void **)&nv.count = sample_sym("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	*(void **)&nv.handle = sample_sym("nvmlDeviceGetHandleByIndex_v2",
	    "nvmlDeviceGetHandleByIndex");
	*(void **)&nv.name = sample_sym("nvmlDeviceGetName", NULL);
	*(void **)&nv.util = sample_sym("nvmlDeviceGetUtilizationRates", NULL);
	*(void **)&nv.mem = sample_sym("nvmlDeviceGetMemoryInfo", NULL);
	*(void **)&nv.power = sample_sym("nvmlDeviceGetPowerUsage", NULL);
	*(void **)&nv.limit = sample_sym("nvmlDeviceGetEnforcedPowerLimit", NULL);
	*(void **)&nv.temp = sample_sym("nvmlDeviceGetTemperature", NULL);
	/* Renamed in NVML 12.2; the old name stays exported. */
	*(void **)&nv.reasons = sample_sym("nvmlDeviceGetCurrentClocksEventReasons",
	    "nvmlDeviceGetCurrentClocksThrottleReasons");
	*(void **)&nv.pcie = sample_sym("nvmlDeviceGetPcieThroughput", NULL);
	*(void **)&nv.fields = sample_sym("nvmlDeviceGetFieldValues", NULL);
	if (nv.init == NULL || nv.count == NULL || nv.handle == NULL) {
		snprintf(nv.why, sizeof nv.why, "libnvidia-ml.so.1 lacks nvmlInit/DeviceGetCount");
		return;
	}
	if (nv.init() != 0) {
		snprintf(nv.why, sizeof nv.why, "nvmlInit failed: no GPU or driver not loaded");
		return;
	}
	nv.ok = 1;
}

/* NVLink's data counters summed over links, KiB; -1 where NVML has none (no NVLink). */
static void
sample_nvlink(sample_nvml_dev d, struct sample_gpu *g)
{
	struct sample_nvml_field f[2] = { { .field = SAMPLE_FI_NVLINK_TX, .scope = SAMPLE_SCOPE_ALL },
		{ .field = SAMPLE_FI_NVLINK_RX, .scope = SAMPLE_SCOPE_ALL } };

	g->nvlink_tx_kib = g->nvlink_rx_kib = -1;
	if (nv.fields == NULL || nv.fields(d, 2, f) != 0)
		return;
	if (f[0].ret == 0)
		g->nvlink_tx_kib = (long long)f[0].value;
	if (f[1].ret == 0)
		g->nvlink_rx_kib = (long long)f[1].value;
}

void
sample__gpus(struct sample_host *s)
{
	unsigned int n = 0;

	pthread_once(&sample_nvml_once, sample_nvml_load);
	if (!nv.ok) {
		snprintf(s->gpu_why, sizeof s->gpu_why, "%s", nv.why);
		return;
	}
	if (nv.count(&n) != 0 || n == 0) {
		snprintf(s->gpu_why, sizeof s->gpu_why, "NVML sees no GPU");
		return;
	}
	n = n > 64 ? 64 : n;
	s->gpu = xcalloc(n, sizeof *s->gpu);
	for (unsigned int i = 0; i < n; i++) {
		struct sample_gpu *g = &s->gpu[s->ngpu++];
		struct sample_nvml_util u;
		struct sample_nvml_mem m;
		unsigned long long r;
		unsigned int v;
		sample_nvml_dev d;

		memset(g, 0, sizeof *g);
		g->index = (int)i;
		g->util_gpu = g->util_mem = g->temp_c = -1;
		g->mem_used = g->mem_total = g->clock_reasons = -1;
		g->power_mw = g->power_limit_mw = g->pcie_tx_kbs = g->pcie_rx_kbs = -1;
		g->nvlink_tx_kib = g->nvlink_rx_kib = -1;
		if (nv.handle(i, &d) != 0)
			continue;
		if (nv.name != NULL && nv.name(d, g->name, sizeof g->name) != 0)
			g->name[0] = '\0';
		if (nv.util != NULL && nv.util(d, &u) == 0) {
			g->util_gpu = (int)u.gpu;
			g->util_mem = (int)u.memory;
		}
		if (nv.mem != NULL && nv.mem(d, &m) == 0) {
			g->mem_used = (long long)m.used;
			g->mem_total = (long long)m.total;
		}
		if (nv.power != NULL && nv.power(d, &v) == 0)
			g->power_mw = (long)v;
		if (nv.limit != NULL && nv.limit(d, &v) == 0)
			g->power_limit_mw = (long)v;
		if (nv.temp != NULL && nv.temp(d, 0, &v) == 0)
			g->temp_c = (int)v;
		if (nv.reasons != NULL && nv.reasons(d, &r) == 0)
			g->clock_reasons = (long long)r;
		/* PCIe throughput: NVML samples it over 20 ms on each call, in KB/s. */
		if (nv.pcie != NULL && nv.pcie(d, 0, &v) == 0)
			g->pcie_tx_kbs = (long)v;
		if (nv.pcie != NULL && nv.pcie(d, 1, &v) == 0)
			g->pcie_rx_kbs = (long)v;
		sample_nvlink(d, g);
	}
}
