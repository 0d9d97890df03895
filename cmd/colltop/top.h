/*
 * colltop: a live dashboard of a cluster's collectives, links and GPUs.
 *
 * The front end (front.c) starts one worker per host (or -n N local ranks)
 * through the job runner. Each interval the workers (worker.c) run a small
 * all-reduce probe through the core, sample their host (collect.c: network
 * and RDMA counters, GPUs through NVML, the status pages of other jobs), and
 * gather one snapshot to rank 0, which writes it as one JSON line on its
 * stdout: the front end's stream of frames. The front end folds frames into
 * the model (model.c: history, stragglers, lost hosts, stalled jobs), which
 * the view (view.c) turns into rows of text; the screen (ui.c, the only file
 * that calls curses) or the batch writer (batch.c) shows them. Keys that
 * change the workers (+ and -, q) reach rank 0 over an authenticated control
 * connection (ctl.c), and rank 0 hands them on with each interval's
 * broadcast.
 *
 * Why rank 0 relays frames over its output rather than the dashboard joining
 * the communicator: the dashboard then never waits in a collective, so a dead
 * host can stall the workers for a moment but never the screen or its keys.
 */
#ifndef COLL_TOP_H
#define COLL_TOP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cmd.h"
#include "hostopt.h"

#define TOP_HIST 120		/* intervals of history kept per rank */
#define TOP_FRAME_MAX (64u << 20)
#define TOP_RING 16		/* ops a page keeps (status.h's STATUS_RING) */

struct top_args {
	const struct cmd *cmd;
	struct hostopt ho;
	double interval_s;
	size_t bytes;		/* probe size */
	long iters;		/* all-reduces per interval */
	long iterations;	/* 0: until q or a signal */
	int json, batch, color, ascii, worker, by_host, no_gpu;
	double factor;		/* straggler: late by more than factor x the median lateness */
	long slow_k;		/* for this many intervals in a row */
	long warmup;		/* intervals not judged at the start */
	double min_late_ms;	/* and by at least this much */
	double dead_after_s;	/* a rank silent this long is dropped */
	double stall_s;		/* a job's sequence numbers still this long: stalled */
	const char *sort, *filter;	/* column name; text a row must hold */
	const char *listen;	/* --listen [ADDR:]PORT: serve /metrics; NULL none */
	int ras;		/* --ras: follow NCCL RAS's MONITOR on this host */
	long ctl_port;		/* worker: the front end's control port */
	int out_said;		/* the front end said how stdout failed: not again */
};

#define TOP_RAS_EVENTS 4	/* RAS events shown: the last few */

/* ---- model.c: what the front end knows, built from frames ---- */

struct top_rank {
	int rank;		/* the job's rank, kept across shrinks */
	int host;		/* index into hosts */
	int pid;
	double lat_us, late_us, busbw;	/* the last interval; -1 unknown */
	float hist[TOP_HIST];	/* lat_us, oldest first */
	int nhist;
	int slow_run;		/* slow intervals in a row */
	int straggler;
	int lost;
	char why[200];
};

struct top_host {
	char name[80];		/* as the host calls itself (up to WIRE_HOST_LEN) */
	int nranks;
	int lost;		/* every rank on it dropped, or SSH lost it */
	char why[200];
	json_t *sample;		/* the last sample: net, rdma, gpu, gpu_why (owned) */
};

struct top_jobrank {
	int rank, pid, state, source;	/* rank: in the communicator, as its page says */
	int wrank;		/* in the world, from its launcher's variables; -1 unknown */
	int kernel;		/* NCCL's page: kernel events came, so seq_started/done are the GPU's */
	int wait_peer;		/* the rank it waits on, -1 none */
	char proc;		/* its process state on its host: R S D T Z, '?' gone */
	char host[80];
	uint64_t seq_started, seq_done, seq_queued;
	char kind[16];
	/* The job's own straggler test (model_jobs.c), from the ops its page keeps. */
	double late_ms;		/* later than the others to the recent ops (median); -1 unknown */
	int slow_run;		/* intervals in a row late by the rule */
	int straggler;		/* by the rule: it holds the job up */
	int gpu;		/* its GPU's index on its host; -1 unknown */
	char gpu_bus[16];	/* its GPU's PCI address where the index is not known; "" */
	uint64_t retries;	/* ops its page says were run again (since init) */
	int retry_peer;		/* the other rank of the link that broke last; -1 unknown */
	double retry_age_s;	/* since its last retry; -1 none */
	/* The completed ops its page keeps, at ops[seq % TOP_RING]; seq 0: none (jobstrag.c). */
	struct top_op {
		uint64_t seq, queued_ns, begin_ns, end_ns;
	} ops[TOP_RING];
};

