/*
 * The NICs' pause, PFC, ECN and CNP statistics and NVLink's counters as
 * findings, each against the host's baseline (health_ctr.h).
 *
 * Pause frames are RoCE's flow control doing its work: that they grew says
 * the fabric was congested (info). A storm is pausing that does not end: a
 * receiver that stopped draining pauses its switch port, which pauses the
 * ports feeding it, and every flow through them stalls. A priority held
 * paused receives a refresh every half quantum: at 100-400 Gb/s with the
 * usual full quanta that is several thousand frames a second, so 1000 a
 * second averaged since the baseline means a link sat paused about a tenth
 * of the time or more; where the driver counts the time paused (mlx5's
 * *_pause_duration, in microseconds) a tenth of the time is the rule itself.
 * mlx5 counts its own storm guard's acts (tx_pause_storm_*_events): any is
 * a storm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health_ctr.h"

int
health_eth_kind(const char *name)
{
	if (strstr(name, "storm") != NULL)
		return ETH_STORM;
	if (strstr(name, "duration") != NULL)
		return ETH_DURATION;
	if (strstr(name, "transition") != NULL)
		return ETH_TRANSITION;
	if (strstr(name, "ecn") != NULL || strstr(name, "cnp") != NULL)
		return ETH_CONGESTION;
	return ETH_FRAMES;
}

/* "rx" or "tx" as a word of the name, or the start of one ("tx0_", "rx_"). */
const char *
health_eth_dir(const char *name)
{
	for (const char *p = name; *p != '\0'; p++) {
		if ((p != name && strchr("_-", p[-1]) == NULL) || (p[0] != 'r' && p[0] != 't') ||
		    p[1] != 'x' || (p[2] != '\0' && strchr("_-0123456789", p[2]) == NULL))
			continue;
		return p[0] == 'r' ? "rx" : "tx";
	}
	return "";
}

int
health_eth_sev(const char *name, long long d, double secs, double *share)
{
	int kind = health_eth_kind(name);

	*share = -1;
	if (d <= 0 || kind == ETH_TRANSITION)
		return SEV_OK;
	if (kind == ETH_STORM)
		return SEV_WARN;
	if (kind == ETH_CONGESTION)
		return SEV_INFO;
	if (secs >= HEALTH_RATE_MIN_S)
		*share = kind == ETH_DURATION ? (double)d / (secs * 1e6) : (double)d / secs;
	if (kind == ETH_DURATION)
		return *share >= HEALTH_PAUSE_SHARE ? SEV_WARN : SEV_OK;
	return *share >= HEALTH_PAUSE_RATE ? SEV_WARN : SEV_INFO;
}

/* Seconds from the baseline to this read; -1 when unknown. */
static double
health_ctr_secs(const struct facts *f, const char *btime)
{
	const char *now = facts_get(f, "ctr.time");

	return now != NULL && btime != NULL ? atof(now) - atof(btime) : -1;
}

static const char *
health_eth_why(const char *dir)
{
	if (strcmp(dir, "rx") == 0)
		return "the switch asked this host to pause: the fabric downstream is congested";
	if (strcmp(dir, "tx") == 0)
		return "this host asked the switch to pause: it could not take in what came "
		    "(PCIe, memory, a slow receiver)";
	return "flow control acted: the fabric is congested";
}

/* A storm, one line: what was measured and where to look. */
static void
health_eth_storm(struct check_result *r, int h, int sev, const char *k, const char *ifn,
    const char *name, long long d, double secs, double share)
{
	char what[192];

	if (health_eth_kind(name) == ETH_STORM)
		snprintf(what, sizeof what, "the NIC's pause storm guard acted %lld time%s: this "
		    "host kept sending pause frames (a hung receiver, PCIe or memory)", d,
		    d == 1 ? "" : "s");
	else if (health_eth_kind(name) == ETH_DURATION)
		snprintf(what, sizeof what, "paused %.0f%% of the %.1f h since the baseline",
		    share * 100, secs / 3600);
	else
		snprintf(what, sizeof what, "%lld frames in %.1f h (%.0f/s)", d, secs / 3600, share);
	check_find(r, h, sev, k, "NIC %s: %s: a pause storm, %s; %s; a port paused without end "
	    "stalls every flow through its switch: find the host that sends them (tx_*pause*) "
	    "and check it", ifn, name, what, health_eth_why(health_eth_dir(name)));
}

