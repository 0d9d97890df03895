/*
 * collcheck gpus's matrices: per host, each GPU's copies to and from the
 * host and from every GPU (rows) to every other (columns), in GB/s, as
 * `collcheck links` prints its matrix; a cell a finding names in red on a
 * terminal. With many hosts, only those with findings (all of them with -v);
 * --json has every host's as numbers.
 */
#include <stdio.h>
#include <string.h>

#include "gpubw.h"
#include "msg.h"
#include "xmalloc.h"

#define RED "\033[31m"
#define RESET "\033[0m"

/* The worst severity of host h's findings under key. */
static int
gpubw_flag(const struct check_result *r, int h, const char *key)
{
	int sev = SEV_OK;

	for (int i = 0; i < r->nfind; i++)
		if (r->find[i].host == h && strcmp(r->find[i].key, key) == 0 && r->find[i].sev > sev)
			sev = r->find[i].sev;
	return sev;
}

static void
gpubw_cell(const struct check_result *r, const struct check_args *a, int h, const char *key,
    double v, int staged)
{
	int red = a->color && gpubw_flag(r, h, key) >= SEV_WARN;

	printf("%s", red ? RED : "");
	if (v < 0)
		printf("%9s", "failed");
	else if (v == 0)
		printf("%9s", "-");
	else
		printf("%8.2f%c", v, staged ? '*' : ' ');
	printf("%s", red ? RESET : "");
}

static void
gpubw_print_host(const struct check_result *r, const struct check_args *a, int h,
    const struct gpubw_host *g)
{
	char name[80], model[24], key[48];
	const char *head = facts_get(&r->hosts[h].facts, "gpubw");

	snprintf(name, sizeof name, "%s", r->hosts[h].name);
	msg_clean(name);
	printf("\ngpus on %s: GB/s of one copy (%s); rows copy from, columns to; * staged through "
	    "the host (no peer access)\n%3s  %-10s  %-22s %9s %9s", name, head != NULL ? head : "?",
	    "GPU", "bus", "model", "h2d", "d2h");
	for (int k = 0; k < g->n; k++)
		printf("%9d", k);
	putchar('\n');
	for (int i = 0; i < g->n; i++) {
		snprintf(name, sizeof name, "%.10s", g->bus[i] != NULL ? g->bus[i] : "?");
		snprintf(model, sizeof model, "%.22s", g->model[i] != NULL ? g->model[i] : "?");
		msg_clean(name);
		msg_clean(model);
		printf("%3d  %-10s  %-22s ", i, name, model);
		snprintf(key, sizeof key, "gpubw.h2d.%d", i);
		gpubw_cell(r, a, h, key, g->h2d[i], 0);
		snprintf(key, sizeof key, "gpubw.d2h.%d", i);
		gpubw_cell(r, a, h, key, g->d2h[i], 0);
		for (int k = 0; k < g->n; k++) {
			snprintf(key, sizeof key, "gpubw.p2p.%d.%d", i, k);
			gpubw_cell(r, a, h, key, i == k ? 0 : g->p2p[i][k], g->staged[i][k]);
		}
		putchar('\n');
	}
}

/* Whether host h has a finding of these facts at WARN or above. */
static int
gpubw_host_flagged(const struct check_result *r, int h)
{
	for (int i = 0; i < r->nfind; i++)
		if (r->find[i].host == h && r->find[i].sev >= SEV_WARN &&
		    gpubw_identity(r->find[i].key))
			return 1;
	return 0;
}

void
gpubw_print(const struct check_result *r, const struct check_args *a)
{
	struct gpubw_host *g = xcalloc(1, sizeof *g);
	int quiet = 0;

	for (int h = 0; h < r->nhosts; h++) {
		if (r->hosts[h].rank < 0 || gpubw_parse(&r->hosts[h].facts, g) != 0)
			continue;
		if (r->nhosts > 1 && !a->verbose && !gpubw_host_flagged(r, h))
			quiet++;
		else
			gpubw_print_host(r, a, h, g);
	}
	if (quiet > 0)
		printf("\ngpus: the matrices of %d host%s without findings are left out (-v or --json "
		    "shows them)\n", quiet, quiet == 1 ? "" : "s");
	free(g);
}

static json_t *
gpubw_num(double v)
{
	return v > 0 ? json_real(v) : json_null();
}

static json_t *
gpubw_json_host(const struct check_result *r, int h, const struct gpubw_host *g)
{
	json_t *gpus = json_array(), *p2p = json_array(), *direct = json_array();

	for (int i = 0; i < g->n; i++) {
		json_t *row = json_array(), *drow = json_array();

		json_array_append_new(gpus, json_pack("{s:i, s:s?, s:s?, s:o, s:o}", "gpu", i,
		    "bus", g->bus[i], "model", g->model[i], "h2d_gbs", gpubw_num(g->h2d[i]),
		    "d2h_gbs", gpubw_num(g->d2h[i])));
		for (int k = 0; k < g->n; k++) {
			json_array_append_new(row, gpubw_num(i == k ? 0 : g->p2p[i][k]));
			json_array_append_new(drow, i == k ? json_null() :
			    json_boolean(!g->staged[i][k]));
		}
		json_array_append_new(p2p, row);
		json_array_append_new(direct, drow);
	}
	return json_pack("{s:s, s:o, s:o, s:o}", "host", r->hosts[h].name, "gpus", gpus,
	    "p2p_gbs", p2p, "p2p_direct", direct);
}

json_t *
gpubw_json(const struct check_result *r)
{
	struct gpubw_host *g = xcalloc(1, sizeof *g);
	json_t *all = json_array();

	for (int h = 0; h < r->nhosts; h++)
		if (r->hosts[h].rank >= 0 && gpubw_parse(&r->hosts[h].facts, g) == 0)
			json_array_append_new(all, gpubw_json_host(r, h, g));
	free(g);
	return all;
}
