/*
 * Counters a dashboard samples every interval on each host (colltop's
 * collectors; no screen code here, as htop keeps its collectors apart from
 * its screens): per network interface, per RDMA port, per GPU. Two samples
 * give rates (sample_rate). Files are read under a root ("" for /), so the
 * readers run on fixture trees in tests.
 */
#ifndef COLL_SAMPLE_H
#define COLL_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

struct sample_net {
	char name[32];
	int up;			/* operstate up */
	long speed_mbps;	/* -1 unknown */
	uint64_t rx_bytes, tx_bytes, rx_errors, tx_errors, rx_dropped, tx_dropped;
	uint64_t carrier_changes;
};

struct sample_rdma {
	char dev[32];
	int port;
	char state[24];		/* "ACTIVE", from "4: ACTIVE" */
	char rate[48];		/* "400 Gb/sec (4X NDR)" */
	uint64_t rx_bytes, tx_bytes;	/* port_rcv_data/port_xmit_data count 4-byte words: x4 */
	uint64_t symbol_errors, link_downed, rx_errors, tx_discards;
	uint64_t ack_timeouts;	/* hw_counters/local_ack_timeout_err: each a retransmission */
	uint64_t seq_errors;	/* hw_counters/packet_seq_err + out_of_sequence */
	int have_hw;		/* the hw_counters were there */
};

/* One GPU through NVML; a field NVML did not give is -1. */
struct sample_gpu {
	int index;
	char name[64];
	unsigned int pci_domain, pci_bus, pci_device;	/* where it sits; all 0: unknown */
	int util_gpu, util_mem;		/* percent */
	long long mem_used, mem_total;	/* bytes */
	long power_mw;
	long power_limit_mw;		/* the enforced limit: what busy at full power draws */
	int temp_c;
	long long clock_reasons;	/* nvmlClocksEventReason bits; 0 none, -1 unknown */
	long pcie_tx_kbs, pcie_rx_kbs;
	long long nvlink_tx_kib, nvlink_rx_kib;	/* since the driver loaded, every link */
};

struct sample_host {
	uint64_t t_ns;		/* when it was taken (monotonic) */
	int nnet, nrdma, ngpu;
	struct sample_net *net;
	struct sample_rdma *rdma;
	struct sample_gpu *gpu;
	char gpu_why[160];	/* why there are no GPUs: no NVML, no devices, ... */
};

/* Sample the interfaces and RDMA ports under root; the GPUs too when gpus is set. */
int sample_host_read(struct sample_host *s, const char *root, int gpus);
void sample_host_free(struct sample_host *s);
/*
 * Per second from before to after over dt_s: -1 where the counter went back
 * (a reset, a driver reload) or dt_s is not positive, never a huge number
 * from a wrap.
 */
double sample_rate(uint64_t before, uint64_t after, double dt_s);
/* Names of the clock event reason bits set, "," between ("sw_power_cap,hw_slowdown"). */
void sample_clock_reasons(long long bits, char *buf, size_t len);

#endif
