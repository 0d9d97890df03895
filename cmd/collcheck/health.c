/*
 * The host's health from its kernel log and error counters (the facts of
 * core/facts/facts_kmsg.c and facts_counters.c): Xid and SXid events by the
 * catalog (health_xid.c), PCIe AER, NIC link flaps and resets, and counters
 * that grew since the baseline (the NICs' pause statistics and NVLink's in
 * health_ctr.c). These facts differ between hosts by nature,
 * so they are never compared across hosts (health_identity); the baseline
 * keeps each host's counters under "<key>@<host>" instead of the majority's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "health_ctr.h"
#include "msg.h"

#define HEALTH_FLAPS 3		/* link downs in the log that make a flap a warning */
#define HEALTH_AER_COR 100	/* corrected AER lines that make them a warning */
#define HEALTH_LAST 160		/* bytes of a log line a finding quotes */

int
health_identity(const char *key)
{
	return strcmp(key, "kmsg") == 0 || strncmp(key, "kmsg.", 5) == 0 ||
	    strncmp(key, "ctr.", 4) == 0;
}

static int
health_same_addr(const char *a, unsigned d, unsigned b, unsigned s)
{
	unsigned x, y, z;

	return sscanf(a, "%x:%x:%x", &x, &y, &z) == 3 && x == d && y == b && z == s;
}

/*
 * Without NVML, the GPU's place among the NVIDIA functions in sysfs ("pci.*.kind"
 * = "gpu ..."): NVML numbers GPUs in PCI bus order too. -1 when it is none of them.
 */
static int
health_pci_gpu(const struct facts *f, unsigned d, unsigned b, unsigned s)
{
	const char *mine = NULL;
	int below = 0;

	for (int i = 0; i < f->n && mine == NULL; i++)
		if (strncmp(f->v[i].key, "pci.", 4) == 0 && strncmp(f->v[i].val, "gpu", 3) == 0 &&
		    health_same_addr(f->v[i].key + 4, d, b, s))
			mine = f->v[i].key;
	for (int i = 0; i < f->n && mine != NULL; i++)
		if (strncmp(f->v[i].key, "pci.", 4) == 0 && strncmp(f->v[i].val, "gpu", 3) == 0 &&
		    strcmp(f->v[i].key, mine) < 0)
			below++;
	return mine != NULL ? below : -1;
}

/* "GPU 3 (0000:3b:00)" where a GPU's bus id is this address, else the address. */
static void
health_dev_name(const struct facts *f, const char *addr, char *out, size_t len)
{
	unsigned d, b, s;
	int g;

	snprintf(out, len, "%s", addr);
	if (sscanf(addr, "%x:%x:%x", &d, &b, &s) != 3)
		return;
	for (int i = 0; i < f->n; i++) {
		const char *k = f->v[i].key, *dot = strrchr(k, '.');

		if (strncmp(k, "gpu.", 4) == 0 && dot != NULL && strcmp(dot, ".bus_id") == 0 &&
		    health_same_addr(f->v[i].val, d, b, s)) {
			snprintf(out, len, "GPU %.*s (%s)", (int)(dot - k - 4), k + 4, addr);
			return;
		}
	}
	if ((g = health_pci_gpu(f, d, b, s)) >= 0)
		snprintf(out, len, "GPU %d (%s)", g, addr);
}

/* "kmsg.xid.0000:3b:00.79": the device and the last part. */
static int
health_split(const char *key, size_t skip, char *dev, size_t dlen, const char **what)
{
	const char *dot = strrchr(key, '.');

	if (strlen(key) <= skip || dot == NULL || dot < key + skip)
		return -1;
	snprintf(dev, dlen, "%.*s", (int)(dot - key - skip), key + skip);
	*what = dot + 1;
	return 0;
}

/* "3: text" -> 3 and the text, cleaned and cut for a finding. */
static long
health_count(const char *val, char *last, size_t len)
{
	char *end;
	long n = strtol(val, &end, 10);

	snprintf(last, len, "%s", strncmp(end, ": ", 2) == 0 ? end + 2 : "");
	if (strlen(last) > HEALTH_LAST)
		snprintf(last + HEALTH_LAST - 3, len - HEALTH_LAST + 3, "...");
	msg_clean(last);
	return n;
}

