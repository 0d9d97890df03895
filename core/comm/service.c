/*
 * The service thread of a communicator: accepts peers, reads everything the
 * root sends (the book for rank 0, verdicts, regroup answers, retry rounds)
 * and keeps the root connection alive both ways. A root silent for its
 * keep-alive limit, or gone, fails every wait of the communicator with that
 * reason: a dead root never leaves the ranks hanging.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "comm_impl.h"
#include "log.h"
#include "loop.h"
#include "xmalloc.h"

/* The root announced a failure, or vanished: record why and wake every waiter. */
void
comm_verdict_set(struct comm *c, int code, int rank, const char *msg)
{
	int expect = COLL_OK;

	pthread_mutex_lock(&c->lock);
	if (c->async_msg[0] == '\0')
		snprintf(c->async_msg, sizeof c->async_msg, "%s", msg);
	if (rank >= 0 && rank < c->nranks)
		c->dead[rank] = 1;
	pthread_mutex_unlock(&c->lock);
	if (!atomic_compare_exchange_strong(&c->state, &expect, code)) {
		expect = COLL_EINPROGRESS;
		atomic_compare_exchange_strong(&c->state, &expect, code);
	}
	atomic_store(&c->failed, 1);
	comm_interrupt(c);
}

static void
service_on_regroup(struct comm *c, const uint8_t *p, uint32_t len)
{
	struct wire_regroup_done d;

	if (wire_regroup_done_decode(p, len, (uint32_t)c->nranks, &d) != COLL_OK) {
		free(d.excl);
		log_warn("the root sent a malformed regroup answer");
		return;
	}
	pthread_mutex_lock(&c->lock);
	free(c->rg.d.excl);
	c->rg.d = d;
	c->rg.have = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* Several ranks failed at once (a proxy and the ranks it carried): every one is dead here. */
static void
service_on_failed_set(struct comm *c, const uint8_t *p, uint32_t len)
{
	struct wire_failed_set *f = xmalloc(sizeof *f);

	if (wire_failed_set_decode(p, len, (uint32_t)c->nranks, f) != COLL_OK) {
		comm_verdict_set(c, COLL_EPROTO, -1, "the root sent a malformed notice");
	} else {
		pthread_mutex_lock(&c->lock);
		for (uint32_t i = 0; i < f->n; i++)
			memset(c->dead + f->first[i], 1, f->count[i]);
		pthread_mutex_unlock(&c->lock);
		comm_verdict_set(c, COLL_ERANKDEAD, f->note.rank, f->note.msg);
	}
	free(f);
}

static void
service_on_frame(struct comm *c, const struct wire_hdr *h, const uint8_t *p)
{
	struct wire_note note;

	switch (h->type) {
	case WIRE_PING:
		break;
	case WIRE_BOOK:
		join_on_book(c, p, h->len);
		break;
	case WIRE_ERROR:
	case WIRE_FAILED:
		if (wire_note_decode(p, h->len, &note) != COLL_OK)
			comm_verdict_set(c, COLL_EPROTO, -1, "the root sent a malformed notice");
		else if (h->type == WIRE_ERROR)
			comm_verdict_set(c, note.code, -1, note.msg);
		else
			comm_verdict_set(c, COLL_ERANKDEAD, note.rank, note.msg);
		break;
	case WIRE_FAILED_SET:
		service_on_failed_set(c, p, h->len);
		break;
	case WIRE_REGROUP_DONE:
		service_on_regroup(c, p, h->len);
		break;
	case WIRE_RETRY_QUERY:
	case WIRE_RETRY_GO:
	case WIRE_RETRY_REFUSE:
		retry_on_root(c, h->type, p, h->len);
		break;
	default:
		log_warn("the root sent message type %u, which this rank ignores", h->type);
	}
}

static void
service_root_lost(struct comm *c, const char *why)
{
	char msg[COLL_ERR_LEN];

	if (c->root_via.len > 0) {
		char where[NET_ADDRSTR_LEN];

		net_addr_format(&c->root_via, where, sizeof where);
		snprintf(msg, sizeof msg, "lost the root service (%s) through its proxy at %s: "
		    "the proxy's host, or the launcher, died or is cut off", why, where);
	} else {
		snprintf(msg, sizeof msg, "lost the root service (%s): the launcher, or the rank "
		    "that made the unique id, died or is cut off", why);
	}
	atomic_store(&c->root_lost, 1);
	comm_verdict_set(c, COLL_EROOTLOST, -1, msg);
}

static void
service_on_root(struct comm *c, uint64_t *last_rx)
{
	const uint8_t *p;
	struct wire_hdr h;
	int r, f;

	f = wconn_fill(&c->root_in);
	*last_rx = clock_now_ms();
	while ((r = wconn_next(&c->root_in, &h, &p)) == COLL_OK)
		service_on_frame(c, &h, p);
	if (f != COLL_OK && atomic_load(&c->finalized))
		atomic_store(&c->root_lost, 1);	/* we said goodbye: the root hangs up */
	else if (r != COLL_EINPROGRESS)
		service_root_lost(c, "it sent bytes that are not a coll frame");
	else if (f != COLL_OK)
		service_root_lost(c, "connection closed");
}

/* The service thread's loop and what its callbacks share. */
struct service {
	struct comm *c;
	struct loop *l;
	int stop;		/* the communicator is being torn down */
	uint64_t last_rx;
	/* A block leader's watches (blocks.c), which hands them over as pollfds. */
	struct pollfd *wpfd;
	int *wfd;		/* the fd each entry is watched under, or -1 */
	size_t nw;
};

static void
service_on_abort(struct loop *l, int fd, int events, void *arg)
{
	(void)l, (void)fd, (void)events;
	((struct service *)arg)->stop = 1;
}

static void
service_on_root_fd(struct loop *l, int fd, int events, void *arg)
{
	struct service *sv = arg;

	(void)fd, (void)events;
	if (sv->stop)
		return;
	service_on_root(sv->c, &sv->last_rx);
	if (atomic_load(&sv->c->root_lost))
		loop_mask(l, sv->c->root_fd, 0);
}

/* blocks_watch_serve reads the entries that came ready, and times out the others. */
static void
service_on_watch(struct loop *l, int fd, int events, void *arg)
{
	(void)l, (void)fd, (void)events;
	((struct pollfd *)arg)->revents = POLLIN;
}

/*
 * Before each wait: the pool's fd and timer (hspool_watch), the root while
 * it lives, and a leader's watches. A watch's fd, once closed, may come back as another
 * thread's socket: it is unwatched before any fd is watched anew.
 */
static void
service_sync(struct service *sv)
{
	struct comm *c = sv->c;
	size_t n;

	(void)hspool_watch(&c->hs, sv->l, clock_now_ms());
	loop_mask(sv->l, c->root_fd, atomic_load(&c->root_lost) ? 0 : LOOP_READ);
	n = blocks_watch_pollfds(c, sv->wpfd);
	for (size_t i = 0; i < sv->nw; i++)
		if (sv->wfd[i] >= 0 && (i >= n || sv->wpfd[i].fd != sv->wfd[i])) {
			loop_unwatch(sv->l, sv->wfd[i]);
			sv->wfd[i] = -1;
		}
	for (size_t i = 0; i < n; i++)
		if (sv->wpfd[i].fd >= 0 && sv->wfd[i] != sv->wpfd[i].fd &&
		    loop_watch(sv->l, sv->wpfd[i].fd, LOOP_READ, service_on_watch, &sv->wpfd[i]) == COLL_OK)
			sv->wfd[i] = sv->wpfd[i].fd;
	sv->nw = n;
}

/* The root heard from lately, and pinged each keep-alive interval. */
static void
service_keepalive(struct service *sv, uint64_t now, uint64_t *next_ping)
{
	struct comm *c = sv->c;
	uint64_t limit = (uint64_t)c->ka_ms * (uint64_t)c->ka_limit;
	char why[96];

	if (atomic_load(&c->root_lost))
		return;
	if (now - sv->last_rx > limit) {
		snprintf(why, sizeof why, "no keep-alive for %" PRIu64 " ms", now - sv->last_rx);
		service_root_lost(c, why);
	} else if (now >= *next_ping) {
		(void)comm_root_send(c, WIRE_PING, NULL, 0);
		*next_ping = now + (uint64_t)c->ka_ms;
	}
}

static int
service_open(struct service *sv, struct comm *c)
{
	*sv = (struct service){ .c = c, .last_rx = clock_now_ms() };
	/* A block leader (blocks.c) also hears the other blocks' roots. */
	sv->wpfd = xcalloc(1 + (size_t)c->nroots, sizeof *sv->wpfd);
	sv->wfd = xcalloc(1 + (size_t)c->nroots, sizeof *sv->wfd);
	for (int i = 0; i <= c->nroots; i++)
		sv->wfd[i] = -1;
	if ((sv->l = loop_new()) != NULL &&
	    loop_watch(sv->l, c->abort_fd, LOOP_READ, service_on_abort, sv) == COLL_OK &&
	    loop_watch(sv->l, c->root_fd, LOOP_READ, service_on_root_fd, sv) == COLL_OK)
		return COLL_OK;
	loop_free(sv->l);
	sv->l = NULL;
	return COLL_ESYS;
}

void *
comm_service(void *arg)
{
	struct service sv;
	struct comm *c = arg;
	uint64_t next_ping = clock_now_ms(), now;
	int wait, root;

	wconn_init(&c->root_in, c->root_fd, WIRE_MAX_PAYLOAD);
	if (service_open(&sv, c) != COLL_OK)
		service_root_lost(c, "the service thread could not start its loop");
	while (sv.l != NULL && !sv.stop) {
		root = !atomic_load(&c->root_lost);
		wait = c->ka_ms;
		service_sync(&sv);
		if (loop_once(sv.l, wait) < 0 || sv.stop)
			break;
		now = clock_now_ms();
		blocks_watch_serve(c, sv.wpfd, sv.nw, now);
		if (root)
			service_keepalive(&sv, now, &next_ping);
	}
	hspool_unwatch(&c->hs);
	loop_free(sv.l);
	free(sv.wpfd);
	free(sv.wfd);
	return NULL;
}
