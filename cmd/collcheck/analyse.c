/*
 * The analysis: every fact compared across hosts (identical values grouped,
 * the hosts that differ from the majority named), compared with a baseline
 * when one is given, and the rules for known NCCL pitfalls, each with its
 * severity. A finding is an error when jobs fail or hang because of it, a
 * warning when they run slower or are at risk, info otherwise; errors and
 * warnings make collcheck exit 1.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpubw.h"
#include "retried.h"
#include "xmalloc.h"

const char *
check_sev_name(int sev)
{
	static const char *const names[] = { "OK", "INFO", "WARN", "ERROR", "UNREACHABLE" };

	return sev >= 0 && sev <= SEV_UNREACHABLE ? names[sev] : "?";
}

void
check_find(struct check_result *r, int host, int sev, const char *key, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	r->find = xreallocarray(r->find, (size_t)r->nfind + 1, sizeof *r->find);
	r->find[r->nfind++] = (struct check_finding){ host, sev, xstrdup(key), xstrdup(msg) };
	if (host >= 0 && sev > r->hosts[host].sev)
		r->hosts[host].sev = sev;
}

/* Facts that name a host rather than describe how it is set up: never compared. */
int
check_identity_key(const char *key)
{
	static const char *const pats[] = { "host.name", "gpu.*.uuid", "gpu.*.bus_id",
	    "rdma.*.gid0", "net.*.carrier_changes", "collcheck" };

	for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
		if (fnmatch(pats[i], key, 0) == 0)
			return 1;
	return health_identity(key) || gpubw_identity(key);
}

/* How much a difference in this fact matters. */
static int
check_key_sev(const struct check_conf *c, const char *key)
{
	static const char *const errors[] = { "nvidia.driver", "cuda.driver", "cuda.runtime",
	    "nccl.version", "gpu.count", "env.NCCL_*", "ncclconf.*.*", "rdma.count",
	    "rdma.*.state" };
	static const char *const infos[] = { "cuda.runtime_path", "nccl.path", "net.*.state",
	    "ncclconf.etc", "ncclconf.user", "pci.*.kind", "hugepages.*", "mem.total" };
	int sev = SEV_WARN;

	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
		if (fnmatch(errors[i], key, 0) == 0)
			sev = SEV_ERROR;
	for (size_t i = 0; i < sizeof infos / sizeof infos[0]; i++)
		if (fnmatch(infos[i], key, 0) == 0)
			sev = SEV_INFO;
	return check_conf_sev(c, key, sev);
}

/* "NCCL_IB_HCA" for env keys, the key itself for the rest. */
static const char *
check_key_label(const char *key)
{
	return strncmp(key, "env.", 4) == 0 ? key + 4 : key;
}

/* Every key any reachable host has, once. */
static char **
check_all_keys(const struct check_result *r, int *nkeys)
{
	struct facts u;
	char **keys;

	facts_init(&u);
	for (int h = 0; h < r->nhosts; h++)
		for (int i = 0; i < r->hosts[h].facts.n; i++)
			if (facts_get(&u, r->hosts[h].facts.v[i].key) == NULL)
				facts_add(&u, r->hosts[h].facts.v[i].key, "%s", "");
	facts_sort(&u);
	keys = xcalloc((size_t)u.n + 1, sizeof *keys);
	for (int i = 0; i < u.n; i++)
		keys[i] = xstrdup(u.v[i].key);
	*nkeys = u.n;
	facts_free(&u);
	return keys;
}

static const char *
check_val(const struct check_host *h, const char *key)
{
	const char *v = facts_get(&h->facts, key);

	return v != NULL ? v : "(not set)";
}

/*
 * One key across hosts: the values' groups; the largest is the majority when
 * it is larger than every other, and the hosts outside it are named. Without
 * a majority (two hosts, or a tie) every host is named with its value.
 */
