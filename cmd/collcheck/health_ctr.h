/*
 * collcheck's verdicts on the NICs' pause, PFC, ECN and CNP statistics
 * ("ctr.eth.*", core/facts/facts_ethtool.c) and on NVLink's state and error
 * counters ("ctr.nvlink.*", core/facts/facts_gpu.c), each against the host's
 * own baseline (health.c hands them each fact with its baseline value and
 * the baseline's time; bv and btime NULL without a baseline).
 */
#ifndef COLL_HEALTH_CTR_H
#define COLL_HEALTH_CTR_H

#include "check.h"

#define HEALTH_PAUSE_RATE 1000.0	/* pause frames a second since the baseline: a storm */
#define HEALTH_PAUSE_SHARE 0.10		/* the time paused since the baseline: a storm */
#define HEALTH_RATE_MIN_S 60.0		/* a rate over less time says nothing */

enum health_eth_kind { ETH_FRAMES, ETH_DURATION, ETH_TRANSITION, ETH_STORM, ETH_CONGESTION };

/* What a statistic counts, by the words in its name. */
int health_eth_kind(const char *name);
/* "rx", "tx" or "" (neither): who sent the pause frames it counts. */
const char *health_eth_dir(const char *name);
/*
 * The severity of a statistic that grew by d in secs seconds (secs < 0:
 * unknown): SEV_WARN for a storm, SEV_INFO for flow or congestion control
 * acting, SEV_OK for nothing to say; *share: frames a second or the share
 * of the time paused, when it was measured (else -1).
 */
int health_eth_sev(const char *name, long long d, double secs, double *share);

void health_eth_ctr(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v, const char *bv, const char *btime);
/* "ctr.ethtool.<if>": statistics that could not be read, and why. */
void health_ethtool_skip(struct check_result *r, int h, const struct check_conf *c,
    const char *k, const char *v);
void health_nvlink_ctr(struct check_result *r, int h, const struct check_conf *c,
    const char *k, const char *v, const char *bv, const char *btime);

#endif
