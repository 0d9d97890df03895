/*
 * Root service: one event loop (loop.h) over the listener and every rank's
 * connection, of every communicator made from one unique id (the first, and
 * those that shrink and split derive from it). Nothing in the loop blocks:
 * connections are read into buffers and written from queues (wconn.h), and
 * the handshake of a newcomer runs in a thread of the pool (hspool.h).
 *
 * Scalable start: the root sends the address book to rank 0 only, O(n)
 * bytes; the ranks pass it down a binomial tree among themselves (join.c).
 * A rank that stops reading then stalls its own subtree, never the root.
 *
 * Failure detection: a rank's connection that drops without a BYE, or stays
 * silent for its keep-alive limit, marks the rank dead and every other member
 * of its communicator hears FAILED with its name.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "err.h"
#include "log.h"
#include "ranges.h"
#include "rankset.h"
#include "root_impl.h"
#include "xmalloc.h"

/* Keep-alives passed over before an entry; more is not a rank. */
#define ROOT_HANDSHAKE_PINGS 16
#define ROOT_TICK_MS 50

void
root_send(struct root_conn *rc, uint8_t type, const void *p, uint32_t len)
{
	if (rc != NULL && rc->link != NULL)
		root_link_send(rc, type, p, len);
	else if (rc != NULL)
		wconn_queue(&rc->w, type, p, len);
}

void
root_send_note(struct root_conn *rc, uint8_t type, int code, int rank, const char *msg)
{
	struct wire_note note = { .code = code, .rank = rank };
	uint8_t buf[WIRE_MSG_LEN + 16];
	struct wire_buf b;

	snprintf(note.msg, sizeof note.msg, "%.*s", (int)sizeof note.msg - 1, msg);
	wire_buf_init(&b, buf, sizeof buf);
	wire_note_encode(&b, &note);
	root_send(rc, type, buf, (uint32_t)b.off);
}

void
root_send_all(struct root_group *g, uint8_t type, const void *p, uint32_t len)
{
	for (int i = 0; i < g->nranks; i++)
		if (g->m[i].state == RM_JOINED)
			root_send(g->m[i].conn, type, p, len);
}

struct root_group *
root_group_new(struct root *root, uint64_t commid, int nranks)
{
	struct root_group *g = xcalloc(1, sizeof *g);

	g->commid = commid;
	g->nranks = nranks;
	g->deadline = clock_now_ms() + (uint64_t)root->join_timeout_ms;
	g->m = xcalloc((size_t)nranks, sizeof *g->m);
	g->rg_excl = xcalloc((size_t)nranks, 1);
	g->next = root->groups;
	root->groups = g;
	return g;
}

struct root_group *
root_group_find(struct root *root, uint64_t commid)
{
	for (struct root_group *g = root->groups; g != NULL; g = g->next)
		if (g->commid == commid)
			return g;
	return NULL;
}

static void
root_conn_close(struct root *root, struct root_conn *rc)
{
	if (rc == NULL)
		return;
	if (rc->link != NULL) {
		root_link_drop(rc);
	} else {
		atomic_fetch_add(&root->bytes_sent, rc->w.bytes_sent);
		loop_unwatch(root->loop, rc->w.fd);
		close(rc->w.fd);
	}
	wconn_free(&rc->w);
	free(rc);
}

static void
root_group_free(struct root *root, struct root_group *g)
{
	for (int i = 0; i < g->nranks; i++) {
		root_conn_close(root, g->m[i].conn);
		free(g->m[i].dead_msg);
	}
	free(g->m);
	free(g->rg_excl);
	free(g->origin);
	free(g);
}

/* The ranks of g that never joined, folded as "3,5-7". */
static void
root_fold_missing(struct root_group *g, char *buf, size_t len)
{
	int *missing = xcalloc((size_t)g->nranks, sizeof *missing), n = 0;

	for (int i = 0; i < g->nranks; i++)
		if (g->m[i].state == RM_ABSENT)
			missing[n++] = (int)g->base + i;
	ranges_fold(missing, n, buf, len);
	free(missing);
}

/*
 * Close a member's connection. Its last frames (an ERROR, a FAILED) get one
 * try to leave: the loop cannot wait for a rank that will not read.
 */
static void
root_member_close(struct root *root, struct root_group *g, int rank, int state)
{
	struct root_member *m = &g->m[rank];

	if (m->conn != NULL) {
		(void)wconn_flush(&m->conn->w);
		root_conn_close(root, m->conn);
		m->conn = NULL;
	}
	m->state = state;
	g->live--;
}

