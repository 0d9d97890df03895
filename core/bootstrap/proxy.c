/*
 * The root proxy (proxy.h): one thread, one event loop (loop.h), its
 * newcomers' handshakes in a pool (hspool.h) as the root's. Each rank
 * connection below gets a channel number of our own on the upstream
 * connection; a proxy below already sends MUX frames, and each of its
 * channels is mapped to one of ours, so proxies nest to any depth with one
 * connection per hop.
 *
 * A rank's frames go up whole inside MUX, and what comes down on a channel
 * goes to its rank as it came, with one exception: keep-alives. The proxy
 * answers its ranks' PINGs itself and gives up a rank that goes silent for
 * the limit its JOIN named (MUX_END with how long), so the root is not
 * woken by every rank every second; only the proxy's own PINGs cross each
 * link, both ways, at its fastest rank's pace, and a link silent for its
 * slowest rank's limit is lost. A channel ends with a MUX_END either way: up
 * when a rank's connection closes, down when the root closes it (after its
 * last frames, which are sent first). When the upstream connection is lost
 * (or silent) every rank below loses its root connection, exactly as when
 * the root itself dies, and finds out the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "err.h"
#include "hspool.h"
#include "linkka.h"
#include "log.h"
#include "loop.h"
#include "proxy.h"
#include "wconn.h"
#include "wire.h"
#include "xmalloc.h"

#define PROXY_ENDED UINT32_MAX	/* a proxy's channel that ended: late frames are dropped */
#define PROXY_MAX_CH (1u << 24)	/* channels over a link's life: more is not a proxy of ours */
#define PROXY_DRAIN_MS 2000	/* at the end, for the last frames to leave */
#define PROXY_WAIT_MS 1000	/* the longest wait between ticks */

enum proxy_end { PROXY_RUNNING, PROXY_STOPPED, PROXY_LOST };

struct pxlink {
	struct proxy *p;
	struct wconn w;
	struct linkka ka;	/* with a rank: its own pace and limit */
	int proxy;		/* a proxy below (MUX frames) or a rank (plain frames) */
	int rank;		/* a rank's, from its JOIN (-1 not yet), for messages */
	int framed;		/* a rank's first frame went up: only that one can be its JOIN */
	uint32_t ch;		/* a rank's: its channel upstream */
	uint32_t *map;		/* a proxy's: its channel -> ours (0: not yet) */
	uint32_t nmap;
	int closing;		/* the root closed the rank's channel: close once flushed */
	struct pxlink *next;
};

/* Our channel upstream: the link below it, and that link's channel if a proxy. */
struct pxchan {
	struct pxlink *lk;
	uint32_t sub;
};

struct proxy {
	struct coll_uid uid;
	struct wconn up;
	struct linkka up_ka;
	int listen_fd;
	int stop_fd;
	int hs[2];		/* finished handshakes: fd and role, from their threads */
	pthread_mutex_t lock;
	struct hspool pool;	/* the listener's handshakes */
	struct loop *loop;	/* the thread's: every fd, the keep-alives' timer, a tick before each wait */
	uint64_t ka_tm;		/* that timer */
	int end;		/* the loop's: enum proxy_end */
	struct pxlink *links;
	int nlinks;
	struct pxchan *chans;
	uint32_t nchans;	/* the last channel number given; 0 is never used */
	size_t chans_cap;
	atomic_int lost;
	pthread_t thread;
};

struct pxhs {
	int fd;
	uint8_t role;
};

/* One newcomer's handshake, in a thread of the pool (hspool.h). */
static void
proxy_handshake(void *arg, int fd)
{
	struct proxy *p = arg;
	char err[COLL_ERR_LEN];
	struct pxhs *hs = NULL;
	uint8_t role;

	if (auth_accept_pooled(&p->pool, fd, &p->uid, &role, clock_now_ms() +
	    AUTH_ROOT_HANDSHAKE_MS, p->stop_fd, err, sizeof err) != COLL_OK) {
		if (err[0] != '\0')
			log_warn("root proxy: refused a connection: %s", err);
		close(fd);
	} else {
		hs = xcalloc(1, sizeof *hs);
		*hs = (struct pxhs){ .fd = fd, .role = role };
		/* Under the lock: an orphaned proxy drains the pipe once, and nothing after. */
		pthread_mutex_lock(&p->lock);
		if (!atomic_load(&p->lost) && write(p->hs[1], &hs, sizeof hs) == (ssize_t)sizeof hs)
			hs = NULL;	/* the loop's now */
		pthread_mutex_unlock(&p->lock);
	}
	if (hs != NULL) {
		close(hs->fd);
		free(hs);
	}
	auth_thread_end();
}

