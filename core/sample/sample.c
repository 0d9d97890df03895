/*
 * Interfaces and RDMA ports from sysfs, read under a root. Every file is
 * optional: a counter a driver does not give reads as 0, a state as "".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "plat_file.h"
#include "sample_impl.h"
#include "xmalloc.h"

#define SAMPLE_MAX_ITEMS 256	/* interfaces or ports per host: a bound on a hostile tree */

/* A counter; 0 when the driver does not give it (or gives no number). */
static uint64_t
sample_u64(const char *root, const char *path)
{
	uint64_t v;

	return plat_file_u64(root, path, &v) == 0 ? v : 0;
}

/* The entries of root+dir, sorted, dot files left out; the count (0 if none). */
static int
sample_list(const char *root, const char *dir, char ***out)
{
	int n = plat_file_list(root, dir, SAMPLE_MAX_ITEMS, out);

	return n > 0 ? n : 0;
}

static void
sample_net(struct sample_host *s, const char *root)
{
	static const char *const stat[] = { "rx_bytes", "tx_bytes", "rx_errors", "tx_errors",
		"rx_dropped", "tx_dropped" };
	char **ifs, path[512], buf[64];
	int n = sample_list(root, "/sys/class/net", &ifs);

	s->net = xcalloc((size_t)n + 1, sizeof *s->net);
	for (int i = 0; i < n; i++) {
		struct sample_net *x = &s->net[s->nnet++];
		uint64_t *v[] = { &x->rx_bytes, &x->tx_bytes, &x->rx_errors, &x->tx_errors,
			&x->rx_dropped, &x->tx_dropped };

		snprintf(x->name, sizeof x->name, "%.31s", ifs[i]);
		for (size_t k = 0; k < sizeof stat / sizeof *stat; k++) {
			snprintf(path, sizeof path, "/sys/class/net/%s/statistics/%s", ifs[i], stat[k]);
			*v[k] = sample_u64(root, path);
		}
		snprintf(path, sizeof path, "/sys/class/net/%s/carrier_changes", ifs[i]);
		x->carrier_changes = sample_u64(root, path);
		snprintf(path, sizeof path, "/sys/class/net/%s/operstate", ifs[i]);
		x->up = plat_file_line(root, path, buf, sizeof buf) == 0 && strcmp(buf, "up") == 0;
		snprintf(path, sizeof path, "/sys/class/net/%s/speed", ifs[i]);
		/* Reading speed fails (EINVAL) on a link that is down: unknown, not 0. */
		x->speed_mbps = plat_file_line(root, path, buf, sizeof buf) == 0 && buf[0] != '-' &&
		    buf[0] != '\0' ? atol(buf) : -1;
	}
	plat_file_list_free(ifs, n);
}

static void
sample_port(struct sample_rdma *x, const char *root, const char *dev, const char *port)
{
	static const char *const ctr[] = { "symbol_error", "link_downed", "port_rcv_errors",
		"port_xmit_discards" };
	char base[320], path[512], buf[64];
	uint64_t *v[] = { &x->symbol_errors, &x->link_downed, &x->rx_errors, &x->tx_discards };
	const char *p;

	snprintf(x->dev, sizeof x->dev, "%.31s", dev);
	x->port = atoi(port);
	snprintf(base, sizeof base, "/sys/class/infiniband/%s/ports/%s", dev, port);
	snprintf(path, sizeof path, "%s/state", base);
	if (plat_file_line(root, path, buf, sizeof buf) == 0) {
		p = strchr(buf, ':');
		snprintf(x->state, sizeof x->state, "%.23s", p ? p + 1 + strspn(p + 1, " ") : buf);
	}
	snprintf(path, sizeof path, "%s/rate", base);
	if (plat_file_line(root, path, x->rate, sizeof x->rate) != 0)
		x->rate[0] = '\0';
	snprintf(path, sizeof path, "%s/counters/port_rcv_data", base);
	x->rx_bytes = sample_u64(root, path) * 4;
	snprintf(path, sizeof path, "%s/counters/port_xmit_data", base);
	x->tx_bytes = sample_u64(root, path) * 4;
	for (size_t k = 0; k < sizeof ctr / sizeof *ctr; k++) {
		snprintf(path, sizeof path, "%s/counters/%s", base, ctr[k]);
		*v[k] = sample_u64(root, path);
	}
	snprintf(path, sizeof path, "%s/hw_counters/local_ack_timeout_err", base);
	x->have_hw = plat_file_line(root, path, buf, sizeof buf) == 0;
	x->ack_timeouts = sample_u64(root, path);
	snprintf(path, sizeof path, "%s/hw_counters/packet_seq_err", base);
	x->seq_errors = sample_u64(root, path);
	snprintf(path, sizeof path, "%s/hw_counters/out_of_sequence", base);
	x->seq_errors += sample_u64(root, path);
}

static void
sample_rdma(struct sample_host *s, const char *root)
{
	char **devs, **ports, path[320];
	int nd = sample_list(root, "/sys/class/infiniband", &devs), cap = 0;

	for (int i = 0; i < nd; i++) {
		int np;

		snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports", devs[i]);
		np = sample_list(root, path, &ports);
		for (int k = 0; k < np && s->nrdma < SAMPLE_MAX_ITEMS; k++) {
			if (s->nrdma == cap) {
				cap = cap ? cap * 2 : 4;
				s->rdma = xreallocarray(s->rdma, (size_t)cap, sizeof *s->rdma);
			}
			memset(&s->rdma[s->nrdma], 0, sizeof *s->rdma);
			sample_port(&s->rdma[s->nrdma++], root, devs[i], ports[k]);
		}
		plat_file_list_free(ports, np);
	}
	plat_file_list_free(devs, nd);
}

int
sample_host_read(struct sample_host *s, const char *root, int gpus)
{
	memset(s, 0, sizeof *s);
	s->t_ns = clock_now_ns();
	if (root == NULL)
		root = "";
	sample_net(s, root);
	sample_rdma(s, root);
	if (gpus)
		sample__gpus(s);
	else
		snprintf(s->gpu_why, sizeof s->gpu_why, "GPUs not sampled");
	return 0;
}

void
sample_host_free(struct sample_host *s)
{
	free(s->net);
	free(s->rdma);
	free(s->gpu);
	memset(s, 0, sizeof *s);
}

double
sample_rate(uint64_t before, uint64_t after, double dt_s)
{
	if (dt_s <= 0 || after < before)
		return -1;
	return (double)(after - before) / dt_s;
}

void
sample_clock_reasons(long long bits, char *buf, size_t len)
{
	static const char *const names[] = { "gpu_idle", "app_clocks", "sw_power_cap",
		"hw_slowdown", "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake",
		"display_clocks" };
	size_t at = 0;

	buf[0] = '\0';
	if (bits < 0) {
		snprintf(buf, len, "?");
		return;
	}
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if ((bits & (1LL << i)) && at < len) {
			int n = snprintf(buf + at, len - at, "%s%s", at ? "," : "", names[i]);

			at += n > 0 ? (size_t)n : 0;
		}
	if (buf[0] == '\0')
		snprintf(buf, len, "none");
}
