/*
 * The communicator's insides, shared by the modules that implement it
 * (comm, join, peer, xfer, regroup, retry, the algorithms). Not for tools:
 * they use comm.h.
 *
 * Two wake-ups: abort_fd ends everything (comm_abort, destroy), including the
 * service thread; intr_fd stops the data plane only (a rank died, a shrink
 * cancels, a retry is asked for), while the service thread keeps talking to
 * the root so that the survivors can agree on what comes next.
 */
#ifndef COLL_COMM_IMPL_H
#define COLL_COMM_IMPL_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "comm.h"
#include "err.h"
#include "fault.h"
#include "hspool.h"
#include "status.h"
#include "wconn.h"
#include "wire.h"

struct root;

/* An answer from the root that a waiting thread picks up. */
struct comm_rg_reply {
	int have;
	struct wire_regroup_done d;
};

struct comm_rt_round {
	uint64_t query_seq;	/* the root asked ranks to stop at this seq (0: no) */
	uint32_t query_epoch;
	int answered;		/* we answered that query */
	int verdict;		/* 0: none yet; 1: go; 2: refused */
	uint64_t verdict_seq;
	uint32_t verdict_epoch;
	char why[COLL_ERR_LEN];
	int why_code;
};

/* A block leader's connection to another block's root (blocks.c). */
struct blocks_watch {
	struct wconn in;
	int block;
	int done;		/* that root said BYE, or was reported lost */
	uint64_t last_rx;
};

struct comm {
	struct coll_uid uid;		/* the communicator's: peers authenticate with it */
	struct coll_uid root_uid;	/* the root we join: uid, or our block's of several */
	struct net_addr root_via;	/* a root proxy to reach it through (len 0: none) */
	struct coll_uid *roots;		/* init from several ids (blocks.c): all, else NULL */
	int nroots;
	int block;			/* our block: its root, first rank and size */
	int block_base;
	int block_n;
	struct blocks_watch *watch;	/* a leader's, to the other roots; the service thread's */
	int nwatch;
	atomic_int watching;		/* watch is set */
	int rank;
	int nranks;
	int timeout_ms;
	int blocking;
	char ifname[128];
	uint64_t commid;
	char host[WIRE_HOST_LEN + 1];
	struct wire_entry *book;	/* nranks entries once joined */
	int book_have;			/* entries received so far (rank 0, from the root) */

	int root_fd;			/* to the root service: verdicts, regroups, retries */
	struct wconn root_in;		/* the service thread's reader of root_fd */
	pthread_mutex_t root_lock;	/* one writer at a time on root_fd */
	int ka_ms;			/* keep-alive interval and limit with the root */
	int ka_limit;
	int listen_fd;			/* peers of lower rank connect here */
	int abort_fd;			/* eventfd: aborted or destroyed, everything stops */
	int intr_fd;			/* eventfd: the data plane must stop and look */
	int *peer_fd;			/* per lane and peer (peer_slot): -1 until connected */
	uint32_t *peer_epoch;		/* the retry epoch each connection was made in */
	int lanes_wish;			/* connections per peer this rank offers (lanes.c) */
	int lane_threads;		/* threads this rank drives them with */
	int lane_threads_set;		/* COLL_NTHREADS gave them */
	uint32_t lane_min;		/* smallest slice worth a lane, this rank's */
	int nlanes;			/* the fewest any rank offers; 0 until first needed */
	uint32_t nlane_min;		/* the largest lane_min any rank has */
	struct lanes *lanes;		/* the lane workers, made by the first striped op */
	unsigned ar_algos_logged;	/* bit k: an all-reduce by COLL_AR_RING + k was logged */
	int zcopy_mode;			/* COLL_ZEROCOPY (zcopy.h) */
	size_t zcopy_min;			/* sends of a transfer below this copy */
	long sndbuf;			/* COLL_SNDBUF (sockbuf.h) */
	pthread_mutex_t err_lock;	/* lanes may fail at once: one writer of err */
	uint32_t epoch;			/* retries of ops so far: connections of older ones are dead */

	pthread_mutex_t lock;		/* guards peer_fd, async_msg, replies, in_op */
	pthread_cond_t cond;		/* a peer connected, a reply came, or abort */
	pthread_t service;
	pthread_t init_thread;
	int service_started;
	struct hspool hs;		/* handshakes of peers connecting to listen_fd */
	int init_started;
	atomic_int state;		/* COLL_EINPROGRESS, COLL_OK or the fatal error */
	atomic_int aborted;		/* comm_abort or destroy */
	atomic_int failed;		/* the root named a dead rank, or was lost */
	atomic_int cancelled;		/* a shrink with COLL_SHRINK_ABORT stopped the ops */
	atomic_int root_lost;
	atomic_int rt_pending;		/* a retry query for the op under way came in */
	atomic_int stopping;
	atomic_int finalized;
	char async_msg[COLL_ERR_LEN];	/* why the root says the job failed */
	char err[COLL_ERR_LEN];		/* detail of the last failure */
	uint8_t *dead;			/* nranks flags: ranks the root announced dead */