struct top_job {
	/*
	 * coll's 16 hex digits, or for a job coll did not launch the key its
	 * launcher gave (ident.c: "slurm:1234.0", "run:ID", "torchrun:4711").
	 */
	char jobid[64], commid[20];
	char launcher[48];	/* "torchrun:4711"; "" unknown */
	char slurm[24];		/* its Slurm job id; "" none */
	char local[80];		/* a key that holds on one host only (a launcher's pid): that host */
	char user[64];		/* who owns its pages (printable) */
	int nranks;
	struct top_jobrank *r;
	int nr;
	int rcap;		/* r's room: it grows by doubling, rebuilt each frame */
	uint64_t sum;		/* of every rank's sequence numbers: a change is progress */
	double still_s;		/* since sum last changed */
	int stalled;
	int behind;		/* the rank behind the others while stalled, -1 none */
	/* How it was found: "behind", "stopped", "dead", "waited on", "gpu not started". */
	const char *why;
	int in_kernel;		/* stalled with every kernel begun and none ended */
	int live;		/* ranks whose process is there (not gone, not a zombie) */
	uint64_t behind_seq, ahead_seq;
	int seen;		/* in the last frame */
	int straggler;		/* index into r of the rank that holds the job up; -1 none */
	int nops;		/* ops the last straggler test compared */
	uint64_t judged_seq;	/* the newest op it compared */
	uint64_t retries;	/* of all its ranks: the most one counts (a retry reruns every rank's op) */
	int retrying;		/* a retry within the last stall_s: its link is flapping */
};

struct top_model {
	const struct top_args *a;
	uint64_t frames;	/* frames folded in */
	uint64_t iter;		/* the workers' interval count of the last frame */
	double interval_s, t_last;	/* the workers' interval; when the last frame came (monotonic s) */
	size_t bytes;
	long iters;
	int size;		/* ranks in the communicator now */
	struct top_rank *ranks;
	int nranks;
	struct top_host *hosts;
	int nhosts;
	struct top_job *jobs;
	int njobs;
	int straggler;		/* index into ranks of the slowest straggler, -1 none */
	double busbw;		/* of the op itself: its fastest rank's view */
	double med_lat_us, med_late_us;
	char note[256];		/* the last word from a worker or the front end */
	/* --ras: NCCL RAS's MONITOR events on this host (rasfollow.c), newest first. */
	struct top_rasev {
		char text[320];
		int dead;	/* a process of the job died */
	} ras[TOP_RAS_EVENTS];
	int nras;
	char ras_note[256];	/* how following goes: "" not asked for */
};

void model_init(struct top_model *m, const struct top_args *a);
void model_free(struct top_model *m);
/* Fold in one frame (a line of rank 0's stdout); -1 with err if it is not one. */
int model_frame(struct top_model *m, const char *line, size_t len, double now_s, char *err,
    size_t errlen);
/*
 * A host the launcher lost (SSH gone): its ranks, by the launcher's placement
 * (its host names may not be the hosts' own), are shown lost.
 */
void model_ranks_lost(struct top_model *m, const int *rank_host, int nranks, int host,
    const char *why);
int model_find_host(struct top_model *m, const char *name, int add);

/* ---- rule.c: the straggler rule, the probe's and each job's ---- */

