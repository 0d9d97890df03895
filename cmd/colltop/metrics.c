/*
 * The model as Prometheus metrics (the text format, through promtext.h):
 * what `colltop --listen` serves at /metrics. Pure: the model in, text out;
 * the caller holds the model still (listen.c takes its lock for as long as
 * this runs, and writes the text out after letting go).
 *
 * Names are coll_*, with the unit in the name and counters ending in _total.
 * Labels: host and rank for the probe's ranks; host with device (and port
 * for RDMA) for a host's NICs and RDMA ports, as node_exporter names them;
 * host with gpu (the index) for GPUs, as dcgm-exporter does; job and comm
 * (with user, and local where the job's key holds on one host only) for the
 * watched jobs, with rank and host for their ranks. A value colltop does not
 * know (-1 in the model or the sample) is no sample at all, never a -1 a
 * dashboard would plot.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "promtext.h"
#include "top.h"
#include "xmalloc.h"

/* ---- the probe's ranks ---- */

typedef double (*metrics_rank_fn)(const struct top_rank *r);

static double
metrics_lat(const struct top_rank *r)
{
	return r->lost || r->lat_us < 0 ? NAN : r->lat_us / 1e6;
}

static double
metrics_busbw(const struct top_rank *r)
{
	return r->lost || r->busbw < 0 ? NAN : r->busbw * 1e9;	/* the model keeps GB/s */
}

static double
metrics_late(const struct top_rank *r)
{
	return r->lost || r->late_us < 0 ? NAN : r->late_us / 1e6;
}

static double
metrics_straggler(const struct top_rank *r)
{
	return r->straggler ? 1 : 0;
}

static double
metrics_lost(const struct top_rank *r)
{
	return r->lost ? 1 : 0;
}

static const struct {
	const char *name, *help;
	metrics_rank_fn val;
} metrics_rank_fams[] = {
	{ "coll_probe_latency_seconds", "The probe all-reduce's time on this rank, last "
	  "interval", metrics_lat },
	{ "coll_probe_busbw_bytes_per_second", "The probe's bus bandwidth as this rank saw it",
	  metrics_busbw },
	{ "coll_probe_lateness_seconds", "How late this rank came to the probe, last interval",
	  metrics_late },
	{ "coll_probe_straggler", "1 while the straggler rule names this rank", metrics_straggler },
	{ "coll_probe_lost", "1 once this rank is lost (silent, or its host gone)", metrics_lost },
};

static void
metrics_ranks(const struct top_model *m, struct promtext *t)
{
	char rank[16];
	const char *lab[] = { "host", NULL, "rank", rank, NULL };

	for (size_t f = 0; f < sizeof metrics_rank_fams / sizeof metrics_rank_fams[0]; f++) {
		promtext_family(t, metrics_rank_fams[f].name, "gauge", metrics_rank_fams[f].help);
		for (int i = 0; i < m->nranks; i++) {
			const struct top_rank *r = &m->ranks[i];

			if (r->host < 0 || r->host >= m->nhosts)
				continue;	/* a slot never filled */
			lab[1] = m->hosts[r->host].name;
			snprintf(rank, sizeof rank, "%d", r->rank);
			promtext_sample(t, metrics_rank_fams[f].name, lab, metrics_rank_fams[f].val(r));
		}
	}
}

/* ---- each host's last sample: NICs, RDMA ports, GPUs ---- */

enum metrics_kind { MK_NUM, MK_BOOL, MK_ACTIVE, MK_HW };

struct metrics_host_fam {
	const char *name, *type, *help;
	const char *arr, *key;	/* the sample's array and the field in each element */
	double scale;
	int kind;
};

