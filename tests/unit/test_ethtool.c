/*
 * `ethtool -S` text as coll reads it (core/facts/facts_ethtool_parse.c): the
 * pause, PFC, ECN and CNP names kept and no other, at most as many as asked;
 * text that is not that refused whole with its line; names made fact keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "facts.h"
#include "facts_ethtool.h"

static const char mlx5[] =
	"NIC statistics:\n"
	"     rx_packets: 1000\n"
	"     rx_prio3_pause: 12\n"
	"     tx_prio3_pause: 0\n"
	"     rx_pause_ctrl_phy: 3\n"
	"     rx_prio3_pause_duration: 4096\n"
	"     tx_pause_storm_error_events: 1\n"
	"     rx_ecn_mark: 77\n"
	"     link_xoff_rx: 5\n"
	"     rx_priority_3_xon.nic: 9\n"
	"     np_cnp_sent: 8\n"
	"     rx_queue_0_xdp_packets: 4\n";

static void
test_kept(void **state)
{
	struct etht_stat s[16];
	int line, n = facts_ethtool_parse(mlx5, strlen(mlx5), s, 16, &line);

	(void)state;
	assert_int_equal(n, 8);
	assert_int_equal(line, 0);
	assert_string_equal(s[0].name, "rx_prio3_pause");
	assert_int_equal(s[0].v, 12);
	assert_string_equal(s[4].name, "tx_pause_storm_error_events");
	assert_string_equal(s[6].name, "link_xoff_rx");
	assert_string_equal(s[7].name, "np_cnp_sent");
	assert_int_equal(facts_ethtool_parse(mlx5, strlen(mlx5), s, 3, &line), 3);
}

/* veth and virtio (this machine's own) name nothing coll keeps. */
static void
test_none_kept(void **state)
{
	static const char veth[] = "NIC statistics:\n     peer_ifindex: 5\n     rx_queue_0_xdp_"
	    "packets: 0\n     tx_kicks: 0\n     rx0_xdp_redirects: 1\n";
	struct etht_stat s[4];
	int line;

	(void)state;
	assert_int_equal(facts_ethtool_parse(veth, strlen(veth), s, 4, &line), 0);
	assert_int_equal(facts_ethtool_parse("", 0, s, 4, &line), 0);
	assert_int_equal(facts_ethtool_wanted("RX_PAUSE", 8), 1);
	assert_int_equal(facts_ethtool_wanted("rx_pause", 0), 0);
}

static void
test_refused(void **state)
{
	static const struct { const char *text; int line; } bad[] = {
		{ "NIC statistics:\n rx_pause: 1x\n", 2 },
		{ "rx_pause: 18446744073709551616\n", 1 },
		{ "rx_pause: -1\n", 1 },
		{ "a:\nrx_pause 1\n", 2 },
		{ ": 5\n", 1 },
		{ "rx_pause:\xff 5\n", 1 },
		{ "xxxxxxxxxxxxxxxxxxxxxxxxxxxxx_pause: 1\n", 1 },
	};
	struct etht_stat s[4];
	char longline[400];
	int line;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(facts_ethtool_parse(bad[i].text, strlen(bad[i].text), s, 4, &line),
		    -1);
		assert_int_equal(line, bad[i].line);
	}
	memset(longline, ' ', sizeof longline);
	memcpy(longline + 300, "rx_pause: 1", 11);
	assert_int_equal(facts_ethtool_parse(longline, 311, s, 4, &line), -1);
	assert_int_equal(facts_ethtool_parse(longline + 100, 211, s, 4, &line), 1);
	assert_int_equal(facts_ethtool_parse("rx_pause:\n", 10, s, 4, &line), 0);
	assert_int_equal(facts_ethtool_parse("rx_pause: 1\0\n", 13, s, 4, &line), -1);
	assert_int_equal(facts_ethtool_parse("tx_pause: 18446744073709551615", 30, s, 4, &line),
	    1);
	assert_true(s[0].v == 18446744073709551615ULL);
}

static void
test_keys(void **state)
{
	struct etht_stat s[2] = { { "rx_priority_3_xoff.nic", 4 }, { "tx pause:x", 1 } };
	struct facts f;
	char out[8];

	(void)state;
	facts_init(&f);
	facts_ethtool_add(&f, "ens1f0.100", s, 2);
	assert_string_equal(facts_get(&f, "ctr.eth.ens1f0.100.rx_priority_3_xoff_nic"), "4");
	assert_string_equal(facts_get(&f, "ctr.eth.ens1f0.100.tx_pause_x"), "1");
	facts_free(&f);
	facts_ethtool_keyname("rx-pause/*", out, sizeof out);
	assert_string_equal(out, "rx-paus");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept),
		cmocka_unit_test(test_none_kept),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
