/*
 * The rank side of the rendezvous: reach the root (retrying until it listens),
 * authenticate, open this rank's listener on an address the others can reach,
 * send our entry, and get the address book: rank 0 from the root, every other
 * rank from its parent in a binomial tree, which it then passes on to its
 * children. The root sends O(n) bytes, and no rank sends more than
 * log2(n) books.
 *
 * The listener goes on the local address of our connection to the root unless
 * COLL_SOCKET_IFNAME says otherwise: whatever route reached the root is the one
 * most likely to reach the other ranks, and a job on one machine stays on
 * loopback.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "comm_impl.h"
#include "ifsel.h"
#include "io.h"
#include "log.h"
#include "xmalloc.h"

int
join_connect(struct comm *c, const struct net_addr *addr, uint64_t dl, int wake_fd, int *fd)
{
	struct timespec pause = { 0, 50 * 1000000 };
	char where[NET_ADDRSTR_LEN];
	int r, e = 0;

	net_addr_format(addr, where, sizeof where);
	for (;;) {
		r = net_connect(addr, dl, wake_fd, fd);
		if (r == COLL_OK || r == COLL_EABORTED)
			return r;
		e = errno;
		/* failed: a leader's own block has a verdict; no use reaching another root. */
		if (atomic_load(&c->failed))
			return COLL_EABORTED;
		if (r != COLL_ESYS || clock_now_ms() >= dl)
			break;
		/* The root may not listen yet: retry until the deadline. */
		nanosleep(&pause, NULL);
	}
	return comm_fail(c, COLL_ETIMEDOUT, "rank %d cannot reach the root%s at %s within %d s%s%s: "
	    "check that the launcher (or the rank that made the unique id) is running and "
	    "reachable", c->rank, addr == &c->root_via ? "'s proxy (COLL_ROOT_VIA)" : "", where,
	    c->timeout_ms / 1000, r == COLL_ESYS ? ": " : "", r == COLL_ESYS ? strerror(e) : "");
}

static int
join_listen(struct comm *c)
{
	struct net_addr addr;
	char ifname[64];
	int r;

	if (c->ifname[0] != '\0') {
		r = ifsel_pick(c->ifname, c->root_uid.root.ss.ss_family, &addr, ifname,
		    sizeof ifname);
		if (r == COLL_ENOTFOUND)
			r = ifsel_pick(c->ifname, AF_UNSPEC, &addr, ifname, sizeof ifname);
		if (r != COLL_OK)
			return comm_fail(c, r, "COLL_SOCKET_IFNAME=%s matches no interface that is up "
			    "with an address: list them with 'ip addr'", c->ifname);
		log_info("listening on interface %s", ifname);
	} else if ((r = net_local_addr(c->root_fd, &addr)) != COLL_OK) {
		return comm_fail(c, r, "cannot read the local address: %s", strerror(errno));
	}
	net_addr_set_port(&addr, 0);
	if ((r = net_listen(&addr, NET_BACKLOG, &c->listen_fd)) != COLL_OK)
		return comm_fail(c, r, "cannot listen for peers: %s", strerror(errno));
	if ((r = peer_listen(c)) != COLL_OK)
		return comm_fail(c, r, "cannot serve the listener for peers: %s", strerror(errno));
	return COLL_OK;
}

static int
join_send_entry(struct comm *c)
{
	/* Our block's root knows the communicator by its own id, and our rank from the block's start. */
	struct wire_join j = { .commid = c->nroots > 1 ? c->root_uid.jobid : c->commid,
	    .keepalive_ms = (uint32_t)c->ka_ms, .keepalive_limit = (uint32_t)c->ka_limit,
	    .base = (uint32_t)c->block_base, .nroots = (uint32_t)(c->nroots > 1 ? c->nroots : 1) };
	uint8_t buf[256];
	struct wire_buf b;

	j.e = (struct wire_entry){ .rank = (uint32_t)(c->rank - c->block_base),
	    .nranks = (uint32_t)c->block_n, .pid = (uint32_t)getpid(),
	    .lanes = (uint8_t)c->lanes_wish, .lane_min = c->lane_min };
	net_local_addr(c->listen_fd, &j.e.addr);
	snprintf(j.e.host, sizeof j.e.host, "%s", c->host);
	wire_buf_init(&b, buf, sizeof buf);
	wire_join_encode(&b, &j);
	return comm_root_send(c, WIRE_JOIN, buf, (uint32_t)b.off);
}

