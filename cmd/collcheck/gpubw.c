/*
 * collcheck gpus: the measurement as facts, the floors, and the findings
 * (gpubw.h). A copy below its model's floor is an error: the hardware is
 * degraded (a PCIe link trained down, NVLinks lost). A copy below
 * gpu_bw_factor (0.7) times the host's upper quartile of the same kind is a
 * warning naming the GPU or pair: on one host the GPUs are alike, so a slow
 * one is loaded or degraded even where no floor is known. The upper
 * quartile, not the median, as for links: one slow GPU of two is half.
 * 0.7: GPUs of one host spread by up to ~15% (the pinned buffer's NUMA node,
 * a shared PCIe switch), while a link a generation down, at half width or
 * shared with a copy load runs at half or less.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "facts.h"
#include "gpubw.h"
#include "plat_nvml.h"
#include "msg.h"
#include "xmalloc.h"

#define GPUBW_LISTED 4		/* findings of one rule on one host, then one that counts the rest */

/*
 * Floors per GPU model in GB/s (1e9 B/s) of one copy as collcheck gpus
 * measures it (256 MiB, 5 copies, the copy engine); the first row whose name
 * is part of the model's wins, so the longer names come first; 0: no floor.
 *
 * Measured (tests/gpu/gpubw.sh, 2026-11-28, 4 x H200 SXM 141GB, driver
 * 580.159, NVLink 4 x18 each, PCIe Gen5 x16): h2d 55.1-55.5, d2h 55.3,
 * every pair 394.5-395.0 GB/s; the H200 row is 0.7 x those (the margin
 * argued at the top). No H100 was lent to measure: the H100 SXM has the
 * H200's NVLink 4 (18 links) and PCIe Gen5 x16, so it takes the H200's
 * floors. The other rows are public nvbandwidth figures x 0.7, not measured
 * here: PCIe and NVL cards' P2P depends on bridges and the host (no floor),
 * GH200 reaches its host over NVLink-C2C (no PCIe floor).
 */
static const struct gpubw_floor gpubw_table[] = {
	{ "GH200", 0, 0, 0 },		/* not measured */
	{ "H200 NVL", 35, 35, 0 },	/* not measured: public figures x 0.7 */
	{ "H200", 38, 38, 276 },	/* measured: 55.3, 55.3, 394.8 GB/s */
	{ "H100 PCIe", 18, 18, 0 },	/* not measured: Gen4 hosts reach ~26 GB/s */
	{ "H100 NVL", 35, 35, 0 },	/* not measured: public figures x 0.7 */
	{ "H100", 38, 38, 276 },	/* the SXM part: the H200's links, so its floors */
};

int
gpubw_identity(const char *key)
{
	return strcmp(key, "gpubw") == 0 || strncmp(key, "gpubw.", 6) == 0;
}

static void
gpubw_value(struct facts *f, const char *key, double v, const char *why, const char *tail)
{
	if (v >= 0)
		facts_add(f, key, "%.2f%s", v, tail);
	else
		facts_add(f, key, "failed: %s", why);
}

/* A GPU NVML saw compute processes on: by PCI address, which CUDA's numbering does not share. */
struct gpubw_busy {
	unsigned int domain, bus, dev, procs;
};

/*
 * Which GPUs others use (NVML's compute processes), asked before ours: a
 * stranger's copies or memory on a shared node slow or fail ours, and that
 * is no fault of the node to drain it for. NVML numbers every GPU of the
 * host, CUDA only those CUDA_VISIBLE_DEVICES leaves: matched by address.
 */
static int
gpubw_busy(struct gpubw_busy *out, int max)
{
	const struct plat_nvml *n;
	unsigned int count = 0;
	char why[256];
	int k = 0;

	if (plat_nvml_load(&n, why, sizeof why) != COLL_OK || n->procs == NULL ||
	    n->pci == NULL || n->init() != 0)
		return 0;
	if (n->count(&count) == 0)
		for (unsigned int i = 0; i < count && k < max; i++) {
			struct plat_nvml_pci pci;
			plat_nvml_dev d;
			unsigned int np = 0;
			int r;

			if (n->handle(i, &d) != 0 || n->pci(d, &pci) != 0)
				continue;
			r = n->procs(d, &np, NULL);
			if ((r == 0 || r == PLAT_NVML_INSUFFICIENT_SIZE) && np > 0)
				out[k++] = (struct gpubw_busy){ pci.domain, pci.bus, pci.device, np };
		}
	if (n->shutdown != NULL)
		n->shutdown();
	return k;
}