static uint32_t
proxy_chan_new(struct proxy *p, struct pxlink *lk, uint32_t sub)
{
	uint32_t ch = ++p->nchans;

	if ((size_t)ch >= p->chans_cap) {
		p->chans_cap = p->chans_cap ? p->chans_cap * 2 : 64;
		p->chans = xreallocarray(p->chans, p->chans_cap, sizeof *p->chans);
	}
	p->chans[ch] = (struct pxchan){ lk, sub };
	return ch;
}

static void proxy_on_link(struct loop *l, int fd, int events, void *arg);

/* A newcomer that passed the handshake: a rank gets its channel at once. */
static void
proxy_admit(struct proxy *p)
{
	struct pxhs *hs;

	while (read(p->hs[0], &hs, sizeof hs) == (ssize_t)sizeof hs) {
		struct pxlink *lk = xcalloc(1, sizeof *lk);

		if (loop_watch(p->loop, hs->fd, LOOP_READ, proxy_on_link, lk) != COLL_OK) {
			close(hs->fd);
			free(hs);
			free(lk);
			continue;
		}
		lk->p = p;
		lk->proxy = hs->role == WIRE_ROLE_PROXY;
		lk->rank = -1;
		wconn_init(&lk->w, hs->fd, lk->proxy ? WIRE_MAX_PAYLOAD :
		    WIRE_MAX_PAYLOAD - WIRE_MUX_HDR_LEN);
		if (!lk->proxy)
			lk->ch = proxy_chan_new(p, lk, 0);
		lk->next = p->links;
		p->links = lk;
		p->nlinks++;
		free(hs);
	}
}

/*
 * Our channel ch ended: forget it; tell upstream too when the end came from
 * below (silent_ms > 0: its rank, or the proxy that carried it, went silent).
 */
static void
proxy_chan_end(struct proxy *p, uint32_t ch, int tell_up, uint32_t silent_ms)
{
	if (ch == 0 || ch > p->nchans || p->chans[ch].lk == NULL)
		return;
	p->chans[ch].lk = NULL;
	if (tell_up)
		wconn_queue_mux_end(&p->up, ch, silent_ms);
}

/* A link below is gone: every channel it carried ends upstream. */
static void
proxy_link_drop(struct proxy *p, struct pxlink *lk, uint32_t silent_ms)
{
	struct pxlink **pp = &p->links;

	if (lk->proxy) {
		for (uint32_t c = 0; c < lk->nmap; c++)
			if (lk->map[c] != 0 && lk->map[c] != PROXY_ENDED)
				proxy_chan_end(p, lk->map[c], 1, silent_ms);
	} else {
		proxy_chan_end(p, lk->ch, 1, silent_ms);
	}
	while (*pp != lk)
		pp = &(*pp)->next;
	*pp = lk->next;
	p->nlinks--;
	loop_unwatch(p->loop, lk->w.fd);
	close(lk->w.fd);
	wconn_free(&lk->w);
	free(lk->map);
	free(lk);
}

/* A proxy below sent a frame on its channel sub (< PROXY_MAX_CH): ours for it (made on its first). */
static uint32_t
proxy_map(struct proxy *p, struct pxlink *lk, uint32_t sub)
{
	if (sub >= lk->nmap) {
		size_t n = (size_t)lk->nmap * 2 > (size_t)sub + 64 ? (size_t)lk->nmap * 2 :
		    (size_t)sub + 64;

		lk->map = xreallocarray(lk->map, n, sizeof *lk->map);
		memset(lk->map + lk->nmap, 0, (n - lk->nmap) * sizeof *lk->map);
		lk->nmap = (uint32_t)n;
	}
	if (lk->map[sub] == 0)
		lk->map[sub] = proxy_chan_new(p, lk, sub);
	return lk->map[sub];
}

/* A JOIN going up on lk: its pace and limit count there and upstream. Its rank, or -1. */
static int
proxy_join_seen(struct proxy *p, struct pxlink *lk, const uint8_t *pl, uint32_t len)
{
	struct wire_join j;
	uint64_t now = clock_now_ms();

	if (wire_join_decode(pl, len, &j) != COLL_OK)
		return -1;
	linkka_join(&lk->ka, &j, now);
	linkka_join(&p->up_ka, &j, now);
	return (int)(j.base + j.e.rank);
}

