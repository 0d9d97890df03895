/*
 * collcheck env, links and the whole check (collcheck alone): shared between
 * the front end (front.c), the workers (worker.c), the analysis (analyse.c,
 * conf.c) and the report (report.c).
 *
 * The front end starts one worker per host (or -N per host) through the job
 * runner; the workers join one communicator, gather every host's facts to
 * rank 0, measure clocks, links and all-reduce through the core, and rank 0
 * hands the front end one JSON record on its stdout. The front end adds the
 * hosts that could not be reached, analyses and prints. Under collrun (no
 * front end of ours) rank 0 analyses and prints itself.
 */
#ifndef COLL_CHECK_H
#define COLL_CHECK_H

#include <jansson.h>
#include <stddef.h>

#include "cmd.h"
#include "facts.h"
#include "facts_fold.h"
#include "hostopt.h"

enum check_what { CHECK_ENV = 1 << 0, CHECK_LINKS = 1 << 1, CHECK_ALLREDUCE = 1 << 2,
	CHECK_GPUS = 1 << 3 };

enum check_phase { PH_JOIN, PH_FACTS, PH_CLOCKS, PH_LINKS, PH_ALLREDUCE, CHECK_PHASES };

enum check_sev { SEV_OK, SEV_INFO, SEV_WARN, SEV_ERROR, SEV_UNREACHABLE };

struct gpubw_floor;

/* Thresholds and rule settings (conf.c reads them from --config). */
struct check_conf {
	double clock_offset_ms;	/* warn above */
	double link_bw_factor;	/* pairs below k x the upper quartile of bandwidth */
	double link_lat_factor;	/* pairs above f x the lower quartile of latency */
	char **ignore;		/* fnmatch patterns of fact keys not compared */
	int nignore;
	char **sev_pat;		/* severity overrides: pattern -> severity */
	int *sev_val;
	int nsev;
	double gpu_bw_factor;	/* GPUs and pairs below k x the host's upper quartile (gpubw.c) */
	struct gpubw_floor *gpu_floor;	/* gpu_floor lines, in order */
	int ngpu_floor;
};

struct check_args {
	const struct cmd *cmd;
	unsigned what;
	struct hostopt ho;
	int verbose, json, color, worker;
	const char *baseline, *save_baseline, *config;
	const char *prometheus;	/* --prometheus FILE: the findings for node_exporter; NULL none */
	size_t link_bytes;
	long link_iters;
	double timeout_s;
	double since;		/* --since: the kernel log from this wall time on; 0: since boot */
	int drain;		/* --drain: hosts with an ERROR finding drained through scontrol */
	int local;		/* collcheck health: this host alone, no communicator */
	struct check_conf conf;
};

struct check_host {
	char *name;		/* as the host calls itself, else as we called it */
	const char *node;	/* its Slurm node name (the name we reached it by); NULL: name */
	int rank;		/* first rank on it; -1: never answered */
	int pid;
	struct facts facts;
	double offset_us, rtt_us;
	char *why;		/* unreachable: why */
	int sev;		/* worst finding */
};

struct check_finding {
	int host;		/* index in hosts, -1: the cluster as a whole */
	int sev;
	char *key;
	char *msg;
};

struct check_result {
	int nhosts;
	struct check_host *hosts;
	int nranks;
	int *rank_host;		/* rank -> host index */
	struct facts_fold fold;	/* every rank's facts, until check_expand_facts */
	double *lat, *bw;	/* nranks x nranks, row = measuring rank; NULL without links */
	json_t *allreduce;	/* rows, or NULL */
	json_t *retries;	/* ops retried after a broken link (retried.h: retried_json), or NULL */
	int nfind;
	struct check_finding *find;
	int agree_keys, differ_keys;
	int clocks;		/* offsets were measured (env) */
	/* Rank 0's phases in ms: join (from its start), facts, clocks, links, allreduce. */
	double ms[CHECK_PHASES];
};

/* check.c */
extern const struct cmd cmd_collcheck_all, cmd_collcheck_env, cmd_collcheck_links,
    cmd_collcheck_gpus;
