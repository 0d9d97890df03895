/*
 * The report: one line per host (its worst severity and what is wrong),
 * findings about the cluster as a whole, the links matrix as a heat-map and
 * the all-reduce sweep; -v adds every fact grouped by value; --json writes
 * all of it for scripts. Exit 0 when nothing is wrong, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpubw.h"
#include "hostlist.h"
#include "xmalloc.h"

#define RED "\033[31m"
#define YELLOW "\033[33m"
#define GREEN "\033[32m"
#define BOLD "\033[1m"
#define RESET "\033[0m"

static const char *
check_sev_color(int sev)
{
	return sev >= SEV_ERROR ? RED : sev == SEV_WARN ? YELLOW : sev == SEV_OK ? GREEN : "";
}

/* collcheck health exits 1 on errors only: a prolog's non-zero exit drains the node. */
static int
check_exit(const struct check_result *r, const struct check_args *a)
{
	for (int i = 0; i < r->nfind; i++)
		if (r->find[i].sev >= (a->local ? SEV_ERROR : SEV_WARN))
			return EXIT_PROBLEMS;
	return EXIT_OK;
}

static void
check_print_hosts(const struct check_result *r, const struct check_args *a)
{
	int w = 4;

	for (int h = 0; h < r->nhosts; h++)
		if ((int)strlen(r->hosts[h].name) > w)
			w = (int)strlen(r->hosts[h].name);
	for (int h = 0; h < r->nhosts; h++) {
		const struct check_host *ch = &r->hosts[h];
		int first = 1;

		printf("%-*s  %s%s%s", w, ch->name, a->color ? check_sev_color(ch->sev) : "",
		    check_sev_name(ch->sev), a->color ? RESET : "");
		/* The worst first, so that the line leads with what matters. */
		for (int sev = SEV_UNREACHABLE; sev >= SEV_INFO; sev--)
			for (int i = 0; i < r->nfind; i++)
				if (r->find[i].host == h && r->find[i].sev == sev) {
					if (first)
						printf("%*s", 13 - (int)strlen(check_sev_name(ch->sev)), "");
					printf("%s%s", first ? "" : "; ", r->find[i].msg);
					first = 0;
				}
		putchar('\n');
	}
}

/* -v: every fact, identical values once, differing ones with the hosts that hold each. */
static void
check_print_facts(const struct check_result *r)
{
	struct facts keys;

	facts_init(&keys);
	for (int h = 0; h < r->nhosts; h++)
		for (int i = 0; i < r->hosts[h].facts.n; i++)
			facts_add(&keys, r->hosts[h].facts.v[i].key, "%s", "");
	facts_sort(&keys);
	printf("\nfacts:\n");
	for (int i = 0; i < keys.n; i++) {
		const char *k = keys.v[i].key, **names = xcalloc((size_t)r->nhosts + 1, sizeof *names);
		char *done = xcalloc((size_t)r->nhosts + 1, 1), folded[4096];
		int live = 0, shown = 0;

		for (int h = 0; h < r->nhosts; h++)
			live += r->hosts[h].rank >= 0;
		for (int h = 0; h < r->nhosts; h++) {
			const char *v;
			int n = 0;

			if (done[h] || r->hosts[h].rank < 0)
				continue;
			v = facts_get(&r->hosts[h].facts, k);
			for (int g = h; g < r->nhosts; g++) {
				const char *u = r->hosts[g].rank >= 0 ? facts_get(&r->hosts[g].facts, k) :
				    NULL;

				if (r->hosts[g].rank >= 0 && !done[g] && ((u == NULL && v == NULL) ||
				    (u != NULL && v != NULL && strcmp(u, v) == 0))) {
					done[g] = 1;
					names[n++] = r->hosts[g].name;
				}
			}
			if (hostlist_fold(names, n, folded, sizeof folded) != 0)
				snprintf(folded, sizeof folded, "%d hosts", n);
			if (n == live && shown == 0)
				printf("  %-40s %s\n", k, v != NULL ? v : "(not set)");
			else
				printf("  %-40s %s  [%s]\n", shown++ ? "" : k, v != NULL ? v :
				    "(not set)", folded);
		}
		free(names);
		free(done);
	}
	facts_free(&keys);
}