/* Frames from below go up; 0 once the link must be dropped. */
static int
proxy_from_below(struct proxy *p, struct pxlink *lk, int events)
{
	const uint8_t *pl;
	struct wire_hdr h;
	struct wire_mux m;
	uint32_t sub, ch, silent;
	int r = COLL_OK, n;

	if (events & LOOP_WRITE)
		r = wconn_flush(&lk->w);
	if (events & (LOOP_READ | LOOP_ERROR)) {
		int f = wconn_fill(&lk->w);

		if (r == COLL_OK)
			r = f;
	}
	while (!lk->closing && (n = wconn_next(&lk->w, &h, &pl)) == COLL_OK) {
		/* Keep-alives stop here: we answer them (proxy_tick). */
		if (h.type == WIRE_PING)
			continue;
		if (!lk->proxy) {
			/* A rank's root traffic only: anything else would cost the others their link. */
			if (!wire_mux_carries(h.type)) {
				log_warn("root proxy: a rank sent message type %u: dropped it", h.type);
				return 0;
			}
			/* The root takes a channel's first frame as its JOIN, and only that: so do we. */
			if (h.type == WIRE_JOIN && !lk->framed)
				lk->rank = proxy_join_seen(p, lk, pl, h.len);
			lk->framed = 1;
			wconn_queue_mux(&p->up, lk->ch, h.type, pl, h.len);
		} else if (h.type == WIRE_MUX && wire_mux_decode(pl, h.len, &m) == COLL_OK &&
		    m.ch < PROXY_MAX_CH) {
			if (m.ch < lk->nmap && lk->map[m.ch] == PROXY_ENDED)
				continue;
			if (m.type == WIRE_JOIN && (m.ch >= lk->nmap || lk->map[m.ch] == 0))
				(void)proxy_join_seen(p, lk, m.p, m.len);
			ch = proxy_map(p, lk, m.ch);
			wconn_queue_mux(&p->up, ch, m.type, m.p, m.len);
		} else if (h.type == WIRE_MUX_END && wire_mux_end_decode(pl, h.len, &sub,
		    &silent) == COLL_OK && sub < PROXY_MAX_CH) {
			if (sub < lk->nmap && lk->map[sub] != 0 && lk->map[sub] != PROXY_ENDED)
				proxy_chan_end(p, lk->map[sub], 1, silent);
			if (sub < lk->nmap)
				lk->map[sub] = PROXY_ENDED;
		} else {
			log_warn("root proxy: a proxy below sent a frame that is not MUX: dropped it");
			return 0;
		}
	}
	if (lk->closing)
		return wconn_pending(&lk->w) > 0 && r == COLL_OK;
	if (n != COLL_EINPROGRESS)
		log_warn("root proxy: a connection below sent bytes that are not a coll frame");
	return n == COLL_EINPROGRESS && r == COLL_OK;
}

/* One frame from upstream: to its rank, or to the proxy below that carries it. */
static int
proxy_from_up_one(struct proxy *p, const struct wire_hdr *h, const uint8_t *pl)
{
	struct wire_mux m;
	struct pxlink *lk;
	uint32_t ch, silent;

	if (h->type == WIRE_PING)
		return 0;
	if (h->type == WIRE_MUX_END) {
		if (wire_mux_end_decode(pl, h->len, &ch, &silent) != COLL_OK)
			return -1;
		if (ch > p->nchans || (lk = p->chans[ch].lk) == NULL)
			return 0;
		if (lk->proxy) {
			wconn_queue_mux_end(&lk->w, p->chans[ch].sub, 0);
			lk->map[p->chans[ch].sub] = PROXY_ENDED;
		} else {
			lk->closing = 1;	/* after its last frames */
		}
		proxy_chan_end(p, ch, 0, 0);
		return 0;
	}
	if (h->type != WIRE_MUX || wire_mux_decode(pl, h->len, &m) != COLL_OK)
		return -1;
	if (m.ch > p->nchans || (lk = p->chans[m.ch].lk) == NULL)
		return 0;	/* its rank left already */
	if (lk->proxy)
		wconn_queue_mux(&lk->w, p->chans[m.ch].sub, m.type, m.p, m.len);
	else
		wconn_queue(&lk->w, m.type, m.p, m.len);
	return 0;
}

