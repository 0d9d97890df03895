/* Root service thread: one poll loop over the listener and every rank's connection. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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
#include "log.h"
#include "ranges.h"
#include "root.h"
#include "wire.h"
#include "xmalloc.h"

#define ROOT_HANDSHAKE_MS 5000
#define ROOT_HANDSHAKES 64

enum root_rank_state { RS_ABSENT, RS_JOINED, RS_LEFT, RS_DEAD };

struct root_rank {
	int fd;
	int state;
	struct wire_entry entry;
};

struct root {
	struct coll_uid uid;
	int nranks;
	int listen_fd;
	int stop_fd;
	int join_timeout_ms;
	int started;		/* the book went out */
	int live;		/* ranks joined and not yet gone */
	atomic_int joined;
	atomic_int first_dead;
	int joins[2];		/* finished handshakes, from their threads */
	int handshakes;		/* threads running one, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct root_rank *ranks;
	pthread_t thread;
};

static void
root_send_note(int fd, uint8_t type, int code, int rank, const char *msg)
{
	struct wire_note note = { .code = code, .rank = rank };
	uint8_t buf[WIRE_MSG_LEN + 16];
	struct wbuf b;

	snprintf(note.msg, sizeof note.msg, "%.*s", (int)sizeof note.msg - 1, msg);
	wbuf_init(&b, buf, sizeof buf);
	wire_note_encode(&b, &note);
	(void)wire_send(fd, type, buf, (uint32_t)b.off, clock_now_ms() + ROOT_HANDSHAKE_MS, -1);
}

/* The ranks that never joined, folded as "3,5-7". */
static void
root_fold_missing(struct root *root, char *buf, size_t len)
{
	int *missing = xcalloc((size_t)root->nranks, sizeof *missing), n = 0;

	for (int i = 0; i < root->nranks; i++)
		if (root->ranks[i].state == RS_ABSENT)
			missing[n++] = i;
	ranges_fold(missing, n, buf, len);
	free(missing);
}

static void
root_close_rank(struct root *root, int rank, int state)
{
	struct root_rank *rr = &root->ranks[rank];

	if (rr->fd >= 0)
		close(rr->fd);
	rr->fd = -1;
	rr->state = state;
	root->live--;
}

/* Tell every joined rank the job cannot start, and why. */
static void
root_fail_all(struct root *root, int code, const char *msg)
{
	for (int i = 0; i < root->nranks; i++) {
		if (root->ranks[i].state != RS_JOINED)
			continue;
		root_send_note(root->ranks[i].fd, WIRE_ERROR, code, -1, msg);
		root_close_rank(root, i, RS_LEFT);
	}
}

static void
root_send_book(struct root *root)
{
	size_t cap = 4 + (size_t)root->nranks * (12 + 19 + 2 + WIRE_HOST_LEN);
	uint8_t *buf = xmalloc(cap);
	struct wbuf b;

	wbuf_init(&b, buf, cap);
	wbuf_put_u32(&b, (uint32_t)root->nranks);
	for (int i = 0; i < root->nranks; i++)
		wire_entry_encode(&b, &root->ranks[i].entry);
	for (int i = 0; i < root->nranks; i++) {
		if (wire_send(root->ranks[i].fd, WIRE_BOOK, buf, (uint32_t)b.off,
		    clock_now_ms() + (uint64_t)root->join_timeout_ms, root->stop_fd) != COLL_OK)
			log_warn("root: cannot send address book to rank %d", i);
	}
	free(buf);
	root->started = 1;
	log_info("root: all %d ranks joined, address book sent", root->nranks);
}

/* Validate a JOIN; on refusal the reason goes back to the connection. */
static int
root_check_join(struct root *root, int fd, const struct wire_entry *e)
{
	char msg[WIRE_MSG_LEN];

	if (root->started)
		snprintf(msg, sizeof msg, "rank %u joined after the job started", e->rank);
	else if ((int)e->nranks != root->nranks)
		snprintf(msg, sizeof msg, "rank %u says the job has %u ranks, the root expects %d: "
		    "start every rank with the same size", e->rank, e->nranks, root->nranks);
	else if (root->ranks[e->rank].state != RS_ABSENT)
		snprintf(msg, sizeof msg, "rank %u joined twice (from %s and %s): "
		    "give every process its own rank", e->rank,
		    root->ranks[e->rank].entry.host, e->host);
	else
		return COLL_OK;
	root_send_note(fd, WIRE_ERROR, COLL_EINVAL, (int)e->rank, msg);
	log_warn("root: %s", msg);
	return COLL_EINVAL;
}

/* A connection that passed authentication and sent its JOIN, for the root's loop. */
struct root_hs {
	struct root *root;
	int fd;
	struct wire_entry e;
};

/*
 * Authenticate one connection and read its JOIN, in a thread of its own, so
 * that a silent or slow stranger never holds up the root's loop (the joins of
 * the others, the FAILED notices). Bounded: at most ROOT_HANDSHAKES at once.
 */
