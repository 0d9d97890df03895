/*
 * collstack: every thread's stack of every rank of a job, merged into one
 * tree labelled by rank sets, each rank's collective sequence numbers from
 * its status pages, and a verdict naming the rank(s) the others wait for.
 *
 * The front end (front.c) finds the job (job.c: collrun's job record, or
 * --pid, --match, --slurm) and starts one worker per host through the job
 * runner. The workers (worker.c) join one communicator, find the job's
 * processes on their host (find.c), agree on labels through rank 0, take
 * their stacks in parallel, merge their trees up a binomial tree through the
 * core and gather the per-process facts to rank 0, which hands the front end
 * one JSON record (record.c). The front end judges (verdict.c) and prints
 * (render.c: text tree, --json, --dot, --svg).
 */
#ifndef COLL_COLLSTACK_H
#define COLL_COLLSTACK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd.h"
#include "hostopt.h"
#include "stack.h"
#include "status.h"

enum stk_select { SEL_JOB, SEL_PID, SEL_MATCH, SEL_SLURM, SEL_FR };
enum stk_format { FMT_TEXT, FMT_JSON, FMT_DOT, FMT_SVG };

struct stk_args {
	const struct cmd *cmd;
	struct hostopt ho;
	enum stk_select sel;
	const char *job;	/* --job ID, or the newest job's id */
	const char *pids;	/* --pid LIST */
	const char *match;	/* --match REGEX */
	const char *slurm;	/* --slurm JOBID */
	const char *user;	/* --user NAME: whose processes root reads */
	const char *fr_first;	/* --fr PATH */
	const char **fr;	/* it and the paths after it */
	int nfr;
	enum stk_format fmt;
	int color, worker, verbose;
	int no_fr_dump;		/* --no-fr-dump */
	int cuda;		/* --cuda: kernels through cuda-gdb */
	double timeout_s;
	long threads;		/* snapshot threads per host; 0: one per CPU */
	char jobid[24];		/* the job's COLL_JOBID */
	char *found;		/* with no selection: the job picked and how it was found */
};

/* One communicator of a process, from its status page. */
struct stk_page {
	char commid[20];
	int nranks, rank, state;
	uint64_t seq_started, seq_done;
	unsigned kind_started, kind_done;
	uint64_t bytes;
	int wait_peer, wait_dir;
	double idle_s;		/* since its last progress */
	char error[192];
	/*
	 * An NCCL communicator's page (the profiler plugin's): seq_started is
	 * the op it enqueued, the one all ranks must call, and seq_kernel the op
	 * whose GPU kernel began (kind_kernel); without kernel events, seq_done is unknown and
	 * is taken as the op before the one enqueued.
	 */
	int nccl, kernel;
	uint64_t seq_kernel;
	unsigned kind_kernel;	/* its enum coll_kind */
	/* What NCCL said of the op last enqueued (page version 4), printable; "" unknown. */
	char dtype[16], algo[16], proto[16];
	unsigned lib_version;	/* NCCL's version code; 0 unknown */
};

struct stk_task {
	int id;			/* its label in the tree: its rank, or a task number */
	int rank;		/* from its environment; -1 none */
	char *host;
	int pid;
	char state;		/* /proc letter; 'G' gone */
	char *comm, *cmdline, *err, *where;
	char *note;		/* read, but not all of it (a Python whose frames we cannot read) */
	char *stack;		/* its main thread's frames, innermost first, " < " between */
	int in_comm;		/* its main thread is in a collective or a device wait; -1 unknown */
	char *kernels;		/* --cuda: its GPU kernels, "; " between; "none" */
	char *kernels_err;	/* --cuda: why they could not be listed */
	int nthreads;
	double pause_ms;
	int npages;
	struct stk_page *pages;
};