/*
 * One chunk of the book: of our block, from its root (base: the block's first
 * rank, n its size), or of all ranks, from the parent in the tree (0, nranks).
 * Entries say the rank they had at their root: make it the communicator's.
 */
int
join_take_chunk(struct comm *c, const uint8_t *p, uint32_t len, int base, int n)
{
	uint32_t first, count;

	if (c->book == NULL)
		c->book = xcalloc((size_t)c->nranks, sizeof *c->book);
	if (wire_book_decode(p, len, (uint32_t)n, c->book + base, &first, &count) != COLL_OK)
		return COLL_EPROTO;
	for (uint32_t i = first; i < first + count; i++) {
		c->book[base + (int)i].rank = (uint32_t)base + i;
		c->book[base + (int)i].nranks = (uint32_t)c->nranks;
	}
	c->book_have += (int)count;
	return COLL_OK;
}

void
join_on_book(struct comm *c, const uint8_t *p, uint32_t len)
{
	int r;

	pthread_mutex_lock(&c->lock);
	r = c->rank == c->block_base ? join_take_chunk(c, p, len, c->block_base,
	    c->block_n) : COLL_EPROTO;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (r != COLL_OK)
		log_warn("the root sent a malformed address book");
}

static int
join_book_done(struct comm *c)
{
	return c->book_have >= c->block_n || atomic_load(&c->failed);
}

/*
 * The tree's parent of a rank: clear its highest bit (binomial tree rooted at
 * the block's first rank; one block of all ranks with one root).
 */
static int
join_parent(const struct comm *c)
{
	int me = c->rank - c->block_base, bit = 1;

	while (bit <= me / 2)
		bit <<= 1;
	return c->block_base + me - bit;
}

static int
join_from_parent(struct comm *c, uint64_t dl)
{
	int parent = join_parent(c), fd, r = COLL_OK;
	struct wire_hdr h;
	uint8_t *p = NULL;

	if ((r = peer_get(c, parent, 0, &fd)) != COLL_OK)
		return r;
	while (r == COLL_OK && c->book_have < c->nranks) {
		r = wire_recv(fd, &h, &p, WIRE_MAX_PAYLOAD, dl, c->intr_fd);
		if (r == COLL_OK && (h.type != WIRE_BOOK ||
		    join_take_chunk(c, p, h.len, 0, c->nranks)))
			r = comm_fail(c, COLL_EPROTO, "rank %d: rank %d sent a malformed address book",
			    c->rank, parent);
		else if (r != COLL_OK)
			r = comm_fail_peer(c, parent, r, "receiving the address book from");
		free(p);
		p = NULL;
	}
	return r;
}

/* Pass the book to our children in the tree, largest subtree first. */
static int
join_to_children(struct comm *c, uint64_t dl)
{
	uint8_t *buf = xmalloc(wire_book_cap(WIRE_BOOK_CHUNK));
	int bit = 1, fd, r = COLL_OK, me = c->rank - c->block_base, size = c->block_n;
	uint32_t first, count, n = (uint32_t)c->nranks;
	struct wire_buf b;

	while (bit <= me)
		bit <<= 1;
	while (bit < size && me + bit < size)
		bit <<= 1;
	for (bit >>= 1; r == COLL_OK && bit > me; bit >>= 1) {
		int child = c->block_base + me + bit;

		if (me + bit >= size)
			continue;
		if ((r = peer_get(c, child, 0, &fd)) != COLL_OK)
			break;
		for (first = 0; r == COLL_OK && first < n; first += count) {
			count = n - first < WIRE_BOOK_CHUNK ? n - first : WIRE_BOOK_CHUNK;
			wire_buf_init(&b, buf, wire_book_cap(WIRE_BOOK_CHUNK));
			wire_book_encode(&b, n, first, count, c->book);
			r = wire_send(fd, WIRE_BOOK, buf, (uint32_t)b.off, dl, c->intr_fd);
			if (r != COLL_OK)
				r = comm_fail_peer(c, child, r, "passing the address book to");
		}
	}
	free(buf);
	return r;
}

