/*
 * Init from several unique ids, as ncclCommInitRankScalable: root b serves
 * the contiguous block of ranks floor(b n / B) .. floor((b + 1) n / B) - 1, so
 * that no one host takes every rank's connection and join. Each block's first
 * rank (its leader) gets its block's book from its root, fetches the other
 * blocks' books from their roots (root_fetch.c), and passes the whole book
 * down a binomial tree of its block (join.c).
 *
 * After init the communicator is one like any other for ops. Each rank keeps
 * its block's root as failure detector, so a rank that dies is announced to
 * its own block; the other blocks see a lost peer on the data plane. Shrink,
 * split and operator retry need every rank's agreement at one root: they
 * are refused on such a communicator (regroup.c, and COLL_RETRY_MAX is 0).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "comm_impl.h"
#include "io.h"
#include "log.h"
#include "xmalloc.h"

int
blocks_base(int nranks, int nroots, int b)
{
	return (int)((int64_t)b * nranks / nroots);
}

/* The block of a rank: the largest b with blocks_base(b) <= rank. */
static int
blocks_of(int nranks, int nroots, int rank)
{
	return (int)(((int64_t)rank + 1) * nroots - 1) / nranks;
}

/*
 * What a leader alone learnt, for its block through its root: ERROR, the book
 * cannot be completed or another root is lost; FAILED, a rank of another
 * block died. The leader takes the verdict itself too: as its init's failure
 * (init thread), or as the communicator's, like a root's notice (service
 * thread, later).
 */
static int
blocks_report(struct comm *c, int verdict, uint8_t type, int code, int rank, const char *fmt,
    ...) __attribute__((format(printf, 6, 7)));

static int
blocks_report(struct comm *c, int verdict, uint8_t type, int code, int rank, const char *fmt,
    ...)
{
	struct wire_note note = { .code = code, .rank = rank };
	uint8_t buf[WIRE_MSG_LEN + 16];
	struct wire_buf b;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(note.msg, sizeof note.msg, fmt, ap);
	va_end(ap);
	wire_buf_init(&b, buf, sizeof buf);
	wire_note_encode(&b, &note);
	(void)comm_root_send(c, type, buf, (uint32_t)b.off);
	if (verdict) {
		comm_verdict_set(c, code, rank, note.msg);
		return code;
	}
	return comm_fail(c, code, "%s", note.msg);
}

#define blocks_fail(c, code, ...) blocks_report((c), 0, WIRE_ERROR, (code), -1, __VA_ARGS__)

/* "ranks 4-7", or "rank 4" for a block of one. */
static void
blocks_name(const struct comm *c, int j, char *buf, size_t len)
{
	int base = blocks_base(c->nranks, c->nroots, j);
	int last = blocks_base(c->nranks, c->nroots, j + 1) - 1;

	if (last == base)
		snprintf(buf, len, "rank %d", base);
	else
		snprintf(buf, len, "ranks %d-%d", base, last);
}

/* Every entry of ranks base .. base + n - 1 arrived (chunks may repeat or overlap). */
static int
blocks_complete(const struct comm *c, int base, int n)
{
	for (int i = base; i < base + n; i++)
		if (c->book[i].nranks != (uint32_t)c->nranks)
			return 0;
	return 1;
}

