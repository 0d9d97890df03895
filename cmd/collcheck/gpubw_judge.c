/*
 * collcheck gpus's findings (the rules are argued in gpubw.c): each host's
 * copies against its model's floors (errors) and against the host's upper
 * quartile of the same kind (warnings), a failed copy (error), a pair
 * without the peer access the others have, and a GPU most of whose pairs
 * are slow, named as the fault rather than its peers. Each rule lists at
 * most GPUBW_LISTED findings per host and counts the rest in one more.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpubw.h"
#include "msg.h"
#include "xmalloc.h"

#define GPUBW_LISTED 4

enum { R_FAIL, R_FLOOR, R_SLOW, R_STAGED, R_RULES };

struct gpubw_judge {
	struct check_result *r;
	const struct check_conf *c;
	int h;
	const struct gpubw_host *g;
	double factor;
	int said[R_RULES], sev[R_RULES];
	int slow[CU_BW_MAX_GPUS];	/* pairs to or from each GPU that are slow or below floor */
	int small;		/* copies smaller than floors hold for: none applied */
};

/*
 * The floors of model, or NULL. They hold for copies large enough to run at
 * the link's rate (they were measured with 256 MiB); smaller ones (-s) are
 * bound by latency, and a floor would name every healthy GPU.
 */
static const struct gpubw_floor *
gpubw_judge_floor(const struct gpubw_judge *j, const char *model)
{
	return j->small ? NULL : gpubw_floor_for(j->c, model);
}