/* The busy GPUs among those measured, as facts gpubw.busy.G (CUDA's G). */
static void
gpubw_busy_facts(struct facts *f, const struct cu_bw *b, const struct gpubw_busy *busy,
    int nbusy)
{
	char k[FACTS_KEY_MAX];

	for (int i = 0; i < b->n; i++) {
		unsigned int dom, bus, dev;

		if (sscanf(b->gpu[i].bus, "%x:%x:%x", &dom, &bus, &dev) != 3)
			continue;
		for (int x = 0; x < nbusy; x++)
			if (busy[x].domain == dom && busy[x].bus == bus && busy[x].dev == dev) {
				snprintf(k, sizeof k, "gpubw.busy.%d", i);
				facts_add(f, k, "%u", busy[x].procs);
			}
	}
}

void
gpubw_collect(struct facts *f, const struct check_args *a)
{
	struct cu_bw_opts o = { a->link_bytes, (int)a->link_iters, GPUBW_TIMEOUT_MS };
	struct cu_bw *b = xcalloc(1, sizeof *b);
	struct gpubw_busy busy[CU_BW_MAX_GPUS * 4];
	char why[512], k[FACTS_KEY_MAX];
	int rc, nbusy;

	/* nvidia-smi's numbers: CUDA's own order puts the fastest GPU first. */
	setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
	nbusy = gpubw_busy(busy, CU_BW_MAX_GPUS * 4);
	if ((rc = cu_bw_measure(b, &o, why, sizeof why)) != COLL_OK) {
		if (rc == COLL_ENOTFOUND)
			facts_skip(f, "gpubw", "%s", why);
		else
			facts_add(f, "gpubw", "failed: %s", why);
		free(b);
		return;
	}
	facts_add(f, "gpubw", "%d GPUs, %zu bytes x %ld%s", b->n, a->link_bytes, a->link_iters,
	    b->left_out > 0 ? " (more left out)" : "");
	gpubw_busy_facts(f, b, busy, nbusy);
	for (int i = 0; i < b->n; i++) {
		const struct cu_bw_gpu *g = &b->gpu[i];

		snprintf(k, sizeof k, "gpubw.model.%d", i);
		facts_add(f, k, "%s", g->model);
		snprintf(k, sizeof k, "gpubw.bus.%d", i);
		facts_add(f, k, "%s", g->bus);
		snprintf(k, sizeof k, "gpubw.h2d.%d", i);
		gpubw_value(f, k, g->h2d, g->why, "");
		snprintf(k, sizeof k, "gpubw.d2h.%d", i);
		gpubw_value(f, k, g->d2h, g->why, "");
		for (int j = 0; j < b->n; j++) {
			if (i == j)
				continue;
			snprintf(k, sizeof k, "gpubw.p2p.%d.%d", i, j);
			gpubw_value(f, k, b->p2p[i][j], b->pwhy[i][j], b->peer[i][j] ? "" :
			    " staged");
		}
	}
	free(b);
}

/* "12.30", "12.30 staged" or "failed: why" into v (-1 failed), staged, why. */
static void
gpubw_parse_val(const char *s, double *v, unsigned char *staged, const char **why)
{
	char *end;

	if (strncmp(s, "failed: ", 8) == 0) {
		*v = -1;
		*why = s + 8;
		return;
	}
	*v = strtod(s, &end);
	if (end == s || !(*v >= 0 && *v < 1e7)) {
		*v = -1;
		*why = "malformed";
	}
	if (staged != NULL)
		*staged = strcmp(end, " staged") == 0;
}

