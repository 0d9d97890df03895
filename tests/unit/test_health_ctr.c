/*
 * collcheck's verdicts on pause statistics and NVLink counters
 * (cmd/collcheck/health_ctr.c), from facts alone: NVLink's come from NVML,
 * which no test machine without a GPU has. A link down that was up is an
 * error naming GPU and link; replays and recoveries grown a warning; CRC
 * errors info; nothing without a baseline but counts since the driver
 * loaded. Pause frames: info when they grew, a storm at the rate the rule
 * says; the direction by the name's rx/tx.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health_ctr.h"

static struct check_result r;
static struct check_host host;
static struct check_conf conf;

static int
setup(void **state)
{
	(void)state;
	memset(&r, 0, sizeof r);
	memset(&host, 0, sizeof host);
	facts_init(&host.facts);
	facts_add(&host.facts, "ctr.time", "%d", 1000000 + 7200);
	facts_add(&host.facts, "gpu.3.bus_id", "00000000:3B:00.0");
	r.nhosts = 1;
	r.hosts = &host;
	check_conf_defaults(&conf);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	for (int i = 0; i < r.nfind; i++) {
		free(r.find[i].key);
		free(r.find[i].msg);
	}
	free(r.find);
	facts_free(&host.facts);
	check_conf_free(&conf);
	return 0;
}

static void
test_eth_rule(void **state)
{
	double s;

	(void)state;
	assert_int_equal(health_eth_sev("rx_prio3_pause", 100, 3600, &s), SEV_INFO);
	assert_int_equal(health_eth_sev("rx_prio3_pause", 3600000, 3600, &s), SEV_WARN);
	assert_true(s == 1000);
	assert_int_equal(health_eth_sev("rx_prio3_pause", 3599999, 3600, &s), SEV_INFO);
	/* Over seconds no rate is measured: a burst is no storm. */
	assert_int_equal(health_eth_sev("tx_pause_ctrl_phy", 1000000, 30, &s), SEV_INFO);
	assert_true(s < 0);
	assert_int_equal(health_eth_sev("rx_prio3_pause_duration", 360000000, 3600, &s),
	    SEV_WARN);
	assert_int_equal(health_eth_sev("rx_prio3_pause_duration", 359999999, 3600, &s), SEV_OK);
	assert_int_equal(health_eth_sev("rx_prio3_pause_transition", 999999, 3600, &s), SEV_OK);
	assert_int_equal(health_eth_sev("tx_pause_storm_error_events", 1, -1, &s), SEV_WARN);
	assert_int_equal(health_eth_sev("np_cnp_sent", 1 << 30, 3600, &s), SEV_INFO);
	assert_int_equal(health_eth_sev("rx_prio3_pause", 0, 3600, &s), SEV_OK);
	assert_int_equal(health_eth_sev("rx_prio3_pause", -5, 3600, &s), SEV_OK);
	assert_string_equal(health_eth_dir("rx_prio3_pause"), "rx");
	assert_string_equal(health_eth_dir("tx0_pause"), "tx");
	assert_string_equal(health_eth_dir("link_xoff_rx"), "rx");
	assert_string_equal(health_eth_dir("prx_pause"), "");
	assert_string_equal(health_eth_dir("rxe_pause"), "");
}

static void
test_eth_findings(void **state)
{
	(void)state;
	health_eth_ctr(&r, 0, &conf, "ctr.eth.eth0.100.tx_prio3_pause", "18000010", "10",
	    "1000000");
	assert_int_equal(r.nfind, 1);
	assert_int_equal(r.find[0].sev, SEV_WARN);
	assert_string_equal(r.find[0].key, "ctr.eth.eth0.100.tx_prio3_pause");
	assert_non_null(strstr(r.find[0].msg, "NIC eth0.100: tx_prio3_pause: a pause storm, "
	    "18000000 frames in 2.0 h (2500/s); this host asked the switch to pause"));
	/* No baseline: counts since boot say nothing, but the storm guard's. */
	health_eth_ctr(&r, 0, &conf, "ctr.eth.eth0.rx_prio3_pause", "99999999", NULL, NULL);
	health_eth_ctr(&r, 0, &conf, "ctr.eth.eth0.tx_pause_storm_warning_events", "2", NULL,
	    NULL);
	assert_int_equal(r.nfind, 2);
	assert_int_equal(r.find[1].sev, SEV_INFO);
	assert_non_null(strstr(r.find[1].msg, "is 2 since the driver loaded"));
	health_ethtool_skip(&r, 0, &conf, "ctr.ethtool.eth0", "skipped: why");
	assert_int_equal(r.nfind, 3);
	assert_string_equal(r.find[2].msg, "NIC eth0: pause and congestion statistics not "
	    "checked: why");
}

static void
test_nvlink_down(void **state)
{
	(void)state;
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.3.17.state", "down", "up", "1000000");
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.3.16.state", "down", "down", "1000000");
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.3.15.state", "down", NULL, NULL);
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.3.14.state", "up", "down", "1000000");
	assert_int_equal(r.nfind, 1);
	assert_int_equal(r.find[0].sev, SEV_ERROR);
	assert_int_equal(host.sev, SEV_ERROR);
	assert_string_equal(r.find[0].msg, "NVLink 17 of GPU 3 (00000000:3B:00.0) is down; it "
	    "was up in the baseline: drain the node; see nvidia-smi nvlink -s and the fabric "
	    "manager's log");
}

static void
test_nvlink_counts(void **state)
{
	(void)state;
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.0.2.replay", "14", "4", "1000000");
	assert_int_equal(r.nfind, 1);
	assert_int_equal(r.find[0].sev, SEV_WARN);
	assert_string_equal(r.find[0].msg, "NVLink 2 of GPU 0: replay count grew by 10 since "
	    "the baseline in 2.0 h (5.0/h): the link is retrying (a marginal link or NVSwitch "
	    "port); if it keeps growing, drain the node and have the board checked");
	/* Not in the baseline: it was 0 there (only counters not zero are facts). */
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.0.2.recovery", "1", NULL, "1000000");
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.0.2.crc_flit", "90", "10", "1000000");
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.0.3.replay", "7", "7", "1000000");
	assert_int_equal(r.nfind, 3);
	assert_int_equal(r.find[1].sev, SEV_WARN);
	assert_int_equal(r.find[2].sev, SEV_INFO);
	assert_non_null(strstr(r.find[2].msg, "crc_flit errors grew by 80"));
	/* No baseline: replays since the driver loaded are info; CRC errors nothing. */
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.1.0.replay", "5", NULL, NULL);
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.1.0.crc_data", "5", NULL, NULL);
	health_nvlink_ctr(&r, 0, &conf, "ctr.nvlink.x.0.replay", "5", "0", "1000000");
	assert_int_equal(r.nfind, 4);
	assert_int_equal(r.find[3].sev, SEV_INFO);
	assert_non_null(strstr(r.find[3].msg, "NVLink 0 of GPU 1: replay count is 5 since the "
	    "driver loaded"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_eth_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eth_findings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nvlink_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nvlink_counts, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