static void *
root_handshake(void *arg)
{
	struct root_hs *hs = arg;
	struct root *root = hs->root;
	uint64_t dl = clock_now_ms() + ROOT_HANDSHAKE_MS;
	char err[COLL_ERR_LEN];
	struct wire_hdr h;
	struct wbuf b;
	uint8_t role, *p = NULL;
	int ok = 0;

	if (auth_accept(hs->fd, &root->uid, &role, dl, root->stop_fd, err, sizeof err) != COLL_OK)
		log_warn("root: refused a connection: %s", err);
	else if (role != WIRE_ROLE_ROOT)
		log_warn("root: refused a connection that asked for role %u, not the root's", role);
	else if (wire_recv(hs->fd, &h, &p, 1024, dl, root->stop_fd) == COLL_OK &&
	    h.type == WIRE_JOIN) {
		wbuf_init(&b, p, h.len);
		ok = wire_entry_decode(&b, &hs->e) == COLL_OK && b.off == h.len;
	}
	free(p);
	if (ok && write(root->joins[1], &hs, sizeof hs) == (ssize_t)sizeof hs)
		hs = NULL;	/* the loop owns it now */
	if (hs != NULL) {
		close(hs->fd);
		free(hs);
	}
	auth_thread_end();
	pthread_mutex_lock(&root->lock);
	root->handshakes--;
	pthread_cond_broadcast(&root->cond);
	pthread_mutex_unlock(&root->lock);
	return NULL;
}

static void
root_accept_one(struct root *root)
{
	struct root_hs *hs;
	pthread_attr_t attr;
	pthread_t t;
	int fd;

	fd = accept4(root->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1) {
		if (errno == EMFILE || errno == ENFILE)
			log_warn("root: out of file descriptors: raise the limit (ulimit -n)");
		return;
	}
	net_tune(fd);
	pthread_mutex_lock(&root->lock);
	root->handshakes++;
	pthread_mutex_unlock(&root->lock);
	hs = xcalloc(1, sizeof *hs);
	*hs = (struct root_hs){ .root = root, .fd = fd };
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, root_handshake, hs) != 0) {
		close(fd);
		free(hs);
		pthread_mutex_lock(&root->lock);
		root->handshakes--;
		pthread_mutex_unlock(&root->lock);
	}
	pthread_attr_destroy(&attr);
}

/* A handshake finished: admit the rank, or tell it why not. */
static void
root_admit(struct root *root)
{
	struct root_hs *hs;

	while (read(root->joins[0], &hs, sizeof hs) == (ssize_t)sizeof hs) {
		if (root_check_join(root, hs->fd, &hs->e) != COLL_OK) {
			close(hs->fd);
		} else {
			root->ranks[hs->e.rank].fd = hs->fd;
			root->ranks[hs->e.rank].state = RS_JOINED;
			root->ranks[hs->e.rank].entry = hs->e;
			root->live++;
			atomic_fetch_add(&root->joined, 1);
			log_trace("root: rank %u joined from %s pid %u", hs->e.rank, hs->e.host,
			    hs->e.pid);
			if (atomic_load(&root->joined) == root->nranks)
				root_send_book(root);
		}
		free(hs);
	}
}

/* A rank's connection became readable: a BYE, or its death. */
static void
root_on_rank(struct root *root, int rank)
{
	struct root_rank *rr = &root->ranks[rank];
	char msg[WIRE_MSG_LEN];
	struct wire_hdr h;
	uint8_t *p = NULL;
	int r;

	r = wire_recv(rr->fd, &h, &p, 1024, clock_now_ms() + ROOT_HANDSHAKE_MS, root->stop_fd);
	free(p);
	if (r == COLL_OK && h.type == WIRE_BYE) {
		root_close_rank(root, rank, RS_LEFT);
		return;
	}
	root_close_rank(root, rank, RS_DEAD);
	{
		int none = -1;
		atomic_compare_exchange_strong(&root->first_dead, &none, rank);
	}
	snprintf(msg, sizeof msg, "rank %d (host %s, pid %u) died or lost its connection%s",
	    rank, rr->entry.host, rr->entry.pid, root->started ? "" : " before the job started");
	log_warn("root: %s", msg);
	for (int i = 0; i < root->nranks; i++)
		if (root->ranks[i].state == RS_JOINED)
			root_send_note(root->ranks[i].fd, WIRE_FAILED, COLL_ERANKDEAD, rank, msg);
}