/* Closed, and the coordination (a retry, a shrink or split waiting) hears of it. */
static void
root_member_end(struct root *root, struct root_group *g, int rank, int state)
{
	root_member_close(root, g, rank, state);
	root_coord_member_gone(root, g, rank);
}

/* Tell every joined rank the communicator cannot start, and why. */
static void
root_fail_all(struct root *root, struct root_group *g, int code, const char *msg)
{
	for (int i = 0; i < g->nranks; i++) {
		if (g->m[i].state != RM_JOINED)
			continue;
		root_send_note(g->m[i].conn, WIRE_ERROR, code, -1, msg);
		root_member_end(root, g, i, RM_LEFT);
	}
}

static void root_doom_children(struct root *root, struct root_group *g, int rank,
    const char *msg);
static void root_on_conn(struct loop *l, int fd, int events, void *arg);

/*
 * A member died: recorded, its notice sent to each other joined rank
 * (notify; else the caller sent one for several) and its connection closed.
 * The coordination hears of it in root_member_dead_tell, after, so that a
 * retry refused because of it reaches every rank after the verdict, which
 * names the rank with its pid, and so that ranks dying together are all
 * dead before a shrink or split waiting on them is decided.
 */
static void
root_member_dead_mark(struct root *root, struct root_group *g, int rank, const char *why,
    int notify)
{
	struct root_member *m = &g->m[rank];
	char msg[WIRE_MSG_LEN];
	int none = -1;

	/* Messages and notes name the communicator's rank, which counts from base. */
	snprintf(msg, sizeof msg, "rank %d (host %s, pid %u) %s%s", (int)g->base + rank, m->e.host,
	    m->e.pid, why, g->started ? "" : " before the job started");
	log_warn("root: %s", msg);
	if (g == root->first)
		atomic_compare_exchange_strong(&root->first_dead, &none, (int)g->base + rank);
	if (!g->started && g->doomed[0] == '\0') {
		snprintf(g->doomed, sizeof g->doomed, "%s", msg);
		root_fetch_fail(root, g, COLL_ERANKDEAD, msg);
	}
	for (int i = 0; notify && i < g->nranks; i++)
		if (i != rank && g->m[i].state == RM_JOINED)
			root_send_note(g->m[i].conn, WIRE_FAILED, COLL_ERANKDEAD,
			    (int)g->base + rank, msg);
	root_member_close(root, g, rank, RM_DEAD);
	m->dead_msg = xstrdup(msg);
	if (g == root->first) {
		/* Leaders who come later hear the deaths in the order they happened. */
		root->dead_order = xreallocarray(root->dead_order, (size_t)root->ndead + 1,
		    sizeof *root->dead_order);
		root->dead_order[root->ndead++] = rank;
	}
}

static void
root_member_dead_tell(struct root *root, struct root_group *g, int rank)
{
	root_coord_member_gone(root, g, rank);
	root_doom_children(root, g, rank, g->m[rank].dead_msg);
	root_watch_notify(root, g, rank, g->m[rank].dead_msg);
}

void
root_member_dead(struct root *root, struct root_group *g, int rank, const char *why)
{
	root_member_dead_mark(root, g, rank, why, 1);
	root_member_dead_tell(root, g, rank);
}

/* One FAILED_SET to every joined rank not in dead, at most a frame's ranges each. */
static void
root_send_failed_set(struct root_group *g, const struct rankset *dead, const char *msg)
{
	struct wire_failed_set *f = xcalloc(1, sizeof *f);
	size_t cap = 16 + WIRE_MSG_LEN + 8 + (size_t)WIRE_SET_MAX_RANGES * 8;
	uint8_t *buf = xmalloc(cap);
	struct wire_buf b;

	for (int i = 0; i < dead->n;) {
		f->n = 0;
		f->note = (struct wire_note){ .code = COLL_ERANKDEAD,
		    .rank = (int)g->base + dead->r[i][0] };
		snprintf(f->note.msg, sizeof f->note.msg, "%s", msg);
		for (; i < dead->n && f->n < WIRE_SET_MAX_RANGES; i++, f->n++) {
			f->first[f->n] = (uint32_t)((int)g->base + dead->r[i][0]);
			f->count[f->n] = (uint32_t)(dead->r[i][1] - dead->r[i][0] + 1);
		}
		wire_buf_init(&b, buf, cap);
		wire_failed_set_encode(&b, f);
		for (int r = 0; r < g->nranks; r++)
			if (g->m[r].state == RM_JOINED && !rankset_has(dead, r))
				root_send(g->m[r].conn, WIRE_FAILED_SET, buf, (uint32_t)b.off);
	}
	free(buf);
	free(f);
}