	struct comm_rg_reply rg;	/* the root's answer to our regroup request */
	struct comm_rt_round rt;	/* the operator retry under way, under lock */
	/* Ops retried, a ring of the last COLL_RETRY_LOG (rlog_total % it is next), under lock. */
	struct comm_retry rlog[COLL_RETRY_LOG];
	uint64_t rlog_total;
	int retry_max;			/* COLL_RETRY_MAX */
	int retry_interval_ms;		/* COLL_RETRY_INTERVAL_MS */
	size_t retry_save;		/* COLL_RETRY_SAVE_BYTES: in-place inputs kept up to this */
	int link_peer;			/* the peer whose link broke, for the message */
	int op_retries;			/* retries of the op under way */
	uint64_t op_recv_bytes;		/* bytes received in the op under way */
	uint64_t op_begin_ns;		/* clock_now_ns when the last op began, after any fault delay */
	struct comm_root *shared_root;	/* a root in this process (grow), shared by what derives from it */
	atomic_int regroups;		/* regroup threads still using this communicator */
	int regrouped;			/* under lock: a shrink or split of it was answered */
	struct root *grow_root;		/* made by comm_grow_uid, not yet handed on */

	int in_op;			/* under lock: an op of seq is running */
	/* Non-blocking mode: the call in flight, run by the worker (defer.c). */
	pthread_t worker;
	int worker_started;
	int worker_stop;		/* under lock */
	int (*job_fn)(struct comm *, void *);	/* under lock */
	void *job_arg;
	atomic_int job_pending;
	int finalize_after;		/* under lock: comm_finalize came while a call was in flight */
	uint64_t seq;			/* sequence number of the current or last op */
	uint32_t kind;			/* kind of that op */
	struct status status;
	uint8_t *scratch;		/* staging for reductions, comm->scratch_len bytes */
	size_t scratch_len;
	uint64_t *p2p_send_seq;		/* per-peer counters of point-to-point messages */
	uint64_t *p2p_recv_seq;

};

/* A root service that runs in this process, held by every communicator it serves here. */
struct comm_root {
	struct root *root;
	atomic_int refs;
};

/* comm.c: share a root (NULL stays NULL). */
struct comm_root *comm_root_new(struct root *root);
struct comm_root *comm_root_ref(struct comm_root *r);
/* comm.c: drop a share; the last one waits for the other processes' ranks, then stops it. */
void comm_root_unref(struct comm_root *r, int timeout_ms);