/* The median of v (n, sorted in place); -1 when n is 0. */
double rule_median(double *v, int n);
/* The median of sorted v without one element equal to x (0 when none is left). */
double rule_median_others(const double *v, int n, double x);
/*
 * Judge n ranks by their lateness late[i] this interval: slow when later than
 * factor x the others' median and than floor (late's unit), slow_run[i] counts
 * it in a row (judge 0, the warm-up: reset), straggler[i] once it reaches
 * slow_k. The index of the latest straggler, -1 none.
 */
int rule_judge(const struct top_args *a, double floor, int judge, const double *late, int n,
    int *slow_run, int *straggler);

/* ---- jobstrag.c: each job's own straggler and retries, from its pages' ops ---- */

/* A page's ops and retries (JSON from a worker: untrusted) into x. */
void jobstrag_page(struct top_jobrank *x, json_t *page);
/*
 * Judge job j, whose ranks this frame just read, against was (its ranks as of
 * the last frame, nwas): lateness over the ops new since judged_seq, the rule,
 * retries. An interval without new ops keeps what the last one found.
 */
void jobstrag_judge(const struct top_model *m, struct top_job *j, const struct top_jobrank *was,
    int nwas);

/* ---- view.c: the model as rows of cells (no curses) ---- */

enum view_attr { VA_NONE, VA_HEAD, VA_OK, VA_WARN, VA_BAD, VA_DIM };

struct view_cell {
	char text[96];
	double num;		/* what it sorts by; NAN: by its text */
	int attr;
	int right;		/* right-aligned (numbers) */
};

#define VIEW_MAXCOLS 20

struct view_table {
	int ncols;
	struct view_cell head[VIEW_MAXCOLS];
	int width[VIEW_MAXCOLS];
	int nrows;
	struct view_cell (*rows)[VIEW_MAXCOLS];
};

/* The rank or host table, filtered and sorted by column sort; free with view_table_free. */
void view_table(const struct top_model *m, int by_host, int sort, int reverse,
    const char *filter, int ascii, struct view_table *t);
void view_table_free(struct view_table *t);
/* The alert lines (straggler, lost hosts, silence, stalled jobs), worst first; their count. */
int view_alerts(const struct top_model *m, double now_s, char lines[][256], int *attrs, int max);
/* The summary line. */
void view_summary(const struct top_model *m, char *buf, size_t len);
/* A sparkline of the last width values of v (n of them), Unicode blocks or ASCII. */
void view_spark(const float *v, int n, int width, int ascii, char *buf, size_t len);
/* Columns of a table, and a column's index by its name (any case): -1 if none. */
int view_ncols(int by_host);
const char *view_col_name(int by_host, int col);
int view_col_parse(int by_host, const char *name);
/* The stalled job a key runs collstack on: its index, -1 none. */
int view_stalled_job(const struct top_model *m);

/*
 * A rank as shown: its world rank where its launcher said, else its
 * communicator's. view_rank_shown finds the rank in the job (a scan: once per
 * line, never once per rank); view_jobrank_shown is for the rank in hand.
 */
int view_rank_shown(const struct top_job *j, int comm_rank);
int view_jobrank_shown(const struct top_jobrank *r);
/* The job's state in a word: "advancing", "stalled", "hung in kernel", "gone". */
const char *view_job_state(const struct top_job *j);

/* What c runs for job j: collstack's arguments (argv[0] "collstack"), and a note. */
#define VIEW_CS_ARGS 8
struct view_cs {
	int argc;
	char argv[VIEW_CS_ARGS][1024];
	char note[256];		/* what --pid cannot reach; "" none */
};
void view_collstack(const struct top_model *m, int j, const char *here, struct view_cs *cs);
/*
 * Every job's ranks by job, host and pid, for --pid: one sort, so that what
 * c runs for every job (--json) is not a walk of every job's ranks for each.
 * It points into m: build it again once m changes.
 */