static void
check_compare_key(struct check_result *r, const struct check_args *a, const char *key)
{
	int n = r->nhosts, *grp = xcalloc((size_t)n, sizeof *grp), *size = xcalloc((size_t)n, sizeof
	    *size), ngrp = 0, best = -1, tie = 0, live = 0;
	const char **gval = xcalloc((size_t)n, sizeof *gval);

	for (int h = 0; h < n; h++) {
		const char *v;
		int g;

		if (r->hosts[h].rank < 0)
			continue;
		live++;
		v = check_val(&r->hosts[h], key);
		for (g = 0; g < ngrp && strcmp(gval[g], v) != 0; g++)
			;
		if (g == ngrp)
			gval[ngrp++] = v;
		grp[h] = g;
		size[g]++;
	}
	if (ngrp > 1) {
		int sev = check_key_sev(&a->conf, key);

		r->differ_keys++;
		for (int g = 0; g < ngrp; g++)
			if (best < 0 || size[g] > size[best])
				best = g, tie = 0;
			else if (size[g] == size[best])
				tie = 1;
		for (int h = 0; h < n; h++) {
			if (r->hosts[h].rank < 0 || (!tie && grp[h] == best))
				continue;
			if (!tie)
				check_find(r, h, sev, key, "%s=%s differs from %d other%s (%s)",
				    check_key_label(key), gval[grp[h]], size[best], size[best] > 1 ?
				    "s" : "", gval[best]);
			else
				check_find(r, h, sev, key, "%s=%s, no majority (%d values on %d hosts)",
				    check_key_label(key), gval[grp[h]], ngrp, live);
		}
	} else if (ngrp == 1) {
		r->agree_keys++;
	}
	free(grp);
	free(size);
	free(gval);
}

static void
check_compare(struct check_result *r, const struct check_args *a)
{
	int nkeys;
	char **keys = check_all_keys(r, &nkeys);

	for (int i = 0; i < nkeys; i++) {
		if (!check_identity_key(keys[i]) && !check_conf_ignored(&a->conf, keys[i]))
			check_compare_key(r, a, keys[i]);
		free(keys[i]);
	}
	free(keys);
}

/* Each host against the golden facts: what differs, what is missing, what is new. */
static void
check_against(struct check_result *r, const struct check_args *a, const struct facts *base)
{
	for (int h = 0; h < r->nhosts; h++) {
		const struct check_host *ch = &r->hosts[h];

		if (ch->rank < 0)
			continue;
		for (int i = 0; i < base->n; i++) {
			const char *k = base->v[i].key, *v = facts_get(&ch->facts, k);

			if (check_identity_key(k) || check_conf_ignored(&a->conf, k) ||
			    (v != NULL && strcmp(v, base->v[i].val) == 0))
				continue;
			check_find(r, h, check_key_sev(&a->conf, k), k, "%s=%s differs from the "
			    "baseline (%s)", check_key_label(k), v != NULL ? v : "(not set)",
			    base->v[i].val);
		}
		for (int i = 0; i < ch->facts.n; i++) {
			const char *k = ch->facts.v[i].key;

			if (facts_get(base, k) != NULL || check_identity_key(k) ||
			    check_conf_ignored(&a->conf, k))
				continue;
			check_find(r, h, strncmp(k, "env.", 4) == 0 ? check_key_sev(&a->conf, k) :
			    SEV_INFO, k, "%s=%s is not in the baseline", check_key_label(k),
			    ch->facts.v[i].val);
		}
	}
}

/* "rdma.mlx5_0.1.state" -> dev "mlx5_0", port "1", field "state". */
static int
check_rdma_key(const char *key, char *dev, size_t dlen, char *port, size_t plen,
    const char **field)
{
	const char *a = key + 5, *b, *c;

	if (strncmp(key, "rdma.", 5) != 0 || (b = strchr(a, '.')) == NULL ||
	    (c = strchr(b + 1, '.')) == NULL || strchr(c + 1, '.') != NULL)
		return -1;
	snprintf(dev, dlen, "%.*s", (int)(b - a), a);
	snprintf(port, plen, "%.*s", (int)(c - b - 1), b + 1);
	*field = c + 1;
	return 0;
}