static int
blocks_fetch_one(struct comm *c, int j, int fd, uint64_t dl)
{
	int base = blocks_base(c->nranks, c->nroots, j), r;
	int n = blocks_base(c->nranks, c->nroots, j + 1) - base, before = c->book_have;
	char where[NET_ADDRSTR_LEN], err[COLL_ERR_LEN], who[48];
	struct wire_note note;
	struct wire_hdr h;
	uint8_t req[20], *p = NULL;
	struct wire_buf b;

	net_addr_format(&c->roots[j].root, where, sizeof where);
	blocks_name(c, j, who, sizeof who);
	/* intr_fd: a verdict in our own block ends the wait for the others. */
	if ((r = auth_connect(fd, &c->roots[j], WIRE_ROLE_ROOT, dl, c->intr_fd, err,
	    sizeof err)) != COLL_OK)
		return r == COLL_EABORTED ? r : blocks_fail(c, r, "rank %d: the root of %s at %s "
		    "refused it: %s", c->rank, who, where, err);
	wire_buf_init(&b, req, sizeof req);
	wire_put_u64(&b, c->roots[j].jobid);
	wire_put_u32(&b, (uint32_t)c->ka_ms);
	wire_put_u32(&b, (uint32_t)base);
	wire_put_u32(&b, (uint32_t)n);
	r = wire_send(fd, WIRE_FETCH, req, (uint32_t)b.off, dl, c->intr_fd);
	while (r == COLL_OK && c->book_have - before < n) {
		if ((r = wire_recv(fd, &h, &p, WIRE_MAX_PAYLOAD, dl, c->intr_fd)) != COLL_OK)
			break;
		if (h.type == WIRE_ERROR && wire_note_decode(p, h.len, &note) == COLL_OK) {
			free(p);
			return blocks_fail(c, note.code, "%s (root at %s) did not start: %s", who,
			    where, note.msg);
		}
		pthread_mutex_lock(&c->lock);
		if (h.type != WIRE_BOOK || join_take_chunk(c, p, h.len, base, n) != COLL_OK)
			r = COLL_EPROTO;
		pthread_mutex_unlock(&c->lock);
		free(p);
		p = NULL;
	}
	if (r == COLL_OK && !blocks_complete(c, base, n))
		r = COLL_EPROTO;
	/* Woken: our own block failed or we were aborted; that says why, not this fetch. */
	if (r == COLL_EABORTED && (atomic_load(&c->failed) || atomic_load(&c->aborted)))
		return r;
	if (r != COLL_OK)
		return blocks_fail(c, r, "rank %d: fetching the book of %s from their root at %s: "
		    "%s", c->rank, who, where, coll_strerror(r));
	return COLL_OK;
}

int
blocks_fetch(struct comm *c, uint64_t dl)
{
	struct blocks_watch *w = xcalloc((size_t)c->nroots, sizeof *w);
	int r = COLL_OK, fd, n = 0;

	for (int j = 0; j < c->nroots && r == COLL_OK; j++) {
		if (j == c->block)
			continue;
		if ((r = join_connect(c, &c->roots[j].root, dl, c->intr_fd, &fd)) != COLL_OK) {
			/* Its block waits for us in the tree: tell it why we cannot go on. */
			if (r != COLL_EABORTED)
				blocks_fail(c, r, "%s", c->err);
			break;
		}
		if ((r = blocks_fetch_one(c, j, fd, dl)) != COLL_OK) {
			close(fd);
			break;
		}
		/* The connection stays: that root tells us of deaths in its block there. */
		wconn_init(&w[n].in, fd, WIRE_MSG_LEN + 64);
		w[n].block = j;
		w[n].last_rx = clock_now_ms();
		n++;
	}
	if (r != COLL_OK) {
		blocks_watch_free(w, n);
		return r;
	}
	c->watch = w;
	c->nwatch = n;
	/* Published last: the service thread starts polling them at its next round. */
	atomic_store(&c->watching, 1);
	return COLL_OK;
}

void
blocks_watch_free(struct blocks_watch *w, int n)
{
	for (int i = 0; i < n; i++) {
		close(w[i].in.fd);
		wconn_free(&w[i].in);
	}
	free(w);
}

/* Another block's root is gone: its ranks' deaths would go unheard, as with one root lost. */
static void
blocks_watch_lost(struct comm *c, struct blocks_watch *w, const char *why)
{
	char addr[NET_ADDRSTR_LEN], who[48];

	net_addr_format(&c->roots[w->block].root, addr, sizeof addr);
	blocks_name(c, w->block, who, sizeof who);
	w->done = 1;
	if (atomic_load(&c->finalized))
		return;
	blocks_report(c, 1, WIRE_ERROR, COLL_EROOTLOST, -1, "lost the root of %s at %s (%s): the "
	    "process that made that unique id died or is cut off", who, addr, why);
}