int check_main(const struct cmd *cmd, unsigned what, int argc, char **argv);

/* worker.c: the worker role; exit code. */
extern const char *const check_phase_names[CHECK_PHASES];
int check_worker(struct check_args *a);
/* The record rank 0 sends the front end, and reading it back. */
json_t *check_record(const struct check_result *r);
int check_record_read(struct check_result *r, const char *buf, size_t len, char *err,
    size_t errlen);
/* Give each host its facts out of r->fold. */
void check_expand_facts(struct check_result *r);

/* front.c: the front end role; exit code. */
int check_front(struct check_args *a, int argc, char **argv);

/* analyse.c */
void check_analyse(struct check_result *r, const struct check_args *a,
    const struct facts *baseline);
void check_find(struct check_result *r, int host, int sev, const char *key, const char *fmt,
    ...) __attribute__((format(printf, 5, 6)));
int check_identity_key(const char *key);
/* The value a fraction q of the way up v (sorted in place). */
double check_quantile(double *v, int n, double q);
void check_result_free(struct check_result *r);
const char *check_sev_name(int sev);

/* conf.c */
void check_conf_defaults(struct check_conf *c);
int check_conf_read(struct check_conf *c, const char *path, char *err, size_t len);
void check_conf_free(struct check_conf *c);
int check_conf_ignored(const struct check_conf *c, const char *key);
/* The severity a rule gave, or the configured one for this key. */
int check_conf_sev(const struct check_conf *c, const char *key, int sev);
int check_baseline_save(const struct check_result *r, const char *path, char *err, size_t len);
int check_baseline_load(struct facts *f, const char *path, char *err, size_t len);

/* health.c: the kernel log's events and the error counters as findings. */
void health_analyse(struct check_result *r, const struct check_args *a,
    const struct facts *baseline);
/* Facts of the host's health, never compared across hosts ("kmsg*", "ctr.*"). */
int health_identity(const char *key);
/* Each host's counters into a baseline being saved, as "<key>@<host>". */
void health_baseline_save(const struct check_result *r, json_t *facts);
int health_since_parse(const char *s, double *epoch, char *err, size_t len);

/* health_xid.c: NVIDIA's Xid catalog, as collcheck acts on it. */
struct health_xid {
	int xid;
	int sev;
	const char *what, *remedy;	/* what it means; what to do about it */
};
const struct health_xid *health_xid_find(int xid);

/* drain.c: --drain, hosts with an ERROR finding drained in Slurm through scontrol. */
#define DRAIN_REASON_MAX 120	/* bytes of a Reason, "collcheck: " included */
/* "collcheck: <the finding's head>[ (+N more)]", cleaned for scontrol, at most DRAIN_REASON_MAX. */
void drain_reason(const char *msg, int more, char *out, size_t len);
/* 1 when name is one Slurm node's name (no hostlist, no byte scontrol would parse). */
int drain_node_ok(const char *name);
/* 1 when a finding of key is the node's own fault (not a job's settings): drained for. */
int drain_node_fault(const char *key);
/* Drain as --drain says; *out: one object per host for --json; exit code 0, or 3. */
int drain_hosts(const struct check_result *r, json_t **out);
/* The lines --drain says in the text report. */
void drain_print(const json_t *drained);

/*
 * local.c: collcheck health (cmd_collcheck_health), this host alone; its text
 * report is one line per finding, then one that sums up.
 */
void local_print(const struct check_result *r, const struct check_args *a);

/* report.c: print (text or JSON), and --prometheus's file; exit code. */
int check_report(const struct check_result *r, const struct check_args *a);

/* prom.c: --prometheus FILE for node_exporter's textfile collector. */
/* Can FILE be written (its directory there and writable)? -1 with err. */
int check_prom_dir(const char *path, char *err, size_t len);
/* The outcome (code: the check's exit code) into a temporary file renamed to FILE; -1 with err. */
int check_prom_write(const struct check_result *r, const struct check_args *a, int code,
    char *err, size_t len);
/* FILE for a run that ended with no report: success 0, completed 0 with REASON. */
int check_prom_fail(const struct check_args *a, const char *reason, char *err, size_t len);

#endif