static void
health_xid(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v, int sxid)
{
	char dev[FACTS_KEY_MAX], name[FACTS_KEY_MAX + 32], last[FACTS_VAL_MAX];
	const char *num;
	const struct health_xid *x;
	long n;

	if (health_split(k, sxid ? 10 : 9, dev, sizeof dev, &num) != 0)
		return;
	n = health_count(v, last, sizeof last);
	health_dev_name(&r->hosts[h].facts, dev, name, sizeof name);
	if (sxid) {
		int fatal = strstr(last, ", Fatal") != NULL;

		check_find(r, h, check_conf_sev(c, k, fatal ? SEV_ERROR : SEV_WARN), k, "SXid %s "
		    "on NVSwitch %s, %ld time%s (%s): see the fabric manager's log; a fatal SXid "
		    "needs the node rebooted (last: %s)", num, dev, n, n == 1 ? "" : "s", fatal ?
		    "fatal" : "non-fatal", last);
		return;
	}
	if ((x = health_xid_find(atoi(num))) == NULL)
		check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "Xid %s on %s, %ld time%s: "
		    "not in coll's catalog: look it up in NVIDIA's Xid catalog (last: %s)", num, name,
		    n, n == 1 ? "" : "s", last);
	else
		check_find(r, h, check_conf_sev(c, k, x->sev), k, "Xid %s on %s, %ld time%s: %s: "
		    "%s (last: %s)", num, name, n, n == 1 ? "" : "s", x->what, x->remedy, last);
}

static void
health_aer_log(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v)
{
	char dev[FACTS_KEY_MAX], name[FACTS_KEY_MAX + 32], last[FACTS_VAL_MAX];
	const char *what;
	long n;
	int fatal, nonfatal;

	if (health_split(k, 9, dev, sizeof dev, &what) != 0)
		return;
	n = health_count(v, last, sizeof last);
	health_dev_name(&r->hosts[h].facts, dev, name, sizeof name);
	fatal = strcmp(what, "fatal") == 0;
	nonfatal = strcmp(what, "nonfatal") == 0;
	check_find(r, h, check_conf_sev(c, k, fatal ? SEV_ERROR : nonfatal || n >= HEALTH_AER_COR ?
	    SEV_WARN : SEV_INFO), k, "PCIe AER: %ld %s error%s from %s in the kernel log: %s "
	    "(last: %s)", n, fatal ? "fatal" : nonfatal ? "uncorrected (non-fatal)" : "corrected",
	    n == 1 ? "" : "s", name, fatal ? "the device was lost or reset; drain the node and "
	    "check it and its link" : nonfatal ? "transactions were lost; check the device and "
	    "its link" : "the link recovers by itself; many mean a marginal link (reseat, check "
	    "the riser)", last);
}

static void
health_nic_log(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v)
{
	char dev[FACTS_KEY_MAX], last[FACTS_VAL_MAX];
	const char *what;
	long n;

	if (health_split(k, 9, dev, sizeof dev, &what) != 0 || strcmp(what, "link_up") == 0)
		return;
	n = health_count(v, last, sizeof last);
	/* A link that went down once or twice is a cable moved or a switch rebooted: no finding. */
	if (strcmp(what, "link_down") == 0 || strcmp(what, "port_state") == 0) {
		if (n >= HEALTH_FLAPS)
			check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "NIC %s: %s %ld times in "
			    "the kernel log: the link flaps; check the cable, transceiver and switch "
			    "port (last: %s)", dev, what[0] == 'l' ? "link went down" :
			    "port state changed", n, last);
	} else
		check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "NIC %s: %s %ld time%s in the "
		    "kernel log: check the NIC's firmware and driver messages (last: %s)", dev,
		    strcmp(what, "reset") == 0 ? "adapter reset" : "transmit timeout", n,
		    n == 1 ? "" : "s", last);
}

/* The host's baseline value of a counter; NULL when the baseline has none. */
static const char *
health_base(const struct facts *base, const char *host, const char *key)
{
	char bk[FACTS_KEY_MAX * 2];

	if (base == NULL)
		return NULL;
	snprintf(bk, sizeof bk, "%s@%s", key, host);
	return facts_get(base, bk);
}

/* " in 2.0 h (1.5/h)" after the baseline's time, or "". */
static void
health_rate(const struct facts *f, const char *btime, long long d, char *out, size_t len)
{
	const char *now = facts_get(f, "ctr.time");
	double hrs = now != NULL && btime != NULL ? (atof(now) - atof(btime)) / 3600 : 0;

	out[0] = '\0';
	if (hrs >= 0.1)	/* a rate over minutes says little */
		snprintf(out, len, " in %.1f h (%.1f/h)", hrs, (double)d / hrs);
}

