/*
 * collcheck gpus: each host's copy bandwidth GPU by GPU (core/cuda/cu_bw.c),
 * carried as that host's facts ("gpubw.*", never compared across hosts),
 * judged against floors per GPU model (a shipped table and --config's
 * gpu_floor lines) and against the host's own other GPUs (gpu_bw_factor),
 * and printed as a matrix per host.
 *
 * Facts, GB/s with two decimals, or "failed: why":
 *   gpubw                 "8 GPUs, 268435456 bytes x 5", or "skipped: why" (no driver,
 *                         no GPU) or "failed: why" (the driver does not start)
 *   gpubw.model.G         cuDeviceGetName     gpubw.bus.G   "0000:3b:00"
 *   gpubw.h2d.G, .d2h.G   host to device, device to host (pinned memory)
 *   gpubw.p2p.I.J         from GPU I to GPU J; " staged" after the number when the
 *                         two have no peer access (the driver copies through the host)
 *   gpubw.busy.G          compute processes on GPU G before the measurement (NVML), when
 *                         any: its failures and floors are then warnings, not errors
 */
#ifndef COLL_CHECK_GPUBW_H
#define COLL_CHECK_GPUBW_H

#include <jansson.h>
#include <stddef.h>

#include "check.h"
#include "cu_bw.h"

#define GPUBW_DEFAULT_BYTES (256u << 20)
#define GPUBW_FLOOR_BYTES (64u << 20)	/* smaller copies: latency-bound, floors not applied */
#define GPUBW_TIMEOUT_MS 10000	/* one measurement's copies: 6 x 256 MiB at 1 GB/s take 1.6 s */
#define GPUBW_FACTOR 0.7	/* below this x the host's upper quartile: a warning */

/* One model's floors in GB/s; 0: none. */
struct gpubw_floor {
	char *pat;		/* --config: fnmatch pattern of the model; table: a part of it */
	double h2d, d2h, p2p;
};

/* A host's measurements, read back from its facts. */
struct gpubw_host {
	int n;
	const char *model[CU_BW_MAX_GPUS], *bus[CU_BW_MAX_GPUS];
	double h2d[CU_BW_MAX_GPUS], d2h[CU_BW_MAX_GPUS];	/* < 0 failed; 0 absent */
	const char *h2d_why[CU_BW_MAX_GPUS], *d2h_why[CU_BW_MAX_GPUS];
	double p2p[CU_BW_MAX_GPUS][CU_BW_MAX_GPUS];
	unsigned char staged[CU_BW_MAX_GPUS][CU_BW_MAX_GPUS];
	const char *pwhy[CU_BW_MAX_GPUS][CU_BW_MAX_GPUS];
	int busy[CU_BW_MAX_GPUS];	/* other processes on it while it was measured */
};

/* The worker: measure this host's GPUs into f (the first rank of each host only). */
void gpubw_collect(struct facts *f, const struct check_args *a);
/* Whether key is one of these facts (never compared across hosts). */
int gpubw_identity(const char *key);
/* f's measurements into g; 0, or -1 when f has none (g->n 0). */
int gpubw_parse(const struct facts *f, struct gpubw_host *g);
/* The floors for model: --config's last matching line, else the table; NULL: none. */
const struct gpubw_floor *gpubw_floor_for(const struct check_conf *c, const char *model);
/* Findings for every host that measured. */
void gpubw_analyse(struct check_result *r, const struct check_args *a);
/* --config: 1 when name is none of ours, 0 taken, -1 with err. */
int gpubw_conf_line(struct check_conf *c, const char *name, const char *val, char *err,
    size_t len);
void gpubw_conf_free(struct check_conf *c);

/* gpubw_show.c: the matrices in the text report, and as JSON ("gpus"). */
void gpubw_print(const struct check_result *r, const struct check_args *a);
json_t *gpubw_json(const struct check_result *r);

#endif