static double
check_best_rate(const struct check_result *r)
{
	double best = 0;

	for (int h = 0; h < r->nhosts; h++)
		for (int i = 0; i < r->hosts[h].facts.n; i++) {
			const char *k = r->hosts[h].facts.v[i].key, *f;
			char d[64], p[16];

			if (check_rdma_key(k, d, sizeof d, p, sizeof p, &f) == 0 &&
			    strcmp(f, "rate") == 0 && atof(r->hosts[h].facts.v[i].val) > best)
				best = atof(r->hosts[h].facts.v[i].val);
		}
	return best;
}

/* Ports not ACTIVE, or slower than the fastest port of the cluster. */
static void
check_rdma_rules(struct check_result *r, int h, const struct check_conf *c, double best)
{
	const struct facts *f = &r->hosts[h].facts;

	for (int i = 0; i < f->n; i++) {
		const char *k = f->v[i].key, *v = f->v[i].val, *field, *ph;
		char dev[64], port[16], pk[FACTS_KEY_MAX];

		if (check_rdma_key(k, dev, sizeof dev, port, sizeof port, &field) != 0 ||
		    facts_is_skipped(v))
			continue;
		if (strcmp(field, "state") == 0 && strstr(v, "ACTIVE") == NULL) {
			snprintf(pk, sizeof pk, "rdma.%s.%s.phys_state", dev, port);
			ph = facts_get(f, pk);
			check_find(r, h, check_conf_sev(c, k, SEV_ERROR), k, "RDMA %s port %s is %s%s%s%s,"
			    " not ACTIVE", dev, port, v, ph ? " (" : "", ph ? ph : "", ph ? ")" : "");
		}
		if (strcmp(field, "rate") == 0 && atof(v) > 0 && atof(v) < best)
			check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "RDMA %s port %s runs at %s,"
			    " below the others' %g Gb/sec", dev, port, v, best);
	}
}

/* "gen4 x16" -> 4, 16. */
static int
check_link(const char *v, int *gen, int *width)
{
	return v != NULL && sscanf(v, "gen%d x%d", gen, width) == 2 ? 0 : -1;
}

/* PCIe links below their maximum and ACS on the way to a GPU or NIC. */
static void
check_pci_rules(struct check_result *r, int h, const struct check_conf *c)
{
	const struct facts *f = &r->hosts[h].facts;

	for (int i = 0; i < f->n; i++) {
		const char *k = f->v[i].key, *v = f->v[i].val, *dot = strrchr(k, '.'), *maxv, *kind;
		char mk[FACTS_KEY_MAX], kk[FACTS_KEY_MAX];
		int g, w, mg, mw, gpu;
		size_t stem;

		if (dot == NULL || (strncmp(k, "pci.", 4) != 0 && strncmp(k, "gpu.", 4) != 0))
			continue;
		stem = (size_t)(dot - k);
		if (strncmp(k, "pci.", 4) == 0 && strcmp(dot, ".acs") == 0 && strncmp(v, "on", 2) == 0)
			check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "PCIe ACS %s above %.*s: "
			    "peer-to-peer traffic (GPUDirect) detours through the root complex", v,
			    (int)(stem - 4), k + 4);
		if (strcmp(dot, ".link") != 0 && strcmp(dot, ".pcie") != 0)
			continue;
		snprintf(mk, sizeof mk, "%.*s%s", (int)stem, k, strcmp(dot, ".link") == 0 ?
		    ".link_max" : ".pcie_max");
		snprintf(kk, sizeof kk, "%.*s.kind", (int)stem, k);
		maxv = facts_get(f, mk);
		kind = facts_get(f, kk);
		gpu = strncmp(k, "gpu.", 4) == 0 || (kind != NULL && strncmp(kind, "gpu", 3) == 0);
		if (check_link(v, &g, &w) != 0 || check_link(maxv, &mg, &mw) != 0)
			continue;
		if (w < mw)
			check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "PCIe link of %.*s degraded:"
			    " x%d of x%d", (int)stem - 4, k + 4, w, mw);
		/* An idle GPU lowers its link's speed to save power: that is no fault. */
		else if (g < mg)
			check_find(r, h, check_conf_sev(c, k, gpu ? SEV_INFO : SEV_WARN), k, "PCIe link "
			    "of %.*s at gen%d of gen%d%s", (int)stem - 4, k + 4, g, mg, gpu ?
			    " (GPUs slow an idle link down)" : "");
	}
}

