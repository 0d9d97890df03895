/*
 * Pipelined transfers. Each side keeps trying its syscall until the kernel
 * says EAGAIN; poll(2) is entered only when neither side can move, so a busy
 * stream costs one syscall per kernel buffer, not one poll per chunk.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "comm_impl.h"
#include "kind.h"
#include "log.h"
#include "reduce.h"
#include "xfer.h"
#include "xmalloc.h"
#include "zcopy.h"

enum { XFER_MOVED = 1, XFER_IDLE = 0 };

/* Yields before blocking in poll; COLL_SPIN sets it (0 turns spinning off). */
static _Atomic int xfer_spins = -1;
#define XFER_SPINS_DEFAULT 20
#define XFER_SPINS_ROOMY 2000

struct xfer_side {
	int fd;
	uint8_t hdr[WIRE_DATA_HDR_LEN];
	size_t hdr_off;
	int seg;
	size_t off;		/* bytes of the segment done: sent, copied or reduced */
	size_t fill;		/* staged bytes not yet reduced */
	int ready;		/* not known to be blocked in the kernel */
	int done;
	struct zcopy_side zc;	/* send: its MSG_ZEROCOPY calls (zcopy.h) */
};

static size_t
xfer_total(const struct xfer_seg *s, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += s[i].len;
	return t;
}

/* How far send segment s->seg may go: all of it, or as far as its source has arrived. */
static size_t
xfer_avail(const struct xfer *x, const struct xfer_side *s, const struct xfer_side *r)
{
	size_t len = x->send[s->seg].len;
	int dep = s->seg - x->lag;

	if (x->lag == XFER_NO_DEP || dep < 0 || dep < r->seg || r->done)
		return len;
	if (dep == r->seg)
		return r->off < len ? r->off : len;
	return 0;
}

/*
 * A link broke. When retries are on and no rank is known dead, the op may be
 * run again (retry.c decides with the root): report the broken link without
 * failing the communicator. Otherwise name the cause.
 */
static int
xfer_errno(struct xfer *x, int peer, const char *doing)
{
	int code = (errno == ECONNRESET || errno == EPIPE) ? COLL_EPEER : COLL_ESYS;
	struct comm *c = x->c;

	int k;

	if (code == COLL_EPEER && c->retry_max > 0) {
		/* A retry round under way (or refused) for this op, an abort, a death: say that. */
		if ((k = comm_check_intr(c, peer, doing)) != COLL_OK)
			return k;
		c->link_peer = peer;
		return COLL_EPEER;
	}
	return comm_fail_peer(c, peer, code, doing);
}

/*
 * A send of segment bytes (and maybe the header before them): pinned rather
 * than copied when the transfer uses zero-copy and the call is large.
 */