static int
root_poll_once(struct root *root, struct pollfd *pfd, int *map)
{
	int n = 0, timeout = -1, r, busy;

	pfd[n++] = (struct pollfd){ root->stop_fd, POLLIN, 0 };
	pfd[n++] = (struct pollfd){ root->joins[0], POLLIN, 0 };
	/* While ROOT_HANDSHAKES are running, newcomers wait in the listen backlog. */
	pthread_mutex_lock(&root->lock);
	busy = root->handshakes >= ROOT_HANDSHAKES;
	pthread_mutex_unlock(&root->lock);
	if (!root->started)
		pfd[n++] = (struct pollfd){ busy ? -1 : root->listen_fd, POLLIN, 0 };
	for (int i = 0; i < root->nranks; i++) {
		if (root->ranks[i].state != RS_JOINED)
			continue;
		map[n] = i;
		pfd[n++] = (struct pollfd){ root->ranks[i].fd, POLLIN, 0 };
	}
	if (!root->started)
		timeout = 200;
	r = poll(pfd, (nfds_t)n, timeout);
	if (r == -1 && errno != EINTR)
		return COLL_ESYS;
	if (r <= 0 || pfd[0].revents)
		return r == 0 || r == -1 ? COLL_OK : COLL_EABORTED;
	for (int i = root->started ? 2 : 3; i < n; i++)
		if (pfd[i].revents)
			root_on_rank(root, map[i]);
	if (pfd[1].revents)
		root_admit(root);
	if (!root->started && pfd[2].revents)
		root_accept_one(root);
	return COLL_OK;
}

static void *
root_main(void *arg)
{
	struct root *root = arg;
	struct pollfd *pfd = xcalloc((size_t)root->nranks + 3, sizeof *pfd);
	int *map = xcalloc((size_t)root->nranks + 3, sizeof *map);
	uint64_t deadline = clock_now_ms() + (uint64_t)root->join_timeout_ms;
	char missing[160], msg[512];

	for (;;) {
		if (root_poll_once(root, pfd, map) != COLL_OK)
			break;
		if (root->started && root->live == 0)
			break;
		if (!root->started && clock_now_ms() >= deadline) {
			root_fold_missing(root, missing, sizeof missing);
			snprintf(msg, sizeof msg, "ranks %s never joined within %d s: check that they "
			    "were started and can reach the root", missing,
			    root->join_timeout_ms / 1000);
			log_warn("root: %s", msg);
			root_fail_all(root, COLL_ETIMEDOUT, msg);
			break;
		}
	}
	free(pfd);
	free(map);
	return NULL;
}

int
root_start(struct root **out, const struct net_addr *addr, int nranks, int join_timeout_ms,
    struct coll_uid *uid)
{
	struct root *root;
	struct net_addr bound = *addr;
	int r;

	if (nranks < 1 || join_timeout_ms < 1)
		return COLL_EINVAL;
	root = xcalloc(1, sizeof *root);
	root->nranks = nranks;
	root->join_timeout_ms = join_timeout_ms;
	root->listen_fd = root->stop_fd = root->joins[0] = root->joins[1] = -1;
	atomic_store(&root->first_dead, -1);
	pthread_mutex_init(&root->lock, NULL);
	pthread_cond_init(&root->cond, NULL);
	root->ranks = xcalloc((size_t)nranks, sizeof *root->ranks);
	for (int i = 0; i < nranks; i++)
		root->ranks[i].fd = -1;
	if ((r = net_listen(&bound, nranks < 4096 ? nranks : 4096, &root->listen_fd)) != COLL_OK)
		goto fail;
	if ((r = uid_generate(&root->uid, &bound)) != COLL_OK)
		goto fail;
	root->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (root->stop_fd == -1 || pipe2(root->joins, O_CLOEXEC | O_NONBLOCK) == -1) {
		r = COLL_ESYS;
		goto fail;
	}
	if (pthread_create(&root->thread, NULL, root_main, root) != 0) {
		r = COLL_ESYS;
		goto fail;
	}
	*uid = root->uid;
	*out = root;
	return COLL_OK;
fail:
	if (root->listen_fd >= 0)
		close(root->listen_fd);
	if (root->stop_fd >= 0)
		close(root->stop_fd);
	for (int i = 0; i < 2; i++)
		if (root->joins[i] >= 0)
			close(root->joins[i]);
	free(root->ranks);
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

void
root_stop(struct root *root)
{
	uint64_t one = 1;

	if (root == NULL)
		return;
	if (write(root->stop_fd, &one, sizeof one) < 0)
		log_warn("root: cannot signal stop");
	pthread_join(root->thread, NULL);
	/* Handshake threads see stop_fd and end within their deadline: wait for them. */
	pthread_mutex_lock(&root->lock);
	while (root->handshakes > 0)
		pthread_cond_wait(&root->cond, &root->lock);
	pthread_mutex_unlock(&root->lock);
	{
		struct root_hs *hs;
		while (read(root->joins[0], &hs, sizeof hs) == (ssize_t)sizeof hs) {
			close(hs->fd);
			free(hs);
		}
	}
	close(root->joins[0]);
	close(root->joins[1]);
	pthread_mutex_destroy(&root->lock);
	pthread_cond_destroy(&root->cond);
	for (int i = 0; i < root->nranks; i++)
		if (root->ranks[i].fd >= 0)
			close(root->ranks[i].fd);
	close(root->listen_fd);
	close(root->stop_fd);
	free(root->ranks);
	free(root);
}
