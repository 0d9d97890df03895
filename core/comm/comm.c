/*
 * Communicator lifetime: init (blocking or in a thread), abort, finalize and
 * destroy, and the failure messages that name rank, host, op and what to do.
 * The service thread (service.c) talks to the root and accepts peers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "comm_impl.h"
#include "envword.h"
#include "kind.h"
#include "lanes.h"
#include "log.h"
#include "msg.h"
#include "root.h"
#include "sockbuf.h"
#include "zcopy.h"
#include "xmalloc.h"

_Static_assert(COLL_MAX_RANKS == WIRE_MAX_RANKS, "the API's rank bound is the wire's");

#define COMM_VERDICT_WAIT_MS 2000
#define COMM_SCRATCH_LEN (1u << 20)

uint64_t
comm_deadline(const struct comm *c)
{
	return clock_now_ms() + (uint64_t)c->timeout_ms;
}

const char *
comm_op_name(const struct comm *c)
{
	return coll_kind_name(c->kind);
}

int
comm_fail(struct comm *c, int code, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&c->err_lock);
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	/* The page has one writer, the op's thread: a lane worker's failure it marks after. */
	if (!comm_on_lane)
		status_set_state(&c->status, STATUS_FAILED, c->err);
	log_warn("%s", c->err);
	pthread_mutex_unlock(&c->err_lock);
	return code;
}