static const struct metrics_host_fam metrics_host_fams[] = {
	{ "coll_network_receive_bytes_total", "counter", "Bytes received by the interface",
	  "net", "rx_bytes", 1, MK_NUM },
	{ "coll_network_transmit_bytes_total", "counter", "Bytes sent by the interface",
	  "net", "tx_bytes", 1, MK_NUM },
	{ "coll_network_errors_total", "counter", "Receive and transmit errors of the interface",
	  "net", "errors", 1, MK_NUM },
	{ "coll_network_drops_total", "counter", "Packets the interface dropped, both ways",
	  "net", "drops", 1, MK_NUM },
	{ "coll_network_carrier_changes_total", "counter", "Times the interface's link went "
	  "up or down", "net", "carrier_changes", 1, MK_NUM },
	{ "coll_network_up", "gauge", "1 while the interface's operstate is up",
	  "net", "up", 1, MK_BOOL },
	{ "coll_network_speed_bytes", "gauge", "The interface's link speed in bytes a second",
	  "net", "speed_mbps", 125000, MK_NUM },
	{ "coll_rdma_receive_bytes_total", "counter", "Bytes received by the RDMA port",
	  "rdma", "rx_bytes", 1, MK_NUM },
	{ "coll_rdma_transmit_bytes_total", "counter", "Bytes sent by the RDMA port",
	  "rdma", "tx_bytes", 1, MK_NUM },
	{ "coll_rdma_symbol_errors_total", "counter", "Symbol errors on the RDMA port's link",
	  "rdma", "symbol_errors", 1, MK_NUM },
	{ "coll_rdma_link_downed_total", "counter", "Times the RDMA port's link went down",
	  "rdma", "link_downed", 1, MK_NUM },
	{ "coll_rdma_receive_errors_total", "counter", "Packets the RDMA port received in error",
	  "rdma", "rx_errors", 1, MK_NUM },
	{ "coll_rdma_transmit_discards_total", "counter", "Packets the RDMA port discarded "
	  "on the way out", "rdma", "tx_discards", 1, MK_NUM },
	{ "coll_rdma_retransmits_total", "counter", "Acknowledgement timeouts (retransmits) "
	  "of the RDMA port (hardware counters)", "rdma", "retransmits", 1, MK_HW },
	{ "coll_rdma_sequence_errors_total", "counter", "Out-of-sequence errors of the RDMA "
	  "port (hardware counters)", "rdma", "seq_errors", 1, MK_HW },
	{ "coll_rdma_port_active", "gauge", "1 while the RDMA port's state is ACTIVE",
	  "rdma", "state", 1, MK_ACTIVE },
	{ "coll_gpu_utilization_ratio", "gauge", "The GPU's utilisation, 0 to 1",
	  "gpu", "util", 0.01, MK_NUM },
	{ "coll_gpu_memory_utilization_ratio", "gauge", "The GPU memory's utilisation, 0 to 1",
	  "gpu", "mem_util", 0.01, MK_NUM },
	{ "coll_gpu_memory_used_bytes", "gauge", "GPU memory in use",
	  "gpu", "mem_used", 1, MK_NUM },
	{ "coll_gpu_memory_total_bytes", "gauge", "GPU memory in all",
	  "gpu", "mem_total", 1, MK_NUM },
	{ "coll_gpu_power_watts", "gauge", "The GPU's power draw",
	  "gpu", "power_mw", 0.001, MK_NUM },
	{ "coll_gpu_temperature_celsius", "gauge", "The GPU's temperature",
	  "gpu", "temp_c", 1, MK_NUM },
	{ "coll_gpu_pcie_transmit_bytes_per_second", "gauge", "The GPU's PCIe throughput out",
	  "gpu", "pcie_tx_kbs", 1000, MK_NUM },
	{ "coll_gpu_pcie_receive_bytes_per_second", "gauge", "The GPU's PCIe throughput in",
	  "gpu", "pcie_rx_kbs", 1000, MK_NUM },
	{ "coll_gpu_nvlink_transmit_bytes_total", "counter", "Bytes the GPU sent over NVLink",
	  "gpu", "nvlink_tx_kib", 1024, MK_NUM },
	{ "coll_gpu_nvlink_receive_bytes_total", "counter", "Bytes the GPU received over NVLink",
	  "gpu", "nvlink_rx_kib", 1024, MK_NUM },
	{ "coll_gpu_clock_event_reasons", "gauge", "NVML's clock event reason bits "
	  "(throttling; 0 none)", "gpu", "clock_reasons", 1, MK_NUM },
};