void
root_members_dead(struct root *root, struct root_group *g, const int *ranks, int n,
    const char *why)
{
	struct rankset dead = { 0 };
	char msg[WIRE_MSG_LEN];
	int k, first;

	for (int i = 0; i < n; i++)	/* each once, and only those still in */
		if (g->m[ranks[i]].state == RM_JOINED)
			rankset_add(&dead, ranks[i]);
	k = rankset_count(&dead);
	first = k > 0 ? dead.r[0][0] : -1;
	if (k == 1)
		root_member_dead(root, g, first, why);
	if (k <= 1) {
		rankset_free(&dead);
		return;
	}
	snprintf(msg, sizeof msg, "rank %d (host %s, pid %u) and %d more %s%s",
	    (int)g->base + first, g->m[first].e.host, g->m[first].e.pid, k - 1, why,
	    g->started ? "" : " before the job started");
	/* Before the coordination hears of them, as for one death; and all of them first. */
	root_send_failed_set(g, &dead, msg);
	for (int i = 0; i < dead.n; i++)
		for (int r = dead.r[i][0]; r <= dead.r[i][1]; r++)
			root_member_dead_mark(root, g, r, why, 0);
	for (int i = 0; i < dead.n; i++)
		for (int r = dead.r[i][0]; r <= dead.r[i][1]; r++)
			root_member_dead_tell(root, g, r);
	rankset_free(&dead);
}

/*
 * A rank died after a shrink or split placed it in a new communicator but
 * before it joined: that one can never start; say so now, not at its deadline.
 */
static void
root_doom_children(struct root *root, struct root_group *g, int rank, const char *msg)
{
	for (struct root_group *ng = root->groups; ng != NULL; ng = ng->next) {
		if (ng->parent != g || ng->started || ng->origin == NULL)
			continue;
		for (int k = 0; k < ng->nranks; k++)
			if (ng->origin[k] == rank && ng->m[k].state == RM_ABSENT) {
				snprintf(ng->doomed, sizeof ng->doomed, "%s", msg);
				root_fail_all(root, ng, COLL_ERANKDEAD, msg);
				ng->expired = 1;
				break;
			}
	}
}

/* All joined: the book goes to rank 0 in chunks; the ranks pass it on. */
static void
root_send_book(struct root *root, struct root_group *g)
{
	struct wire_entry *book = xcalloc((size_t)g->nranks, sizeof *book);
	uint32_t n = (uint32_t)g->nranks, first, count;
	uint8_t *buf = xmalloc(wire_book_cap(WIRE_BOOK_CHUNK));
	struct wire_buf b;

	for (int i = 0; i < g->nranks; i++)
		book[i] = g->m[i].e;
	for (first = 0; first < n; first += count) {
		count = n - first < WIRE_BOOK_CHUNK ? n - first : WIRE_BOOK_CHUNK;
		wire_buf_init(&b, buf, wire_book_cap(WIRE_BOOK_CHUNK));
		wire_book_encode(&b, n, first, count, book);
		root_send(g->m[0].conn, WIRE_BOOK, buf, (uint32_t)b.off);
	}
	free(buf);
	free(book);
	g->started = 1;
	root_fetch_publish(root, g);
	log_info("root: all %d ranks of communicator %016" PRIx64 " joined, book sent to rank 0",
	    g->nranks, g->commid);
}

/* A connection that passed authentication and sent its JOIN, for the root's loop. */
struct root_hs {
	int fd;
	int proxy;		/* a root proxy (proxy.c): no JOIN, it carries many */
	struct wire_join j;
};

/*
 * A rank's first frame after the handshake: its entry, or a leader's fetch.
 * A few keep-alives before it are passed over: a rank's thread sends them
 * once it runs, which join.c puts after the entry, but the root need not
 * rely on it. COLL_OK with *h and *p (the caller frees it), else logged.
 */
