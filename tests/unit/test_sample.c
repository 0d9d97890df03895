/*
 * colltop's collectors on fixture sysfs trees made here: interfaces (up,
 * down with speed unreadable, loopback), RDMA ports with and without
 * hw_counters (data counters in 4-byte words), junk in a counter, names too
 * long; rates from two samples, a counter reset; clock event reason names;
 * GPUs said absent where NVML is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sample.h"

static char root[256];

static void
put(const char *path, const char *text)
{
	char full[1024], *s;

	snprintf(full, sizeof full, "%s%s", root, path);
	for (s = full + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		mkdir(full, 0755);
		*s = '/';
	}
	FILE *f = fopen(full, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(root, sizeof root, "/tmp/coll-sample.XXXXXX");
	if (mkdtemp(root) == NULL)
		return -1;
	put("/sys/class/net/eth0/statistics/rx_bytes", "1000\n");
	put("/sys/class/net/eth0/statistics/tx_bytes", "2000\n");
	put("/sys/class/net/eth0/statistics/rx_errors", "1\n");
	put("/sys/class/net/eth0/statistics/tx_errors", "2\n");
	put("/sys/class/net/eth0/statistics/rx_dropped", "3\n");
	put("/sys/class/net/eth0/statistics/tx_dropped", "junk\n");
	put("/sys/class/net/eth0/carrier_changes", "4\n");
	put("/sys/class/net/eth0/operstate", "up\n");
	put("/sys/class/net/eth0/speed", "100000\n");
	put("/sys/class/net/eth1/operstate", "down\n");
	put("/sys/class/net/eth1/speed", "-1\n");
	put("/sys/class/net/lo/operstate", "unknown\n");
	put("/sys/class/net/an-interface-name-far-longer-than-any-kernel-gives/operstate", "up\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "100\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "250\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error", "2\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "1\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_errors", "5\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_discards", "6\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/hw_counters/local_ack_timeout_err", "7\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/hw_counters/packet_seq_err", "8\n");
	put("/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence", "9\n");
	put("/sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
	return 0;
}

static int
teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void
test_sample_net(void **state)
{
	struct sample_host s;

	(void)state;
	assert_int_equal(sample_host_read(&s, root, 0), 0);
	assert_int_equal(s.nnet, 4);
	/* Sorted: the long name, eth0, eth1, lo. */
	assert_int_equal(strlen(s.net[0].name), sizeof s.net[0].name - 1);
	assert_string_equal(s.net[1].name, "eth0");
	assert_true(s.net[1].rx_bytes == 1000 && s.net[1].tx_bytes == 2000);
	assert_true(s.net[1].rx_errors == 1 && s.net[1].tx_errors == 2);
	assert_true(s.net[1].rx_dropped == 3 && s.net[1].tx_dropped == 0);	/* junk reads 0 */
	assert_true(s.net[1].carrier_changes == 4);
	assert_int_equal(s.net[1].up, 1);
	assert_int_equal(s.net[1].speed_mbps, 100000);
	assert_string_equal(s.net[2].name, "eth1");
	assert_int_equal(s.net[2].up, 0);
	assert_int_equal(s.net[2].speed_mbps, -1);
	assert_int_equal(s.net[3].speed_mbps, -1);	/* lo: no speed file */
	assert_string_equal(s.gpu_why, "GPUs not sampled");
	sample_host_free(&s);
}

static void
test_sample_rdma(void **state)
{
	struct sample_host s;

	(void)state;
	sample_host_read(&s, root, 0);
	assert_int_equal(s.nrdma, 2);
	assert_string_equal(s.rdma[0].dev, "mlx5_0");
	assert_int_equal(s.rdma[0].port, 1);
	assert_string_equal(s.rdma[0].state, "ACTIVE");
	assert_string_equal(s.rdma[0].rate, "400 Gb/sec (4X NDR)");
	assert_true(s.rdma[0].rx_bytes == 400 && s.rdma[0].tx_bytes == 1000);	/* words x4 */
	assert_true(s.rdma[0].symbol_errors == 2 && s.rdma[0].link_downed == 1);
	assert_true(s.rdma[0].rx_errors == 5 && s.rdma[0].tx_discards == 6);
	assert_int_equal(s.rdma[0].have_hw, 1);
	assert_true(s.rdma[0].ack_timeouts == 7 && s.rdma[0].seq_errors == 17);
	assert_string_equal(s.rdma[1].state, "DOWN");
	assert_int_equal(s.rdma[1].have_hw, 0);
	assert_true(s.rdma[1].rx_bytes == 0);
	sample_host_free(&s);
}

static void
test_sample_rates(void **state)
{
	struct sample_host a, b;

	(void)state;
	sample_host_read(&a, root, 0);
	put("/sys/class/net/eth0/statistics/rx_bytes", "3000\n");
	put("/sys/class/net/eth0/statistics/tx_bytes", "10\n");	/* a reset */
	sample_host_read(&b, root, 0);
	assert_true(b.t_ns >= a.t_ns);
	assert_true(sample_rate(a.net[1].rx_bytes, b.net[1].rx_bytes, 0.5) == 4000.0);
	assert_true(sample_rate(a.net[1].tx_bytes, b.net[1].tx_bytes, 0.5) == -1);
	assert_true(sample_rate(1, 2, 0) == -1);
	put("/sys/class/net/eth0/statistics/rx_bytes", "1000\n");
	put("/sys/class/net/eth0/statistics/tx_bytes", "2000\n");
	sample_host_free(&a);
	sample_host_free(&b);
}

static void
test_sample_reasons(void **state)
{
	char buf[128];

	(void)state;
	sample_clock_reasons(0, buf, sizeof buf);
	assert_string_equal(buf, "none");
	sample_clock_reasons(0x4 | 0x40, buf, sizeof buf);
	assert_string_equal(buf, "sw_power_cap,hw_thermal");
	sample_clock_reasons(-1, buf, sizeof buf);
	assert_string_equal(buf, "?");
	sample_clock_reasons(0x1ff, buf, 16);	/* cut short, terminated */
	assert_true(strlen(buf) < 16);
}

/* With GPUs asked for: each GPU NVML gives, or why there are none (this machine has no driver). */
static void
test_sample_gpus(void **state)
{
	struct sample_host s;

	(void)state;
	sample_host_read(&s, root, 1);
	if (s.ngpu == 0)
		assert_true(s.gpu_why[0] != '\0');
	for (int i = 0; i < s.ngpu; i++)
		assert_int_equal(s.gpu[i].index, i);
	sample_host_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_net),
		cmocka_unit_test(test_sample_rdma),
		cmocka_unit_test(test_sample_rates),
		cmocka_unit_test(test_sample_reasons),
		cmocka_unit_test(test_sample_gpus),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
