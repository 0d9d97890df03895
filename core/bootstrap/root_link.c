/*
 * The root's side of its proxies (proxy.c): one connection carries the root
 * connections of many ranks, each a channel of MUX frames. A channel's first
 * frame is its rank's JOIN; from then on its member is served as if it had
 * a socket of its own (root_send queues MUX frames; a BYE or a MUX_END ends
 * it), so shrink, split and retry agree here exactly as without proxies. Its
 * keep-alives are the proxy's business: the proxy answers them and ends the
 * channel saying how long its rank was silent, and only the proxy's own
 * PINGs cross the link, so the root's keep-alive work is per proxy, not per
 * rank. A proxy that is lost (or silent) takes the ranks it carried with
 * it: each is declared dead, and the message names the proxy.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "linkka.h"
#include "log.h"
#include "root_impl.h"
#include "xmalloc.h"

/* Channels over a proxy's life: proxies number them in turn; more is not one of ours. */
#define ROOT_LINK_MAX_CH (1u << 24)

struct root_link {
	struct root *root;
	struct wconn w;
	struct root_conn **ch;	/* by channel: its member, NULL (none yet) or &root_link_ended */
	uint32_t nch;
	int dead;
	struct linkka ka;
	char where[NET_ADDRSTR_LEN];
	/*
	 * MUX_ENDs read in a row for one communicator and one reason: a proxy
	 * below gave up a whole proxy under it, a channel each. They die together
	 * (root_members_dead: one notice per survivor), before any other frame.
	 */
	struct root_group *end_g;
	uint32_t end_silent;
	int *end_ranks, nend, end_cap;
	struct root_link *next;
};

/* A channel that ended: frames still on their way for it are dropped. */
static struct root_conn root_link_ended;

static void root_link_on(struct loop *l, int fd, int events, void *arg);

void
root_link_admit(struct root *root, int fd)
{
	struct root_link *lk = xcalloc(1, sizeof *lk);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	struct net_addr a = { 0 };

	wconn_init(&lk->w, fd, WIRE_MAX_PAYLOAD);
	lk->root = root;
	lk->ka.last_rx = clock_now_ms();
	snprintf(lk->where, sizeof lk->where, "?");
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 && sl <= sizeof a.ss) {
		memcpy(&a.ss, &ss, sl);
		a.len = sl;
		net_addr_format(&a, lk->where, sizeof lk->where);
	}
	if (loop_watch(root->loop, fd, LOOP_READ, root_link_on, lk) != COLL_OK) {
		close(fd);
		wconn_free(&lk->w);
		free(lk);
		return;
	}
	lk->next = root->links;
	root->links = lk;
	root->nlinks++;
	log_info("root: a proxy at %s carries ranks' connections", lk->where);
}

void
root_link_send(struct root_conn *rc, uint8_t type, const void *p, uint32_t len)
{
	if (!rc->link->dead)
		wconn_queue_mux(&rc->link->w, rc->ch, type, p, len);
}

void
root_link_drop(struct root_conn *rc)
{
	struct root_link *lk = rc->link;

	if (!lk->dead)
		wconn_queue_mux_end(&lk->w, rc->ch, 0);
	lk->ch[rc->ch] = &root_link_ended;
}

/* A new channel's first frame must be a JOIN: admit its rank, or say why not and end it. */
static void
root_link_join(struct root *root, struct root_link *lk, uint32_t ch, const struct wire_mux *m)
{
	struct root_conn *rc = xcalloc(1, sizeof *rc);
	char msg[WIRE_MSG_LEN];
	struct root_group *g = NULL;
	struct wire_join j;
	int rank = -1;

	wconn_init(&rc->w, -1, 0);
	rc->link = lk;
	rc->ch = ch;
	lk->ch[ch] = rc;
	if (m->type != WIRE_JOIN || wire_join_decode(m->p, m->len, &j) != COLL_OK) {
		snprintf(msg, sizeof msg, "a rank through the proxy at %s sent no valid JOIN",
		    lk->where);
		log_warn("root: %s", msg);
	} else {
		/* A refusal names the rank, as for one on its own socket; root_check_join logs it. */
		rank = (int)(j.base + j.e.rank);
		if ((g = root_check_join(root, &j, msg, sizeof msg)) != NULL)
			root_admit_member(root, g, rc, &j);
	}
	/* Every JOIN the proxy passed counts, refused or not: it counts them all too. */
	if (rank >= 0)
		linkka_join(&lk->ka, &j, clock_now_ms());
	if (g == NULL) {
		root_send_note(rc, WIRE_ERROR, COLL_EINVAL, rank, msg);
		root_link_drop(rc);
		wconn_free(&rc->w);
		free(rc);
	}
}