static int
root_first_frame(struct root *root, int fd, uint64_t dl, struct wire_hdr *h, uint8_t **p)
{
	int pings = 0, r;

	while ((r = wire_recv(fd, h, p, 1024, dl, root->stop_fd)) == COLL_OK &&
	    h->type == WIRE_PING && pings < ROOT_HANDSHAKE_PINGS) {
		free(*p);
		*p = NULL;
		pings++;
	}
	if (r == COLL_OK && h->type == WIRE_PING) {
		log_warn("root: refused a peer that sent %d keep-alives and no entry", pings + 1);
		r = COLL_EPROTO;
	} else if (r != COLL_OK && r != COLL_EABORTED) {
		log_warn("root: a peer that authenticated sent no entry: %s", coll_strerror(r));
	}
	return r;
}

/* A rank's entry for the loop, or NULL (fd closed, or a leader's fetch that took it). */
static struct root_hs *
root_entry(struct root *root, int fd, uint64_t dl)
{
	struct root_hs *hs = NULL;
	struct wire_hdr h;
	uint8_t *p = NULL;

	if (root_first_frame(root, fd, dl, &h, &p) != COLL_OK) {
		/* Refused: logged. */
	} else if (h.type == WIRE_JOIN) {
		hs = xcalloc(1, sizeof *hs);
		*hs = (struct root_hs){ .fd = fd };
		if (wire_join_decode(p, h.len, &hs->j) != COLL_OK) {
			log_warn("root: refused an entry that does not decode");
			free(hs);
			hs = NULL;
		}
	} else if (h.type == WIRE_FETCH) {
		/* A leader of another block waits for our book: in a thread of its own. */
		root_fetch_start(root, fd, p, h.len);
		return NULL;
	} else {
		log_warn("root: refused a first frame of type %u, not an entry or a fetch",
		    h.type);
	}
	free(p);
	if (hs == NULL)
		close(fd);
	return hs;
}

/*
 * Authenticate one connection and read its JOIN, in a thread of the pool
 * (hspool.h), so that a silent or slow stranger never holds up the loop.
 */
static void
root_handshake(void *arg, int fd)
{
	struct root *root = arg;
	uint64_t dl = clock_now_ms() + AUTH_ROOT_HANDSHAKE_MS;
	char err[COLL_ERR_LEN];
	struct root_hs *hs = NULL;
	uint8_t role;

	if (auth_accept_pooled(&root->hs, fd, &root->uid, &role, dl, root->stop_fd, err,
	    sizeof err) != COLL_OK) {
		if (err[0] != '\0')
			log_warn("root: refused a connection: %s", err);
		close(fd);
	} else if (role == WIRE_ROLE_PROXY) {
		hs = xcalloc(1, sizeof *hs);
		*hs = (struct root_hs){ .fd = fd, .proxy = 1 };
	} else {
		hs = root_entry(root, fd, dl);
	}
	if (hs != NULL && write(root->joins[1], &hs, sizeof hs) == (ssize_t)sizeof hs)
		hs = NULL;	/* the loop owns it now */
	if (hs != NULL) {
		close(hs->fd);
		free(hs);
	}
	auth_thread_end();
}

struct root_group *
root_check_join(struct root *root, const struct wire_join *j, char *msg, size_t len)
{
	struct root_group *g = root_group_find(root, j->commid);
	const struct wire_entry *e = &j->e;

	uint32_t rank = j->base + e->rank;	/* in the communicator, for messages */

	if (g == NULL)
		snprintf(msg, len, "rank %u asked for communicator %016" PRIx64 ", which this "
		    "root does not serve (it ended, or the id is from another job)", rank,
		    j->commid);
	else if (g->doomed[0] != '\0')
		snprintf(msg, len, "%s", g->doomed);
	else if (g->started || g->expired)
		snprintf(msg, len, "rank %u joined after the job started", rank);
	else if ((int)e->nranks != g->nranks)
		snprintf(msg, len, "rank %u says this root serves %u ranks, the root expects "
		    "%d: start every rank with the same size (and the same list of unique ids)",
		    rank, e->nranks, g->nranks);
	else if (g->joined > 0 && j->nroots != g->nroots)
		snprintf(msg, len, "rank %u says the communicator has %u unique ids, others "
		    "said %u: give every rank the same list of unique ids", rank, j->nroots,
		    g->nroots);
	else if (g->joined > 0 && j->base != g->base)
		snprintf(msg, len, "rank %u says this root's ranks start at %u, others said "
		    "%u: give every rank the same size and the same list of unique ids", rank,
		    j->base, g->base);
	else if (g->m[e->rank].state != RM_ABSENT)
		snprintf(msg, len, "rank %u joined twice (from %s and %s): "
		    "give every process its own rank", rank, g->m[e->rank].e.host, e->host);
	else
		return g;
	log_warn("root: %s", msg);
	return NULL;
}

