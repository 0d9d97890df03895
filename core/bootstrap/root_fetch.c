/*
 * Init from several unique ids (comm_init_scalable): each root serves one
 * contiguous block of ranks and sends its block's book to the block's leader
 * (its first rank). Each leader then fetches the other blocks' books from
 * their roots, here, so that no root ever sends more than its block to each
 * of the other leaders: with B roots, each sends about n entries in all,
 * against n from the single root of comm_init, but the connections and the
 * joins are spread over B hosts.
 *
 * A fetch waits, in a thread of its own (out of the handshake pool, so that
 * fetchers never keep the block's own ranks from joining), for
 * the first group to start or to fail, then sends the book or the reason and
 * closes. The loop publishes both under root->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "log.h"
#include "root_impl.h"
#include "xmalloc.h"

static int root_watch_hand(struct root *root, int fd, uint32_t ka_ms);

/* Beyond the join deadline of the block, for the book to go out after the last join. */
#define FETCH_SLACK_MS 5000
#define FETCH_MAX 1024

void
root_fetch_publish(struct root *root, struct root_group *g)
{
	struct wire_entry *book;

	/* Only the roots of a communicator with several: no copy at collrun's root. */
	if (g != root->first || g->nroots <= 1)
		return;
	book = xcalloc((size_t)g->nranks, sizeof *book);
	for (int i = 0; i < g->nranks; i++)
		book[i] = g->m[i].e;
	pthread_mutex_lock(&root->lock);
	root->book = book;
	root->book_n = (uint32_t)g->nranks;
	pthread_cond_broadcast(&root->cond);
	pthread_mutex_unlock(&root->lock);
}

void
root_fetch_fail(struct root *root, struct root_group *g, int code, const char *msg)
{
	if (g != root->first)
		return;
	pthread_mutex_lock(&root->lock);
	if (root->book_code == 0) {
		root->book_code = code;
		root->book_joined = g->joined;
		snprintf(root->book_err, sizeof root->book_err, "%s", msg);
	}
	pthread_cond_broadcast(&root->cond);
	pthread_mutex_unlock(&root->lock);
}

static int
fetch_send(struct root *root, int fd, uint8_t type, const void *p, uint32_t len, uint64_t dl)
{
	int r = wire_send(fd, type, p, len, dl, root->stop_fd);

	if (r == COLL_OK)
		atomic_fetch_add(&root->bytes_sent, (uint64_t)WIRE_HDR_LEN + len);
	return r;
}

static void
fetch_refuse(struct root *root, int fd, int code, const char *msg, uint64_t dl)
{
	struct wire_note note = { .code = code, .rank = -1 };
	uint8_t buf[WIRE_MSG_LEN + 16];
	struct wire_buf b;

	snprintf(note.msg, sizeof note.msg, "%s", msg);
	wire_buf_init(&b, buf, sizeof buf);
	wire_note_encode(&b, &note);
	(void)fetch_send(root, fd, WIRE_ERROR, buf, (uint32_t)b.off, dl);
	log_warn("root: refused a fetch of the book: %s", msg);
}

static int
fetch_send_book(struct root *root, int fd, const struct wire_entry *book, uint32_t n,
    uint64_t dl)
{
	uint8_t *buf = xmalloc(wire_book_cap(WIRE_BOOK_CHUNK));
	uint32_t first, count;
	struct wire_buf b;
	int r = COLL_OK;

	for (first = 0; r == COLL_OK && first < n; first += count) {
		count = n - first < WIRE_BOOK_CHUNK ? n - first : WIRE_BOOK_CHUNK;
		wire_buf_init(&b, buf, wire_book_cap(WIRE_BOOK_CHUNK));
		wire_book_encode(&b, n, first, count, book);
		r = fetch_send(root, fd, WIRE_BOOK, buf, (uint32_t)b.off, dl);
	}
	if (r != COLL_OK)
		log_warn("root: a block leader stopped reading the book it fetched: %s",
		    coll_strerror(r));
	free(buf);
	return r;
}

/* The book went out: the leader stays to hear of deaths here. */
static int
root_watch_hand(struct root *root, int fd, uint32_t ka_ms)
{
	uint64_t v[2] = { (uint64_t)fd, ka_ms };

	return write(root->watch[1], v, sizeof v) == (ssize_t)sizeof v ? COLL_OK : COLL_ESYS;
}

/*
 * Wait for the book or the reason it will not come; COLL_OK with *book, or the
 * code. base and want: the block the leader expects, to name its ranks.
 */