/* One element's value; a counter's stays exact (a u64 sample). */
static void
metrics_host_value(struct promtext *t, const struct metrics_host_fam *f, json_t *e,
    const char *const *lab)
{
	json_t *v = json_object_get(e, f->key);
	const char *s;

	switch (f->kind) {
	case MK_BOOL:
		if (json_is_boolean(v))
			promtext_sample(t, f->name, lab, json_is_true(v) ? 1 : 0);
		return;
	case MK_ACTIVE:
		if ((s = json_string_value(v)) != NULL)
			promtext_sample(t, f->name, lab, strstr(s, "ACTIVE") != NULL ? 1 : 0);
		return;
	case MK_HW:
		if (!json_is_true(json_object_get(e, "hw")))
			return;
		break;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0 && f->scale >= 1 &&
	    f->scale == floor(f->scale))
		promtext_sample_u64(t, f->name, lab, (uint64_t)json_integer_value(v) *
		    (uint64_t)f->scale);
	else if (json_is_number(v) && json_number_value(v) >= 0)
		promtext_sample(t, f->name, lab, json_number_value(v) * f->scale);
}

/* The labels of an element of the sample's array arr: NULL if it has not got them. */
static const char *const *
metrics_host_labels(const char *arr, json_t *e, const char *host, char *num, size_t len,
    const char **lab)
{
	lab[0] = "host";
	lab[1] = host;
	lab[4] = NULL;
	if (strcmp(arr, "gpu") == 0) {
		if (!json_is_integer(json_object_get(e, "index")))
			return NULL;
		snprintf(num, len, "%" JSON_INTEGER_FORMAT,
		    json_integer_value(json_object_get(e, "index")));
		lab[2] = "gpu";
		lab[3] = num;
		return lab;
	}
	lab[2] = "device";
	lab[3] = json_string_value(json_object_get(e, strcmp(arr, "net") == 0 ? "name" : "dev"));
	if (lab[3] == NULL)
		return NULL;
	if (strcmp(arr, "rdma") == 0) {
		snprintf(num, len, "%" JSON_INTEGER_FORMAT,
		    json_integer_value(json_object_get(e, "port")));
		lab[4] = "port";
		lab[5] = num;
		lab[6] = NULL;
	}
	return lab;
}

static void
metrics_hosts(const struct top_model *m, struct promtext *t)
{
	const char *lab[7];
	char num[32];

	for (size_t f = 0; f < sizeof metrics_host_fams / sizeof metrics_host_fams[0]; f++) {
		const struct metrics_host_fam *hf = &metrics_host_fams[f];

		promtext_family(t, hf->name, hf->type, hf->help);
		for (int h = 0; h < m->nhosts; h++) {
			json_t *a = json_object_get(m->hosts[h].sample, hf->arr), *e;
			size_t i;

			json_array_foreach(a, i, e)
				if (metrics_host_labels(hf->arr, e, m->hosts[h].name, num, sizeof num,
				    lab) != NULL)
					metrics_host_value(t, hf, e, lab);
		}
	}
}

/* ---- the watched jobs and their ranks ---- */

static void
metrics_job_labels(const struct top_job *j, const char **lab)
{
	lab[0] = "job";
	lab[1] = j->jobid;
	lab[2] = "comm";
	lab[3] = j->commid;
	lab[4] = "user";
	lab[5] = j->user;
	lab[6] = "local";
	lab[7] = j->local[0] != '\0' ? j->local : NULL;
	lab[8] = NULL;
}

static uint64_t
metrics_job_seq(const struct top_job *j)
{
	uint64_t s = 0;

	for (int i = 0; i < j->nr; i++)
		if (j->r[i].seq_done > s)
			s = j->r[i].seq_done;
	return s;
}