static ssize_t
xfer_sendmsg(struct xfer_side *s, const struct msghdr *msg, size_t len)
{
	ssize_t n;

	if (s->zc.on && len >= ZCOPY_CALL_MIN) {
		n = sendmsg(s->fd, msg, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_ZEROCOPY);
		if (n > 0) {
			s->zc.pending++;
			s->zc.sent++;
			return n;
		}
		/* ENOBUFS: no option memory left for notices; this call copies. */
		if (!(n == -1 && errno == ENOBUFS))
			return n;
	}
	return sendmsg(s->fd, msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static ssize_t
xfer_send_data(struct xfer_side *s, const char *p, size_t len)
{
	struct iovec iov = { (void *)p, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	return xfer_sendmsg(s, &msg, len);
}

/* The header and the start of the first segment leave in one syscall (one packet when small). */
static ssize_t
xfer_send_hdr(struct xfer *x, struct xfer_side *s, const struct xfer_side *r)
{
	struct iovec iov[2] = { { s->hdr + s->hdr_off, WIRE_DATA_HDR_LEN - s->hdr_off } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 1 };
	ssize_t n;

	if (x->nsend > 0 && (iov[1].iov_len = xfer_avail(x, s, r)) > 0) {
		iov[1].iov_base = x->send[0].buf;
		msg.msg_iovlen = 2;
	}
	n = xfer_sendmsg(s, &msg, iov[0].iov_len + (msg.msg_iovlen == 2 ? iov[1].iov_len : 0));
	if (n > 0 && (size_t)n > iov[0].iov_len) {
		s->off = (size_t)n - iov[0].iov_len;
		s->hdr_off = WIRE_DATA_HDR_LEN;
	} else if (n > 0) {
		s->hdr_off += (size_t)n;
	}
	return n;
}

static int
xfer_send_some(struct xfer *x, struct xfer_side *s, const struct xfer_side *r, int *moved)
{
	ssize_t n;
	size_t avail;

	if (s->zc.notice && zcopy_reap(x->c, s->fd, &s->zc, moved) != 0)
		return xfer_errno(x, x->send_peer, "sending to");
	while (s->ready && !s->done) {
		if (s->hdr_off < WIRE_DATA_HDR_LEN) {
			n = xfer_send_hdr(x, s, r);
		} else if (s->seg == x->nsend) {
			/* The bytes may not change before the kernel gives the pages back. */
			if (s->zc.pending > 0 && zcopy_reap(x->c, s->fd, &s->zc, moved) != 0)
				return xfer_errno(x, x->send_peer, "sending to");
			if (s->zc.pending > 0) {
				s->ready = 0;
				break;
			}
			if (s->zc.sent > 0)
				log_trace("rank %d: %u sends of %s seq %" PRIu64 " to rank %d were "
				    "zero-copy%s", x->c->rank, s->zc.sent, coll_kind_name(x->kind),
				    x->seq, x->send_peer, s->zc.copied ? " (the kernel copied)" : "");
			s->done = 1;
			break;
		} else if (s->off == x->send[s->seg].len) {
			s->seg++;
			s->off = 0;
			continue;
		} else {
			avail = xfer_avail(x, s, r);
			if (avail <= s->off)
				break;		/* waiting for the bytes to arrive */
			n = xfer_send_data(s, x->send[s->seg].buf + s->off, avail - s->off);
			if (n > 0)
				s->off += (size_t)n;
		}
		if (n > 0)
			*moved = XFER_MOVED;
		else if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			s->ready = 0;
		else if (!(n == -1 && errno == EINTR))
			return xfer_errno(x, x->send_peer, "sending to");
	}
	return COLL_OK;
}

static int
xfer_check_hdr(struct xfer *x, const struct xfer_side *r)
{
	struct comm *c = x->c;
	struct wire_data_hdr h;
	size_t want = xfer_total(x->recv, x->nrecv);
	int p = x->recv_peer;

	if (wire_data_hdr_decode(&h, r->hdr) != COLL_OK)
		return comm_fail(c, COLL_EPROTO, "rank %d: rank %d (host %s) sent bytes that are not "
		    "a coll data header in %s seq %" PRIu64 ": mixed coll versions or a corrupt "
		    "stream", c->rank, p, comm_host(c, p), coll_kind_name(x->kind), x->seq);
	if (h.kind != x->kind || h.seq != x->rseq)
		return comm_fail(c, COLL_EMISMATCH, "rank %d is in %s seq %" PRIu64 " but rank %d "
		    "(host %s) is in %s seq %" PRIu64 ": ranks called collectives in a different "
		    "order or number", c->rank, coll_kind_name(x->kind), x->rseq, p,
		    comm_host(c, p), coll_kind_name(h.kind), h.seq);
	if (h.tag != x->tag || h.len != want)
		return comm_fail(c, COLL_EMISMATCH, "rank %d expected %zu bytes in %s seq %" PRIu64
		    " but rank %d (host %s) sent %" PRIu64 ": every rank must pass the same count, "
		    "type and root", c->rank, want, coll_kind_name(x->kind), x->seq, p,
		    comm_host(c, p), h.len);
	return COLL_OK;
}

static ssize_t
xfer_recv_seg(struct xfer *x, struct xfer_side *r)
{
	const struct xfer_seg *g = &x->recv[r->seg];
	size_t esz = dtype_size(x->dt), want, elems;
	ssize_t n;

	if (g->src == NULL) {
		n = recv(r->fd, g->buf + r->off, g->len - r->off, MSG_DONTWAIT);
		if (n > 0) {
			r->off += (size_t)n;
			x->rx += (uint64_t)n;
		}
		return n;
	}
	want = g->len - r->off - r->fill;
	if (want > x->scratch_len - r->fill)
		want = x->scratch_len - r->fill;
	n = recv(r->fd, x->scratch + r->fill, want, MSG_DONTWAIT);
	if (n <= 0)
		return n;
	r->fill += (size_t)n;
	x->rx += (uint64_t)n;
	elems = r->fill / esz;
	reduce_apply(g->buf + r->off, g->src + r->off, x->scratch, elems, x->dt, x->op);
	r->off += elems * esz;
	r->fill -= elems * esz;
	memmove(x->scratch, x->scratch + elems * esz, r->fill);
	return n;
}

/*
 * The header, and the first segment when it is a plain copy, come in with one
 * readv: never more than this op's bytes, so the next op's stay in the kernel.
 * Data that lands before the header is checked is only used if it passes.
 */
static ssize_t
xfer_recv_hdr(struct xfer *x, struct xfer_side *r)
{
	struct iovec iov[2] = { { r->hdr + r->hdr_off, WIRE_DATA_HDR_LEN - r->hdr_off } };
	int cnt = 1;
	ssize_t n;

	if (x->nrecv > 0 && x->recv[0].src == NULL && x->recv[0].len > 0) {
		iov[1] = (struct iovec){ x->recv[0].buf, x->recv[0].len };
		cnt = 2;
	}
	n = readv(r->fd, iov, cnt);
	if (n > 0 && (size_t)n > iov[0].iov_len) {
		r->off = (size_t)n - iov[0].iov_len;
		x->rx += r->off;
		r->hdr_off = WIRE_DATA_HDR_LEN;
	} else if (n > 0) {
		r->hdr_off += (size_t)n;
	}
	return n;
}

static int
xfer_recv_some(struct xfer *x, struct xfer_side *r, int *moved)
{
	ssize_t n;
	int rc;

	while (r->ready && !r->done) {
		if (r->hdr_off < WIRE_DATA_HDR_LEN) {
			n = xfer_recv_hdr(x, r);
			if (n > 0 && r->hdr_off == WIRE_DATA_HDR_LEN &&
			    (rc = xfer_check_hdr(x, r)) != COLL_OK)
				return rc;
		} else if (r->seg == x->nrecv) {
			r->done = 1;
			break;
		} else if (r->off == x->recv[r->seg].len) {
			r->seg++;
			r->off = r->fill = 0;
			continue;
		} else {
			n = xfer_recv_seg(x, r);
		}
		if (n > 0) {
			*moved = XFER_MOVED;
		} else if (n == 0) {
			errno = ECONNRESET;
			return xfer_errno(x, x->recv_peer, "receiving from");
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			r->ready = 0;
		} else if (errno != EINTR) {
			return xfer_errno(x, x->recv_peer, "receiving from");
		}
	}
	return COLL_OK;
}

/* The state of one transfer of a group. */
struct xfer_st {
	struct xfer *x;
	struct xfer_side s, r;
};

static int
xfer_st_done(const struct xfer_st *t)
{
	return t->s.done && t->r.done;
}

static int
xfer_stopped(const struct xfer_ctl *ctl)
{
	return ctl->stop != NULL && atomic_load(ctl->stop);
}

/*
 * A wake-up on intr_fd. The op's own thread drains it, then looks; a lane
 * worker only looks (draining would hide it from the others) and, when it
 * was not about this op, naps so as not to spin until the owner drains it.
 */
static int
xfer_intr(struct xfer *x, const struct xfer_ctl *ctl, int waiting)
{
	struct timespec nap = { 0, 1000000 };
	uint64_t v;
	int k;

	if (ctl->main)
		while (read(x->c->intr_fd, &v, sizeof v) == (ssize_t)sizeof v)
			;
	if ((k = comm_check_intr(x->c, waiting, "exchanging with")) != COLL_OK)
		return k;
	if (!ctl->main)
		nanosleep(&nap, NULL);
	return COLL_OK;
}

/*
 * Block until a side of the group can move, the data plane is interrupted,
 * another lane gives up, or the progress timeout passes.
 *
 * Not on the event loop (loop.h), unlike the other multi-fd loops: this is
 * the data path, and its wait is not a loop's round. It is entered only when
 * every side said EAGAIN, once per stall, with a set built from which sides
 * are blocked (a socket's two sides folded into one entry or not, a send
 * done but for its zero-copy notices waiting on POLLERR alone), and what
 * comes back only marks sides ready for xfer_loop's own walk. A loop would
 * add its pipe to every poll, rebuild its set from watchers, and need one
 * loop per lane thread (loop.h: one thread per loop) kept across ops or
 * made per op; none of that buys anything here.
 */
static int
xfer_poll(struct xfer_st *st, int n, const struct xfer_ctl *ctl, uint64_t last,
    struct pollfd *pfd)
{
	struct comm *c = st[0].x->c;
	int np = 0, rc, k, waiting = -1, blocked_send = 0, ev;
	uint64_t dl = last + (uint64_t)c->timeout_ms;

	pfd[np++] = (struct pollfd){ c->intr_fd, POLLIN, 0 };
	pfd[np++] = (struct pollfd){ ctl->stop_fd, POLLIN, 0 };
	for (int i = 0; i < n; i++) {
		struct xfer_st *t = &st[i];

		if (!t->r.done && !t->r.ready) {
			pfd[np++] = (struct pollfd){ t->r.fd, POLLIN, 0 };
			if (waiting < 0)
				waiting = t->x->recv_peer;
		}
		if (!t->s.done && !t->s.ready) {
			/* All sent: only the kernel's zero-copy notices (POLLERR) are awaited. */
			short want = t->s.seg == t->x->nsend && t->s.hdr_off == WIRE_DATA_HDR_LEN ?
			    0 : POLLOUT;

			pfd[np++] = (struct pollfd){ t->s.fd, want, 0 };
			/* A send blocked on a full socket is firm evidence against its peer. */
			if (!blocked_send)
				waiting = t->x->send_peer;
			blocked_send = 1;
		}
	}
	if (ctl->main)
		status_wait(&c->status, waiting, blocked_send ? 2 : 1);
	do
		rc = poll(pfd, (nfds_t)np, clock_remaining_ms(dl));
	while (rc == -1 && errno == EINTR);
	if (rc == -1)
		return comm_fail(c, COLL_ESYS, "poll: %s", strerror(errno));
	if (pfd[1].revents || xfer_stopped(ctl))
		return XFER_STOPPED;
	if (pfd[0].revents && (k = xfer_intr(st[0].x, ctl, waiting)) != COLL_OK)
		return k;
	if (rc == 0)
		return comm_fail_peer(c, waiting, COLL_ETIMEDOUT,
		    blocked_send ? "waiting to send to" : "waiting for data from");
	/* The sides were added in order: walk them again in the same order. */
	ev = 2;
	for (int i = 0; i < n; i++) {
		struct xfer_st *t = &st[i];

		short re;

		if (!t->r.done && !t->r.ready && (re = pfd[ev++].revents) != 0) {
			t->r.ready = 1;
			/* The error queue is per socket: the send side on it must take it. */
			if ((re & POLLERR) && t->r.fd == t->s.fd)
				t->s.zc.notice = 1;
		}
		if (!t->s.done && !t->s.ready && (re = pfd[ev++].revents) != 0) {
			t->s.ready = 1;
			if (re & POLLERR)
				t->s.zc.notice = 1;
		}
	}
	return COLL_OK;
}

static int
xfer_open_side(struct xfer *x, struct xfer_side *side, int peer)
{
	memset(side, 0, sizeof *side);
	side->ready = 1;
	side->done = peer < 0;
	side->fd = -1;
	if (peer < 0)
		return COLL_OK;
	return peer_get(x->c, peer, x->lane, &side->fd);
}

static int
xfer_open(struct xfer_st *t, struct xfer *x, const struct xfer_ctl *ctl, int first)
{
	struct wire_data_hdr h = { x->kind, x->tag, x->seq, xfer_total(x->send, x->nsend) };
	int rc;

	t->x = x;
	if (x->scratch == NULL) {
		x->scratch = x->c->scratch;
		x->scratch_len = x->c->scratch_len;
	}
	if ((rc = xfer_open_side(x, &t->s, x->send_peer)) != COLL_OK ||
	    (rc = xfer_open_side(x, &t->r, x->recv_peer)) != COLL_OK)
		return rc;
	wire_data_hdr_encode(t->s.hdr, &h);
	if (t->s.fd >= 0)
		t->s.zc.on = zcopy_begin(x->c, t->s.fd, h.len);
	/* COLL_FAULT's faults act on the op's first connection only. */
	if (ctl->main && first && t->s.fd >= 0)
		return fault_in_xfer(x->c, t->s.fd, t->s.hdr);
	return COLL_OK;
}

/*
 * COLL_SPIN, else 20 yields, or 2000 where the rank has 4 cores or more of
 * its own: the cores it may run on, where a launcher bound each rank to its
 * share, else the host's over its ranks (COLL_LOCAL_SIZE, else torchrun's
 * LOCAL_WORLD_SIZE). There sleeping in poll costs a wake-up per step, which
 * on a VM of 64 cores held 8 ranks' all-reduces from 256 KiB to 2 MiB to
 * 0.7x the time of spinning longer. Where ranks share cores (the 2-core test
 * machine) the yields would only take turns with the peer that must run.
 */
static int
xfer_spins_default(void)
{
	const char *e = getenv("COLL_SPIN"), *l = getenv("COLL_LOCAL_SIZE");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), local, mine = cpus, share;
	cpu_set_t set;

	if (e != NULL)
		return atoi(e);
	if (l == NULL)
		l = getenv("LOCAL_WORLD_SIZE");
	local = l != NULL && atol(l) > 0 ? atol(l) : 1;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < cpus)
		mine = CPU_COUNT(&set);
	/* Bound to a share already (the ranks' shares fit the host), or sharing them all. */
	share = mine * local <= cpus ? mine : mine / local;
	return share >= 4 ? XFER_SPINS_ROOMY : XFER_SPINS_DEFAULT;
}

static int
xfer_loop(struct xfer_st *st, int n, const struct xfer_ctl *ctl, struct pollfd *pfd)
{
	struct comm *c = st[0].x->c;
	uint64_t last = clock_now_ms();
	int rc, moved, busy, spins = 0, halt_peer;

	for (;;) {
		moved = XFER_IDLE;
		busy = 0;
		halt_peer = -1;
		for (int i = 0; i < n; i++) {
			struct xfer_st *t = &st[i];

			if (xfer_st_done(t))
				continue;
			if ((rc = xfer_send_some(t->x, &t->s, &t->r, &moved)) != COLL_OK ||
			    (rc = xfer_recv_some(t->x, &t->r, &moved)) != COLL_OK)
				return rc;
			busy |= !xfer_st_done(t);
			if (halt_peer < 0)
				halt_peer = t->x->recv_peer >= 0 ? t->x->recv_peer : t->x->send_peer;
		}
		if (!busy)
			return COLL_OK;
		if (xfer_stopped(ctl))
			return XFER_STOPPED;
		if (moved && comm_halted(c) &&
		    (rc = comm_check_intr(c, halt_peer, "exchanging with")) != COLL_OK)
			return rc;
		if (moved) {
			last = clock_now_ms();
			/* One atomic store: safe from every lane, so a stuck page shows a stuck op. */
			status_progress(&c->status);
			spins = 0;
			continue;
		}
		/*
		 * A small reply usually comes within microseconds: yield the core a few
		 * times (the peer may be the one waiting for it) before sleeping in poll.
		 */
		if (spins++ < xfer_spins) {
			sched_yield();
			for (int i = 0; i < n; i++) {
				st[i].s.ready = !st[i].s.done;
				st[i].r.ready = !st[i].r.done;
			}
			continue;
		}
		if ((rc = xfer_poll(st, n, ctl, last, pfd)) != COLL_OK)
			return rc;
	}
}

int
xfer_run_group(struct xfer *xs, int n, const struct xfer_ctl *ctl)
{
	struct xfer_st one, *st = n == 1 ? &one : xcalloc((size_t)n, sizeof *st);
	struct pollfd pfd1[4], *pfd = n == 1 ? pfd1 : xcalloc(2 + 2 * (size_t)n, sizeof *pfd);
	int rc = COLL_OK;

	if (xfer_spins < 0)
		xfer_spins = xfer_spins_default();
	for (int i = 0; i < n && rc == COLL_OK; i++)
		rc = xfer_open(&st[i], &xs[i], ctl, i == 0);
	if (rc == COLL_OK)
		rc = xfer_loop(st, n, ctl, pfd);
	if (st != &one)
		free(st);
	if (pfd != pfd1)
		free(pfd);
	return rc;
}

int
xfer_run(struct xfer *x)
{
	static const struct xfer_ctl alone = { 1, NULL, -1 };
	int rc = xfer_run_group(x, 1, &alone);

	x->c->op_recv_bytes += x->rx;
	return rc;
}

int
xfer_sendrecv(struct comm *c, uint8_t tag, int send_peer, const void *sbuf, size_t slen,
    int recv_peer, void *rbuf, size_t rlen)
{
	struct xfer_seg ss = { (char *)sbuf, NULL, slen }, rs = { rbuf, NULL, rlen };
	struct xfer x = {
		.c = c, .seq = c->seq, .rseq = c->seq, .kind = c->kind, .tag = tag,
		.send_peer = send_peer, .recv_peer = recv_peer,
		.send = &ss, .recv = &rs, .nsend = 1, .nrecv = 1, .lag = XFER_NO_DEP,
		.dt = DT_UINT8, .op = OP_SUM,
	};

	return xfer_run(&x);
}