/* Make rank j->e.rank of g a member on rc (its own socket, or a proxy's channel). */
void
root_admit_member(struct root *root, struct root_group *g, struct root_conn *rc,
    const struct wire_join *j)
{
	int r = (int)j->e.rank;

	rc->root = root;
	rc->g = g;
	rc->rank = r;
	rc->ka_ms = j->keepalive_ms;
	rc->ka_limit = j->keepalive_limit;
	rc->last_rx = clock_now_ms();
	rc->next_ping = rc->last_rx + rc->ka_ms;
	if (g->joined == 0) {
		g->base = j->base;
		g->nroots = j->nroots;
		if (g == root->first) {
			pthread_mutex_lock(&root->lock);
			root->first_nroots = g->nroots;
			pthread_cond_broadcast(&root->cond);
			pthread_mutex_unlock(&root->lock);
		}
	}
	g->m[r] = (struct root_member){ .state = RM_JOINED, .conn = rc, .e = j->e };
	/* Its own socket joins the loop (a proxy's channel is served by its link's). */
	if (rc->link == NULL && loop_watch(root->loop, rc->w.fd, LOOP_READ, root_on_conn, rc) !=
	    COLL_OK)
		log_warn("root: cannot watch rank %d's connection: out of memory", r);
	g->joined++;
	g->live++;
	if (g == root->first)
		atomic_fetch_add(&root->joined, 1);
	log_trace("root: rank %d joined %016" PRIx64 " from %s pid %u", r, g->commid, j->e.host,
	    j->e.pid);
	if (g->joined == g->nranks)
		root_send_book(root, g);
}

/* A handshake finished: admit the rank (or proxy), or tell it why not. */
static void
root_admit(struct root *root)
{
	char msg[WIRE_MSG_LEN];
	struct root_group *g;
	struct root_conn *rc;
	struct root_hs *hs;

	while (read(root->joins[0], &hs, sizeof hs) == (ssize_t)sizeof hs) {
		if (hs->proxy) {
			root_link_admit(root, hs->fd);
			free(hs);
			continue;
		}
		rc = xcalloc(1, sizeof *rc);
		wconn_init(&rc->w, hs->fd, ROOT_MAX_FRAME);
		if ((g = root_check_join(root, &hs->j, msg, sizeof msg)) == NULL) {
			/* The reason goes back at once; the connection closes after it. */
			root_send_note(rc, WIRE_ERROR, COLL_EINVAL, (int)(hs->j.base + hs->j.e.rank),
			    msg);
			(void)wconn_flush(&rc->w);
			wconn_free(&rc->w);
			free(rc);
			close(hs->fd);
			free(hs);
			continue;
		}
		root_admit_member(root, g, rc, &hs->j);
		free(hs);
	}
}

/*
 * From a block leader (comm_init_scalable), for the rest of its block: it
 * could not complete the book (ERROR: its block waits for it in the tree), or
 * another block's root announced a death (FAILED, the rank in the note).
 */
static void
root_on_report(struct root_conn *rc, uint8_t type, const uint8_t *p, uint32_t len)
{
	struct root_group *g = rc->g;
	struct wire_note note;

	/* Only a block's leader passes failures on, and only those it can have seen. */
	if (g->nroots <= 1 || rc->rank != 0 || wire_note_decode(p, len, &note) != COLL_OK ||
	    note.code >= 0 || note.code == COLL_EINPROGRESS || note.code == COLL_ERETRY) {
		log_warn("root: rank %d sent a report the root does not take from it",
		    (int)g->base + rc->rank);
		return;
	}
	log_warn("root: rank %d reports: %s", (int)g->base + rc->rank, note.msg);
	for (int i = 0; i < g->nranks; i++)
		if (i != rc->rank && g->m[i].state == RM_JOINED)
			root_send_note(g->m[i].conn, type, note.code, note.rank, note.msg);
}