/* The job's families: one value each, by index (a switch keeps the table plain). */
static const struct {
	const char *name, *type, *help;
} metrics_job_fams[] = {
	{ "coll_job_seq", "gauge", "The newest op any of the job's ranks finished (its "
	  "sequence number)" },
	{ "coll_job_stalled", "gauge", "1 while the job's sequence numbers stand still "
	  "(--stall)" },
	{ "coll_job_still_seconds", "gauge", "Since the job's sequence numbers last moved" },
	{ "coll_job_behind_rank", "gauge", "While stalled: the rank behind the others" },
	{ "coll_job_ranks", "gauge", "The ranks the job's pages say it has" },
	{ "coll_job_ranks_live", "gauge", "Ranks whose process is there" },
	{ "coll_job_straggler_rank", "gauge", "The rank the job's straggler rule names" },
	{ "coll_job_retried_ops", "gauge", "Ops the job ran again after a broken link: the most "
	  "any of its ranks counts (a gauge: it falls when that rank's page goes)" },
	{ "coll_job_retrying", "gauge", "1 while a retry came within --stall: a flapping link" },
};

static double
metrics_job_value(const struct top_job *j, size_t f)
{
	switch (f) {
	case 0: return (double)metrics_job_seq(j);
	case 1: return j->stalled ? 1 : 0;
	case 2: return j->still_s >= 0 ? j->still_s : NAN;
	/* Ranks as the screen and --json show them: world ranks where known. */
	case 3: return j->stalled && j->behind >= 0 ? view_rank_shown(j, j->behind) : NAN;
	case 4: return j->nranks;
	case 5: return j->live;
	case 6: return j->straggler >= 0 && j->straggler < j->nr ? view_jobrank_shown(&j->r[j->straggler]) :
	    NAN;
	case 7: return (double)j->retries;
	default: return j->retrying ? 1 : 0;
	}
}

static void
metrics_jobs(const struct top_model *m, struct promtext *t)
{
	const char *lab[9];

	for (size_t f = 0; f < sizeof metrics_job_fams / sizeof metrics_job_fams[0]; f++) {
		promtext_family(t, metrics_job_fams[f].name, metrics_job_fams[f].type,
		    metrics_job_fams[f].help);
		for (int i = 0; i < m->njobs; i++) {
			metrics_job_labels(&m->jobs[i], lab);
			if (f == 7)
				promtext_sample_u64(t, metrics_job_fams[f].name, lab, m->jobs[i].retries);
			else
				promtext_sample(t, metrics_job_fams[f].name, lab,
				    metrics_job_value(&m->jobs[i], f));
		}
	}
}

static const struct {
	const char *name, *type, *help;
} metrics_jobrank_fams[] = {
	{ "coll_job_rank_seq", "gauge", "The newest op this rank finished (its sequence number)" },
	{ "coll_job_rank_late_seconds", "gauge", "How much later than the others this rank came "
	  "to the job's recent ops (median)" },
	{ "coll_job_rank_straggler", "gauge", "1 while the job's straggler rule names this rank" },
	{ "coll_job_rank_retries_total", "counter", "Ops this rank ran again" },
};

struct metrics_key {
	int rank;
	const char *host;
	int idx;
};