struct view_cs_ent {
	int group;		/* the job's, its communicators together */
	const char *host;
	int pid;
};
struct view_cs_index {
	struct view_cs_ent *e;	/* sorted by group, host, pid */
	int ne;
	int *run, nrun;		/* each (group, host)'s first entry; run[nrun] = ne */
	int *grun;		/* each group's first run; grun[ngroups] = nrun */
	int *group;		/* each job's group */
	const char **gfirst;	/* each group's first host in the model's order, NULL none */
	int ngroups;
};
struct view_cs_index *view_cs_index(const struct top_model *m);
void view_cs_index_free(struct view_cs_index *ix);
void view_collstack_in(const struct top_model *m, const struct view_cs_index *ix, int j,
    const char *here, struct view_cs *cs);
/* The same as one line, for the screen and --batch. */
void view_cs_line(const struct view_cs *cs, char *buf, size_t len);

/* ---- batch.c ---- */
/* 0, or the errno of a write that failed (EPIPE: the reader went away). */
int batch_text(const struct top_model *m, FILE *f);
int batch_json(const struct top_model *m, FILE *f);

/* ---- ui.c: the curses screen ---- */
struct ui;
struct top_front;
struct ui *ui_open(const struct top_args *a, char *err, size_t len);
void ui_close(struct ui *u);
/* Wait up to ms for a key; 1 to quit, 2 to quit by Ctrl-C, 0 otherwise. Redraws when asked to. */
int ui_step(struct ui *u, struct top_front *f, int ms);
void ui_draw(struct ui *u, struct top_front *f);

/* ---- ctl.c: the control connection from rank 0 to the front end ---- */
struct ctl_cmd {
	int32_t interval_ms;	/* 0: unchanged */
	int32_t quit;
	int32_t pad[2];
};

int ctl_listen(int remote, int *fd, int *port, char *err, size_t len);
/* The front end's control thread on listening socket lfd (see ctl.c); NULL with err. */
struct ctl_server;
struct ctl_server *ctl_server_start(int lfd, char *err, size_t len);
/* The job's unique id, once it has one: connections are taken only from then on. */
int ctl_server_uid(struct ctl_server *s, const char *uidstr);
struct ctl_refused {
	unsigned long n;	/* connections refused so far */
	char first[200], last[200];	/* why the first and the last were (printable) */
};
/* Rank 0's authenticated connection if one came since the last call (else -1); the refusals. */
int ctl_server_take(struct ctl_server *s, struct ctl_refused *r);
/* Stop the thread and every handshake; NULL is nothing. */
void ctl_server_stop(struct ctl_server *s);
int ctl_send(int fd, const char *line);
/* Rank 0: connect to the front end named by COLL_UNIQUE_ID's address and port. */
int ctl_connect(int port, char *err, size_t len);
/* Rank 0: read what the front end sent, without waiting; -1 when it hung up. */
int ctl_poll(int fd, struct ctl_cmd *cmd);

/* ---- collect.c: this host's sample as JSON (no curses) ---- */
struct collect {
	struct sample_host *prev;	/* NULL before the first */
	uint64_t own_job;
	int gpus;
};
void collect_init(struct collect *c, uint64_t own_job, int gpus);
void collect_free(struct collect *c);
json_t *collect_host(struct collect *c);
/*
 * The status pages of other jobs' ranks on this host (named host in their
 * pages); c's last sample (NULL: none) maps their GPUs to its indexes.
 */
json_t *collect_pages(const struct collect *c, uint64_t own_job, const char *host);

/* ---- ident.c: who a page's process is in its job, from its launcher ---- */
struct top_ident {
	pid_t pid;
	int known;		/* its environment was read */
	int wrank;		/* world rank; -1 none */
	int local;		/* key is a launcher's pid: it holds on this host only */
	char key[64];		/* the job's key; "" none */
	char launcher[48];	/* "torchrun:4711"; "" none found */
	char slurm[24];		/* SLURM_JOB_ID; "" none */
};
/* Read pid's identity if it is owner's process (real and effective uid); -1 if not known. */
int ident_read(pid_t pid, uid_t owner, struct top_ident *id);

