/*
 * Connections between ranks, made on first use. The lower rank of a pair
 * connects, the higher accepts in its service thread (each handshake in a
 * short-lived thread of its own, PEER_HANDSHAKES at most at once: hspool.h),
 * so the accepting side answers whatever its main thread is doing and no pair
 * of ranks can wait on each other to connect.
 * A pair has one connection per lane (lanes.c): the hello names the lane.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "comm_impl.h"
#include "log.h"
#include "sockbuf.h"
#include "xmalloc.h"
#include "zcopy.h"

#define PEER_HANDSHAKE_MS 10000
/* Handshakes in flight per listener: more strangers wait in the backlog. */
#define PEER_HANDSHAKES 64
/*
 * When all are in flight and more wait, the oldest is cut off once this old
 * (hspool.h): an honest peer answers within milliseconds, a crowd of silent
 * strangers is let through 64 a second instead of 64 per PEER_HANDSHAKE_MS.
 */
#define PEER_CUT_GRACE_MS 1000

#define PEER_HELLO_LEN 20

static int
peer_send_hello(struct comm *c, int lane, int fd, uint64_t dl)
{
	uint8_t buf[PEER_HELLO_LEN];
	struct wire_buf b;

	wire_buf_init(&b, buf, sizeof buf);
	wire_put_u32(&b, (uint32_t)c->rank);
	wire_put_u64(&b, c->commid);
	wire_put_u32(&b, c->epoch);
	wire_put_u32(&b, (uint32_t)lane);
	return wire_send(fd, WIRE_PEER_HELLO, buf, (uint32_t)b.off, dl, c->intr_fd);
}

/* The options of a data connection, accepted or made: one place, so both ends agree. */
static void
peer_sock_init(const struct comm *c, int fd)
{
	zcopy_sock_init(c, fd);
	sockbuf_init(c, fd);
}

/* One incoming handshake, off the service thread so a silent stranger stalls nothing. */
static void
peer_handshake(void *arg, int fd)
{
	struct comm *c = arg;
	uint64_t dl = clock_now_ms() + PEER_HANDSHAKE_MS, commid;
	char err[COLL_ERR_LEN];
	struct wire_hdr h;
	uint8_t role, *p = NULL;
	struct wire_buf b;
	uint32_t rank = 0, epoch = 0, lane = 0;
	int ok = 0, slot = 0, authed, kept;

	authed = auth_accept(fd, &c->uid, &role, dl, c->abort_fd, err, sizeof err) == COLL_OK;
	/*
	 * Settled as soon as the peer has proved the secret (or failed to):
	 * before fd is closed or handed on, and so that a proven peer is never
	 * cut off for a newcomer between its proof and its HELLO. Cut off: a
	 * silent stranger, no word.
	 */
	kept = hspool_settle(&c->hs, fd);
	if (kept && authed && role == WIRE_ROLE_PEER &&
	    wire_recv(fd, &h, &p, 64, dl, c->abort_fd) == COLL_OK &&
	    h.type == WIRE_PEER_HELLO && h.len == PEER_HELLO_LEN) {
		wire_buf_init(&b, p, h.len);
		rank = wire_get_u32(&b);
		commid = wire_get_u64(&b);
		epoch = wire_get_u32(&b);
		lane = wire_get_u32(&b);
		ok = commid == c->commid && rank < (uint32_t)c->rank &&
		    lane < (uint32_t)c->lanes_wish;
		if (ok)
			slot = peer_slot(c, (int)lane, (int)rank);
		else
			log_warn("refused a peer connection claiming rank %u of comm %016llx, "
			    "lane %u", rank, (unsigned long long)commid, lane);
	}
	free(p);
	auth_thread_end();
	if (!kept)
		ok = 0;
	else if (!authed)
		log_warn("refused a peer connection: %s", err);
	pthread_mutex_lock(&c->lock);
	/*
	 * A connection of a newer retry epoch replaces the old one (the peer got
	 * the go-ahead before us); one of an older epoch is a leftover.
	 */
	if (ok && (c->peer_fd[slot] < 0 || epoch > c->peer_epoch[slot]) && epoch >= c->epoch) {
		if (c->peer_fd[slot] >= 0)
			close(c->peer_fd[slot]);
		peer_sock_init(c, fd);
		c->peer_fd[slot] = fd;
		c->peer_epoch[slot] = epoch;
		fd = -1;
	} else if (ok) {
		log_warn("rank %u connected twice (epoch %u, lane %u); keeping the first "
		    "connection", rank, epoch, lane);
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (fd >= 0)
		close(fd);
}

int
peer_listen(struct comm *c)
{
	return hspool_init(&c->hs, c->listen_fd, PEER_HANDSHAKES, peer_handshake, c,
	    PEER_CUT_GRACE_MS, "rank");
}

void
peer_reset(struct comm *c, uint32_t epoch)
{
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < c->lanes_wish * c->nranks; i++)
		if (c->peer_fd[i] >= 0 && c->peer_epoch[i] < epoch) {
			close(c->peer_fd[i]);
			c->peer_fd[i] = -1;
		}
	c->epoch = epoch;
	pthread_mutex_unlock(&c->lock);
}