static void
health_aer_ctr(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v, const char *bv, const char *btime)
{
	char dev[FACTS_KEY_MAX], name[FACTS_KEY_MAX + 32], rate[64];
	const char *what;
	long long n = atoll(v), d = n - (bv != NULL ? atoll(bv) : 0);

	if (health_split(k, 8, dev, sizeof dev, &what) != 0 || n <= 0)
		return;
	health_dev_name(&r->hosts[h].facts, dev, name, sizeof name);
	if (strcmp(what, "correctable") != 0)
		check_find(r, h, check_conf_sev(c, k, what[0] == 'f' ? SEV_ERROR : SEV_WARN), k,
		    "PCIe AER counter of %s: %lld %s errors since boot: %s", name, n, what[0] == 'f' ?
		    "fatal" : "non-fatal", what[0] == 'f' ? "drain the node and check the device "
		    "and its link" : "transactions were lost; check the device and its link");
	else if (btime == NULL)
		check_find(r, h, check_conf_sev(c, k, SEV_INFO), k, "PCIe AER counter of %s: %lld "
		    "correctable errors since boot (save a baseline to see new ones)", name, n);
	else if (d > 0) {
		health_rate(&r->hosts[h].facts, btime, d, rate, sizeof rate);
		check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "PCIe AER counter of %s: %lld "
		    "correctable errors, %lld more than the baseline%s: a marginal link (reseat, "
		    "check the riser)", name, n, d, rate);
	}
}

static void
health_rdma_ctr(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v, const char *bv, const char *btime)
{
	char dp[FACTS_KEY_MAX], rate[64], *dot;
	const char *name;
	long long n = atoll(v), d = n - (bv != NULL ? atoll(bv) : 0);
	int cong;

	if (health_split(k, 9, dp, sizeof dp, &name) != 0 || (dot = strrchr(dp, '.')) == NULL)
		return;
	*dot = '\0';
	cong = strstr(name, "cnp") != NULL || strstr(name, "ecn") != NULL;
	if (btime == NULL) {
		if (n > 0 && (strcmp(name, "link_downed") == 0 ||
		    strcmp(name, "link_error_recovery") == 0))
			check_find(r, h, check_conf_sev(c, k, SEV_INFO), k, "RDMA %s port %s: %s is "
			    "%lld since the counters were cleared (save a baseline to see new ones)",
			    dp, dot + 1, name, n);
		return;
	}
	if (d <= 0)
		return;
	health_rate(&r->hosts[h].facts, btime, d, rate, sizeof rate);
	check_find(r, h, check_conf_sev(c, k, cong ? SEV_INFO : SEV_WARN), k, "RDMA %s port %s: "
	    "%s grew by %lld since the baseline%s: %s", dp, dot + 1, name, d, rate, cong ?
	    "congestion control acted (ECN marks, CNPs): the fabric is congested" :
	    "the link is unstable; check the cable, transceiver and switch port");
}

static void
health_gids(struct check_result *r, int h, const struct check_conf *c, const char *k,
    const char *v, const char *bv)
{
	char dev[FACTS_KEY_MAX];
	const char *port;

	if (bv == NULL || strcmp(v, bv) == 0 || health_split(k, 9, dev, sizeof dev, &port) != 0)
		return;
	check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "RDMA %s port %s: GID table changed "
	    "since the baseline (%s, was %s): an address was added or moved; peers holding the "
	    "old GID fail to connect", dev, port, v, bv);
}

