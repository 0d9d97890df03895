/*
 * Communicators, in the manner of NCCL: every rank calls comm_init() with the
 * same unique id and size and its own rank. In non-blocking mode init, shrink,
 * split and grow return at once and comm_get_async_error() of the new
 * communicator reports COLL_EINPROGRESS until it is done
 * (ncclCommInitRankConfig + ncclCommGetAsyncError). comm_abort()
 * may be called from any thread at any time and unblocks every wait of the
 * communicator.
 *
 * After a failure the survivors go on with comm_shrink() (the root agrees on
 * the failed ranks; no new unique id), and a job grows with comm_grow_uid()
 * and comm_grow(). An op whose link breaks while both ends live is run again
 * (COLL_RETRY_MAX) when every rank stopped at it with its input intact.
 */
#ifndef COLL_COMM_H
#define COLL_COMM_H

#include "uid.h"

struct comm;

struct coll_config {
	int blocking;		/* 1: calls wait; 0: poll comm_get_async_error */
	int timeout_ms;		/* bound on joining and on any wait without progress */
	const char *ifname;	/* COLL_SOCKET_IFNAME form; NULL: take it from the environment */
};

#define COLL_TIMEOUT_DEFAULT_MS 300000
#define COLL_CONFIG_INIT { 1, 0, NULL }
#define COLL_KEEPALIVE_MS_DEFAULT 1000
#define COLL_KEEPALIVE_LIMIT_DEFAULT 30	/* silent for 30 s: dead (overloaded hosts stall for seconds) */
#define COLL_RETRY_MAX_DEFAULT 3
#define COLL_RETRY_INTERVAL_MS_DEFAULT 100
#define COLL_RETRY_SAVE_DEFAULT (16L << 20)
/* The largest communicator (the wire's bound, shared with the launchers). */
#define COLL_MAX_RANKS (1 << 20)
/* The most unique ids comm_init_scalable takes (a root serves at most this many fetches). */
#define COLL_MAX_ROOTS 1024

/* comm_shrink flags, as NCCL_SHRINK_DEFAULT and NCCL_SHRINK_ABORT. */
#define COLL_SHRINK_DEFAULT 0
#define COLL_SHRINK_ABORT 1
/* comm_split color of a rank that wants no new communicator. */
#define COLL_SPLIT_NOCOLOR (-1)

/* Start joining communicator uid as rank of nranks. */
int comm_init(struct comm **out, int nranks, const struct coll_uid *uid, int rank,
    const struct coll_config *cfg);
/*
 * Join from nuids unique ids, as ncclCommInitRankScalable: the root of
 * uids[b] serves the block of ranks floor(b nranks / nuids) up to the next
 * block's first. Every rank passes the same list. Ops work as on any
 * communicator; shrink, split and operator retry need one id and are refused.
 */
int comm_init_scalable(struct comm **out, int nranks, const struct coll_uid *uids, int nuids,
    int rank, const struct coll_config *cfg);
/* Join from COLL_UNIQUE_ID (one id, or several joined by commas), COLL_RANK and COLL_SIZE. */
int comm_init_env(struct comm **out, const struct coll_config *cfg);
/* COLL_OK when usable, COLL_EINPROGRESS while a call runs, else the error that broke it. */
int comm_get_async_error(struct comm *c);
/* Unblock every wait and fail every later op; safe from any thread. */
void comm_abort(struct comm *c);
/*
 * Flush: wait for the op in flight, then tell the root this rank leaves
 * cleanly. Non-blocking: returns COLL_EINPROGRESS and finishes in the
 * background. Ops after it fail.
 */
int comm_finalize(struct comm *c);
/* Free everything (finalizing first if that was not done). */
void comm_destroy(struct comm *c);

/*
 * A communicator without the excluded ranks, same unique id. Every surviving
 * rank calls it; the root joins every caller's list and the ranks it saw die
 * into one agreed set. COLL_SHRINK_DEFAULT wants a healthy communicator with
 * no op in flight; COLL_SHRINK_ABORT first cancels ops in flight (other
 * threads' calls return COLL_EABORTED). A rank left out gets *out = NULL.
 */
int comm_shrink(struct comm *c, const int *exclude, int nexclude, struct comm **out,
    const struct coll_config *cfg, int flags);
/* New communicators of the ranks of each color, ordered by key then rank (NOCOLOR: NULL). */
int comm_split(struct comm *c, int color, int key, struct comm **out,
    const struct coll_config *cfg);
/*
 * Grow: on one rank of c, a unique id for a communicator of nranks (>= size);
 * its root runs in this process and belongs to the new communicator. Hand the
 * id to the others (coll_broadcast over c) and to the new ranks (uid_format).
 */
int comm_grow_uid(struct comm *c, int nranks, struct coll_uid *uid);
/* Ranks of c join the grown communicator with their rank; new ranks call comm_init. */
int comm_grow(struct comm *c, int nranks, const struct coll_uid *uid, struct comm **out,
    const struct coll_config *cfg);

int comm_rank(const struct comm *c);
int comm_size(const struct comm *c);
/* Host name of a rank, from the address book. */
const char *comm_host(const struct comm *c, int rank);
/*
 * Connections per peer that large ops are striped over: the fewest any rank
 * offers (COLL_NTHREADS x COLL_NSOCKS, else chosen from the link's speed);
 * threads, when not NULL, gets how many of this rank's threads drive them.
 */
int comm_lanes(struct comm *c, int *threads);
uint64_t comm_jobid(const struct comm *c);
uint64_t comm_id(const struct comm *c);
/* Process id of a rank, from the address book. */
int comm_pid(const struct comm *c, int rank);
/* One line describing the last failure: which rank, host, op and what to do. */
const char *comm_last_error(const struct comm *c);
/* Ranks the root announced dead (at most max into ranks); their count. */
int comm_get_failed(struct comm *c, int *ranks, int max);
/*
 * The same after an op failed, waiting up to wait_ms for the root's word
 * (it may trail the data plane's failure): *out is malloc'ed, their count.
 */
int comm_wait_failed(struct comm *c, int wait_ms, int **out);
/*
 * When this rank's last op began (clock_now_ns), after any COLL_FAULT delay:
 * against the time a caller meant to start it, how late the rank came, which
 * is what the others waited for (colltop's straggler measure).
 */
uint64_t comm_op_begin_ns(const struct comm *c);
/* Ops run again after a broken link, since init. */
uint64_t comm_retries(const struct comm *c);

/* The retried ops a communicator remembers: the last COLL_RETRY_LOG of them. */
#define COLL_RETRY_LOG 64
struct comm_retry {
	uint64_t seq;		/* the op's sequence number */
	uint32_t kind;		/* its kind (kind.h: coll_kind_name) */
	int peer;		/* the other rank of the link that broke here; -1: this rank's
				 * links held, it stopped because another's broke */
	uint32_t count;		/* times it was run again */
	uint64_t wall_ns;	/* when it was first run again (wall clock, ns since the epoch) */
};
/*
 * Copy the retried ops kept, oldest first, at most max of them (the newest);
 * their number. *total (when not NULL) gets every op retried since init,
 * also those the log no longer holds.
 */
int comm_retry_log(struct comm *c, struct comm_retry *out, int max, uint64_t *total);

/* Timeout in ms from COLL_TIMEOUT (seconds) or the default. */
int comm_env_timeout_ms(void);

#endif