static void
blocks_watch_frame(struct comm *c, struct blocks_watch *w, const struct wire_hdr *h,
    const uint8_t *p)
{
	struct wire_note note;

	switch (h->type) {
	case WIRE_PING:
		break;
	case WIRE_BYE:
		w->done = 1;	/* stopped on purpose, after its ranks left */
		break;
	case WIRE_FAILED:
		if (wire_note_decode(p, h->len, &note) != COLL_OK || note.rank < 0 ||
		    note.rank >= c->nranks) {
			blocks_watch_lost(c, w, "it sent a malformed notice");
			break;
		}
		blocks_report(c, 1, WIRE_FAILED, COLL_ERANKDEAD, note.rank, "%s", note.msg);
		break;
	default:
		blocks_watch_lost(c, w, "it sent a message a leader does not expect");
	}
}

size_t
blocks_watch_pollfds(struct comm *c, struct pollfd *pfd)
{
	size_t n = 0;

	if (!atomic_load(&c->watching))
		return 0;
	for (int i = 0; i < c->nwatch; i++)
		pfd[n++] = (struct pollfd){ c->watch[i].done ? -1 : c->watch[i].in.fd, POLLIN, 0 };
	return n;
}

void
blocks_watch_serve(struct comm *c, const struct pollfd *pfd, size_t n, uint64_t now)
{
	uint64_t limit = (uint64_t)c->ka_ms * (uint64_t)c->ka_limit;
	char why[96];

	for (size_t i = 0; i < n; i++) {
		struct blocks_watch *w = &c->watch[i];
		const uint8_t *p;
		struct wire_hdr h;
		int f = COLL_OK, r;

		if (w->done)
			continue;
		if (pfd[i].revents) {
			f = wconn_fill(&w->in);
			w->last_rx = now;
			while (!w->done && (r = wconn_next(&w->in, &h, &p)) == COLL_OK)
				blocks_watch_frame(c, w, &h, p);
			if (!w->done && r != COLL_EINPROGRESS)
				blocks_watch_lost(c, w, "it sent bytes that are not a coll frame");
			else if (!w->done && f != COLL_OK)
				blocks_watch_lost(c, w, "connection closed");
		} else if (now - w->last_rx > limit) {
			snprintf(why, sizeof why, "no keep-alive for %" PRIu64 " ms", now - w->last_rx);
			blocks_watch_lost(c, w, why);
		}
	}
}

int
comm_init_scalable(struct comm **out, int nranks, const struct coll_uid *uids, int nuids,
    int rank, const struct coll_config *cfg)
{
	static const struct coll_config defaults = COLL_CONFIG_INIT;
	struct comm *c;
	int b;

	*out = NULL;
	if (cfg == NULL)
		cfg = &defaults;
	if (nuids == 1)
		return comm_init(out, nranks, uids, rank, cfg);
	if (nranks < 1 || nranks > COLL_MAX_RANKS || rank < 0 || rank >= nranks || uids == NULL ||
	    nuids < 1 || nuids > nranks || nuids > COLL_MAX_ROOTS)
		return COLL_EINVAL;
	for (int i = 0; i < nuids; i++)
		if (uids[i].version != UID_VERSION)
			return COLL_EINVAL;
	b = blocks_of(nranks, nuids, rank);
	/* Peers authenticate with the first id, which every rank holds. */
	c = comm_new(&uids[0], uids[0].jobid, rank, nranks, cfg);
	c->roots = xcalloc((size_t)nuids, sizeof *c->roots);
	memcpy(c->roots, uids, (size_t)nuids * sizeof *uids);
	c->nroots = nuids;
	c->block = b;
	c->root_uid = uids[b];
	/* A root proxy serves a job of one id: each block reaches its own root. */
	memset(&c->root_via, 0, sizeof c->root_via);
	c->block_base = blocks_base(nranks, nuids, b);
	c->block_n = blocks_base(nranks, nuids, b + 1) - c->block_base;
	c->retry_max = 0;
	*out = c;
	return comm_start(c, 1);
}