static int
metrics_key_cmp(const void *a, const void *b)
{
	const struct metrics_key *x = a, *y = b;
	int c = strcmp(x->host, y->host);

	if (c != 0)
		return c;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Which of a job's ranks to leave out: a second page of the same rank on
 * the same host (a dead process's next to its successor's) would be the same
 * series twice, which a scrape refuses whole. The first in the model's order
 * stays.
 */
static char *
metrics_jobrank_dups(const struct top_job *j)
{
	struct metrics_key *k = xcalloc((size_t)j->nr + 1, sizeof *k);
	char *dup = xcalloc((size_t)j->nr + 1, 1);

	for (int i = 0; i < j->nr; i++)
		k[i] = (struct metrics_key){ view_jobrank_shown(&j->r[i]), j->r[i].host, i };
	qsort(k, (size_t)j->nr, sizeof *k, metrics_key_cmp);
	for (int i = 1; i < j->nr; i++)
		if (k[i].rank == k[i - 1].rank && strcmp(k[i].host, k[i - 1].host) == 0)
			dup[k[i].idx] = 1;
	free(k);
	return dup;
}

static void
metrics_jobrank_one(struct promtext *t, size_t f, const struct top_jobrank *r,
    const char *const *lab)
{
	const char *name = metrics_jobrank_fams[f].name;

	switch (f) {
	case 0: promtext_sample_u64(t, name, lab, r->seq_done); break;
	case 1: promtext_sample(t, name, lab, r->late_ms >= 0 ? r->late_ms / 1e3 : NAN); break;
	case 2: promtext_sample(t, name, lab, r->straggler ? 1 : 0); break;
	default: promtext_sample_u64(t, name, lab, r->retries); break;
	}
}

static void
metrics_jobranks(const struct top_model *m, struct promtext *t)
{
	char **dup = xcalloc((size_t)m->njobs + 1, sizeof *dup), rank[16], gpu[16];
	const char *lab[15];

	for (int i = 0; i < m->njobs; i++)
		dup[i] = metrics_jobrank_dups(&m->jobs[i]);
	for (size_t f = 0; f < sizeof metrics_jobrank_fams / sizeof metrics_jobrank_fams[0]; f++) {
		promtext_family(t, metrics_jobrank_fams[f].name, metrics_jobrank_fams[f].type,
		    metrics_jobrank_fams[f].help);
		for (int i = 0; i < m->njobs; i++) {
			const struct top_job *j = &m->jobs[i];

			metrics_job_labels(j, lab);
			for (int k = 0; k < j->nr; k++) {
				if (dup[i][k])
					continue;
				/* After the job's own: local may be absent (NULL) there. */
				lab[8] = "rank";
				lab[9] = rank;
				lab[10] = "host";
				lab[11] = j->r[k].host;
				lab[12] = NULL;
				/* Its GPU where known: dcgm-exporter's label, so the series join. */
				if (j->r[k].gpu >= 0) {
					snprintf(gpu, sizeof gpu, "%d", j->r[k].gpu);
					lab[12] = "gpu";
					lab[13] = gpu;
					lab[14] = NULL;
				}
				snprintf(rank, sizeof rank, "%d", view_jobrank_shown(&j->r[k]));
				metrics_jobrank_one(t, f, &j->r[k], lab);
			}
		}
	}
	for (int i = 0; i < m->njobs; i++)
		free(dup[i]);
	free(dup);
}

/* ---- colltop's own ---- */

static void
metrics_own(const struct top_model *m, struct promtext *t)
{
	promtext_family(t, "coll_top_up", "gauge", "1: colltop is serving");
	promtext_sample(t, "coll_top_up", NULL, 1);
	promtext_family(t, "coll_top_frames_total", "counter", "Frames (intervals) colltop "
	    "took in from its workers");
	promtext_sample_u64(t, "coll_top_frames_total", NULL, m->frames);
	promtext_family(t, "coll_top_interval_seconds", "gauge", "The workers' interval");
	promtext_sample(t, "coll_top_interval_seconds", NULL, m->interval_s);
	promtext_family(t, "coll_probe_ranks", "gauge", "Ranks in the probe's communicator now");
	promtext_sample(t, "coll_probe_ranks", NULL, m->size);
	promtext_family(t, "coll_probe_bytes", "gauge", "The probe all-reduce's size");
	promtext_sample(t, "coll_probe_bytes", NULL, (double)m->bytes);
}

void
metrics_render(const struct top_model *m, struct promtext *t)
{
	metrics_own(m, t);
	metrics_ranks(m, t);
	metrics_hosts(m, t);
	metrics_jobs(m, t);
	metrics_jobranks(m, t);
}