/* One frame from a rank. */
static void
root_on_frame(struct root *root, struct root_conn *rc, const struct wire_hdr *h,
    const uint8_t *p)
{
	switch (h->type) {
	case WIRE_PING:
		break;
	case WIRE_REGROUP:
		root_on_regroup(root, rc, p, h->len);
		break;
	case WIRE_RETRY_REQ:
		root_on_retry_req(root, rc, p, h->len);
		break;
	case WIRE_RETRY_STATE:
		root_on_retry_state(root, rc, p, h->len);
		break;
	case WIRE_ERROR:
	case WIRE_FAILED:
		root_on_report(rc, h->type, p, h->len);
		break;
	default:
		log_warn("root: rank %d sent message type %u, which the root ignores", rc->rank,
		    h->type);
	}
}

int
root_on_member_frame(struct root *root, struct root_conn *rc, const struct wire_hdr *h,
    const uint8_t *p)
{
	if (h->type == WIRE_BYE) {
		root_member_end(root, rc->g, rc->rank, RM_LEFT);
		return 0;
	}
	root_on_frame(root, rc, h, p);
	return 1;
}

/* A rank's connection became readable: frames, a BYE, or its death. */
static void
root_on_rank(struct root *root, struct root_conn *rc, int events)
{
	struct root_group *g = rc->g;
	int rank = rc->rank, r = COLL_OK, n;
	uint64_t got = rc->w.bytes_received;
	const uint8_t *p;
	struct wire_hdr h;

	if (events & LOOP_WRITE)
		r = wconn_flush(&rc->w);
	/*
	 * Read even after a failed write: a rank that said BYE and closed with our
	 * last PING unread resets the connection, and its BYE waits behind that.
	 */
	if ((events & (LOOP_READ | LOOP_ERROR)) || r != COLL_OK) {
		int f = wconn_fill(&rc->w);

		if (r == COLL_OK)
			r = f;
	}
	/* Only bytes from the rank count as a sign of life. */
	if (rc->w.bytes_received != got)
		rc->last_rx = clock_now_ms();
	while (g->m[rank].conn == rc && (n = wconn_next(&rc->w, &h, &p)) == COLL_OK)
		if (!root_on_member_frame(root, rc, &h, p))
			return;
	if (g->m[rank].conn != rc)
		return;
	if (n != COLL_EINPROGRESS)
		root_member_dead(root, g, rank, "sent bytes that are not a coll frame");
	else if (r != COLL_OK)
		root_member_dead(root, g, rank, "died or lost its connection");
}

/* The loop's callback for a rank's own socket (watched while it is a member's). */
static void
root_on_conn(struct loop *l, int fd, int events, void *arg)
{
	struct root_conn *rc = arg;

	(void)l;
	(void)fd;
	root_on_rank(rc->root, rc, events);
}

void
root_arm(struct root *root, const struct wconn *w)
{
	(void)loop_mask(root->loop, w->fd, LOOP_READ | (wconn_pending(w) ? LOOP_WRITE : 0));
}

/* Keep-alives out, silent ranks declared dead, join and coordination deadlines. */
static void
root_tick(struct root *root, uint64_t now)
{
	char missing[160], msg[512];

	for (struct root_group *g = root->groups; g != NULL; g = g->next) {
		for (int i = 0; i < g->nranks; i++) {
			struct root_conn *rc = g->m[i].conn;

			/* A proxy keeps its ranks alive, and root_link_tick the proxy. */
			if (g->m[i].state != RM_JOINED || rc->link != NULL)
				continue;
			/* Before calling it dead, read what may have come in since the poll. */
			if (now - rc->last_rx > (uint64_t)rc->ka_ms * rc->ka_limit) {
				root_on_rank(root, rc, LOOP_READ);
				if (g->m[i].conn != rc || rc->last_rx >= now || now - rc->last_rx <=
				    (uint64_t)rc->ka_ms * rc->ka_limit)
					continue;
			}
			if (now - rc->last_rx > (uint64_t)rc->ka_ms * rc->ka_limit) {
				snprintf(msg, sizeof msg, "stopped answering: no keep-alive for %" PRIu64
				    " ms (its host may be down or cut off)", now - rc->last_rx);
				root_member_dead(root, g, i, msg);
			} else if (now >= rc->next_ping) {
				root_send(rc, WIRE_PING, NULL, 0);
				rc->next_ping = now + rc->ka_ms;
			}
		}
		if (!g->started && !g->expired && now >= g->deadline) {
			g->expired = 1;
			root_fold_missing(g, missing, sizeof missing);
			snprintf(msg, sizeof msg, "ranks %s never joined within %d s: check that they "
			    "were started and can reach the root", missing,
			    root->join_timeout_ms / 1000);
			log_warn("root: %s", msg);
			root_fetch_fail(root, g, COLL_ETIMEDOUT, msg);
			root_fail_all(root, g, COLL_ETIMEDOUT, msg);
		}
		root_coord_tick(root, g, now);
	}
}