static void
check_gpu_rules(struct check_result *r, int h, const struct check_conf *c)
{
	const struct facts *f = &r->hosts[h].facts;

	for (int i = 0; i < f->n; i++) {
		const char *k = f->v[i].key, *v = f->v[i].val, *dot = strrchr(k, '.');

		if (strncmp(k, "gpu.", 4) != 0 || dot == NULL || facts_is_skipped(v))
			continue;
		if (strcmp(dot, ".ecc_uncorrected") == 0 && strcmp(v, "0") != 0)
			check_find(r, h, check_conf_sev(c, k, SEV_ERROR), k, "%s: %s uncorrected ECC "
			    "errors since the driver loaded", k, v);
		if (strcmp(dot, ".remapped_rows") == 0 && (strstr(v, "pending") || strstr(v,
		    "failed")))
			check_find(r, h, check_conf_sev(c, k, SEV_ERROR), k, "%s: row remapping %s: "
			    "reset the GPU", k, v);
		if (strcmp(dot, ".clock_events") == 0 && strcmp(v, "none") != 0)
			check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "%s: clocks held back by %s",
			    k, v);
	}
}

/* NCCL_IB_HCA matches by prefix unless an entry starts with '=': mlx5_1 takes mlx5_10 too. */
static void
check_ib_hca(struct check_result *r, int h, const struct check_conf *c)
{
	const struct facts *f = &r->hosts[h].facts;
	const char *v = facts_get(f, "env.NCCL_IB_HCA"), *k = "env.NCCL_IB_HCA";
	char buf[FACTS_VAL_MAX], *save = NULL;
	int exact = 0, ndev = 0, not = 0;

	if (v == NULL || facts_get(f, "rdma.count") == NULL)
		return;
	snprintf(buf, sizeof buf, "%s", v);
	{
		char *p = buf;

		if (*p == '^')
			p++, not = 1;
		if (*p == '=')
			exact = 1, p++;
		if (exact)
			return;
		for (char *e = strtok_r(p, ",", &save); e != NULL; e = strtok_r(NULL, ",", &save)) {
			char name[64], *colon;
			int hits = 0, same = 0;
			const char *also = NULL;

			snprintf(name, sizeof name, "%s", e);
			if ((colon = strchr(name, ':')) != NULL)
				*colon = '\0';
			ndev = 0;
			for (int i = 0; i < f->n; i++) {
				char dev[64], port[16];
				const char *field;

				if (check_rdma_key(f->v[i].key, dev, sizeof dev, port, sizeof port,
				    &field) != 0 || strcmp(field, "state") != 0)
					continue;
				ndev++;
				if (strncmp(dev, name, strlen(name)) == 0) {
					hits++;
					if (strcmp(dev, name) == 0)
						same = 1;
					else
						also = f->v[i].key + 5;
				}
			}
			if (also != NULL)
				check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "NCCL_IB_HCA=%s: "
				    "'%s' matches by prefix, so it also takes %.*s: write '%s=%s' for "
				    "exactly these", v, name, (int)strcspn(also, "."), also, not ? "^" : "",
				    v + not);
			else if (!same && hits == 0 && ndev > 0)
				check_find(r, h, check_conf_sev(c, k, SEV_WARN), k, "NCCL_IB_HCA=%s "
				    "names %s, which this host does not have", v, name);
		}
	}
}