/* 0 once upstream is lost or spoke something else than MUX. */
static int
proxy_from_up(struct proxy *p, int events)
{
	const uint8_t *pl;
	struct wire_hdr h;
	int r = COLL_OK, n;

	if (events & LOOP_WRITE)
		r = wconn_flush(&p->up);
	if (events & (LOOP_READ | LOOP_ERROR)) {
		int f = wconn_fill(&p->up);

		if (r == COLL_OK)
			r = f;
	}
	while ((n = wconn_next(&p->up, &h, &pl)) == COLL_OK)
		if (proxy_from_up_one(p, &h, pl) != 0) {
			log_warn("root proxy: the root sent a frame that is not MUX or PING");
			return 0;
		}
	return n == COLL_EINPROGRESS && r == COLL_OK;
}

/* Send what is queued upstream, until dl: 0 once it all left. */
static int
proxy_flush_up(struct proxy *p, uint64_t dl)
{
	while (wconn_pending(&p->up) > 0 && clock_now_ms() < dl) {
		struct pollfd pfd = { p->up.fd, POLLOUT, 0 };

		if (wconn_flush(&p->up) != COLL_OK)
			return -1;
		if (wconn_pending(&p->up) > 0)
			(void)poll(&pfd, 1, 50);
	}
	return wconn_pending(&p->up) > 0 ? -1 : 0;
}

/*
 * Stopped (every rank below ended, as far as the proxy knows): what they sent
 * last, a BYE above all, may still wait in our sockets, since their ends
 * reached the proxy another way. It goes up before the channels end, or the
 * root would take ranks that left for dead.
 */
static void
proxy_drain(struct proxy *p)
{
	for (struct pxlink *lk = p->links; lk != NULL; lk = lk->next)
		(void)proxy_from_below(p, lk, LOOP_READ);
}

/*
 * Upstream is lost: newcomers are refused at once rather than left to wait,
 * and ranks whose handshake passed but who were not admitted yet are closed,
 * so they hear the root is gone now, not at their timeout.
 */
static void
proxy_orphan(struct proxy *p)
{
	struct pxhs *hs;

	pthread_mutex_lock(&p->lock);
	atomic_store(&p->lost, 1);
	close(p->listen_fd);
	p->listen_fd = -1;
	while (read(p->hs[0], &hs, sizeof hs) == (ssize_t)sizeof hs) {
		close(hs->fd);
		free(hs);
	}
	pthread_mutex_unlock(&p->lock);
}

/*
 * Keep-alives due, both ways; a rank or proxy below that went silent is
 * given up (its channels end upstream saying how long). 0 once upstream
 * itself went silent.
 */
static int
proxy_tick(struct proxy *p, uint64_t now)
{
	uint64_t silent;

	for (struct pxlink *lk = p->links, *nx; lk != NULL; lk = nx) {
		nx = lk->next;
		/*
		 * A closing rank's channel has ended and it is only being flushed, but
		 * one that stopped reading must not hold its socket for ever.
		 */
		if (linkka_tick(&lk->ka, &lk->w, now) == 0)
			continue;
		if (lk->closing) {
			proxy_link_drop(p, lk, 0);
			continue;
		}
		/* Before giving it up, read what came since the poll. */
		if (!proxy_from_below(p, lk, LOOP_READ)) {
			proxy_link_drop(p, lk, 0);
			continue;
		}
		if ((silent = linkka_tick(&lk->ka, &lk->w, now)) == 0)
			continue;
		if (lk->proxy)
			log_warn("root proxy: a proxy below went silent for %" PRIu64 " ms: gave up "
			    "its ranks", silent);
		else
			log_warn("root proxy: rank %d went silent for %" PRIu64 " ms: gave it up",
			    lk->rank, silent);
		proxy_link_drop(p, lk, silent > UINT32_MAX ? UINT32_MAX : (uint32_t)silent);
	}
	if (linkka_tick(&p->up_ka, &p->up, now) > 0) {
		if (!proxy_from_up(p, LOOP_READ))
			return 0;
		if ((silent = linkka_tick(&p->up_ka, &p->up, now)) > 0) {
			log_warn("root proxy: the root was silent for %" PRIu64 " ms", silent);
			return 0;
		}
	}
	return 1;
}

/* Only wakes the loop: the tick runs in the hook, before the next wait. */
static int
proxy_on_ka(struct loop *l, uint64_t id, void *arg)
{
	struct proxy *p = arg;

	(void)l;
	if (p->ka_tm == id)
		p->ka_tm = 0;
	return -1;
}