static int
fetch_wait(struct root *root, uint32_t base, uint32_t want, struct wire_entry **book,
    uint32_t *n, char *why, size_t len)
{
	uint64_t until = clock_now_ms() + (uint64_t)root->join_timeout_ms + FETCH_SLACK_MS;
	struct timespec pause = { 0, 0 };
	int r = COLL_OK;

	pthread_mutex_lock(&root->lock);
	while (root->book == NULL && root->book_code == 0 && !root->stopping &&
	    root->first_nroots != 1) {
		if (clock_now_ms() >= until)
			break;
		/* The root's condition runs on the realtime clock: wake up often, check ours. */
		clock_gettime(CLOCK_REALTIME, &pause);
		pause.tv_nsec += 100 * 1000000;
		if (pause.tv_nsec >= 1000000000) {
			pause.tv_sec++;
			pause.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&root->cond, &root->lock, &pause);
	}
	if (root->first_nroots == 1) {
		r = COLL_EINVAL;
		snprintf(why, len, "this root serves a communicator made from one unique id: give "
		    "every rank the same list of unique ids");
	} else if (root->book != NULL) {
		/* Published once and freed only by root_stop, which waits for us. */
		*book = root->book;
		*n = root->book_n;
	} else if (root->book_code != 0 && root->book_joined == 0) {
		/* No rank came to tell us where the block starts: its numbers would be ours. */
		r = root->book_code;
		snprintf(why, len, "none of ranks %u-%u joined within %d s: check that they were "
		    "started and can reach their root", base, base + want - 1,
		    root->join_timeout_ms / 1000);
	} else if (root->book_code != 0) {
		r = root->book_code;
		snprintf(why, len, "%s", root->book_err);
	} else {
		r = root->stopping ? COLL_EABORTED : COLL_ETIMEDOUT;
		snprintf(why, len, "%s", root->stopping ? "the root is shutting down" :
		    "the ranks of this root's block did not all join in time");
	}
	pthread_mutex_unlock(&root->lock);
	return r;
}

static void
root_fetch_serve(struct root *root, int fd, const uint8_t *p, uint32_t len)
{
	uint64_t dl = clock_now_ms() + (uint64_t)root->join_timeout_ms + FETCH_SLACK_MS;
	char why[WIRE_MSG_LEN];
	struct wire_entry *book = NULL;
	uint32_t n = 0;
	uint64_t commid;
	uint32_t ka_ms, base, want;
	struct wire_buf b;
	int many, r;

	wire_buf_init(&b, (void *)p, len);
	commid = wire_get_u64(&b);
	ka_ms = wire_get_u32(&b);
	base = wire_get_u32(&b);
	want = wire_get_u32(&b);
	pthread_mutex_lock(&root->lock);
	many = root->fetchers > FETCH_MAX;
	pthread_mutex_unlock(&root->lock);
	if (b.err || b.off != len || ka_ms == 0 || want == 0 || want > WIRE_MAX_RANKS ||
	    base > WIRE_MAX_RANKS - want)
		fetch_refuse(root, fd, COLL_EPROTO, "malformed fetch request", dl);
	else if (commid != root->uid.jobid)
		fetch_refuse(root, fd, COLL_EINVAL, "a fetch asked for another communicator: give "
		    "every rank the same list of unique ids", dl);
	else if (many)
		fetch_refuse(root, fd, COLL_EINVAL, "more block leaders fetch at once than a root "
		    "serves (1024): use fewer unique ids", dl);
	else if ((r = fetch_wait(root, base, want, &book, &n, why, sizeof why)) != COLL_OK)
		fetch_refuse(root, fd, r, why, dl);
	else if (n != want)
		fetch_refuse(root, fd, COLL_EINVAL, "the block sizes differ between ranks: give "
		    "every rank the same size and the same list of unique ids", dl);
	else if (fetch_send_book(root, fd, book, n, dl) == COLL_OK && root_watch_hand(root, fd,
	    ka_ms) == COLL_OK)
		return;		/* the loop keeps it */
	close(fd);
}

struct root_fetch {
	struct root *root;
	int fd;
	uint8_t *p;
	uint32_t len;
};

static void *
root_fetch_thread(void *arg)
{
	struct root_fetch *f = arg;
	struct root *root = f->root;

	root_fetch_serve(root, f->fd, f->p, f->len);
	free(f->p);
	free(f);
	pthread_mutex_lock(&root->lock);
	root->fetchers--;
	pthread_cond_broadcast(&root->cond);
	pthread_mutex_unlock(&root->lock);
	return NULL;
}

/*
 * Out of the handshake pool: a fetch waits for the whole block to join, and
 * fetchers in the pool's threads would keep the block's own ranks out.
 */
