/*
 * A NIC driver's statistics (what `ethtool -S` prints), cut to the pause,
 * PFC, ECN and CNP counters: RoCE's flow and congestion control. The
 * driver's names are its own (mlx5: rx_prio3_pause, tx_pause_ctrl_phy,
 * rx_prio3_pause_duration, tx_pause_storm_warning_events; Intel: link_xoff_rx,
 * rx_priority_3_xoff.nic; Broadcom: rx_pfc_frames), so the names are kept
 * as the driver gives them, by the words in them. Real interfaces are read
 * through the SIOCETHTOOL ioctl; a fixture root gives `ethtool -S` text
 * instead (facts_ethtool.c), which is parsed here: bounded, every name
 * checked, every number whole.
 */
#ifndef COLL_FACTS_ETHTOOL_H
#define COLL_FACTS_ETHTOOL_H

#include <stddef.h>

#include "facts.h"

#define ETHT_NAME_MAX 32	/* ETH_GSTRING_LEN: a statistic's name, at most */
#define ETHT_KEEP 64		/* statistics kept per interface */
#define ETHT_LINE_MAX 256	/* a line of `ethtool -S` text, at most */

struct etht_stat {
	char name[ETHT_NAME_MAX + 1];
	unsigned long long v;
};

/* 1 when a statistic's name is one kept: it holds pause, pfc, xoff, ecn or cnp. */
int facts_ethtool_wanted(const char *name, size_t len);
/*
 * The kept statistics of `ethtool -S` text into out (at most max of them;
 * the rest are left out); their count, or -1 when the text is not that
 * (*line: the first line that is neither a header ending in ':' nor
 * "name: number").
 */
int facts_ethtool_parse(const char *text, size_t len, struct etht_stat *out, int max,
    int *line);
/* A name as a fact key's last part: bytes other than [A-Za-z0-9_-] become '_'. */
void facts_ethtool_keyname(const char *name, char *out, size_t len);
/* Each kept statistic of interface ifname as "ctr.eth.<if>.<name>". */
void facts_ethtool_add(struct facts *f, const char *ifname, const struct etht_stat *s, int n);

/* Every interface facts_read_net named ("net.<if>.mtu"): their kept statistics. */
void facts_read_ethtool(struct facts *f, const struct facts_roots *r);

#endif
