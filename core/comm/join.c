/*
 * The rank side of the rendezvous: reach the root (retrying until it listens),
 * authenticate, open this rank's listener on an address the others can reach,
 * send our entry and wait for the address book.
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

static int
bootstrap_connect_root(struct comm *c, uint64_t dl)
{
	struct timespec pause = { 0, 50 * 1000000 };
	char addr[NET_ADDRSTR_LEN];
	int r, e = 0;

	net_addr_format(&c->uid.root, addr, sizeof addr);
	for (;;) {
		r = net_connect(&c->uid.root, dl, c->abort_fd, &c->root_fd);
		if (r == COLL_OK || r == COLL_EABORTED)
			return r;
		e = errno;
		if (r != COLL_ESYS || clock_now_ms() >= dl)
			break;
		/* The root may not listen yet: retry until the deadline. */
		nanosleep(&pause, NULL);
	}
	return comm_fail(c, COLL_ETIMEDOUT, "rank %d cannot reach the root at %s within %d s%s%s: "
	    "check that the launcher (or the rank that made the unique id) is running and "
	    "reachable", c->rank, addr, c->timeout_ms / 1000, r == COLL_ESYS ? ": " : "",
	    r == COLL_ESYS ? strerror(e) : "");
}

static int
bootstrap_listen(struct comm *c)
{
	struct net_addr addr;
	char ifname[64];
	int r;

	if (c->ifname[0] != '\0') {
		r = ifsel_pick(c->ifname, c->uid.root.ss.ss_family, &addr, ifname, sizeof ifname);
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
	if ((r = net_listen(&addr, 128, &c->listen_fd)) != COLL_OK)
		return comm_fail(c, r, "cannot listen for peers: %s", strerror(errno));
	return COLL_OK;
}

static int
bootstrap_send_join(struct comm *c, uint64_t dl)
{
	struct wire_entry e = { .rank = (uint32_t)c->rank, .nranks = (uint32_t)c->nranks,
	    .pid = (uint32_t)getpid() };
	uint8_t buf[256];
	struct wbuf b;

	net_local_addr(c->listen_fd, &e.addr);
	snprintf(e.host, sizeof e.host, "%s", c->host);
	wbuf_init(&b, buf, sizeof buf);
	wire_entry_encode(&b, &e);
	return wire_send(c->root_fd, WIRE_JOIN, buf, (uint32_t)b.off, dl, c->abort_fd);
}

static int
bootstrap_recv_book(struct comm *c, uint64_t dl)
{
	struct wire_note note;
	struct wire_hdr h;
	uint8_t *p = NULL;
	int r;

	/* The root waits up to the join timeout for the others: give it a little more. */
	r = wire_recv(c->root_fd, &h, &p, WIRE_MAX_PAYLOAD, dl + 5000, c->abort_fd);
	if (r == COLL_OK && (h.type == WIRE_ERROR || h.type == WIRE_FAILED) &&
	    wire_note_decode(p, h.len, &note) == COLL_OK)
		r = comm_fail(c, h.type == WIRE_FAILED ? COLL_ERANKDEAD : note.code,
		    "rank %d could not join: %s", c->rank, note.msg);
	else if (r == COLL_OK && h.type == WIRE_BOOK) {
		c->book = xcalloc((size_t)c->nranks, sizeof *c->book);
		if (wire_book_decode(p, h.len, (uint32_t)c->nranks, c->book) != COLL_OK)
			r = comm_fail(c, COLL_EPROTO, "the root sent a malformed address book");
	} else if (r == COLL_OK)
		r = comm_fail(c, COLL_EPROTO, "the root sent message type %u, expected the address "
		    "book", h.type);
	else if (r == COLL_ETIMEDOUT)
		r = comm_fail(c, r, "rank %d joined but the job did not start within %d s",
		    c->rank, c->timeout_ms / 1000);
	else if (r != COLL_EABORTED)
		r = comm_fail(c, r, "rank %d lost the root while joining: %s", c->rank,
		    coll_strerror(r));
	free(p);
	return r;
}

int
bootstrap_join(struct comm *c)
{
	uint64_t dl = comm_deadline(c);
	char err[COLL_ERR_LEN];
	int r;

	if ((r = bootstrap_connect_root(c, dl)) != COLL_OK)
		return r;
	if ((r = auth_connect(c->root_fd, &c->uid, WIRE_ROLE_ROOT, dl, c->abort_fd, err,
	    sizeof err)) != COLL_OK)
		return comm_fail(c, r, "rank %d: root refused or failed authentication: %s",
		    c->rank, err);
	if ((r = bootstrap_listen(c)) != COLL_OK)
		return r;
	if ((r = bootstrap_send_join(c, dl)) != COLL_OK)
		return comm_fail(c, r, "rank %d cannot send its entry to the root: %s", c->rank,
		    coll_strerror(r));
	return bootstrap_recv_book(c, dl);
}

void
bootstrap_leave(struct comm *c)
{
	if (c->root_fd >= 0)
		(void)wire_send(c->root_fd, WIRE_BYE, NULL, 0, clock_now_ms() + 1000, -1);
}
