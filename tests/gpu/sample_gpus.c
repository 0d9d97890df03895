/*
 * On the GPU machine: what colltop's collectors (core/sample) read there,
 * two samples a second apart, as JSON-like lines: each GPU through NVML,
 * each interface and RDMA port with its rates. Built by sample_gpus.sh.
 */
#include <stdio.h>
#include <unistd.h>

#include "sample.h"

int
main(void)
{
	struct sample_host a, b;
	char why[128];
	double dt;

	sample_host_read(&a, "", 1);
	sleep(1);
	sample_host_read(&b, "", 1);
	dt = (double)(b.t_ns - a.t_ns) / 1e9;
	printf("gpus %d%s%s\n", b.ngpu, b.gpu_why[0] ? ": " : "", b.gpu_why);
	for (int i = 0; i < b.ngpu; i++) {
		const struct sample_gpu *g = &b.gpu[i];

		sample_clock_reasons(g->clock_reasons, why, sizeof why);
		printf("gpu %d %s util %d%% mem-util %d%% mem %lld/%lld MiB power %.1f W temp %d C "
		    "clocks %s pcie tx %ld rx %ld KB/s\n", g->index, g->name, g->util_gpu,
		    g->util_mem, g->mem_used >> 20, g->mem_total >> 20, (double)g->power_mw / 1000,
		    g->temp_c, why, g->pcie_tx_kbs, g->pcie_rx_kbs);
	}
	for (int i = 0; i < b.nnet && i < a.nnet; i++)
		printf("net %s %s speed %ld rx %.0f B/s tx %.0f B/s errors %llu/%llu carrier changes "
		    "%llu\n", b.net[i].name, b.net[i].up ? "up" : "down", b.net[i].speed_mbps,
		    sample_rate(a.net[i].rx_bytes, b.net[i].rx_bytes, dt),
		    sample_rate(a.net[i].tx_bytes, b.net[i].tx_bytes, dt),
		    (unsigned long long)b.net[i].rx_errors, (unsigned long long)b.net[i].tx_errors,
		    (unsigned long long)b.net[i].carrier_changes);
	for (int i = 0; i < b.nrdma; i++)
		printf("rdma %s/%d %s %s rx %llu tx %llu symbol errors %llu link downed %llu\n",
		    b.rdma[i].dev, b.rdma[i].port, b.rdma[i].state, b.rdma[i].rate,
		    (unsigned long long)b.rdma[i].rx_bytes, (unsigned long long)b.rdma[i].tx_bytes,
		    (unsigned long long)b.rdma[i].symbol_errors,
		    (unsigned long long)b.rdma[i].link_downed);
	sample_host_free(&a);
	sample_host_free(&b);
	return 0;
}