/* Wait until no handshake thread uses the communicator (after abort_fd fired). */
void
peer_drain(struct comm *c)
{
	hspool_drain(&c->hs);
}

/*
 * The data plane's wake-up (intr_fd) also fires for retry rounds and deaths:
 * when it stops a connect, ask why, and try again if it was not for us.
 */
static int
peer_interrupted(struct comm *c, int peer, int r)
{
	uint64_t v;
	int k;

	if (r != COLL_EABORTED)
		return r;
	/* Drain first, then look: a wake-up that comes after the look is not lost. */
	while (read(c->intr_fd, &v, sizeof v) == (ssize_t)sizeof v)
		;
	if ((k = comm_check_intr(c, peer, "connecting to")) != COLL_OK)
		return k;
	return COLL_EINPROGRESS;
}

static int
peer_connect_once(struct comm *c, int peer, int lane, uint64_t dl, int *out)
{
	char err[COLL_ERR_LEN], addr[NET_ADDRSTR_LEN];
	int fd = -1, r;

	net_addr_format(&c->book[peer].addr, addr, sizeof addr);
	r = net_connect(&c->book[peer].addr, dl, c->intr_fd, &fd);
	if (r == COLL_ESYS) {
		char first[COLL_ERR_LEN];
		int e = errno;

		r = comm_fail_peer(c, peer, COLL_EPEER, "connecting to");
		snprintf(first, sizeof first, "%s", c->err);
		return comm_fail(c, r, "%s (connect to %s: %s)", first, addr, strerror(e));
	}
	if (r != COLL_OK)
		return r == COLL_EABORTED ? r : comm_fail_peer(c, peer, r, "connecting to");
	r = auth_connect(fd, &c->uid, WIRE_ROLE_PEER, dl, c->intr_fd, err, sizeof err);
	if (r == COLL_OK)
		r = peer_send_hello(c, lane, fd, dl);
	if (r != COLL_OK) {
		close(fd);
		if (r == COLL_EAUTH || r == COLL_EPROTO || r == COLL_EVERSION)
			return comm_fail(c, r, "rank %d: handshake with rank %d (host %s, %s) "
			    "failed: %s", c->rank, peer, comm_host(c, peer), addr, err);
		return r == COLL_EABORTED ? r : comm_fail_peer(c, peer, r, "connecting to");
	}
	peer_sock_init(c, fd);
	pthread_mutex_lock(&c->lock);
	c->peer_fd[peer_slot(c, lane, peer)] = fd;
	c->peer_epoch[peer_slot(c, lane, peer)] = c->epoch;
	pthread_mutex_unlock(&c->lock);
	*out = fd;
	return COLL_OK;
}

static int
peer_connect(struct comm *c, int peer, int lane, int *out)
{
	uint64_t dl = comm_deadline(c);
	int r;

	/* A wake-up meant for someone else: connect again. */
	while ((r = peer_interrupted(c, peer, peer_connect_once(c, peer, lane, dl, out))) ==
	    COLL_EINPROGRESS)
		;
	return r;
}

/* Wait for a lower rank to connect to us. */
static int
peer_await(struct comm *c, int peer, int lane, int *out)
{
	uint64_t dl = comm_deadline(c);
	struct timespec ts;
	int r = COLL_OK, slot = peer_slot(c, lane, peer);

	ts.tv_sec = (time_t)(dl / 1000);
	ts.tv_nsec = (long)(dl % 1000) * 1000000;
	pthread_mutex_lock(&c->lock);
	while (c->peer_fd[slot] < 0 && !atomic_load(&c->aborted) && !atomic_load(&c->failed) &&
	    !atomic_load(&c->cancelled) && r == COLL_OK &&
	    !(c->in_op && c->rt.query_seq == c->seq && !c->rt.answered))
		if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT)
			r = COLL_ETIMEDOUT;
	*out = c->peer_fd[slot];
	pthread_mutex_unlock(&c->lock);
	if (*out >= 0)
		return COLL_OK;
	if (r == COLL_OK && (r = comm_check_intr(c, peer, "waiting for a connection from")) !=
	    COLL_OK)
		return r;
	if (r == COLL_OK)
		r = COLL_EABORTED;
	return comm_fail_peer(c, peer, r, "waiting for a connection from");
}

int
peer_get(struct comm *c, int peer, int lane, int *fd)
{
	int r;

	if ((r = comm_check_intr(c, peer, "talking to")) != COLL_OK)
		return r;
	pthread_mutex_lock(&c->lock);
	*fd = c->peer_fd[peer_slot(c, lane, peer)];
	pthread_mutex_unlock(&c->lock);
	if (*fd >= 0)
		return COLL_OK;
	status_wait(&c->status, peer, 1);
	if (peer < c->rank)
		return peer_await(c, peer, lane, fd);
	return peer_connect(c, peer, lane, fd);
}