struct stk_result {
	int by_rank;		/* ids are ranks (else task numbers) */
	int size;		/* the job's size from its ranks' environment; 0 unknown */
	int ntasks;
	struct stk_task *tasks;	/* ascending id */
	int nhosts;
	char **hosts;
	struct stack_node tree;
	double ms, pause_max_ms;
	uint64_t cache_hits, cache_misses;
	char *note;		/* why ids are not ranks, or NULL */
	json_t *ras;		/* NCCL RAS's report (ras.h's shape), the fullest one; NULL none */
	char *ras_host;		/* the host whose service gave it */
	char *ras_note;		/* why a host that runs NCCL gave none */
	json_t *fr_lines;	/* the flight recorder's report on live dumps (fr.h); NULL none */
	json_t *fr_findings;
	char *fr_note;		/* why dumps were asked for and not all came */
	json_t *ignored;	/* what the evidence rule refused, "HOST: why" strings; NULL none */
	json_t *gpus;		/* per host, its GPUs through NVML (gpu.c); NULL none */
	json_t *launchers;	/* the job's launcher per host, {name, pid, host}; NULL none */
	char *ranks_why;	/* a host's word on why its tasks carry no rank, or NULL */
};

/* The independent sources that can name a rank the others wait for. */
enum stk_source {
	STK_SRC_PROC = 1 << 0,		/* its process: stopped, gone, missing */
	STK_SRC_PAGE = 1 << 1,		/* coll's status pages */
	STK_SRC_PLUGIN = 1 << 2,	/* NCCL's, through the profiler plugin */
	STK_SRC_RAS = 1 << 3,		/* NCCL's RAS service */
	STK_SRC_FR = 1 << 4,		/* PyTorch's flight recorder */
	STK_SRC_STACKS = 1 << 5,	/* its main thread is outside communication, the others' in it */
};

/*
 * What a verdict line is about, for --json: its kind ("behind", "culprit",
 * "stopped", ...; "note" for a line that names nothing), the task it names,
 * or a rank set, the communicator, the op and its sequence number.
 */
struct stk_fact {
	const char *kind;	/* a string constant */
	int task;		/* -1: none */
	char *ranks;		/* a rank set such as "3-5"; NULL */
	char comm[40];		/* "" none */
	const char *op;		/* a string constant (stk_kind_name); NULL */
	long long seq;		/* -1 unknown */
};

/* A task index sorted by a key (its pid, its rank): the verdict's lookups. */
struct stk_key {
	long key;
	int task;
};

/* The verdict: lines to print first (each with its fact), and the exit code. */
struct stk_verdict {
	int code;		/* EXIT_OK, EXIT_PROBLEMS */
	int n;
	char **line;
	struct stk_fact *fact;	/* per line */
	int nculprits;
	int *culprits;		/* task indexes */
	unsigned *sources;	/* per culprit, the enum stk_source bits that named it */
	char **op;		/* per culprit, the op it is behind in, where a source said */
	/*
	 * verdict.c's own, so that no step looks at every task for every task
	 * (80,000 ranks): each task's culprit slot + 1 (0: not one), and the
	 * tasks by pid and by rank.
	 */
	int *slot;
	int line_cap, culprit_cap;
	struct stk_key *by_pid, *by_rank;
	/* The NCCL communicators verdict_gpu.c judged: their host-side "all in one op" is its. */
	char (*gpu_comms)[20];
	int ngpu_comms;
};

/*
 * verdict.c's steps, shared with the files that judge one kind of evidence:
 * a line to print, a task blamed by a source (op: what it is behind in, or
 * NULL), and what a task is called ("rank" or "task").
 */
