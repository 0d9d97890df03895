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

/* Several ranks failed at once (a relay and its subtree): every one is dead here. */
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
		bootstrap_on_book(c, p, h->len);
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
		snprintf(msg, sizeof msg, "lost the root service (%s) through its relay at %s: "
		    "the relay's host, or the launcher, died or is cut off", why, where);
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

void *
comm_service(void *arg)
{
	struct comm *c = arg;
	uint64_t last_rx = clock_now_ms(), next_ping = last_rx, now;
	uint64_t limit = (uint64_t)c->ka_ms * (uint64_t)c->ka_limit;
	/* A block leader (blocks.c) also hears the other blocks' roots. */
	struct pollfd *pfd = xcalloc(3 + (size_t)c->nroots, sizeof *pfd);
	size_t watch;
	char why[96];
	int n, root, wait;

	wconn_init(&c->root_in, c->root_fd, WIRE_MAX_PAYLOAD);
	for (;;) {
		root = !atomic_load(&c->root_lost);
		pfd[0] = (struct pollfd){ c->abort_fd, POLLIN, 0 };
		/* The listener, unless every handshake slot is taken or it rests (hspool.h). */
		wait = c->ka_ms;
		pfd[1] = (struct pollfd){ hspool_pollfd(&c->hs, clock_now_ms(), &wait), POLLIN, 0 };
		pfd[2] = (struct pollfd){ root ? c->root_fd : -1, POLLIN, 0 };
		watch = blocks_watch_pollfds(c, pfd + 3);
		n = poll(pfd, (nfds_t)(3 + watch), wait);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 || pfd[0].revents)
			break;
		if (pfd[1].revents)
			hspool_serve(&c->hs, clock_now_ms());
		if (pfd[2].revents)
			service_on_root(c, &last_rx);
		now = clock_now_ms();
		blocks_watch_serve(c, pfd + 3, watch, now);
		if (!root || atomic_load(&c->root_lost))
			continue;
		if (now - last_rx > limit) {
			snprintf(why, sizeof why, "no keep-alive for %" PRIu64 " ms", now - last_rx);
			service_root_lost(c, why);
		} else if (now >= next_ping) {
			(void)comm_root_send(c, WIRE_PING, NULL, 0);
			next_ping = now + (uint64_t)c->ka_ms;
		}
	}
	free(pfd);
	return NULL;
}