/* Bandwidth of every pair as a matrix (numbers up to 32 ranks, shades beyond). */
static void
check_print_links(const struct check_result *r, const struct check_args *a)
{
	static const char shades[] = " .:-=+*#%@";
	int n = r->nranks, np = 0;
	double *v = xcalloc((size_t)n * n + 1, sizeof *v), med;

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (r->bw[(size_t)i * n + j] > 0)
				v[np++] = r->bw[(size_t)i * n + j];
	med = check_quantile(v, np, 0.75);
	free(v);
	printf("\nlinks: GB/s each way, both ways at once (upper quartile %.2f GB/s); rows and "
	    "columns are ranks\n", med);
	printf("%*s", 14, "");
	for (int j = 0; j < n; j++)
		printf(n <= 32 ? "%6d" : "%d", n <= 32 ? j : j % 10);
	putchar('\n');
	for (int i = 0; i < n; i++) {
		printf("%-10.10s %3d", r->hosts[r->rank_host[i]].name, i);
		for (int j = 0; j < n; j++) {
			/* The lower rank's measurement stands for the pair. */
			double b = i < j ? r->bw[(size_t)i * n + j] : r->bw[(size_t)j * n + i];
			int slow = i != j && b < a->conf.link_bw_factor * med;

			if (a->color && slow)
				fputs(RED, stdout);
			if (i == j)
				printf(n <= 32 ? "%6s" : "%s", n <= 32 ? "-" : " ");
			else if (n <= 32)
				printf("%6.2f", b);
			else
				putchar(shades[med > 0 && b > 0 ? (int)(b / med * 5 > 9 ? 9 :
				    b / med * 5) : 0]);
			if (a->color && slow)
				fputs(RESET, stdout);
		}
		putchar('\n');
	}
}

static void
check_print_allreduce(const struct check_result *r)
{
	size_t i;
	json_t *row;

	printf("\nallreduce (float sum, %d ranks):\n%12s  %10s  %8s  %8s  %8s  %7s\n", r->nranks,
	    "size (B)", "time (us)", "algbw", "busbw", "#wrong", "slowest");
	json_array_foreach(r->allreduce, i, row)
		printf("%12" JSON_INTEGER_FORMAT "  %10.1f  %8.2f  %8.2f  %8" JSON_INTEGER_FORMAT
		    "  %7" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(row, "size")),
		    json_number_value(json_object_get(row, "time_us")),
		    json_number_value(json_object_get(row, "algbw")),
		    json_number_value(json_object_get(row, "busbw")),
		    json_integer_value(json_object_get(row, "wrong")),
		    json_integer_value(json_object_get(row, "slowest_rank")));
}

/*
 * The GPU and RDMA checks that found nothing to check (no driver, no
 * device), in one line: without it "OK" reads as "the GPUs are fine".
 */
static void
check_print_skipped(const struct check_result *r)
{
	static const char *const kinds[] = { "gpu", "cuda", "nvidia", "nccl", "rdma" };
	int seen[sizeof kinds / sizeof kinds[0]] = { 0 }, hosts = 0, any = 0;

	for (int h = 0; h < r->nhosts; h++) {
		int here = 0;

		for (int i = 0; i < r->hosts[h].facts.n; i++) {
			const char *k = r->hosts[h].facts.v[i].key;

			if (!facts_is_skipped(r->hosts[h].facts.v[i].val))
				continue;
			for (size_t j = 0; j < sizeof kinds / sizeof kinds[0]; j++)
				if (strncmp(k, kinds[j], strlen(kinds[j])) == 0 &&
				    (k[strlen(kinds[j])] == '.' || k[strlen(kinds[j])] == '\0'))
					seen[j] = here = 1;
		}
		hosts += here;
	}
	for (size_t j = 0; j < sizeof kinds / sizeof kinds[0]; j++)
		if (seen[j])
			printf("%s%s", any++ ? ", " : "not checked (none found; -v says why): ",
			    kinds[j]);
	if (any)
		printf(" on %d of %d host%s\n", hosts, r->nhosts, r->nhosts == 1 ? "" : "s");
}

static void
check_print_text(const struct check_result *r, const struct check_args *a)
{
	int bad = 0, gone = 0, cluster = 0;

	for (int h = 0; h < r->nhosts; h++) {
		bad += r->hosts[h].sev >= SEV_WARN && r->hosts[h].rank >= 0;
		gone += r->hosts[h].rank < 0;
	}
	printf("collcheck: %d host%s, %d rank%s: %d with problems, %d unreachable",
	    r->nhosts, r->nhosts == 1 ? "" : "s", r->nranks, r->nranks == 1 ? "" : "s", bad, gone);
	if (a->what & CHECK_ENV)
		printf("; %d facts the same everywhere, %d differ", r->agree_keys, r->differ_keys);
	putchar('\n');
	check_print_hosts(r, a);
	if (!a->verbose)
		check_print_skipped(r);
	for (int i = 0; i < r->nfind; i++)
		if (r->find[i].host < 0) {
			if (cluster++ == 0)
				printf("\ncluster:\n");
			printf("  %s%-5s%s  %s\n", a->color ? check_sev_color(r->find[i].sev) : "",
			    check_sev_name(r->find[i].sev), a->color ? RESET : "", r->find[i].msg);
		}
	if (a->what & CHECK_GPUS)
		gpubw_print(r, a);
	if (r->lat != NULL && r->nranks > 1)
		check_print_links(r, a);
	if (r->allreduce != NULL)
		check_print_allreduce(r);
	if (a->verbose)
		check_print_facts(r);
}

