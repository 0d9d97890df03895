/*
 * GPUs through NVML (plat_nvml: loaded at run time, so that hosts without
 * the driver still sample the rest). NVML is initialised once per process
 * and kept: init takes tens of milliseconds, and a dashboard samples every
 * second.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "plat_nvml.h"
#include "sample_impl.h"
#include "xmalloc.h"

/*
 * NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX and _RX: KiB moved since the driver
 * loaded, data only; scope UINT_MAX sums every link.
 */
#define SAMPLE_FI_NVLINK_TX 138
#define SAMPLE_FI_NVLINK_RX 139
#define SAMPLE_SCOPE_ALL 0xffffffffu

static struct {
	const struct plat_nvml *t;
	int ok;
	char why[160];
} nv;

static pthread_once_t sample_nvml_once = PTHREAD_ONCE_INIT;

static void
sample_nvml_load(void)
{
	char why[512];
	int rc = plat_nvml_load(&nv.t, why, sizeof why);

	if (rc == COLL_ENOTFOUND) {
		snprintf(nv.why, sizeof nv.why, "no NVML (libnvidia-ml.so.1): no NVIDIA driver here");
		return;
	}
	if (rc != COLL_OK) {
		snprintf(nv.why, sizeof nv.why, "libnvidia-ml.so.1 lacks nvmlInit/DeviceGetCount");
		return;
	}
	if (nv.t->init() != 0) {
		snprintf(nv.why, sizeof nv.why, "nvmlInit failed: no GPU or driver not loaded");
		return;
	}
	nv.ok = 1;
}

/* Where the GPU sits on PCI: a rank's page names its GPU that way (status.h: gpu_bus). */
static void
sample_gpu_pci(plat_nvml_dev d, struct sample_gpu *g)
{
	struct plat_nvml_pci pci;

	memset(&pci, 0, sizeof pci);
	if (nv.t->pci == NULL || nv.t->pci(d, &pci) != 0)
		return;
	g->pci_domain = pci.domain;
	g->pci_bus = pci.bus;
	g->pci_device = pci.device;
}

/* NVLink's data counters summed over links, KiB; -1 where NVML has none (no NVLink). */
static void
sample_nvlink(plat_nvml_dev d, struct sample_gpu *g)
{
	struct plat_nvml_field f[2] = { { .field = SAMPLE_FI_NVLINK_TX, .scope = SAMPLE_SCOPE_ALL },
		{ .field = SAMPLE_FI_NVLINK_RX, .scope = SAMPLE_SCOPE_ALL } };

	g->nvlink_tx_kib = g->nvlink_rx_kib = -1;
	if (nv.t->fields == NULL || nv.t->fields(d, 2, f) != 0)
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
	if (nv.t->count(&n) != 0 || n == 0) {
		snprintf(s->gpu_why, sizeof s->gpu_why, "NVML sees no GPU");
		return;
	}
	n = n > 64 ? 64 : n;
	s->gpu = xcalloc(n, sizeof *s->gpu);
	for (unsigned int i = 0; i < n; i++) {
		struct sample_gpu *g = &s->gpu[s->ngpu++];
		struct plat_nvml_util u;
		struct plat_nvml_mem m;
		unsigned long long r;
		unsigned int v;
		plat_nvml_dev d;

		memset(g, 0, sizeof *g);
		g->index = (int)i;
		g->util_gpu = g->util_mem = g->temp_c = -1;
		g->mem_used = g->mem_total = g->clock_reasons = -1;
		g->power_mw = g->power_limit_mw = g->pcie_tx_kbs = g->pcie_rx_kbs = -1;
		g->nvlink_tx_kib = g->nvlink_rx_kib = -1;
		if (nv.t->handle(i, &d) != 0)
			continue;
		if (nv.t->name != NULL && nv.t->name(d, g->name, sizeof g->name) != 0)
			g->name[0] = '\0';
		sample_gpu_pci(d, g);
		if (nv.t->util != NULL && nv.t->util(d, &u) == 0) {
			g->util_gpu = (int)u.gpu;
			g->util_mem = (int)u.memory;
		}
		if (nv.t->mem != NULL && nv.t->mem(d, &m) == 0) {
			g->mem_used = (long long)m.used;
			g->mem_total = (long long)m.total;
		}
		if (nv.t->power != NULL && nv.t->power(d, &v) == 0)
			g->power_mw = (long)v;
		if (nv.t->limit != NULL && nv.t->limit(d, &v) == 0)
			g->power_limit_mw = (long)v;
		if (nv.t->temp != NULL && nv.t->temp(d, 0, &v) == 0)
			g->temp_c = (int)v;
		if (nv.t->events != NULL && nv.t->events(d, &r) == 0)
			g->clock_reasons = (long long)r;
		/* PCIe throughput: NVML samples it over 20 ms on each call, in KB/s. */
		if (nv.t->pcie != NULL && nv.t->pcie(d, 0, &v) == 0)
			g->pcie_tx_kbs = (long)v;
		if (nv.t->pcie != NULL && nv.t->pcie(d, 1, &v) == 0)
			g->pcie_rx_kbs = (long)v;
		sample_nvlink(d, g);
	}
}
