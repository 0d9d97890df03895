/*
 * What collcheck's facts cost the processes that receive them: the gather it
 * used to do (every host's facts to rank 0, then every host's facts in rank
 * 0's record to the front end) against the fold (coll_fold: facts folded up a
 * binomial tree, the record carrying the fold), side by side in one run.
 *
 *   bench_facts_fold [HOSTS...]      default: 32 156 250 1000 10000
 *
 * Each host's facts are this machine's own (facts_collect) plus what a GPU
 * node adds: 8 GPUs and 8 RDMA ports with the keys facts_gpu.c and
 * facts_rdma.c read. What differs between hosts is what differs on a real
 * cluster: the name, each GPU's UUID, each port's GID and the interfaces'
 * carrier_changes; one host in 50 has a different memlock limit (the drift
 * collcheck is for). Hosts are made on demand, so 10,000 fit in memory.
 *
 * Bytes are what the tree moves, counted from the blobs' sizes (the wire adds
 * 8 bytes of length per blob, and the gather 12 per record): into rank 0,
 * into the busiest rank, and the record rank 0 sends the front end. CPU is
 * this process's, for rank 0's receiving side (unpacking every host's facts,
 * against its log2(n) fold merges; the other ranks' merges run on their own
 * hosts) and for the front end's reading of the record, so the columns
 * compare like with like on one machine.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "facts.h"
#include "facts_fold.h"

extern char **environ;

static struct facts base;

static double
cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
host_facts(struct facts *f, int k)
{
	facts_init(f);
	for (int i = 0; i < base.n; i++)
		facts_add(f, base.v[i].key, "%s", base.v[i].val);
	facts_add(f, "host.name", "node%05d", k);
	if (k % 50 == 7)
		facts_add(f, "limits.memlock", "64 KiB");
	facts_add(f, "gpu.count", "8");
	for (int g = 0; g < 8; g++) {
		char key[64];
		static const char *const same[][2] = {
			{ "model", "NVIDIA H100 80GB HBM3" }, { "pcie", "gen5 x16" },
			{ "pcie_max", "gen5 x16" }, { "ecc", "on" }, { "ecc_uncorrected", "0" },
			{ "remapped_rows", "0 pending, 0 failed" }, { "clock_events", "none" },
			{ "persistence", "on" }, { "nvlink", "18 of 18 links up" } };

		for (size_t s = 0; s < sizeof same / sizeof same[0]; s++) {
			snprintf(key, sizeof key, "gpu.%d.%s", g, same[s][0]);
			facts_add(f, key, "%s", same[s][1]);
		}
		snprintf(key, sizeof key, "gpu.%d.uuid", g);
		facts_add(f, key, "GPU-%08x-%04x-%04x-%04x-%012x", k * 8 + g, g, k & 0xffff, 0x5a5a,
		    k * 31 + g);
		snprintf(key, sizeof key, "gpu.%d.bus_id", g);
		facts_add(f, key, "00000000:%02X:00.0", 0x18 + g * 0x10);
		snprintf(key, sizeof key, "rdma.mlx5_%d.fw", g);
		facts_add(f, key, "28.39.1002");
		snprintf(key, sizeof key, "rdma.mlx5_%d.1.state", g);
		facts_add(f, key, "4: ACTIVE");
		snprintf(key, sizeof key, "rdma.mlx5_%d.1.phys_state", g);
		facts_add(f, key, "5: LinkUp");
		snprintf(key, sizeof key, "rdma.mlx5_%d.1.rate", g);
		facts_add(f, key, "400 Gb/sec (4X NDR)");
		snprintf(key, sizeof key, "rdma.mlx5_%d.1.link_layer", g);
		facts_add(f, key, "InfiniBand");
		snprintf(key, sizeof key, "rdma.mlx5_%d.1.gid0", g);
		facts_add(f, key, "fe80:0000:0000:0000:a088:c203:00%02x:%04x", g, k & 0xffff);
		snprintf(key, sizeof key, "net.ib%d.carrier_changes", g);
		facts_add(f, key, "%d", 2 + (k + g) % 3);
	}
}

struct tally {
	size_t *into;		/* bytes into each rank */
	int n;
};

/*
 * The fold of the subtree of rank v of height m (ranks v .. v + 2^m - 1, as
 * fold_tree walks it): its own facts, then each child's subtree in mask order.
 */
static void
fold_subtree(struct facts_fold *out, int v, int m, struct tally *t, double *root_cpu)
{
	struct facts f;

	facts_fold_init(out);
	host_facts(&f, v);
	facts_fold_add(out, &f, v);
	facts_free(&f);
	for (int i = 0; i < m && v + (1 << i) < t->n; i++) {
		struct facts_fold child, in;
		size_t len;
		char *buf;
		double t0;

		fold_subtree(&child, v + (1 << i), i, t, root_cpu);
		buf = facts_fold_pack(&child, &len);
		t->into[v] += len + 8;
		t0 = cpu_s();
		facts_fold_init(&in);
		if (facts_fold_unpack(&in, buf, len, t->n) != 0)
			abort();
		facts_fold_merge(out, &in);
		facts_fold_free(&in);
		if (v == 0)
			*root_cpu += cpu_s() - t0;
		facts_fold_free(&child);
		free(buf);
	}
}