static void
check_host_rules(struct check_result *r, const struct check_args *a)
{
	const struct check_conf *c = &a->conf;
	double best = check_best_rate(r);

	for (int h = 0; h < r->nhosts; h++) {
		const struct check_host *ch = &r->hosts[h];
		const char *ml = facts_get(&ch->facts, "limits.memlock");
		const char *pm = facts_get(&ch->facts, "module.nvidia_peermem");
		const char *pm2 = facts_get(&ch->facts, "module.nv_peer_mem");
		const char *gc = facts_get(&ch->facts, "gpu.count");

		if (ch->rank < 0) {
			check_find(r, h, SEV_UNREACHABLE, "host", "%s", ch->why ? ch->why : "?");
			continue;
		}
		if (facts_get(&ch->facts, "collcheck") != NULL)
			check_find(r, h, SEV_ERROR, "collcheck", "%s",
			    facts_get(&ch->facts, "collcheck"));
		check_rdma_rules(r, h, c, best);
		check_pci_rules(r, h, c);
		check_gpu_rules(r, h, c);
		check_ib_hca(r, h, c);
		/* RDMA registers memory: below unlimited, large jobs fail to register buffers. */
		if (facts_get(&ch->facts, "rdma.count") != NULL && ml != NULL &&
		    strcmp(ml, "unlimited") != 0 && !check_conf_ignored(c, "limits.memlock"))
			check_find(r, h, check_conf_sev(c, "limits.memlock", SEV_WARN),
			    "limits.memlock", "memlock is %s: RDMA needs it unlimited", ml);
		if (facts_get(&ch->facts, "rdma.count") != NULL && gc != NULL && atoi(gc) > 0 &&
		    pm != NULL && strcmp(pm, "loaded") != 0 && (pm2 == NULL ||
		    strcmp(pm2, "loaded") != 0))
			check_find(r, h, check_conf_sev(c, "module.nvidia_peermem", SEV_WARN),
			    "module.nvidia_peermem", "GPUs and RDMA ports but no nvidia_peermem "
			    "module: GPUDirect RDMA is off, traffic is staged through host memory");
		if (r->clocks && fabs(ch->offset_us) / 1000.0 > c->clock_offset_ms)
			check_find(r, h, check_conf_sev(c, "clock.offset", SEV_WARN), "clock.offset",
			    "clock is %+.1f ms off rank 0's (above %g ms): timelines and timeouts "
			    "across hosts disagree", ch->offset_us / 1000.0, c->clock_offset_ms);
	}
}

static int
check_dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The value a fraction q of the way up the sorted values (q = 0.5: the median). */
double
check_quantile(double *v, int n, double q)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, check_dbl_cmp);
	return v[(int)(q * (n - 1) + 0.5)];
}

/*
 * Pairs below k x the reference bandwidth (or above f x the reference
 * latency); a host is named when most of its pairs are slow, since then the
 * fault is its own link rather than the other end's. The references are the
 * upper quartile of bandwidth and the lower quartile of latency, not the
 * median: one slow host of three makes two of three pairs slow, and the
 * median would be one of them.
 */