/* The member on channel ch, if that channel is live; it was just heard from. */
static struct root_conn *
root_link_member(struct root_link *lk, uint32_t ch)
{
	struct root_conn *rc = ch < lk->nch ? lk->ch[ch] : NULL;

	if (rc == NULL || rc == &root_link_ended)
		return NULL;
	return rc;
}

/* The MUX_ENDs gathered: their ranks die, together. */
static void
root_link_ends(struct root *root, struct root_link *lk)
{
	char msg[256];

	if (lk->nend == 0)
		return;
	if (lk->end_silent > 0)
		snprintf(msg, sizeof msg, "stopped answering: it, or a proxy on its way, sent "
		    "no keep-alive for %" PRIu32 " ms, said the proxy at %s", lk->end_silent,
		    lk->where);
	else
		snprintf(msg, sizeof msg, "died or lost its connection");
	root_members_dead(root, lk->end_g, lk->end_ranks, lk->nend, msg);
	lk->nend = 0;
	lk->end_g = NULL;
}

/* One frame of the proxy's: 0 when it is not one of ours (the proxy is then dropped). */
static int
root_link_frame(struct root *root, struct root_link *lk, const struct wire_hdr *h,
    const uint8_t *p)
{
	struct root_conn *rc;
	struct wire_hdr ih;
	struct wire_mux m;
	uint32_t ch, silent;

	if (h->type == WIRE_PING)
		return 1;
	if (h->type == WIRE_MUX_END) {
		if (wire_mux_end_decode(p, h->len, &ch, &silent) != COLL_OK)
			return 0;
		if ((rc = root_link_member(lk, ch)) == NULL)
			return 1;
		if (lk->nend > 0 && (lk->end_g != rc->g || lk->end_silent != silent)) {
			root_link_ends(root, lk);
			/* Those deaths may have ended this channel too (a doomed child's member). */
			if ((rc = root_link_member(lk, ch)) == NULL)
				return 1;
		}
		if (lk->nend == lk->end_cap) {
			lk->end_cap = lk->end_cap ? lk->end_cap * 2 : 16;
			lk->end_ranks = xreallocarray(lk->end_ranks, (size_t)lk->end_cap,
			    sizeof *lk->end_ranks);
		}
		lk->end_g = rc->g;
		lk->end_silent = silent;
		lk->end_ranks[lk->nend++] = rc->rank;
		return 1;
	}
	root_link_ends(root, lk);
	if (h->type != WIRE_MUX || wire_mux_decode(p, h->len, &m) != COLL_OK ||
	    m.ch >= ROOT_LINK_MAX_CH)
		return 0;
	if (m.ch >= lk->nch) {
		size_t n = (size_t)lk->nch * 2 > (size_t)m.ch + 64 ? (size_t)lk->nch * 2 :
		    (size_t)m.ch + 64;

		lk->ch = xreallocarray(lk->ch, n, sizeof *lk->ch);
		memset(lk->ch + lk->nch, 0, (n - lk->nch) * sizeof *lk->ch);
		lk->nch = (uint32_t)n;
	}
	if (lk->ch[m.ch] == NULL) {
		root_link_join(root, lk, m.ch, &m);
		return 1;
	}
	if ((rc = root_link_member(lk, m.ch)) == NULL)
		return 1;
	rc->last_rx = clock_now_ms();
	atomic_fetch_add(&root->proxied_in, 1);
	if (m.len > ROOT_MAX_FRAME) {
		root_member_dead(root, rc->g, rc->rank, "sent a frame larger than the root takes");
		return 1;
	}
	ih = (struct wire_hdr){ .version = h->version, .type = m.type, .len = m.len };
	(void)root_on_member_frame(root, rc, &ih, m.p);
	return 1;
}

/*
 * The proxy is gone: so is every rank it carried, as far as the root can
 * tell. closed: it just ended, which is how a proxy whose ranks all left ends.
 */