/*
 * Woken when the next keep-alive is due, up or down: sleeping a whole period
 * from just before one was due sent it a period late, and gaps near twice
 * the period tripped ranks with COLL_KEEPALIVE_LIMIT=2.
 */
static void
proxy_arm(struct proxy *p, uint64_t now)
{
	uint64_t wait = linkka_wait(&p->up_ka, now);

	(void)loop_mask(p->loop, p->up.fd, LOOP_READ | (wconn_pending(&p->up) ? LOOP_WRITE : 0));
	for (struct pxlink *lk = p->links; lk != NULL; lk = lk->next) {
		uint64_t w = linkka_wait(&lk->ka, now);

		(void)loop_mask(p->loop, lk->w.fd, LOOP_READ |
		    (wconn_pending(&lk->w) ? LOOP_WRITE : 0));
		wait = w < wait ? w : wait;
	}
	if (p->ka_tm != 0)
		loop_cancel(p->loop, p->ka_tm);
	p->ka_tm = loop_timer(p->loop, wait < PROXY_WAIT_MS ? (int)wait : PROXY_WAIT_MS,
	    proxy_on_ka, p);
	(void)hspool_watch(&p->pool, p->loop, now);
}

/* What came in this round goes out now, not on the next wake-up; 0 once upstream is lost. */
static int
proxy_flush(struct proxy *p)
{
	if (wconn_flush(&p->up) != COLL_OK)
		return 0;
	for (struct pxlink *lk = p->links, *nx; lk != NULL; lk = nx) {
		nx = lk->next;
		/* A rank that said BYE and closed resets us: its BYE goes up first. */
		if (wconn_flush(&lk->w) != COLL_OK)
			(void)proxy_from_below(p, lk, LOOP_READ);
		else if (!(lk->closing && wconn_pending(&lk->w) == 0))
			continue;
		proxy_link_drop(p, lk, 0);
	}
	return 1;
}

/* After each round, before the wait: closing ranks, keep-alives, the flush. */
static void
proxy_before(struct loop *l, void *arg)
{
	struct proxy *p = arg;

	if (p->end != PROXY_RUNNING)
		return;
	for (struct pxlink *lk = p->links, *nx; lk != NULL; lk = nx) {
		nx = lk->next;
		if (lk->closing && !proxy_from_below(p, lk, 0))
			proxy_link_drop(p, lk, 0);
	}
	if (!proxy_tick(p, clock_now_ms()) || !proxy_flush(p)) {
		p->end = PROXY_LOST;
		loop_wake(l);
		return;
	}
	proxy_arm(p, clock_now_ms());
}

static void
proxy_on_link(struct loop *l, int fd, int events, void *arg)
{
	struct pxlink *lk = arg;

	(void)l;
	(void)fd;
	if (lk->p->end == PROXY_RUNNING && !proxy_from_below(lk->p, lk, events))
		proxy_link_drop(lk->p, lk, 0);
}

static void
proxy_on_up(struct loop *l, int fd, int events, void *arg)
{
	struct proxy *p = arg;

	(void)l;
	(void)fd;
	if (p->end == PROXY_RUNNING && !proxy_from_up(p, events))
		p->end = PROXY_LOST;
}

static void
proxy_on_stop(struct loop *l, int fd, int events, void *arg)
{
	struct proxy *p = arg;

	(void)l;
	(void)fd;
	(void)events;
	/* A stop wins over a loss seen in the same round, as when it was polled first. */
	p->end = PROXY_STOPPED;
}

static void
proxy_on_hs(struct loop *l, int fd, int events, void *arg)
{
	(void)l;
	(void)fd;
	(void)events;
	proxy_admit(arg);
}

/* The loop's fixed watchers and hook; links are watched as they come. */
static int
proxy_loop_init(struct proxy *p)
{
	struct loop *l = p->loop = loop_new();

	if (l == NULL)
		return COLL_ESYS;
	if (hspool_init(&p->pool, p->listen_fd, AUTH_ROOT_HANDSHAKES, proxy_handshake, p,
	    AUTH_ROOT_CUT_GRACE_MS, "root proxy") != COLL_OK ||
	    loop_watch(l, p->stop_fd, LOOP_READ, proxy_on_stop, p) != COLL_OK ||
	    loop_watch(l, p->hs[0], LOOP_READ, proxy_on_hs, p) != COLL_OK ||
	    loop_watch(l, p->up.fd, LOOP_READ, proxy_on_up, p) != COLL_OK)
		return COLL_ESYS;
	loop_before(l, proxy_before, p);
	return COLL_OK;
}