/* ---- alive.c: is a page's process the live rank that wrote it? ---- */
struct status_page;
/* Is pid a live process of user owner (by its real uid)? */
int alive_owned(pid_t pid, uid_t owner);
/* The boot time in wall seconds (/proc/stat), for alive_state; -1 unknown. */
double alive_boot_s(void);
/* The page's process state letter (R S D T Z...), or 0: gone, another user's, or a newer process. */
char alive_state(const struct status_page *pg, uid_t owner, double boot_s);
/* What alive_state reads of a process, once for all the pages that name it (collect.c). */
struct alive_proc {
	pid_t pid;
	uid_t owner;
	char state;		/* 0: no such process */
	int owned;		/* a process of owner's (real uid) */
	double start_s;		/* its start, wall seconds; -1 unknown */
};
void alive_read(struct alive_proc *a, pid_t pid, uid_t owner, double boot_s);
/* alive_state from what alive_read found, for page pg of that process. */
char alive_of(const struct alive_proc *a, const struct status_page *pg);

/* ---- metrics.c: the model as Prometheus's text format (no I/O) ---- */
struct promtext;
/* Append the model's metrics to t; the caller holds the model still. */
void metrics_render(const struct top_model *m, struct promtext *t);

/* ---- listen.c: --listen's HTTP server for /metrics, on a thread of its own ---- */
struct net_addr;
struct listen_server;
/* [ADDR:]PORT into a; -1 with err (one line naming it). */
int listen_parse(const char *spec, struct net_addr *a, char *err, size_t len);
/* Bind f->a->listen and serve f's model; NULL with err (the port taken, ...). */
struct listen_server *listen_start(struct top_front *f, char *err, size_t len);
/* Stop serving and close every connection; NULL is nothing. */
void listen_stop(struct listen_server *s);

/* ---- worker.c ---- */
int worker_run(struct top_args *a);

/* ---- front.c ---- */
struct top_front {
	struct top_args *a;
	struct top_model m;
	struct ui *ui;
	int saved_err;		/* the real stderr while the screen is up, else -1 */
	void *lock;		/* pthread_mutex_t, held while m changes or is drawn */
	int lfd, cfd, port;	/* control: listening, connected (-1 none) */
	struct ctl_server *srv;	/* the control thread, NULL in batch mode */
	struct ctl_refused refused;	/* control connections refused, as last shown */
	char uid[200];		/* the job's unique id, once it started */
	int dirty, quit, done;
	int intr;		/* quit by Ctrl-C: exit 130 */
	double interval_s;	/* asked for with + and - */
	char err[256];		/* a worker's last error line */
	int early;		/* a worker or host was lost before the first frame */
	int bad;		/* frames that did not parse */
	char last_parse[256];	/* why the last attempt did not */
	char why[512];		/* of that */
	int out_errno;		/* batch: standard output failed (EPIPE, ENOSPC); 0 not */
	int out_saved_err;	/* the real stderr while it is kept quiet after that, else -1 */
	struct listen_server *lsrv;	/* --listen's server, NULL none */
	struct rasfollow *ras;		/* --ras's thread, NULL none */
};
int front_run(struct top_args *a, int argc, char **argv);

/* ---- rasfollow.c: --ras, NCCL RAS's MONITOR stream into the model's alerts ---- */
struct rasfollow;
/* Start following (a thread; it connects, and again after a loss, by itself); NULL with err. */
struct rasfollow *rasfollow_start(struct top_front *f, char *err, size_t len);
/* Stop it; NULL is nothing. */
void rasfollow_stop(struct rasfollow *r);
/* A stream event as the model keeps it (newest first, the last TOP_RAS_EVENTS). */
void rasfollow_post(struct top_model *m, const char *text, int dead);
/* Hold the model still (the screen draws from it while frames come in). */
void front_lock_model(struct top_front *f);
void front_unlock_model(struct top_front *f);
/* Ask the workers for a new interval or to stop (through rank 0). */
void front_interval(struct top_front *f, double s);
void front_quit(struct top_front *f);
/* Put the real stderr back (an allocation failure's last words). */
void front_fatal_stderr(void);
/* Run collstack with these arguments (argv[0] "collstack"; endwin first); its exit code. */
int front_collstack(struct top_front *f, const struct view_cs *cs);

#endif