static void
check_links(struct check_result *r, const struct check_args *a)
{
	int n = r->nranks, np = 0;
	double *bw = xcalloc((size_t)n * n + 1, sizeof *bw), *lat = xcalloc((size_t)n * n + 1,
	    sizeof *lat), mbw, mlat;
	int *slow = xcalloc((size_t)n, sizeof *slow);

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (r->bw[(size_t)i * n + j] > 0) {
				bw[np] = r->bw[(size_t)i * n + j];
				lat[np++] = r->lat[(size_t)i * n + j];
			}
	mbw = check_quantile(bw, np, 0.75);
	mlat = check_quantile(lat, np, 0.25);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double b = r->bw[(size_t)i * n + j], l = r->lat[(size_t)i * n + j];
			int hi = r->rank_host[i], hj = r->rank_host[j];

			if (b <= 0 && l <= 0)
				continue;
			if (b < a->conf.link_bw_factor * mbw || l > a->conf.link_lat_factor * mlat) {
				slow[i]++;
				slow[j]++;
				check_find(r, -1, check_conf_sev(&a->conf, "links", SEV_WARN), "links",
				    "pair %s (rank %d) - %s (rank %d): %.2f GB/s, %.1f us (the others "
				    "reach %.2f GB/s, %.1f us)", r->hosts[hi].name, i, r->hosts[hj].name,
				    j, b, l, mbw, mlat);
			}
		}
	for (int i = 0; i < n && n > 2; i++)
		if (slow[i] * 2 > n - 1)
			check_find(r, r->rank_host[i], check_conf_sev(&a->conf, "links", SEV_WARN),
			    "links", "rank %d: %d of its %d links are slow (below %g x %.2f GB/s or "
			    "above %g x %.1f us)", i, slow[i], n - 1,
			    a->conf.link_bw_factor, mbw, a->conf.link_lat_factor, mlat);
	free(bw);
	free(lat);
	free(slow);
}

/*
 * More ranks on a host than it has CPUs: the pairs measured at once share
 * CPUs, so a slow pair says nothing about its link. No pair is judged; one
 * line says why (info: not a problem of the hosts).
 */
static int
check_oversubscribed(struct check_result *r)
{
	int *on = xcalloc((size_t)r->nhosts + 1, sizeof *on), worst = -1;

	for (int k = 0; k < r->nranks; k++)
		if (r->rank_host[k] >= 0 && r->rank_host[k] < r->nhosts)
			on[r->rank_host[k]]++;
	for (int h = 0; h < r->nhosts; h++) {
		const char *c = facts_get(&r->hosts[h].facts, "cpu.count");

		if (c != NULL && atoi(c) > 0 && on[h] > atoi(c) && worst < 0)
			worst = h;
	}
	if (worst >= 0)
		check_find(r, -1, SEV_INFO, "links", "links not judged: %d ranks on %s's %s CPUs "
		    "(oversubscribed), so their timings are unreliable", on[worst],
		    r->hosts[worst].name, facts_get(&r->hosts[worst].facts, "cpu.count"));
	free(on);
	return worst >= 0;
}

static void
check_allreduce_rules(struct check_result *r)
{
	size_t i;
	json_t *row;

	json_array_foreach(r->allreduce, i, row) {
		json_int_t wrong = json_integer_value(json_object_get(row, "wrong"));

		if (wrong > 0)
			check_find(r, -1, SEV_ERROR, "allreduce", "all-reduce of %" JSON_INTEGER_FORMAT
			    " bytes: %" JSON_INTEGER_FORMAT " wrong elements", json_integer_value(
			    json_object_get(row, "size")), wrong);
	}
}

void
check_analyse(struct check_result *r, const struct check_args *a, const struct facts *baseline)
{
	check_host_rules(r, a);
	health_analyse(r, a, baseline);
	gpubw_analyse(r, a);
	if (a->what & CHECK_ENV)
		check_compare(r, a);
	if (baseline != NULL)
		check_against(r, a, baseline);
	if (r->lat != NULL && r->nranks > 1 && !check_oversubscribed(r))
		check_links(r, a);
	if (r->allreduce != NULL)
		check_allreduce_rules(r);
	if (r->retries != NULL)
		retried_find(r);
}

void
check_result_free(struct check_result *r)
{
	for (int h = 0; h < r->nhosts; h++) {
		free(r->hosts[h].name);
		free(r->hosts[h].why);
		facts_free(&r->hosts[h].facts);
	}
	for (int i = 0; i < r->nfind; i++) {
		free(r->find[i].key);
		free(r->find[i].msg);
	}
	free(r->find);
	free(r->hosts);
	free(r->rank_host);
	free(r->lat);
	free(r->bw);
	json_decref(r->allreduce);
	json_decref(r->retries);
	facts_fold_free(&r->fold);
	memset(r, 0, sizeof *r);
}
