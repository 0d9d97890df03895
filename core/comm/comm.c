/*
 * Communicator lifetime: init (blocking or in a thread), the service thread
 * that accepts peers and listens to the root for failure notices, abort and
 * destroy. Every failure message names rank, host and op, and what to do.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "comm_impl.h"
#include "kind.h"
#include "log.h"
#include "xmalloc.h"

#define COMM_VERDICT_WAIT_MS 2000
#define COMM_SCRATCH_LEN (1u << 20)

int
comm_env_timeout_ms(void)
{
	const char *s = getenv("COLL_TIMEOUT");
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return COLL_TIMEOUT_DEFAULT_MS;
	v = strtod(s, &end);
	if (*end != '\0' || !(v >= 0.001 && v <= 86400 * 7))
		return COLL_TIMEOUT_DEFAULT_MS;
	return (int)(v * 1000);
}

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

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	status_set_state(&c->status, STATUS_FAILED, c->err);
	log_warn("%s", c->err);
	return code;
}

static void
comm_wake(struct comm *c)
{
	uint64_t one = 1;

	if (write(c->abort_fd, &one, sizeof one) < 0)
		log_warn("cannot signal the communicator's waiters");
	pthread_mutex_lock(&c->lock);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* The root announced a failure, or vanished: record why and wake every waiter. */