void
health_eth_ctr(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v, const char *bv, const char *btime)
{
	const char *dot = strrchr(k, '.'), *name = dot != NULL ? dot + 1 : "";
	char ifn[FACTS_KEY_MAX];
	long long n = atoll(v), d = n - (bv != NULL ? atoll(bv) : 0);
	double secs = health_ctr_secs(&r->hosts[h].facts, btime), share;
	int sev;

	if (dot == NULL || dot <= k + 8)
		return;
	snprintf(ifn, sizeof ifn, "%.*s", (int)(dot - k - 8), k + 8);
	if (btime == NULL) {
		if (health_eth_kind(name) == ETH_STORM && n > 0)
			check_find(r, h, check_conf_sev(c, k, SEV_INFO), k, "NIC %s: %s is %lld since "
			    "the driver loaded: the NIC's pause storm guard acted (save a baseline to "
			    "see new ones)", ifn, name, n);
		return;
	}
	if ((sev = health_eth_sev(name, d, secs, &share)) == SEV_OK)
		return;
	if (sev >= SEV_WARN)
		health_eth_storm(r, h, check_conf_sev(c, k, sev), k, ifn, name, d, secs, share);
	else
		check_find(r, h, check_conf_sev(c, k, sev), k, "NIC %s: %s grew by %lld since the "
		    "baseline: %s", ifn, name, d, health_eth_kind(name) == ETH_CONGESTION ?
		    "congestion control acted (ECN marks, CNPs): the fabric is congested" :
		    health_eth_why(health_eth_dir(name)));
}

void
health_ethtool_skip(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v)
{
	if (facts_is_skipped(v))
		check_find(r, h, check_conf_sev(c, k, SEV_INFO), k, "NIC %s: pause and congestion "
		    "statistics not checked: %s", k + 12, v + strlen(FACTS_SKIP));
}

/* "GPU 3 (00000000:3B:00.0)" with the bus id where the facts have it. */
static void
health_nvlink_gpu(const struct facts *f, unsigned g, char *out, size_t len)
{
	char key[64];
	const char *bus;

	snprintf(key, sizeof key, "gpu.%u.bus_id", g);
	if ((bus = facts_get(f, key)) != NULL && !facts_is_skipped(bus))
		snprintf(out, len, "GPU %u (%.40s)", g, bus);
	else
		snprintf(out, len, "GPU %u", g);
}

static void
health_nvlink_count(struct check_result *r, int h, int sev, const char *k, unsigned l,
    const char *gpu, const char *what, long long d, double secs)
{
	char rate[64] = "";
	int retry = strcmp(what, "replay") == 0 || strcmp(what, "recovery") == 0;

	if (secs >= 360)	/* a rate over minutes says little */
		snprintf(rate, sizeof rate, " in %.1f h (%.1f/h)", secs / 3600, d / (secs / 3600));
	check_find(r, h, sev, k, "NVLink %u of %s: %s %s grew by %lld since the baseline%s: %s",
	    l, gpu, what, retry ? "count" : "errors", d, rate, retry ? "the link is retrying "
	    "(a marginal link or NVSwitch port); if it keeps growing, drain the node and have "
	    "the board checked" : "corrected by replay; many mean a marginal link");
}

void
health_nvlink_ctr(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v, const char *bv, const char *btime)
{
	char gpu[80];
	unsigned g, l;
	int off = 0, retry;
	long long n = atoll(v), d = n - (bv != NULL ? atoll(bv) : 0);
	const char *what;

	if (sscanf(k, "ctr.nvlink.%u.%u.%n", &g, &l, &off) != 2 || off == 0)
		return;
	what = k + off;
	retry = strcmp(what, "replay") == 0 || strcmp(what, "recovery") == 0;
	health_nvlink_gpu(&r->hosts[h].facts, g, gpu, sizeof gpu);
	if (strcmp(what, "state") == 0) {
		if (strcmp(v, "down") == 0 && bv != NULL && strcmp(bv, "up") == 0)
			check_find(r, h, check_conf_sev(c, k, SEV_ERROR), k, "NVLink %u of %s is "
			    "down; it was up in the baseline: drain the node; see nvidia-smi nvlink "
			    "-s and the fabric manager's log", l, gpu);
	} else if (btime == NULL) {
		if (retry && n > 0)
			check_find(r, h, check_conf_sev(c, k, SEV_INFO), k, "NVLink %u of %s: %s "
			    "count is %lld since the driver loaded (save a baseline to see new ones)",
			    l, gpu, what, n);
	} else if (d > 0)
		health_nvlink_count(r, h, check_conf_sev(c, k, retry ? SEV_WARN : SEV_INFO), k, l,
		    gpu, what, d, health_ctr_secs(&r->hosts[h].facts, btime));
}