static void
gpubw_parse_one(struct gpubw_host *g, const char *k, const char *v)
{
	int i, j, n = 0;

	if (sscanf(k, "gpubw.p2p.%d.%d%n", &i, &j, &n) == 2 && k[n] == '\0' && i >= 0 &&
	    j >= 0 && i < CU_BW_MAX_GPUS && j < CU_BW_MAX_GPUS && i != j)
		gpubw_parse_val(v, &g->p2p[i][j], &g->staged[i][j], &g->pwhy[i][j]);
	else if (sscanf(k, "gpubw.%*[a-z2].%d%n", &i, &n) == 1 && k[n] == '\0' && i >= 0 &&
	    i < CU_BW_MAX_GPUS) {
		if (strncmp(k, "gpubw.model.", 12) == 0)
			g->model[i] = v;
		else if (strncmp(k, "gpubw.bus.", 10) == 0)
			g->bus[i] = v;
		else if (strncmp(k, "gpubw.h2d.", 10) == 0)
			gpubw_parse_val(v, &g->h2d[i], NULL, &g->h2d_why[i]);
		else if (strncmp(k, "gpubw.d2h.", 10) == 0)
			gpubw_parse_val(v, &g->d2h[i], NULL, &g->d2h_why[i]);
		else if (strncmp(k, "gpubw.busy.", 11) == 0)
			g->busy[i] = atoi(v) > 0 ? atoi(v) : 0;
		else
			return;
	} else
		return;
	if (i >= g->n)
		g->n = i + 1;
	if (strncmp(k, "gpubw.p2p.", 10) == 0 && j >= g->n)
		g->n = j + 1;
}

int
gpubw_parse(const struct facts *f, struct gpubw_host *g)
{
	memset(g, 0, sizeof *g);
	for (int i = 0; i < f->n; i++)
		if (strncmp(f->v[i].key, "gpubw.", 6) == 0)
			gpubw_parse_one(g, f->v[i].key, f->v[i].val);
	return g->n > 0 ? 0 : -1;
}

const struct gpubw_floor *
gpubw_floor_for(const struct check_conf *c, const char *model)
{
	if (model == NULL)
		return NULL;
	/* The last matching line wins, as for severity lines. */
	for (int i = c->ngpu_floor - 1; i >= 0; i--)
		if (fnmatch(c->gpu_floor[i].pat, model, 0) == 0)
			return &c->gpu_floor[i];
	for (size_t i = 0; i < sizeof gpubw_table / sizeof *gpubw_table; i++)
		if (strstr(model, gpubw_table[i].pat) != NULL)
			return &gpubw_table[i];
	return NULL;
}

int
gpubw_conf_line(struct check_conf *c, const char *name, const char *val, char *err,
    size_t len)
{
	struct gpubw_floor fl = { 0 };
	char *end;
	int n = 0;

	if (strcmp(name, "gpu_bw_factor") == 0) {
		double d = strtod(val, &end);

		if (end == val || *end != '\0' || !(d >= 0 && d <= 1)) {
			snprintf(err, len, "gpu_bw_factor must be between 0 and 1");
			return -1;
		}
		c->gpu_bw_factor = d;
		return 0;
	}
	if (strncmp(name, "gpu_floor", 9) != 0 || (name[9] != ' ' && name[9] != '\t'))
		return 1;
	name += 10;
	name += strspn(name, " \t");
	if (name[0] == '\0' || sscanf(val, "%lf %lf %lf%n", &fl.h2d, &fl.d2h, &fl.p2p, &n) != 3 ||
	    val[n] != '\0' || !(fl.h2d >= 0 && fl.d2h >= 0 && fl.p2p >= 0 && fl.h2d < 1e6 &&
	    fl.d2h < 1e6 && fl.p2p < 1e6)) {
		snprintf(err, len, "use 'gpu_floor MODEL_PATTERN = H2D D2H P2P' (GB/s, 0: none)");
		return -1;
	}
	fl.pat = xstrdup(name);
	c->gpu_floor = xreallocarray(c->gpu_floor, (size_t)c->ngpu_floor + 1,
	    sizeof *c->gpu_floor);
	c->gpu_floor[c->ngpu_floor++] = fl;
	return 0;
}

void
gpubw_conf_free(struct check_conf *c)
{
	for (int i = 0; i < c->ngpu_floor; i++)
		free(c->gpu_floor[i].pat);
	free(c->gpu_floor);
	c->gpu_floor = NULL;
	c->ngpu_floor = 0;
}