static void
comm_set_verdict(struct comm *c, int code, const char *msg)
{
	int expect = COLL_OK;

	pthread_mutex_lock(&c->lock);
	if (c->async_msg[0] == '\0')
		snprintf(c->async_msg, sizeof c->async_msg, "%s", msg);
	pthread_mutex_unlock(&c->lock);
	if (!atomic_compare_exchange_strong(&c->state, &expect, code)) {
		expect = COLL_EINPROGRESS;
		atomic_compare_exchange_strong(&c->state, &expect, code);
	}
	atomic_store(&c->aborted, 1);
	comm_wake(c);
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

int
comm_fail_peer(struct comm *c, int peer, int code, const char *doing)
{
	char verdict[COLL_ERR_LEN];
	uint64_t until = clock_now_ms() + COMM_VERDICT_WAIT_MS;
	struct timespec ts = { 0, 10 * 1000000 };

	/* A root verdict always comes before the wake-up it causes: an abort needs no wait. */
	while (code != COLL_EABORTED && !comm_verdict(c, verdict, sizeof verdict) &&
	    clock_now_ms() < until)
		nanosleep(&ts, NULL);
	if (comm_verdict(c, verdict, sizeof verdict))
		code = comm_fail(c, COLL_ERANKDEAD, "%s; rank %d was in %s seq %" PRIu64
		    " %s rank %d", verdict, c->rank, comm_op_name(c), c->seq, doing, peer);
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

static void
comm_on_root(struct comm *c)
{
	struct wire_note note;
	struct wire_hdr h;
	uint8_t *p = NULL;
	int r;

	r = wire_recv(c->root_fd, &h, &p, 1024, clock_now_ms() + 5000, c->abort_fd);
	if (r == COLL_EABORTED) {
		free(p);
		return;
	}
	if (r == COLL_OK && h.type == WIRE_FAILED && wire_note_decode(p, h.len, &note) == COLL_OK)
		comm_set_verdict(c, COLL_ERANKDEAD, note.msg);
	else
		comm_set_verdict(c, COLL_EPEER, "lost the connection to the root service (the "
		    "launcher, or the rank that made the unique id, died)");
	free(p);
}

static void *
comm_service(void *arg)
{
	struct comm *c = arg;
	struct pollfd pfd[3];
	int n;

	for (;;) {
		pfd[0] = (struct pollfd){ c->abort_fd, POLLIN, 0 };
		pfd[1] = (struct pollfd){ c->listen_fd, POLLIN, 0 };
		pfd[2] = (struct pollfd){ c->root_fd, POLLIN, 0 };
		n = poll(pfd, atomic_load(&c->aborted) ? 2 : 3, -1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 || pfd[0].revents)
			break;
		if (pfd[1].revents)
			peer_accept(c);
		if (pfd[2].revents)
			comm_on_root(c);
	}
	return NULL;
}

static int
comm_init_run(struct comm *c)
{
	int r;

	if ((r = bootstrap_join(c)) != COLL_OK)
		goto out;
	if (pthread_create(&c->service, NULL, comm_service, c) != 0) {
		r = comm_fail(c, COLL_ESYS, "cannot start the communicator thread");
		goto out;
	}
	c->service_started = 1;
	status_set_state(&c->status, STATUS_IDLE, NULL);
	log_info("rank %d of %d joined job %016" PRIx64, c->rank, c->nranks, c->uid.jobid);
out:
	if (r == COLL_EABORTED)
		comm_fail(c, r, "rank %d: communicator aborted while joining", c->rank);
	{
		int expect = COLL_EINPROGRESS;
		atomic_compare_exchange_strong(&c->state, &expect, r);
	}
	return atomic_load(&c->state);
}

static void *
comm_init_thread(void *arg)
{
	comm_init_run(arg);
	return NULL;
}

static struct comm *
comm_new(int nranks, const struct coll_uid *uid, int rank, const struct coll_config *cfg)
{
	struct comm *c = xcalloc(1, sizeof *c);
	const char *ifname = cfg->ifname ? cfg->ifname : getenv("COLL_SOCKET_IFNAME");
	pthread_condattr_t ca;

	c->uid = *uid;
	c->rank = rank;
	c->nranks = nranks;
	c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : comm_env_timeout_ms();
	snprintf(c->ifname, sizeof c->ifname, "%s", ifname ? ifname : "");
	c->commid = uid->jobid;
	c->root_fd = c->listen_fd = -1;
	c->abort_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->peer_fd = xcalloc((size_t)nranks, sizeof *c->peer_fd);
	for (int i = 0; i < nranks; i++)
		c->peer_fd[i] = -1;
	c->p2p_send_seq = xcalloc((size_t)nranks, sizeof *c->p2p_send_seq);
	c->p2p_recv_seq = xcalloc((size_t)nranks, sizeof *c->p2p_recv_seq);
	c->scratch_len = COMM_SCRATCH_LEN;
	c->scratch = xmalloc(c->scratch_len);
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (gethostname(c->host, sizeof c->host - 1) != 0)
		snprintf(c->host, sizeof c->host, "unknown");
	atomic_store(&c->state, COLL_EINPROGRESS);
	return c;
}

int
comm_init(struct comm **out, int nranks, const struct coll_uid *uid, int rank,
    const struct coll_config *cfg)
{
	static const struct coll_config defaults = COLL_CONFIG_INIT;
	struct comm *c;

	*out = NULL;
	if (cfg == NULL)
		cfg = &defaults;
	if (nranks < 1 || rank < 0 || rank >= nranks || uid == NULL ||
	    uid->version != UID_VERSION)
		return COLL_EINVAL;
	c = comm_new(nranks, uid, rank, cfg);
	*out = c;
	if (c->abort_fd == -1)
		return comm_fail(c, COLL_ESYS, "cannot create an eventfd: %s", strerror(errno));
	log_set_rank(rank);
	if (status_open(&c->status, uid->jobid, c->commid, rank, nranks, c->host) != COLL_OK)
		log_warn("cannot create status page in %s: %s", status_dir(), strerror(errno));
	if (cfg->blocking)
		return comm_init_run(c);
	if (pthread_create(&c->init_thread, NULL, comm_init_thread, c) != 0)
		return comm_fail(c, COLL_ESYS, "cannot start the init thread");
	c->init_started = 1;
	return COLL_OK;
}

static int
comm_env_int(const char *name, int *v)
{
	const char *s = getenv(name);
	char *end;
	long x;

	if (s == NULL || *s == '\0')
		return COLL_ENOTFOUND;
	errno = 0;
	x = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || x < 0 || x > 1 << 24)
		return COLL_EINVAL;
	*v = (int)x;
	return COLL_OK;
}

int
comm_init_env(struct comm **out, const struct coll_config *cfg)
{
	const char *s = getenv("COLL_UNIQUE_ID");
	struct coll_uid uid;
	int rank, size, r;

	*out = NULL;
	if (s == NULL)
		return COLL_ENOTFOUND;
	if ((r = uid_parse(&uid, s)) != COLL_OK)
		return r;
	if (comm_env_int("COLL_RANK", &rank) != COLL_OK ||
	    comm_env_int("COLL_SIZE", &size) != COLL_OK)
		return COLL_EINVAL;
	return comm_init(out, size, &uid, rank, cfg);
}

int
comm_get_async_error(struct comm *c)
{
	return atomic_load(&c->state);
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
	comm_wake(c);
}

void
comm_destroy(struct comm *c)
{
	int clean;

	if (c == NULL)
		return;
	atomic_store(&c->stopping, 1);
	clean = atomic_load(&c->state) == COLL_OK;
	if (c->init_started) {
		if (atomic_load(&c->state) == COLL_EINPROGRESS)
			comm_abort(c);
		pthread_join(c->init_thread, NULL);
	}
	comm_wake(c);
	if (c->service_started)
		pthread_join(c->service, NULL);
	peer_drain(c);
	if (clean)
		bootstrap_leave(c);
	for (int i = 0; i < c->nranks; i++)
		if (c->peer_fd[i] >= 0)
			close(c->peer_fd[i]);
	if (c->root_fd >= 0)
		close(c->root_fd);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->abort_fd >= 0)
		close(c->abort_fd);
	status_close(&c->status);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c->peer_fd);
	free(c->p2p_send_seq);
	free(c->p2p_recv_seq);
	free(c->scratch);
	free(c->book);
	free(c);
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

const char *
comm_last_error(const struct comm *c)
{
	return c->err[0] ? c->err : coll_strerror(atomic_load(&c->state));
}