/* Set on a lane worker (lanes.c): its failures leave the status page to the op's thread. */
extern _Thread_local int comm_on_lane;
/* Record a failure: formats c->err, marks the status page, logs it; returns code. */
int comm_fail(struct comm *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/*
 * A peer broke off (closed, reset, timed out). Wait briefly for the root to say
 * which rank died, so the error names the cause rather than a bystander.
 */
int comm_fail_peer(struct comm *c, int peer, int code, const char *doing);
/* Deadline for a wait that starts now. */
uint64_t comm_deadline(const struct comm *c);
/* Name of the op being run, for messages. */
const char *comm_op_name(const struct comm *c);
/* Add one to an eventfd, so that its pollers wake (a full counter is awake already). */
void comm_kick(int fd);
/* Wake the data plane (intr_fd and the condition). */
void comm_interrupt(struct comm *c);
/* Why the data plane was woken: the error to return, COLL_ERETRY, or COLL_OK (spurious). */
int comm_check_intr(struct comm *c, int peer, const char *doing);
/* Cheap test on the hot path: anything that comm_check_intr would look at. */
static inline int
comm_halted(struct comm *c)
{
	return atomic_load(&c->aborted) || atomic_load(&c->failed) ||
	    atomic_load(&c->cancelled) || atomic_load(&c->rt_pending);
}
/* Send one frame to the root (any thread). */
int comm_root_send(struct comm *c, uint8_t type, const void *p, uint32_t len);
/* Wait on c->cond until done(c) or the deadline; COLL_OK, COLL_ETIMEDOUT, COLL_EABORTED. */
int comm_wait(struct comm *c, int (*done)(struct comm *), uint64_t deadline_ms);
/* env.c: variable name as an integer in lo..hi: COLL_OK, COLL_ENOTFOUND (unset, empty), COLL_EINVAL. */
int comm_env_parse(const char *name, long lo, long hi, long *v);
/* COLL_ALLREDUCE_ALGO's words, in the order of COLL_AR_RING, _DOUBLING, _HALVING. */
extern const char *const comm_allreduce_algos[];
/* env.c: keep-alive and retry settings. */
void comm_env_load(struct comm *c);
/* COLL_ROOT_VIA, for the communicators of the job's own id. */
void comm_env_via(struct comm *c);
/* service.c: the communicator failed for a reason from the root (rank: the dead one, or -1). */
void comm_verdict_set(struct comm *c, int code, int rank, const char *msg);
/* service.c: the service thread. */
void *comm_service(void *arg);
/* Create a communicator object (not joined). */
struct comm *comm_new(const struct coll_uid *uid, uint64_t commid, int rank, int nranks,
    const struct coll_config *cfg);
/* Give it its place (a regroup learns it late); the per-rank arrays are made here. */
void comm_setup(struct comm *c, uint64_t commid, int rank, int nranks);
/* Join it: in this thread when blocking or !background, else in a thread of its own. */
int comm_start(struct comm *c, int background);

/* join.c: connect to the root, join, receive the address book. */
int join_run(struct comm *c);
/* join.c: tell the root we leave cleanly. */
void join_leave(struct comm *c);
/* join.c: rank 0 got a chunk of the book from the root (service thread). */
void join_on_book(struct comm *c, const uint8_t *p, uint32_t len);
/* join.c: a chunk of the book of ranks base .. base + n - 1 (n: the chunk's own count). */
int join_take_chunk(struct comm *c, const uint8_t *p, uint32_t len, int base, int n);
/* join.c: connect to a root at addr, retrying until it listens or the deadline. */
int join_connect(struct comm *c, const struct net_addr *addr, uint64_t dl, int wake_fd,
    int *fd);

/* blocks.c: the first rank of block b of nroots over nranks. */
int blocks_base(int nranks, int nroots, int b);
/* blocks.c: a block leader fetches the other blocks' books from their roots. */
int blocks_fetch(struct comm *c, uint64_t dl);
/* blocks.c, the service thread's: poll the other roots, hear of deaths, pass them on. */
size_t blocks_watch_pollfds(struct comm *c, struct pollfd *pfd);
void blocks_watch_serve(struct comm *c, const struct pollfd *pfd, size_t n, uint64_t now);
void blocks_watch_free(struct blocks_watch *w, int n);

/* Where the connection to peer on lane sits in peer_fd and peer_epoch. */
static inline int
peer_slot(const struct comm *c, int lane, int peer)
{
	return lane * c->nranks + peer;
}
/* peer.c: the connected socket to a peer on a lane, connecting (or waiting for it) first. */
int peer_get(struct comm *c, int peer, int lane, int *fd);
/* peer.c: serve listen_fd with a handshake pool (bootstrap, before the service thread). */
int peer_listen(struct comm *c);
/* peer.c: wait for handshakes in flight to finish (destroy, after the abort fd fired). */
void peer_drain(struct comm *c);
/* peer.c: drop every connection made before epoch (a retry starts clean). */
void peer_reset(struct comm *c, uint32_t epoch);

/* defer.c: hand fn(c, job) to the worker (job is malloc'ed, freed after); COLL_EINPROGRESS. */
int comm_defer(struct comm *c, int (*fn)(struct comm *, void *), void *job);
/* defer.c: this call should be deferred (non-blocking comm, not on the worker). */
int comm_deferring(struct comm *c);
/* defer.c: end the worker (after an abort, so its call has returned). */
void comm_defer_stop(struct comm *c);

/* retry.c: the service thread got a retry message from the root. */
void retry_on_root(struct comm *c, uint8_t type, const uint8_t *p, uint32_t len);
/* retry.c: an op failed with rc; COLL_OK means run it again, else the error to return. */
int retry_op(struct comm *c, int rc, int intact);
/* retry.c: log that the op under way (c->seq, c->kind) is run again; peer -1: unknown. */
void retry_log_add(struct comm *c, int peer);

/* fault_hooks.c: read COLL_FAULT once per process; COLL_EINVAL with the reason. */
int fault_load(int rank, char *err, size_t errlen);
/* fault_hooks.c: COLL_FAULT's faults at an op's start, and on its first send. */
void fault_at_begin(struct comm *c);
int fault_in_xfer(struct comm *c, int fd, uint8_t *hdr);

#endif