static void *
proxy_main(void *arg)
{
	struct proxy *p = arg;

	while (p->end == PROXY_RUNNING)
		if (loop_once(p->loop, -1) < 0)
			break;
	hspool_unwatch(&p->pool);
	if (p->end == PROXY_STOPPED)
		proxy_drain(p);
	else
		proxy_orphan(p);
	/* The ranks below see their root connection end, as if the root had. */
	while (p->links != NULL)
		proxy_link_drop(p, p->links, 0);
	(void)proxy_flush_up(p, clock_now_ms() + PROXY_DRAIN_MS);
	return NULL;
}

static int
proxy_connect(struct proxy *p, const struct net_addr *upstream, int timeout_ms, char *err,
    size_t errlen)
{
	uint64_t dl = clock_now_ms() + (uint64_t)timeout_ms;
	char where[NET_ADDRSTR_LEN], why[COLL_ERR_LEN];
	int fd = -1, r;

	net_addr_format(upstream, where, sizeof where);
	if (net_connect(upstream, dl, -1, &fd) != COLL_OK) {
		snprintf(err, errlen, "cannot reach the root at %s: %s", where, strerror(errno));
		return COLL_EPEER;
	}
	if ((r = auth_connect(fd, &p->uid, WIRE_ROLE_PROXY, dl, -1, why, sizeof why)) !=
	    COLL_OK) {
		snprintf(err, errlen, "the root at %s refused the proxy: %s", where, why);
		close(fd);
		return r;
	}
	net_set_nonblock(fd);
	net_tune(fd);
	wconn_init(&p->up, fd, WIRE_MAX_PAYLOAD);
	return COLL_OK;
}

int
proxy_start(struct proxy **out, const struct coll_uid *uid, const struct net_addr *upstream,
    struct net_addr *at, int timeout_ms, char *err, size_t errlen)
{
	struct proxy *p = xcalloc(1, sizeof *p);
	sigset_t all, old;
	int r, started = 0;

	*out = NULL;
	p->uid = *uid;
	p->listen_fd = p->stop_fd = p->hs[0] = p->hs[1] = -1;
	p->up.fd = -1;
	pthread_mutex_init(&p->lock, NULL);
	if ((r = net_listen(at, NET_BACKLOG, &p->listen_fd)) != COLL_OK) {
		snprintf(err, errlen, "cannot listen for ranks: %s", strerror(errno));
		goto fail;
	}
	if ((r = proxy_connect(p, upstream, timeout_ms, err, errlen)) != COLL_OK)
		goto fail;
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* Signals are the program's to take, not our thread's: it starts with all blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (p->stop_fd != -1 && pipe2(p->hs, O_CLOEXEC | O_NONBLOCK) == 0 &&
	    proxy_loop_init(p) == COLL_OK &&
	    (r = pthread_create(&p->thread, NULL, proxy_main, p)) == 0)
		started = 1;
	else if (r == 0)
		r = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!started) {
		snprintf(err, errlen, "cannot start the proxy's thread: %s", strerror(r));
		r = COLL_ESYS;
		goto fail;
	}
	*out = p;
	return COLL_OK;
fail:
	if (p->up.fd >= 0)
		close(p->up.fd);
	wconn_free(&p->up);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	for (int i = 0; i < 2; i++)
		if (p->hs[i] >= 0)
			close(p->hs[i]);
	hspool_free(&p->pool);
	loop_free(p->loop);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return r;
}

int
proxy_lost(struct proxy *p)
{
	return atomic_load(&p->lost);
}

void
proxy_stop(struct proxy *p)
{
	uint64_t one = 1;
	struct pxhs *hs;

	if (p == NULL)
		return;
	if (write(p->stop_fd, &one, sizeof one) < 0)
		log_warn("root proxy: cannot signal stop");
	pthread_join(p->thread, NULL);
	/* Handshake threads see stop_fd and end within their deadline. */
	hspool_drain(&p->pool);
	while (read(p->hs[0], &hs, sizeof hs) == (ssize_t)sizeof hs) {
		close(hs->fd);
		free(hs);
	}
	close(p->hs[0]);
	close(p->hs[1]);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	close(p->stop_fd);
	close(p->up.fd);
	wconn_free(&p->up);
	free(p->chans);
	hspool_free(&p->pool);
	loop_free(p->loop);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