void stk_say(struct stk_verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void stk_blame(struct stk_verdict *v, int task, unsigned src, const char *op);
/* The fact of the line said last: kind, task (-1), comm (NULL), op (NULL), seq (-1). */
void stk_fact(struct stk_verdict *v, const char *kind, int task, const char *comm,
    const char *op, long long seq);
/* The rank set the line said last names. */
void stk_fact_ranks(struct stk_verdict *v, const char *ranks);
const char *stk_label(const struct stk_result *r);

/* One status page of one task: the verdict's unit, sorted by communicator. */
struct stk_member {
	int task;
	const struct stk_page *pg;
};

/*
 * chain.c: waits followed across communicators. A communicator none of
 * whose ranks progressed for STK_STALL_S is stalled: its ranks at different
 * ops are a hang, not a running job's passing skew. A rank behind in one
 * communicator that is itself in an op of another is a link, not a culprit;
 * the chains and the deadlocks between communicators are said and the
 * ranks of a deadlock blamed. m[0..n) sorted by communicator.
 */
#define STK_STALL_S 0.25
/*
 * An NCCL page moves only when a kernel begins or ends (a long one runs
 * silent): its communicator is stuck after this long (verdict_gpu.c's).
 */
#define STK_GPU_IDLE_S 1.0
struct stk_chain;
struct stk_chain *stk_chain_new(const struct stk_result *r, const struct stk_member *m, int n);
/* Member mi (of the chain's m) is behind in its communicator only through a wait in another. */
int stk_chain_link(const struct stk_chain *ch, const struct stk_member *mi);
/* Seconds since any rank of mi's communicator progressed; -1 for a job with no pages. */
double stk_chain_idle(const struct stk_chain *ch, const struct stk_member *mi);
/*
 * The communicator (its page's id) whose stalled op task waits in, or NULL:
 * a source that sees the task behind in another communicator (NCCL RAS) has
 * found a link of a chain, not its cause.
 */
const char *stk_chain_waits_in(const struct stk_chain *ch, int task);
double stk_chain_job_idle(const struct stk_chain *ch);
void stk_chain_say(struct stk_chain *ch, const struct stk_result *r, struct stk_verdict *v);
long stk_chain_work(const struct stk_chain *ch);
void stk_chain_free(struct stk_chain *ch);

/* find.c: the processes of the job on this host. */
struct stk_local {
	int n;
	struct stack_pinfo *pi;
	/* The job's launcher here (stack_launcher_name): shown once, never a rank; "" none. */
	char launcher[24];
	pid_t launcher_pid;
	char *why;		/* why the ranks cannot be known from the launcher, or NULL */
	int nignored, nmore;	/* refused by the evidence rule: listed, and beyond that counted */
	char **ignored;
};
int stk_find(const struct stk_args *a, struct stk_local *out, char *err, size_t len);
/* The selection's regex and pid list, checked without looking at any process. */
int stk_select_check(const struct stk_args *a, char *err, size_t len);
/* How many of --pid's processes run on this host (another user's count), or -1. */
int stk_select_alive(const struct stk_args *a);
void stk_local_free(struct stk_local *l);
/* Status pages, read once per directory, then matched to processes. */
struct stk_pageset {
	int n, ndirs;
	struct status_page *pages;
	uid_t *uids;		/* each page file's owner */
	char **dirs;
	uid_t *dir_uids;	/* whose pages of each directory were read */
};
void stk_pages_load(struct stk_pageset *ps, const char *dir, uid_t owner);
int stk_pages_of(const struct stk_pageset *ps, pid_t pid, uid_t uid, struct stk_page **out);
void stk_pages_free(struct stk_pageset *ps);

/* evidence.c: the rule for which processes speak for the job (docs/SECURITY.md). */
struct stk_evidence {
	uid_t owner;		/* the job's owner: this user, or --user's */
	int named;		/* --user was given */
};
/* Every process of the host, ascending pid: for ancestry. */
struct stk_proctab {
	int n;
	struct stack_pinfo *pi;
};
/* find.c: read every process here (not owner's: their environment in part); the count, or -1. */
int stk_proctab_read(struct stk_proctab *t, uid_t owner, char *err, size_t len);
const struct stack_pinfo *stk_proctab_get(const struct stk_proctab *t, pid_t pid);
/* The launcher nearest above pi; NULL none. */
const struct stack_pinfo *stk_launcher_above(const struct stk_proctab *t,
    const struct stack_pinfo *pi);
int stk_evidence_init(struct stk_evidence *e, const char *user, char *err, size_t len);
const char *stk_evidence_check(const struct stk_evidence *e, const struct stk_args *a,
    const struct stk_proctab *t, const struct stack_pinfo *pi, char *why, size_t len);
void stk_evidence_ignore(struct stk_local *l, const char *why);

/* worker.c */
int stk_worker(struct stk_args *a);

/*
 * cuda.c: --cuda, each process's GPU kernels through cuda-gdb; kernels[i] or
 * why[i] set. suspect[i] (or NULL): asked first where not all can be.
 */
void stk_cuda_kernels(const pid_t *pids, const int *suspect, int n, double budget_s,
    char **kernels, char **why);

/* frlive.c: a live job's flight recorder, asked for through PyTorch's dump pipe. */
struct fr_set;
/* Worker: the dumps of the ranks here into blob ("fr"), and why not ("fr_skipped"). */
void stk_fr_here(const struct stk_local *loc, double budget_s, json_t *blob);
/* Rank 0: a host's dumps into s, its reasons into *note. */
void stk_fr_gather(struct fr_set *s, json_t *o, char **note);
/* Rank 0: the dumps matched across ranks, into r->fr_lines and r->fr_findings. */
void stk_fr_judge(struct stk_result *r, const struct fr_set *s);

/* front.c */
int stk_front(struct stk_args *a, int argc, char **argv);
/* offline.c: collstack --fr, PyTorch flight recorder dumps read here. */
int stk_fr(const struct stk_args *a);
/*
 * slurm.c: the running Slurm job id (an array's task as 123_4): its own job
 * id, as its tasks see it in SLURM_JOB_ID, and its nodes (Slurm's bracket
 * form); or -1 with why.
 */
int stk_slurm_nodes(const char *id, char **jobid, char **nodes, char *err, size_t len);

/* job.c: the newest job record of this user (or --user's), or the one named; its hosts. */
int stk_job_find(const char *want, const char *user, char *jobid, size_t idlen, char **hosts,
    char **launcher, char *err, size_t len);

/* The ids of the running collrun jobs of this user (or --user's); the count, *ids malloc'ed. */
int stk_job_ids(const char *user, char (**ids)[24]);

/*
 * discover.c: with no selection, the stalled job on this host: among the
 * jobs with processes here, the one that does not advance. 0: a->sel and
 * its argument set (into pick) and a->found says which job and how it was
 * found; 1: none here (the newest job record, as before); -1: several,
 * listed on stderr with the flag to pick each.
 */
int stk_discover(struct stk_args *a, char *pick, size_t len);

/* record.c */
json_t *stk_record(const struct stk_result *r);
/* Untrusted text made printable ASCII in place: no escape reaches a terminal. */
void stk_clean_here(char *s);
int stk_record_read(struct stk_result *r, const char *buf, size_t len, char *err,
    size_t errlen);
json_t *stk_task_json(const struct stk_task *t);
void stk_ignored_add(struct stk_result *r, json_t *a, const char *host);
int stk_task_read(struct stk_task *t, json_t *o);
void stk_task_free(struct stk_task *t);
/* Worker: the launcher found here (and why ranks are not known) into its blob. */
void stk_launcher_put(const struct stk_local *l, json_t *blob);
/* Rank 0: a host's launcher into r->launchers. */
void stk_launcher_gather(struct stk_result *r, json_t *o, const char *host);
/* Rank 0: r->note, why the tasks are numbered, not labelled by rank. */
void stk_ids_note(struct stk_result *r);
void stk_result_free(struct stk_result *r);

/* gpu.c: each host's GPUs through NVML, a worker's (here) and rank 0's (keep). */
void stk_gpu_here(json_t *tasks, json_t *blob);
void stk_gpu_keep(struct stk_result *r, json_t *gpus, const char *host);

/* verdict_gpu.c: below the host, from the NCCL plugin's kernel events and the GPUs. */
void stk_verdict_gpu(const struct stk_result *r, struct stk_verdict *v);

/* verdict.c */
void stk_verdict(const struct stk_result *r, struct stk_verdict *v);
void stk_verdict_free(struct stk_verdict *v);
json_t *stk_sources_json(const struct stk_verdict *v, int culprit);
const char *stk_kind_name(unsigned kind);

/* render.c: print in a->fmt; exit code. */
int stk_render(const struct stk_result *r, const struct stk_verdict *v,
    const struct stk_args *a);

#endif