/* Groups that started and whose ranks all left are done. */
static void
root_reap_groups(struct root *root)
{
	struct root_group **pp = &root->groups, *g;

	while ((g = *pp) != NULL) {
		/* A doomed group stays till its deadline: late joiners hear why. */
		if (g != root->first && g->live == 0 && (g->started ||
		    (g->expired && clock_now_ms() >= g->deadline))) {
			*pp = g->next;
			for (struct root_group *o = root->groups; o != NULL; o = o->next)
				if (o->parent == g)
					o->parent = NULL;
			root_group_free(root, g);
		} else {
			pp = &g->next;
		}
	}
}

/* Queued frames go out after every round, not only when poll says the socket is writable. */
static void
root_flush_all(struct root *root)
{
	for (struct root_group *g = root->groups; g != NULL; g = g->next)
		for (int i = 0; i < g->nranks; i++) {
			struct root_conn *rc = g->m[i].conn;

			if (g->m[i].state != RM_JOINED || rc->link != NULL)
				continue;
			if (wconn_pending(&rc->w) && wconn_flush(&rc->w) != COLL_OK)
				/* Its BYE may be waiting: read it before calling the rank dead. */
				root_on_rank(root, rc, LOOP_ERROR);
			else
				root_arm(root, &rc->w);
		}
	root_link_flush(root);
}

/* Keep-alives, deadlines and silences need no finer grain than a tick. */
static int
root_on_tick(struct loop *l, uint64_t id, void *arg)
{
	struct root *root = arg;

	(void)l;
	(void)id;
	root_flush_all(root);
	root_tick(root, clock_now_ms());
	root_watch_tick(root, clock_now_ms());
	root_link_tick(root, clock_now_ms());
	return ROOT_TICK_MS;
}

/* Before each wait: what the round queued goes out, ended groups go, the pool looks again. */
static void
root_before(struct loop *l, void *arg)
{
	struct root *root = arg;
	int live = 0;

	root_flush_all(root);
	root_watch_arm(root);
	root_reap_groups(root);
	for (struct root_group *g = root->groups; g != NULL; g = g->next)
		live += g->live;
	atomic_store(&root->live, live);
	(void)hspool_watch(&root->hs, l, clock_now_ms());
}

static void
root_on_stop(struct loop *l, int fd, int events, void *arg)
{
	struct root *root = arg;

	(void)l;
	(void)fd;
	(void)events;
	root->done = 1;
}

static void
root_on_joins(struct loop *l, int fd, int events, void *arg)
{
	(void)l;
	(void)fd;
	(void)events;
	root_admit(arg);
}

static void
root_on_watch(struct loop *l, int fd, int events, void *arg)
{
	(void)l;
	(void)fd;
	(void)events;
	root_watch_admit(arg);
}

/* The loop's fixed watchers, timer and hook; a rank's socket is watched as it joins. */
static int
root_loop_init(struct root *root)
{
	struct loop *l = root->loop = loop_new();

	if (l == NULL)
		return COLL_ESYS;
	if (hspool_init(&root->hs, root->listen_fd, AUTH_ROOT_HANDSHAKES, root_handshake, root,
	    AUTH_ROOT_CUT_GRACE_MS, "root") != COLL_OK ||
	    loop_watch(l, root->stop_fd, LOOP_READ, root_on_stop, root) != COLL_OK ||
	    loop_watch(l, root->joins[0], LOOP_READ, root_on_joins, root) != COLL_OK ||
	    loop_watch(l, root->watch[0], LOOP_READ, root_on_watch, root) != COLL_OK ||
	    loop_timer(l, ROOT_TICK_MS, root_on_tick, root) == 0)
		return COLL_ESYS;
	loop_before(l, root_before, root);
	return COLL_OK;
}

static void *
root_main(void *arg)
{
	struct root *root = arg;

	while (!root->done)
		if (loop_once(root->loop, -1) < 0)
			break;
	return NULL;
}