void
root_fetch_start(struct root *root, int fd, uint8_t *p, uint32_t len)
{
	struct root_fetch *f = xmalloc(sizeof *f);
	pthread_attr_t attr;
	pthread_t t;
	int r;

	*f = (struct root_fetch){ root, fd, p, len };
	pthread_mutex_lock(&root->lock);
	root->fetchers++;
	pthread_mutex_unlock(&root->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, root_fetch_thread, f);
	pthread_attr_destroy(&attr);
	if (r == 0)
		return;
	log_warn("root: cannot serve a block leader's fetch: %s", strerror(r));
	close(fd);
	free(p);
	free(f);
	pthread_mutex_lock(&root->lock);
	root->fetchers--;
	pthread_cond_broadcast(&root->cond);
	pthread_mutex_unlock(&root->lock);
}

void
root_fetch_drain(struct root *root)
{
	pthread_mutex_lock(&root->lock);
	while (root->fetchers > 0)
		pthread_cond_wait(&root->cond, &root->lock);
	pthread_mutex_unlock(&root->lock);
}

static void
root_watch_drop(struct root *root, int i)
{
	struct root_conn *rc = root->watchers[i];

	atomic_fetch_add(&root->bytes_sent, rc->w.bytes_sent);
	loop_unwatch(root->loop, rc->w.fd);
	close(rc->w.fd);
	wconn_free(&rc->w);
	free(rc);
	root->watchers[i] = root->watchers[--root->nwatchers];
}

/* A leader has nothing to say: bytes or an end both mean it is done with us. */
static void
root_watch_on(struct loop *l, int fd, int events, void *arg)
{
	struct root_conn *rc = arg;
	struct root *root = rc->root;
	int r = COLL_OK, i = 0;

	(void)l;
	(void)fd;
	if (events & LOOP_WRITE)
		r = wconn_flush(&rc->w);
	if (r == COLL_OK && !(events & (LOOP_READ | LOOP_ERROR)))
		return;
	while (root->watchers[i] != rc)
		i++;
	root_watch_drop(root, i);
}

void
root_watch_arm(struct root *root)
{
	for (int i = 0; i < root->nwatchers; i++)
		root_arm(root, &root->watchers[i]->w);
}

void
root_watch_admit(struct root *root)
{
	struct root_conn *rc;
	uint64_t v[2];

	while (read(root->watch[0], v, sizeof v) == (ssize_t)sizeof v) {
		rc = xcalloc(1, sizeof *rc);
		/* Leaders send nothing here: a small buffer is enough to see them go. */
		wconn_init(&rc->w, (int)v[0], 4096);
		rc->root = root;
		rc->rank = -1;
		rc->ka_ms = (uint32_t)v[1];
		if (loop_watch(root->loop, rc->w.fd, LOOP_READ, root_watch_on, rc) != COLL_OK) {
			close(rc->w.fd);
			wconn_free(&rc->w);
			free(rc);
			continue;
		}
		rc->next_ping = clock_now_ms() + rc->ka_ms;
		root->watchers = xreallocarray(root->watchers, (size_t)root->nwatchers + 1,
		    sizeof *root->watchers);
		root->watchers[root->nwatchers++] = rc;
		/* Deaths before this leader came to listen, first first: a rank keeps the first. */
		for (int k = 0; k < root->ndead; k++) {
			int i = root->dead_order[k];

			root_send_note(rc, WIRE_FAILED, COLL_ERANKDEAD, (int)root->first->base + i,
			    root->first->m[i].dead_msg);
		}
	}
}

void
root_watch_notify(struct root *root, struct root_group *g, int rank, const char *msg)
{
	if (g != root->first || !g->started)
		return;
	for (int i = 0; i < root->nwatchers; i++)
		root_send_note(root->watchers[i], WIRE_FAILED, COLL_ERANKDEAD, (int)g->base + rank,
		    msg);
}

void
root_watch_tick(struct root *root, uint64_t now)
{
	for (int i = root->nwatchers - 1; i >= 0; i--) {
		struct root_conn *rc = root->watchers[i];

		if (now >= rc->next_ping) {
			root_send(rc, WIRE_PING, NULL, 0);
			rc->next_ping = now + rc->ka_ms;
		}
		if (wconn_pending(&rc->w) && wconn_flush(&rc->w) != COLL_OK)
			root_watch_drop(root, i);
	}
}

void
root_watch_close(struct root *root)
{
	uint64_t v[2];

	/* A BYE says we stopped on purpose, not died: the leaders stop watching quietly. */
	while (root->nwatchers > 0) {
		root_send(root->watchers[0], WIRE_BYE, NULL, 0);
		(void)wconn_flush(&root->watchers[0]->w);
		root_watch_drop(root, 0);
	}
	free(root->watchers);
	root->watchers = NULL;
	while (read(root->watch[0], v, sizeof v) == (ssize_t)sizeof v)
		close((int)v[0]);
}