/* The record as rank 0 sent it before the fold: every host's facts as a JSON object. */
static char *
old_record(int n, size_t *len)
{
	json_t *rec = json_object(), *hosts = json_array(), *map = json_array();
	char *s;

	for (int k = 0; k < n; k++) {
		struct facts f;
		json_t *o = json_object();

		host_facts(&f, k);
		for (int i = 0; i < f.n; i++)
			json_object_set_new(o, f.v[i].key, json_string(f.v[i].val));
		facts_free(&f);
		json_array_append_new(hosts, json_pack("{s:s, s:i, s:i, s:f, s:f, s:o}", "host", "x",
		    "rank", k, "pid", 1000 + k, "clock_offset_us", 1.5, "rtt_us", 20.0, "facts", o));
		json_array_append_new(map, json_integer(k));
	}
	json_object_set_new(rec, "hosts", hosts);
	json_object_set_new(rec, "rank_host", map);
	s = json_dumps(rec, JSON_COMPACT);
	json_decref(rec);
	*len = strlen(s);
	return s;
}

/* The front end's reading of the old record: JSON, then every fact added to its host. */
static void
old_read(const char *buf, size_t len)
{
	json_t *rec = json_loadb(buf, len, 0, NULL), *h, *v;
	size_t i;
	const char *key;

	json_array_foreach(json_object_get(rec, "hosts"), i, h) {
		struct facts f;

		facts_init(&f);
		json_object_foreach(json_object_get(h, "facts"), key, v)
			facts_add(&f, key, "%s", json_string_value(v));
		facts_free(&f);
	}
	json_decref(rec);
}

static void
run(int n)
{
	struct tally t = { calloc((size_t)n, sizeof(size_t)), n };
	struct check_result r = { 0 }, back = { 0 };
	struct facts_fold all;
	size_t gather = 0, most = 0, oldrec_len, newrec_len;
	double g_cpu = 0, f_cpu = 0, t0, old_fe, new_fe;
	char *oldrec, *newrec, err[256];
	int m = 0;
	json_t *rec;

	/* The gather: rank 0 receives every other host's record and unpacks each. */
	for (int k = 1; k < n; k++) {
		struct facts f, g;
		size_t len;
		char *buf;

		host_facts(&f, k);
		buf = facts_pack(&f, &len);
		gather += len + 12;
		t0 = cpu_s();
		facts_init(&g);
		if (facts_unpack(&g, buf, len) != 0)
			abort();
		facts_free(&g);
		g_cpu += cpu_s() - t0;
		facts_free(&f);
		free(buf);
	}
	while ((1 << m) < n)
		m++;
	fold_subtree(&all, 0, m, &t, &f_cpu);
	for (int k = 0; k < n; k++)
		most = t.into[k] > most ? t.into[k] : most;
	/* The records rank 0 sends the front end, and the front end's reading of each. */
	oldrec = old_record(n, &oldrec_len);
	t0 = cpu_s();
	old_read(oldrec, oldrec_len);
	old_fe = cpu_s() - t0;
	r.nranks = r.nhosts = n;
	r.hosts = calloc((size_t)n, sizeof *r.hosts);
	r.rank_host = calloc((size_t)n, sizeof *r.rank_host);
	for (int k = 0; k < n; k++) {
		r.hosts[k].name = malloc(16);
		snprintf(r.hosts[k].name, 16, "node%05d", k);
		r.hosts[k].rank = k;
		r.rank_host[k] = k;
	}
	r.fold = all;
	rec = check_record(&r);
	newrec = json_dumps(rec, JSON_COMPACT);
	newrec_len = strlen(newrec);
	json_decref(rec);
	t0 = cpu_s();
	if (check_record_read(&back, newrec, newrec_len, err, sizeof err) != 0) {
		fprintf(stderr, "bench_facts_fold: %s\n", err);
		exit(1);
	}
	new_fe = cpu_s() - t0;
	printf("| %d | %.1f | %.1f | %.3fx | %.1f | %.3fx | %.1f | %.1f | %.3fx | %.3fx | %.3fx |\n", n,
	    gather / 1024.0, t.into[0] / 1024.0, (double)t.into[0] / (double)gather, most / 1024.0,
	    (double)most / (double)gather, oldrec_len / 1024.0, newrec_len / 1024.0,
	    (double)newrec_len / (double)oldrec_len, f_cpu / (g_cpu > 0 ? g_cpu : 1e-9),
	    new_fe / (old_fe > 0 ? old_fe : 1e-9));
	fflush(stdout);
	free(oldrec);
	free(newrec);
	check_result_free(&back);
	check_result_free(&r);	/* frees the fold too */
	free(t.into);
}

int
main(int argc, char **argv)
{
	static const int def[] = { 32, 156, 250, 1000, 10000 };
	struct facts_roots roots;
	struct facts one;
	size_t len;
	char *buf;

	facts_init(&base);
	facts_roots_env(&roots);
	facts_collect(&base, &roots, environ);
	host_facts(&one, 0);
	buf = facts_pack(&one, &len);
	printf("One host: %d facts, %zu bytes packed (this machine's %d plus a GPU node's).\n\n",
	    one.n, len, base.n);
	free(buf);
	facts_free(&one);
	printf("| hosts | gather: KiB into rank 0 | fold: KiB into rank 0 | fold/gather | fold: "
	    "most KiB into one rank | most/gather | record KiB, gathered | record KiB, folded | "
	    "folded/gathered | rank 0 CPU fold/gather | front-end CPU folded/gathered |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			run(atoi(argv[i]) > 1 ? atoi(argv[i]) : 2);
	else
		for (size_t i = 0; i < sizeof def / sizeof def[0]; i++)
			run(def[i]);
	facts_free(&base);
	return 0;
}