int
root_start(struct root **out, const struct net_addr *addr, int nranks, int join_timeout_ms,
    struct coll_uid *uid)
{
	struct root *root;
	struct net_addr bound = *addr;
	int r;

	if (nranks < 1 || nranks > WIRE_MAX_RANKS || join_timeout_ms < 1)
		return COLL_EINVAL;
	root = xcalloc(1, sizeof *root);
	root->join_timeout_ms = join_timeout_ms;
	root->listen_fd = root->stop_fd = root->joins[0] = root->joins[1] = -1;
	root->watch[0] = root->watch[1] = -1;
	atomic_store(&root->first_dead, -1);
	pthread_mutex_init(&root->lock, NULL);
	pthread_cond_init(&root->cond, NULL);
	if ((r = net_listen(&bound, NET_BACKLOG, &root->listen_fd)) != COLL_OK)
		goto fail;
	if ((r = uid_generate(&root->uid, &bound)) != COLL_OK)
		goto fail;
	root->first = root_group_new(root, root->uid.jobid, nranks);
	root->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (root->stop_fd == -1 || pipe2(root->joins, O_CLOEXEC | O_NONBLOCK) == -1 ||
	    pipe2(root->watch, O_CLOEXEC | O_NONBLOCK) == -1) {
		r = COLL_ESYS;
		goto fail;
	}
	if ((r = root_loop_init(root)) != COLL_OK ||
	    pthread_create(&root->thread, NULL, root_main, root) != 0) {
		r = COLL_ESYS;
		goto fail;
	}
	*uid = root->uid;
	*out = root;
	return COLL_OK;
fail:
	hspool_free(&root->hs);
	if (root->listen_fd >= 0)
		close(root->listen_fd);
	if (root->stop_fd >= 0)
		close(root->stop_fd);
	for (int i = 0; i < 2; i++) {
		if (root->joins[i] >= 0)
			close(root->joins[i]);
		if (root->watch[i] >= 0)
			close(root->watch[i]);
	}
	while (root->groups != NULL) {
		struct root_group *g = root->groups;
		root->groups = g->next;
		root_group_free(root, g);
	}
	loop_free(root->loop);
	free(root);
	return r;
}

int
root_joined(struct root *root)
{
	return atomic_load(&root->joined);
}

int
root_first_dead(struct root *root)
{
	return atomic_load(&root->first_dead);
}

int
root_wait_idle(struct root *root, int timeout_ms)
{
	uint64_t until = clock_now_ms() + (uint64_t)timeout_ms;
	struct timespec ts = { 0, 10 * 1000000 };

	while (atomic_load(&root->live) > 0 && clock_now_ms() < until)
		nanosleep(&ts, NULL);
	return atomic_load(&root->live) > 0 ? COLL_ETIMEDOUT : COLL_OK;
}

uint64_t
root_bytes_sent(struct root *root)
{
	return atomic_load(&root->bytes_sent);
}

uint64_t
root_proxied_in(struct root *root)
{
	return atomic_load(&root->proxied_in);
}

void
root_stop(struct root *root)
{
	uint64_t one = 1;
	struct root_hs *hs;

	if (root == NULL)
		return;
	if (write(root->stop_fd, &one, sizeof one) < 0)
		log_warn("root: cannot signal stop");
	pthread_join(root->thread, NULL);
	/* Handshake threads see stop_fd and end within their deadline: wait for them. */
	pthread_mutex_lock(&root->lock);
	root->stopping = 1;
	pthread_cond_broadcast(&root->cond);
	pthread_mutex_unlock(&root->lock);
	hspool_unwatch(&root->hs);
	hspool_drain(&root->hs);
	root_fetch_drain(root);
	while (read(root->joins[0], &hs, sizeof hs) == (ssize_t)sizeof hs) {
		close(hs->fd);
		free(hs);
	}
	close(root->joins[0]);
	close(root->joins[1]);
	root_watch_close(root);
	close(root->watch[0]);
	close(root->watch[1]);
	pthread_mutex_destroy(&root->lock);
	pthread_cond_destroy(&root->cond);
	while (root->groups != NULL) {
		struct root_group *g = root->groups;
		root->groups = g->next;
		root_group_free(root, g);
	}
	root_link_close_all(root);
	hspool_free(&root->hs);
	loop_free(root->loop);
	close(root->listen_fd);
	close(root->stop_fd);
	free(root->book);
	free(root->dead_order);
	free(root);
}