static void
health_host(struct check_result *r, int h, const struct check_conf *c, const struct facts *base)
{
	const struct check_host *ch = &r->hosts[h];
	const char *btime = health_base(base, ch->name, "ctr.time");

	for (int i = 0; i < ch->facts.n; i++) {
		const char *k = ch->facts.v[i].key, *v = ch->facts.v[i].val;
		const char *bv = health_base(btime != NULL ? base : NULL, ch->name, k);

		if (check_conf_ignored(c, k))
			continue;
		/* A fixture tree without a log is no finding: the tests of other facts use them. */
		if (strcmp(k, "kmsg") == 0 && facts_is_skipped(v) && strstr(v, "fixture") == NULL)
			check_find(r, h, check_conf_sev(c, k, SEV_INFO), k, "kernel log %s: Xid, AER "
			    "and NIC events not checked", v);
		else if (strncmp(k, "kmsg.xid.", 9) == 0)
			health_xid(r, h, c, k, v, 0);
		else if (strncmp(k, "kmsg.sxid.", 10) == 0)
			health_xid(r, h, c, k, v, 1);
		else if (strncmp(k, "kmsg.aer.", 9) == 0)
			health_aer_log(r, h, c, k, v);
		else if (strncmp(k, "kmsg.nic.", 9) == 0)
			health_nic_log(r, h, c, k, v);
		else if (strncmp(k, "ctr.aer.", 8) == 0)
			health_aer_ctr(r, h, c, k, v, bv, btime);
		else if (strncmp(k, "ctr.rdma.", 9) == 0)
			health_rdma_ctr(r, h, c, k, v, bv, btime);
		else if (strncmp(k, "ctr.gids.", 9) == 0)
			health_gids(r, h, c, k, v, bv);
		else if (strncmp(k, "ctr.eth.", 8) == 0)
			health_eth_ctr(r, h, c, k, v, bv, btime);
		else if (strncmp(k, "ctr.ethtool.", 12) == 0)
			health_ethtool_skip(r, h, c, k, v);
		else if (strncmp(k, "ctr.nvlink.", 11) == 0)
			health_nvlink_ctr(r, h, c, k, v, bv, btime);
	}
}

void
health_analyse(struct check_result *r, const struct check_args *a, const struct facts *base)
{
	for (int h = 0; h < r->nhosts; h++)
		if (r->hosts[h].rank >= 0)
			health_host(r, h, &a->conf, base);
}

/* Each host's counters under "<key>@<host>": a baseline is a host's own for them. */
void
health_baseline_save(const struct check_result *r, json_t *facts)
{
	char bk[FACTS_KEY_MAX * 2];

	for (int h = 0; h < r->nhosts; h++)
		for (int i = 0; r->hosts[h].rank >= 0 && i < r->hosts[h].facts.n; i++) {
			const struct fact *f = &r->hosts[h].facts.v[i];

			if (strncmp(f->key, "ctr.", 4) != 0)
				continue;
			snprintf(bk, sizeof bk, "%s@%s", f->key, r->hosts[h].name);
			if (strlen(bk) < FACTS_KEY_MAX)
				json_object_set_new(facts, bk, json_string(f->val));
		}
}

/* "2026-11-28", "2026-11-28T10:00" or with ":SS" (or a blank for the T) into tm; 0, or -1. */
static int
health_since_date(const char *s, struct tm *tm)
{
	int y, mo, d, H = 0, M = 0, S = 0, n = 0, m = 0;

	if (!(sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && s[n] == '\0') &&
	    !(sscanf(s, "%4d-%2d-%2d%*1[T ]%2d:%2d%n", &y, &mo, &d, &H, &M, &n) == 5 &&
	    (s[n] == '\0' || (sscanf(s + n, ":%2d%n", &S, &m) == 1 && s[n + m] == '\0'))))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || H < 0 || H > 23 || M < 0 || M > 59 ||
	    S < 0 || S > 60)
		return -1;
	tm->tm_year = y - 1900;
	tm->tm_mon = mo - 1;
	tm->tm_mday = d;
	tm->tm_hour = H;
	tm->tm_min = M;
	tm->tm_sec = S;
	tm->tm_isdst = -1;
	return 0;
}

/* "2h", "30m", "1.5d", "90s" ago, or a local time "2026-11-28T10:00[:SS]" (or a date). */
int
health_since_parse(const char *s, double *epoch, char *err, size_t len)
{
	struct tm tm = { 0 };
	char *end;
	double v = strtod(s, &end);

	if (end != s && v >= 0 && isfinite(v) && end[0] != '\0' && end[1] == '\0' &&
	    strchr("smhd", end[0]) != NULL) {
		*epoch = (double)time(NULL) - v * (end[0] == 's' ? 1 : end[0] == 'm' ? 60 :
		    end[0] == 'h' ? 3600 : 86400);
		return 0;
	}
	if (health_since_date(s, &tm) == 0 && (*epoch = (double)mktime(&tm)) > 0)
		return 0;
	snprintf(err, len, "--since '%.64s': give a time ago (2h, 30m, 1d) or a local time "
	    "(2026-11-28T10:00)", s);
	return -1;
}