static json_t *
check_json_findings(const struct check_result *r, int host)
{
	json_t *arr = json_array();

	for (int i = 0; i < r->nfind; i++)
		if (r->find[i].host == host)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "severity",
			    check_sev_name(r->find[i].sev), "key", r->find[i].key, "message",
			    r->find[i].msg));
	return arr;
}

static json_t *
check_json_matrix(const double *m, int n)
{
	json_t *rows = json_array();

	for (int i = 0; i < n; i++) {
		json_t *row = json_array();

		for (int j = 0; j < n; j++) {
			double v = i < j ? m[(size_t)i * n + j] : m[(size_t)j * n + i];

			json_array_append_new(row, i == j || v < 0 ? json_null() : json_real(v));
		}
		json_array_append_new(rows, row);
	}
	return rows;
}

static void
check_print_json(const struct check_result *r, const struct check_args *a, int code,
    json_t *drained)
{
	json_t *doc = json_object(), *hosts = json_array(), *ms = json_object();

	for (int h = 0; h < r->nhosts; h++) {
		const struct check_host *ch = &r->hosts[h];
		json_t *facts = json_object(), *o;

		for (int i = 0; i < ch->facts.n; i++)
			json_object_set_new(facts, ch->facts.v[i].key, json_string(ch->facts.v[i].val));
		o = json_pack("{s:s, s:s, s:o, s:o}", "host", ch->name, "status",
		    check_sev_name(ch->sev), "findings", check_json_findings(r, h), "facts", facts);
		if (ch->rank >= 0) {
			json_object_set_new(o, "rank", json_integer(ch->rank));
			json_object_set_new(o, "pid", json_integer(ch->pid));
			if (r->clocks)
				json_object_set_new(o, "clock_offset_us", json_real(ch->offset_us));
		} else {
			json_object_set_new(o, "unreachable", json_string(ch->why));
		}
		json_array_append_new(hosts, o);
	}
	for (int p = 0; p < CHECK_PHASES; p++)
		json_object_set_new(ms, check_phase_names[p], json_real(r->ms[p]));
	json_object_set_new(doc, "hosts", hosts);
	json_object_set_new(doc, "findings", check_json_findings(r, -1));
	json_object_set_new(doc, "nranks", json_integer(r->nranks));
	if (r->lat != NULL) {
		json_t *map = json_array();

		for (int k = 0; k < r->nranks; k++)
			json_array_append_new(map, json_string(r->hosts[r->rank_host[k]].name));
		json_object_set_new(doc, "links", json_pack("{s:o, s:o, s:o}", "rank_host", map,
		    "bw_gbs", check_json_matrix(r->bw, r->nranks), "lat_us",
		    check_json_matrix(r->lat, r->nranks)));
	}
	if (r->allreduce != NULL)
		json_object_set(doc, "allreduce", r->allreduce);
	if (a->what & CHECK_GPUS)
		json_object_set_new(doc, "gpus", gpubw_json(r));
	if (r->retries != NULL)
		json_object_set(doc, "retries", r->retries);
	json_object_set_new(doc, "phases_ms", ms);
	json_object_set_new(doc, "same_facts", json_integer(r->agree_keys));
	json_object_set_new(doc, "differing_facts", json_integer(r->differ_keys));
	if (drained != NULL)
		json_object_set(doc, "drain", drained);
	json_object_set_new(doc, "exit", json_integer(code));
	json_dumpf(doc, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(doc);
}

int
check_report(const struct check_result *r, const struct check_args *a)
{
	int code = check_exit(r, a), dcode = EXIT_OK;
	json_t *drained = NULL;
	char err[512];

	/* Drained first, so that the report says what was done; scontrol's failure: exit 3. */
	if (a->drain)
		dcode = drain_hosts(r, &drained);
	if (a->json)
		check_print_json(r, a, dcode != EXIT_OK ? dcode : code, drained);
	else if (a->local)
		local_print(r, a);
	else
		check_print_text(r, a);
	if (drained != NULL && !a->json)
		drain_print(drained);
	json_decref(drained);
	if (a->prometheus != NULL && check_prom_write(r, a, code, err, sizeof err) != 0) {
		fprintf(stderr, "collcheck: %s\n", err);
		return EXIT_CANNOT;
	}
	return dcode != EXIT_OK ? dcode : code;
}