void
comm_kick(int fd)
{
	uint64_t one = 1;

	if (fd >= 0 && write(fd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_warn("cannot wake the communicator's waiters: %s", strerror(errno));
}

void
comm_interrupt(struct comm *c)
{
	comm_kick(c->intr_fd);
	pthread_mutex_lock(&c->lock);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

int
comm_wait(struct comm *c, int (*done)(struct comm *), uint64_t deadline_ms)
{
	struct timespec ts = { (time_t)(deadline_ms / 1000), (long)(deadline_ms % 1000) * 1000000 };
	int r = COLL_OK;

	pthread_mutex_lock(&c->lock);
	while (!done(c) && r == COLL_OK) {
		if (atomic_load(&c->aborted))
			r = COLL_EABORTED;
		else if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT)
			r = done(c) ? COLL_OK : COLL_ETIMEDOUT;
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

static int
comm_verdict(struct comm *c, char *buf, size_t len)
{
	int have;

	pthread_mutex_lock(&c->lock);
	have = c->async_msg[0] != '\0';
	if (have)
		snprintf(buf, len, "%s", c->async_msg);
	pthread_mutex_unlock(&c->lock);
	return have;
}

/* The refusal of a retry of the op this rank is in, unless a death was its reason. */
static int
comm_refused_why(struct comm *c, char *why, size_t len, int *code)
{
	int refused;

	pthread_mutex_lock(&c->lock);
	refused = c->in_op && c->rt.verdict == 2 && c->rt.verdict_seq == c->seq &&
	    c->rt.why_code != COLL_ERANKDEAD;
	if (refused) {
		snprintf(why, len, "%s", c->rt.why);
		*code = c->rt.why_code < 0 ? c->rt.why_code : COLL_EPEER;
	}
	pthread_mutex_unlock(&c->lock);
	return refused;
}

int
comm_fail_peer(struct comm *c, int peer, int code, const char *doing)
{
	char verdict[COLL_ERR_LEN];
	uint64_t until = clock_now_ms() + COMM_VERDICT_WAIT_MS;
	struct timespec ts = { 0, 10 * 1000000 };
	int st;

	/* A root verdict always comes before the wake-up it causes: an abort needs no wait. */
	while (code != COLL_EABORTED && !comm_verdict(c, verdict, sizeof verdict) &&
	    !comm_refused_why(c, verdict, sizeof verdict, &st) &&
	    clock_now_ms() < until && !atomic_load(&c->aborted))
		nanosleep(&ts, NULL);
	/*
	 * A refused retry of this op lets the ranks that heard it first exit, so
	 * others find them gone; the refusal came before the deaths it caused
	 * (one stream from the root), and it is the reason.
	 */
	if (code != COLL_EABORTED && comm_refused_why(c, verdict, sizeof verdict, &st)) {
		code = comm_fail(c, st, "rank %d: %s seq %" PRIu64 " stopped for a retry that was "
		    "refused: %s", c->rank, comm_op_name(c), c->seq, verdict);
		atomic_store(&c->state, code);
		return code;
	}
	if (atomic_load(&c->cancelled) && !comm_verdict(c, verdict, sizeof verdict))
		code = comm_fail(c, COLL_EABORTED, "rank %d: %s seq %" PRIu64 " cancelled by a "
		    "shrink (COLL_SHRINK_ABORT)", c->rank, comm_op_name(c), c->seq);
	else if (comm_verdict(c, verdict, sizeof verdict))
		/* The verdict set the state first: keep its code (a dead rank, a failed join). */
		code = comm_fail(c, (st = atomic_load(&c->state)) != COLL_OK &&
		    st != COLL_EINPROGRESS ? st : COLL_ERANKDEAD,
		    "%s; rank %d was in %s seq %" PRIu64 " %s rank %d", verdict, c->rank,
		    comm_op_name(c), c->seq, doing, peer);
	else if (code == COLL_EABORTED)
		code = comm_fail(c, code, "rank %d: communicator aborted during %s seq %" PRIu64,
		    c->rank, comm_op_name(c), c->seq);
	else if (code == COLL_ETIMEDOUT)
		code = comm_fail(c, code, "rank %d: no progress for %d s in %s seq %" PRIu64 " %s "
		    "rank %d (host %s): that rank is hung or slow; inspect it with collstack",
		    c->rank, c->timeout_ms / 1000, comm_op_name(c), c->seq, doing, peer,
		    comm_host(c, peer));
	else
		code = comm_fail(c, code, "rank %d: %s during %s seq %" PRIu64 " %s rank %d "
		    "(host %s): that rank probably died; check its output", c->rank,
		    coll_strerror(code), comm_op_name(c), c->seq, doing, peer, comm_host(c, peer));
	atomic_store(&c->state, code);
	return code;
}

int
comm_check_intr(struct comm *c, int peer, const char *doing)
{
	int retry;

	if (atomic_load(&c->aborted) || atomic_load(&c->cancelled))
		return comm_fail_peer(c, peer, COLL_EABORTED, doing);
	/* A retry round of this op comes first: its refusal says why better than a death after it. */
	pthread_mutex_lock(&c->lock);
	retry = c->in_op && ((c->rt.query_seq == c->seq && !c->rt.answered) ||
	    (c->rt.verdict != 0 && c->rt.verdict_seq == c->seq));
	pthread_mutex_unlock(&c->lock);
	if (retry)
		return COLL_ERETRY;
	if (atomic_load(&c->failed))
		return comm_fail_peer(c, peer, COLL_EPEER, doing);
	return COLL_OK;
}

int
comm_root_send(struct comm *c, uint8_t type, const void *p, uint32_t len)
{
	int r;

	if (atomic_load(&c->root_lost))
		return COLL_EROOTLOST;
	pthread_mutex_lock(&c->root_lock);
	r = wire_send(c->root_fd, type, p, len, clock_now_ms() + 5000, c->abort_fd);
	pthread_mutex_unlock(&c->root_lock);
	return r;
}

static int
comm_init_run(struct comm *c)
{
	int r, expect = COLL_EINPROGRESS;

	r = join_run(c);
	if (r == COLL_OK) {
		status_set_state(&c->status, STATUS_IDLE, NULL);
		log_info("rank %d of %d joined communicator %016" PRIx64, c->rank, c->nranks,
		    c->commid);
	} else if (r == COLL_EABORTED) {
		comm_fail(c, r, "rank %d: communicator aborted while joining", c->rank);
	}
	atomic_compare_exchange_strong(&c->state, &expect, r);
	return atomic_load(&c->state);
}

static void *
comm_init_thread(void *arg)
{
	comm_init_run(arg);
	return NULL;
}

struct comm_root *
comm_root_new(struct root *root)
{
	struct comm_root *r = xcalloc(1, sizeof *r);

	r->root = root;
	atomic_store(&r->refs, 1);
	return r;
}

struct comm_root *
comm_root_ref(struct comm_root *r)
{
	if (r != NULL)
		atomic_fetch_add(&r->refs, 1);
	return r;
}

/*
 * The root of a grown communicator is everyone's failure detector: the last
 * communicator of this process that uses it keeps it until the other
 * processes' ranks have left too.
 */
void
comm_root_unref(struct comm_root *r, int timeout_ms)
{
	if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	if (root_wait_idle(r->root, timeout_ms) != COLL_OK)
		log_warn("ranks still connected to the root in this process after %d s; stopping "
		    "it", timeout_ms / 1000);
	root_stop(r->root);
	free(r);
}

void
comm_setup(struct comm *c, uint64_t commid, int rank, int nranks)
{
	/* Under the lock: comm_get_failed may look while a non-blocking regroup places us. */
	pthread_mutex_lock(&c->lock);
	c->commid = commid;
	c->rank = rank;
	c->nranks = nranks;
	if (c->nroots <= 1) {
		c->block_base = 0;
		c->block_n = nranks;
	}
	free(c->peer_fd);
	free(c->peer_epoch);
	free(c->dead);
	free(c->p2p_send_seq);
	free(c->p2p_recv_seq);
	c->peer_fd = xcalloc((size_t)c->lanes_wish * (size_t)nranks + 1, sizeof *c->peer_fd);
	for (int i = 0; i < c->lanes_wish * nranks; i++)
		c->peer_fd[i] = -1;
	c->peer_epoch = xcalloc((size_t)c->lanes_wish * (size_t)nranks + 1,
	    sizeof *c->peer_epoch);
	c->nlanes = 0;
	c->dead = xcalloc((size_t)nranks + 1, 1);
	c->p2p_send_seq = xcalloc((size_t)nranks + 1, sizeof *c->p2p_send_seq);
	c->p2p_recv_seq = xcalloc((size_t)nranks + 1, sizeof *c->p2p_recv_seq);
	pthread_mutex_unlock(&c->lock);
}

struct comm *
comm_new(const struct coll_uid *uid, uint64_t commid, int rank, int nranks,
    const struct coll_config *cfg)
{
	struct comm *c = xcalloc(1, sizeof *c);
	const char *ifname = cfg->ifname ? cfg->ifname : getenv("COLL_SOCKET_IFNAME");
	pthread_condattr_t ca;

	c->uid = *uid;
	c->root_uid = *uid;
	c->blocking = cfg->blocking;
	c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : comm_env_timeout_ms();
	snprintf(c->ifname, sizeof c->ifname, "%s", ifname ? ifname : "");
	comm_env_load(c);
	comm_env_via(c);
	lanes_config(c);
	zcopy_config(c);
	sockbuf_config(c);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->err_lock, NULL);
	comm_setup(c, commid, rank, nranks);
	c->root_fd = c->listen_fd = -1;
	c->abort_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->intr_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->scratch_len = COMM_SCRATCH_LEN;
	c->scratch = xmalloc(c->scratch_len);
	c->link_peer = -1;
	pthread_mutex_init(&c->root_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (gethostname(c->host, sizeof c->host - 1) != 0)
		snprintf(c->host, sizeof c->host, "unknown");
	atomic_store(&c->state, COLL_EINPROGRESS);
	return c;
}

/* The settings read from the environment that can be wrong: a bad one stops init. */
static int
comm_env_check(struct comm *c)
{
	char err[COLL_ERR_LEN];
	int k;

	if (fault_load(c->rank, err, sizeof err) != COLL_OK)
		return comm_fail(c, COLL_EINVAL, "COLL_FAULT: %s", err);
	if (lanes_check(err, sizeof err) != COLL_OK || zcopy_check(err, sizeof err) != COLL_OK ||
	    sockbuf_check(err, sizeof err) != COLL_OK)
		return comm_fail(c, COLL_EINVAL, "rank %d: %s", c->rank, err);
	/* Read by coll_allreduce_algo, which takes anything else for unset. */
	if (envword_get("COLL_ALLREDUCE_ALGO", comm_allreduce_algos, &k) == COLL_EINVAL)
		return comm_fail(c, COLL_EINVAL, "rank %d: COLL_ALLREDUCE_ALGO=%.32s: use ring, "
		    "doubling or halving, or unset it to choose by size", c->rank,
		    getenv("COLL_ALLREDUCE_ALGO"));
	return COLL_OK;
}

/*
 * The page is for the tools; the job runs without it. Something already at
 * its name (another user's file, a link) is left alone and said once, in
 * the debug log: the name holds the job's random id, and a derived
 * communicator's id is keyed by the secret, so only a guess can squat it.
 */
static void
comm_status_open(struct comm *c)
{
	char q[MSG_QUOTE_LEN(sizeof c->status.path)];
	const char *path;
	int r, e;

	c->status.path[0] = '\0';
	r = status_open(&c->status, c->uid.jobid, c->commid, c->rank, c->nranks, c->host);
	if (r == COLL_OK)
		return;
	e = errno;
	/* A failure before the name was made: name the directory it was to go in. */
	path = c->status.path[0] != '\0' ? c->status.path : status_dir();
	log_warn("cannot create status page %s: %s; this rank runs without one "
	    "(collstack and colltop will not see it)", msg_quote(q, path, strlen(path),
	    sizeof c->status.path), r == COLL_ESYS ? strerror(e) : coll_strerror(r));
}

int
comm_start(struct comm *c, int background)
{
	int r;

	if (c->abort_fd == -1 || c->intr_fd == -1)
		return comm_fail(c, COLL_ESYS, "cannot create an eventfd: %s", strerror(errno));
	if ((r = comm_env_check(c)) != COLL_OK) {
		atomic_store(&c->state, r);
		return r;
	}
	log_set_rank(c->rank);
	comm_status_open(c);
	if (c->blocking || !background)
		return comm_init_run(c);
	if (pthread_create(&c->init_thread, NULL, comm_init_thread, c) != 0)
		return comm_fail(c, COLL_ESYS, "cannot start the init thread");
	c->init_started = 1;
	return COLL_OK;
}

int
comm_init(struct comm **out, int nranks, const struct coll_uid *uid, int rank,
    const struct coll_config *cfg)
{
	static const struct coll_config defaults = COLL_CONFIG_INIT;

	*out = NULL;
	if (cfg == NULL)
		cfg = &defaults;
	if (nranks < 1 || nranks > COLL_MAX_RANKS || rank < 0 || rank >= nranks || uid == NULL ||
	    uid->version != UID_VERSION)
		return COLL_EINVAL;
	*out = comm_new(uid, uid->jobid, rank, nranks, cfg);
	return comm_start(*out, 1);
}

static int
comm_env_int(const char *name, int *v)
{
	long x;
	int r = comm_env_parse(name, 0, COLL_MAX_RANKS, &x);

	if (r == COLL_OK)
		*v = (int)x;
	return r;
}

int
comm_init_env(struct comm **out, const struct coll_config *cfg)
{
	const char *s = getenv("COLL_UNIQUE_ID");
	struct coll_uid *uids;
	int rank, size, n, r;

	*out = NULL;
	if (s == NULL)
		return COLL_ENOTFOUND;
	if (comm_env_int("COLL_RANK", &rank) != COLL_OK ||
	    comm_env_int("COLL_SIZE", &size) != COLL_OK)
		return COLL_EINVAL;
	if ((r = uid_parse_list(s, COLL_MAX_ROOTS, &uids, &n)) != COLL_OK)
		return r;
	r = comm_init_scalable(out, size, uids, n, rank, cfg);
	free(uids);
	return r;
}

int
comm_get_async_error(struct comm *c)
{
	int st = atomic_load(&c->state);

	if (st == COLL_OK && atomic_load(&c->job_pending))
		return COLL_EINPROGRESS;
	return st;
}

void
comm_abort(struct comm *c)
{
	int expect = COLL_OK;

	if (c == NULL)
		return;
	atomic_store(&c->aborted, 1);
	if (!atomic_compare_exchange_strong(&c->state, &expect, COLL_EABORTED)) {
		expect = COLL_EINPROGRESS;
		atomic_compare_exchange_strong(&c->state, &expect, COLL_EABORTED);
	}
	/* No status write here: the page has one writer, the thread running the op. */
	comm_kick(c->abort_fd);
	comm_interrupt(c);
}

int
comm_finalize(struct comm *c)
{
	int expect = COLL_OK, leave;

	if (c == NULL)
		return COLL_EINVAL;
	/* Non-blocking: the goodbye goes after the op in flight, from the worker. */
	if (comm_deferring(c)) {
		pthread_mutex_lock(&c->lock);
		if (atomic_load(&c->job_pending))
			c->finalize_after = 1;
		pthread_mutex_unlock(&c->lock);
		if (c->finalize_after)
			return COLL_EINPROGRESS;
	}
	if (atomic_exchange(&c->finalized, 1))
		return COLL_OK;
	/*
	 * Only a rank in good standing says goodbye: anything else is a failure
	 * the root must report. A rank whose shrink was answered has moved on:
	 * its leaving must not fail the communicator it is joining.
	 */
	pthread_mutex_lock(&c->lock);
	leave = atomic_load(&c->state) == COLL_OK || c->regrouped;
	pthread_mutex_unlock(&c->lock);
	if (leave && c->root_fd >= 0 && !atomic_load(&c->root_lost))
		join_leave(c);
	atomic_compare_exchange_strong(&c->state, &expect, COLL_OK);
	return COLL_OK;
}

static void
comm_free(struct comm *c)
{
	lanes_free(c);
	for (int i = 0; i < c->lanes_wish * c->nranks; i++)
		if (c->peer_fd[i] >= 0)
			close(c->peer_fd[i]);
	if (c->root_fd >= 0)
		close(c->root_fd);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->abort_fd >= 0)
		close(c->abort_fd);
	if (c->intr_fd >= 0)
		close(c->intr_fd);
	wconn_free(&c->root_in);
	hspool_free(&c->hs);
	status_close(&c->status);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->err_lock);
	pthread_mutex_destroy(&c->root_lock);
	pthread_cond_destroy(&c->cond);
	root_stop(c->grow_root);
	free(c->rg.d.excl);
	free(c->peer_fd);
	free(c->peer_epoch);
	free(c->dead);
	free(c->p2p_send_seq);
	free(c->p2p_recv_seq);
	free(c->scratch);
	free(c->book);
	free(c->roots);
	free(c);
}

void
comm_destroy(struct comm *c)
{
	if (c == NULL)
		return;
	atomic_store(&c->stopping, 1);
	/* A call still in flight on the worker: it had its chance; stop it. */
	if (atomic_load(&c->job_pending))
		comm_abort(c);
	comm_defer_stop(c);
	if (c->init_started && atomic_load(&c->state) == COLL_EINPROGRESS)
		comm_abort(c);
	if (c->init_started)
		pthread_join(c->init_thread, NULL);
	c->init_started = 0;
	comm_finalize(c);
	if (c->shared_root != NULL && c->root_fd >= 0)
		shutdown(c->root_fd, SHUT_RDWR);	/* gone from its count, cleanly or not */
	atomic_store(&c->aborted, 1);
	comm_kick(c->abort_fd);
	comm_interrupt(c);
	if (c->service_started)
		pthread_join(c->service, NULL);
	if (atomic_load(&c->watching))
		blocks_watch_free(c->watch, c->nwatch);
	peer_drain(c);
	/* A non-blocking shrink or split of this one still asking the root: it sees the abort. */
	while (atomic_load(&c->regroups) > 0) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	comm_root_unref(c->shared_root, c->timeout_ms);
	comm_free(c);
}

int
comm_rank(const struct comm *c)
{
	return c->rank;
}

int
comm_size(const struct comm *c)
{
	return c->nranks;
}

const char *
comm_host(const struct comm *c, int rank)
{
	if (c->book == NULL || rank < 0 || rank >= c->nranks)
		return "?";
	return c->book[rank].host;
}

int
comm_pid(const struct comm *c, int rank)
{
	if (c->book == NULL || rank < 0 || rank >= c->nranks)
		return -1;
	return (int)c->book[rank].pid;
}

uint64_t
comm_jobid(const struct comm *c)
{
	return c->uid.jobid;
}

uint64_t
comm_id(const struct comm *c)
{
	return c->commid;
}

uint64_t
comm_retries(const struct comm *c)
{
	return c->epoch;
}

int
comm_retry_log(struct comm *c, struct comm_retry *out, int max, uint64_t *total)
{
	uint64_t t, kept, first;
	int n = 0;

	pthread_mutex_lock(&c->lock);
	t = c->rlog_total;
	kept = t < COLL_RETRY_LOG ? t : COLL_RETRY_LOG;
	if (max < 0)
		max = 0;
	/* The newest max of those kept, oldest first. */
	first = t - (kept < (uint64_t)max ? kept : (uint64_t)max);
	for (uint64_t i = first; i < t; i++)
		out[n++] = c->rlog[i % COLL_RETRY_LOG];
	pthread_mutex_unlock(&c->lock);
	if (total != NULL)
		*total = t;
	return n;
}

int
comm_wait_failed(struct comm *c, int wait_ms, int **out)
{
	struct timespec ts = { 0, 10 * 1000000 };
	int n, got;

	*out = NULL;
	for (int i = 0; (n = comm_get_failed(c, NULL, 0)) == 0 && i < wait_ms / 10; i++)
		nanosleep(&ts, NULL);
	if (n == 0)
		return 0;
	*out = xcalloc((size_t)n, sizeof **out);
	got = comm_get_failed(c, *out, n);
	return got < n ? got : n;
}

uint64_t
comm_op_begin_ns(const struct comm *c)
{
	return c->op_begin_ns;
}

int
comm_get_failed(struct comm *c, int *ranks, int max)
{
	int n = 0;

	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < c->nranks; i++)
		if (c->dead[i]) {
			if (n < max)
				ranks[n] = i;
			n++;
		}
	pthread_mutex_unlock(&c->lock);
	return n;
}

const char *
comm_last_error(const struct comm *c)
{
	return c->err[0] ? c->err : coll_strerror(atomic_load(&c->state));
}