static void __attribute__((format(printf, 5, 6)))
gpubw_say(struct gpubw_judge *j, int rule, int sev, const char *key, const char *fmt, ...)
{
	char msg[900];
	va_list ap;

	sev = check_conf_sev(j->c, key, sev);
	/* The line that counts the unlisted ones takes the worst of them. */
	if (j->said[rule]++ >= GPUBW_LISTED) {
		if (sev > j->sev[rule])
			j->sev[rule] = sev;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	msg_clean(msg);
	check_find(j->r, j->h, sev, key, "%s", msg);
}

/* A copy's failure or floor: an error, a warning where another process used GPU a or b. */
static int
gpubw_sev(const struct gpubw_judge *j, int a, int b)
{
	return j->g->busy[a] > 0 || j->g->busy[b] > 0 ? SEV_WARN : SEV_ERROR;
}

static void
gpubw_gpu_name(const struct gpubw_host *g, int i, char *out, size_t len)
{
	snprintf(out, len, "GPU %d (%.32s)", i, g->bus[i] != NULL ? g->bus[i] : "?");
}

/* One host-device direction of GPU i: v against floor and the reference q. */
static void
gpubw_host_copy(struct gpubw_judge *j, int i, int d2h, double v, const char *why, double floor,
    double q)
{
	const char *dir = d2h ? "device to host" : "host to device";
	char key[48], name[64];

	snprintf(key, sizeof key, "gpubw.%s.%d", d2h ? "d2h" : "h2d", i);
	gpubw_gpu_name(j->g, i, name, sizeof name);
	if (v < 0)
		gpubw_say(j, R_FAIL, gpubw_sev(j, i, i), key, "%s: %s copy failed: %.160s: check the GPU "
		    "(nvidia-smi, the kernel log's Xid) and drain the node if it persists", name, dir,
		    why != NULL ? why : "?");
	else if (v > 0 && v < floor)
		gpubw_say(j, R_FLOOR, gpubw_sev(j, i, i), key, "%s %.48s: %s %.2f GB/s, below the floor of "
		    "%g GB/s for this model: check its PCIe link's speed and width (nvidia-smi -q "
		    "-d PCIE)", name, j->g->model[i] != NULL ? j->g->model[i] : "?", dir, v, floor);
	else if (v > 0 && v < j->factor * q)
		gpubw_say(j, R_SLOW, SEV_WARN, key, "%s: %s %.2f GB/s, below %g x %.2f GB/s (this "
		    "host's upper quartile): its PCIe link is degraded or shared (nvidia-smi -q -d "
		    "PCIE)", name, dir, v, j->factor, q);
}

/* The upper quartile of the copies of one kind that worked (kind: 0 h2d, 1 d2h, 2 direct
 * pairs, 3 staged pairs). */
static double
gpubw_reference(const struct gpubw_host *g, int kind)
{
	double v[CU_BW_MAX_GPUS * CU_BW_MAX_GPUS];
	int n = 0;

	for (int i = 0; i < g->n; i++)
		for (int k = 0; k < g->n; k++) {
			double x = kind == 0 ? g->h2d[i] : kind == 1 ? g->d2h[i] : g->p2p[i][k];

			if (kind < 2 && k > 0)
				break;
			if (x > 0 && (kind < 2 || (i != k && g->staged[i][k] == (kind == 3))))
				v[n++] = x;
		}
	return check_quantile(v, n, 0.75);
}

static void
gpubw_pair(struct gpubw_judge *j, int a, int b, double floor, double q, int any_direct)
{
	const struct gpubw_host *g = j->g;
	double v = g->p2p[a][b];
	char key[48];

	snprintf(key, sizeof key, "gpubw.p2p.%d.%d", a, b);
	if (v < 0) {
		gpubw_say(j, R_FAIL, gpubw_sev(j, a, b), key, "GPU %d -> GPU %d: copy failed: %.160s: check "
		    "both GPUs (nvidia-smi, the kernel log's Xid)", a, b, g->pwhy[a][b] != NULL ?
		    g->pwhy[a][b] : "?");
		return;
	}
	if (v == 0)
		return;
	if (g->staged[a][b] && any_direct)
		gpubw_say(j, R_STAGED, SEV_WARN, key, "GPU %d -> GPU %d: no peer access, while "
		    "other pairs have it: copies go through host memory (nvidia-smi topo -p2p r; "
		    "ACS, the IOMMU)", a, b);
	if (v < floor)
		gpubw_say(j, R_FLOOR, gpubw_sev(j, a, b), key, "GPU %d -> GPU %d: %.2f GB/s, below the "
		    "floor of %g GB/s for %.48s: check its NVLinks (nvidia-smi nvlink -s) and the "
		    "fabric manager", a, b, v, floor, g->model[a] != NULL ? g->model[a] : "?");
	else if (v < j->factor * q)
		gpubw_say(j, R_SLOW, SEV_WARN, key, "GPU %d -> GPU %d: %.2f GB/s, below %g x %.2f "
		    "GB/s (this host's upper quartile of pairs): the pair is loaded (another "
		    "job's copies) or its links are degraded (nvidia-smi nvlink -s)", a, b, v,
		    j->factor, q);
	else
		return;
	j->slow[a]++;
	j->slow[b]++;
}

static void
gpubw_pairs(struct gpubw_judge *j)
{
	const struct gpubw_host *g = j->g;
	double qd = gpubw_reference(g, 2), qs = gpubw_reference(g, 3);
	char name[64], key[32];

	for (int a = 0; a < g->n; a++)
		for (int b = 0; b < g->n; b++) {
			const struct gpubw_floor *fl = gpubw_judge_floor(j, g->model[a]);

			if (a != b)
				gpubw_pair(j, a, b, fl != NULL ? fl->p2p : 0, g->staged[a][b] ? qs : qd,
				    qd > 0);
		}
	/* Most of a GPU's pairs slow: the fault is its own, not its peers'. */
	for (int i = 0; i < g->n && g->n > 2; i++)
		if (j->slow[i] > g->n - 1) {
			gpubw_gpu_name(g, i, name, sizeof name);
			snprintf(key, sizeof key, "gpubw.gpu.%d", i);
			check_find(j->r, j->h, check_conf_sev(j->c, key, SEV_WARN), key, "%s: %d of "
			    "its %d copies to and from other GPUs are slow: the GPU or its NVLinks, "
			    "not its peers (nvidia-smi nvlink -s)", name, j->slow[i], 2 * (g->n - 1));
		}
}

/* Whether the host said it measured nothing; a finding says why. */
static int
gpubw_not_measured(struct gpubw_judge *j, const char *v)
{
	char why[FACTS_VAL_MAX];

	if (v == NULL)
		return 1;
	if (!facts_is_skipped(v) && strncmp(v, "failed: ", 8) != 0)
		return 0;
	snprintf(why, sizeof why, "%s", strchr(v, ' ') + 1);
	msg_clean(why);
	if (facts_is_skipped(v))
		check_find(j->r, j->h, check_conf_sev(j->c, "gpubw", SEV_INFO), "gpubw", "GPUs "
		    "not measured: skipped: %.300s", why);
	else
		check_find(j->r, j->h, check_conf_sev(j->c, "gpubw", SEV_ERROR), "gpubw", "GPUs "
		    "not measured: %.300s: check the driver (nvidia-smi)", why);
	return 1;
}

/* Once per host: which GPUs others used, so its findings there are warnings. */
static void
gpubw_said_busy(struct gpubw_judge *j)
{
	char list[256] = "";
	size_t o = 0;

	for (int i = 0; i < j->g->n && o < sizeof list - 16; i++)
		if (j->g->busy[i] > 0)
			o += (size_t)snprintf(list + o, sizeof list - o, "%s%d (%d)", o ? ", " : "",
			    i, j->g->busy[i]);
	if (o > 0)
		check_find(j->r, j->h, check_conf_sev(j->c, "gpubw.busy", SEV_INFO), "gpubw.busy",
		    "GPUs in use by other processes while measured (GPU (processes)): %s: their "
		    "copies are judged as warnings, not errors (measure them idle)", list);
}

static void
gpubw_host(struct gpubw_judge *j)
{
	const struct gpubw_host *g = j->g;
	double q[2] = { gpubw_reference(g, 0), gpubw_reference(g, 1) };
	int nofloor = -1;
	char model[128];

	for (int i = 0; i < g->n; i++) {
		const struct gpubw_floor *fl = gpubw_judge_floor(j, g->model[i]);

		if (!j->small && (fl == NULL || (fl->h2d == 0 && fl->d2h == 0 && fl->p2p == 0)) && nofloor < 0)
			nofloor = i;
		gpubw_host_copy(j, i, 0, g->h2d[i], g->h2d_why[i], fl != NULL ? fl->h2d : 0, q[0]);
		gpubw_host_copy(j, i, 1, g->d2h[i], g->d2h_why[i], fl != NULL ? fl->d2h : 0, q[1]);
	}
	gpubw_pairs(j);
	gpubw_said_busy(j);
	for (int r = 0; r < R_RULES; r++)
		if (j->said[r] > GPUBW_LISTED)
			check_find(j->r, j->h, j->sev[r], "gpubw", "and %d more GPU copies %s (the "
			    "matrix shows them all)", j->said[r] - GPUBW_LISTED, r == R_FAIL ? "failed" :
			    r == R_FLOOR ? "below their floor" : r == R_SLOW ? "slow" :
			    "without peer access");
	if (nofloor >= 0) {
		snprintf(model, sizeof model, "%s", g->model[nofloor] != NULL ? g->model[nofloor] :
		    "?");
		msg_clean(model);
		check_find(j->r, j->h, check_conf_sev(j->c, "gpubw.model", SEV_INFO), "gpubw.model",
		    "GPU model '%.64s' has no floors in coll's table: judged against this host's "
		    "other GPUs only (set gpu_floor in --config)", model);
	}
}

/* Were the copies (the fact "N GPUs, B bytes x I") too small for floors? Said once. */
static void
gpubw_small(struct gpubw_judge *j, const char *v)
{
	unsigned long long bytes = 0;

	if (sscanf(v, "%*d GPUs, %llu bytes", &bytes) != 1 || bytes >= GPUBW_FLOOR_BYTES)
		return;
	j->small = 1;
	check_find(j->r, j->h, check_conf_sev(j->c, "gpubw.size", SEV_INFO), "gpubw.size",
	    "floors not applied: copies of %llu bytes are below the %u MiB they hold for (-s); "
	    "GPUs judged against each other only", bytes, GPUBW_FLOOR_BYTES >> 20);
}

void
gpubw_analyse(struct check_result *r, const struct check_args *a)
{
	struct gpubw_host *g = xcalloc(1, sizeof *g);

	for (int h = 0; h < r->nhosts; h++) {
		struct gpubw_judge j = { .r = r, .c = &a->conf, .h = h, .g = g,
		    .factor = a->conf.gpu_bw_factor };

		if (r->hosts[h].rank < 0 || check_conf_ignored(&a->conf, "gpubw") ||
		    gpubw_not_measured(&j, facts_get(&r->hosts[h].facts, "gpubw")))
			continue;
		if (gpubw_parse(&r->hosts[h].facts, g) != 0)
			continue;
		gpubw_small(&j, facts_get(&r->hosts[h].facts, "gpubw"));
		gpubw_host(&j);
	}
	free(g);
}