static int
join_failed(struct comm *c, int r)
{
	char msg[COLL_ERR_LEN];

	if (atomic_load(&c->failed)) {
		pthread_mutex_lock(&c->lock);
		snprintf(msg, sizeof msg, "%s", c->async_msg);
		pthread_mutex_unlock(&c->lock);
		return comm_fail(c, atomic_load(&c->state) < 0 ? atomic_load(&c->state) :
		    COLL_ERANKDEAD, "rank %d could not join: %s", c->rank, msg);
	}
	if (r == COLL_ETIMEDOUT)
		return comm_fail(c, r, "rank %d joined but the job did not start within %d s",
		    c->rank, c->timeout_ms / 1000);
	return r;
}

/*
 * Connect and authenticate to the root, or to the root proxy (on a relay of
 * the launch tree) when one is named. The root's handshake pool cuts off the
 * oldest handshake for a newcomer once all its slots are taken past a grace
 * (a crowd at its port): a rank cut so, or closed before its proof, connects
 * again until the deadline instead of failing the job.
 */
static int
join_root(struct comm *c, uint64_t dl)
{
	struct timespec pause = { 0, 50 * 1000000 };
	const struct net_addr *to = c->root_via.len > 0 ? &c->root_via : &c->root_uid.root;
	char err[COLL_ERR_LEN];
	int r;

	for (;;) {
		if ((r = join_connect(c, to, dl, c->abort_fd, &c->root_fd)) != COLL_OK)
			return r;
		r = auth_connect(c->root_fd, &c->root_uid, WIRE_ROLE_ROOT, dl, c->abort_fd, err,
		    sizeof err);
		if (r != COLL_EPEER || clock_now_ms() >= dl || atomic_load(&c->failed))
			break;
		close(c->root_fd);
		c->root_fd = -1;
		nanosleep(&pause, NULL);
	}
	if (r != COLL_OK)
		return comm_fail(c, r, "rank %d: root refused or failed authentication: %s",
		    c->rank, err);
	return COLL_OK;
}

int
join_run(struct comm *c)
{
	uint64_t dl = comm_deadline(c);
	int r;

	if ((r = join_root(c, dl)) != COLL_OK)
		return r;
	if ((r = join_listen(c)) != COLL_OK)
		return r;
	/*
	 * The entry goes first, then the thread: its first keep-alive leaves a
	 * COLL_KEEPALIVE_MS after it starts, and one sent before the entry (this
	 * thread held up that long on a loaded host) would be the root's first
	 * frame from us.
	 */
	if ((r = join_send_entry(c)) != COLL_OK)
		return comm_fail(c, r, "rank %d cannot send its entry to the root: %s", c->rank,
		    coll_strerror(r));
	if (pthread_create(&c->service, NULL, comm_service, c) != 0)
		return comm_fail(c, COLL_ESYS, "cannot start the communicator thread");
	c->service_started = 1;
	/* The root waits up to the join timeout for the others: give it a little more. */
	dl += 5000;
	if (c->rank == c->block_base) {
		r = comm_wait(c, join_book_done, dl);
		/* A failed fetch says which block and why: nothing to add. */
		if (r == COLL_OK && !atomic_load(&c->failed) && c->nroots > 1 &&
		    (r = blocks_fetch(c, dl)) != COLL_OK && !atomic_load(&c->failed))
			return r;
	} else {
		r = join_from_parent(c, dl);
	}
	if (r != COLL_OK || atomic_load(&c->failed))
		return join_failed(c, r);
	return join_to_children(c, dl);
}

void
join_leave(struct comm *c)
{
	if (c->root_fd >= 0)
		(void)comm_root_send(c, WIRE_BYE, NULL, 0);
}