static void
root_link_lost(struct root *root, struct root_link *lk, const char *why, int closed)
{
	struct root_link **pp = &root->links;
	char msg[256];
	int lost = 0, *ranks;

	lk->dead = 1;
	snprintf(msg, sizeof msg, "lost its connection: its proxy at %s %s", lk->where, why);
	/*
	 * A communicator's ranks on the link die together: one notice to each
	 * survivor names them all (root_members_dead), not one per death.
	 */
	ranks = xmalloc(((size_t)lk->nch + 1) * sizeof *ranks);
	for (uint32_t ch = 0; ch < lk->nch; ch++) {
		struct root_conn *rc = root_link_member(lk, ch);
		struct root_group *g;
		int n = 0;

		if (rc == NULL || rc->g->m[rc->rank].conn != rc)
			continue;
		g = rc->g;
		for (uint32_t k = ch; k < lk->nch; k++) {
			struct root_conn *o = root_link_member(lk, k);

			if (o != NULL && o->g == g && g->m[o->rank].conn == o)
				ranks[n++] = o->rank;
		}
		/* Ended channels read NULL from here on: the loop moves to the next group. */
		root_members_dead(root, g, ranks, n, msg);
		lost += n;
	}
	free(ranks);
	/* A proxy whose ranks had all left ended as it should. */
	if (lost > 0 || !closed)
		log_warn("root: the proxy at %s %s, with %d ranks", lk->where, why, lost);
	else
		log_info("root: the proxy at %s closed", lk->where);
	while (*pp != lk)
		pp = &(*pp)->next;
	*pp = lk->next;
	root->nlinks--;
	atomic_fetch_add(&root->bytes_sent, lk->w.bytes_sent);
	loop_unwatch(root->loop, lk->w.fd);
	close(lk->w.fd);
	wconn_free(&lk->w);
	free(lk->ch);
	free(lk->end_ranks);
	free(lk);
}

/*
 * Serve what the link has (r: how its last write went). Read even after a
 * failed write, as for a rank's own socket: BYEs may wait behind it. 0 once
 * the link is lost (and freed).
 */
static int
root_link_read(struct root *root, struct root_link *lk, int events, int r)
{
	const uint8_t *p;
	struct wire_hdr h;
	int k;

	if (events & (LOOP_READ | LOOP_ERROR) || r != COLL_OK) {
		int f = wconn_fill(&lk->w);

		if (r == COLL_OK)
			r = f;
	}
	while ((k = wconn_next(&lk->w, &h, &p)) == COLL_OK)
		if (!root_link_frame(root, lk, &h, p))
			break;
	root_link_ends(root, lk);
	if (k == COLL_OK || (k != COLL_EINPROGRESS))
		root_link_lost(root, lk, "sent bytes that are not a proxy's frames", 0);
	else if (r != COLL_OK)
		root_link_lost(root, lk, "ended or lost its connection", r == COLL_EPEER);
	else
		return 1;
	return 0;
}

static void
root_link_on(struct loop *l, int fd, int events, void *arg)
{
	struct root_link *lk = arg;

	(void)l;
	(void)fd;
	(void)root_link_read(lk->root, lk, events, (events & LOOP_WRITE) ?
	    wconn_flush(&lk->w) : COLL_OK);
}

void
root_link_tick(struct root *root, uint64_t now)
{
	char why[96];
	uint64_t silent;

	for (struct root_link *lk = root->links, *next; lk != NULL; lk = next) {
		next = lk->next;
		if (linkka_tick(&lk->ka, &lk->w, now) == 0)
			continue;
		/* Before calling it lost, read what came since the poll. */
		if (!root_link_read(root, lk, LOOP_READ, COLL_OK) ||
		    (silent = linkka_tick(&lk->ka, &lk->w, now)) == 0)
			continue;
		snprintf(why, sizeof why, "stopped answering: no keep-alive for %" PRIu64 " ms",
		    silent);
		root_link_lost(root, lk, why, 0);
	}
}

void
root_link_flush(struct root *root)
{
	for (struct root_link *lk = root->links, *next; lk != NULL; lk = next) {
		int r;

		next = lk->next;
		if (wconn_pending(&lk->w) && (r = wconn_flush(&lk->w)) != COLL_OK)
			(void)root_link_read(root, lk, LOOP_ERROR, r);
		else
			root_arm(root, &lk->w);
	}
}

/* At the root's stop, after its groups (and their members) were freed. */
void
root_link_close_all(struct root *root)
{
	while (root->links != NULL) {
		struct root_link *lk = root->links;

		root->links = lk->next;
		(void)wconn_flush(&lk->w);
		atomic_fetch_add(&root->bytes_sent, lk->w.bytes_sent);
		loop_unwatch(root->loop, lk->w.fd);
		close(lk->w.fd);
		wconn_free(&lk->w);
		free(lk->ch);
		free(lk->end_ranks);
		free(lk);
	}
	root->nlinks = 0;
}
