/*
 * The transfer engine under every algorithm: one stream of segments sent to a
 * peer and one received from a peer (either may be absent), driven together by
 * one poll loop on non-blocking sockets. A received segment is either copied
 * into place or reduced (dst = src op bytes) through a staging buffer as the
 * bytes arrive. Send segment i may depend on received segment i - lag: it is
 * sent as fast as that one completes, byte by byte, which is what pipelines a
 * ring or a chain. Each stream starts with a data header (seq, kind, tag,
 * length) that the receiver checks against its own op.
 */
#ifndef COLL_XFER_H
#define COLL_XFER_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "dtype.h"

struct xfer_seg {
	char *buf;		/* send: the bytes; receive: where they go */
	const char *src;	/* receive: reduce with src into buf; NULL: copy */
	size_t len;
};

#define XFER_NO_DEP (-1)

struct xfer {
	struct comm *c;
	uint64_t seq;		/* sent in our header */
	uint64_t rseq;		/* expected in the peer's header */
	uint32_t kind;
	uint8_t tag;
	int send_peer;		/* -1: nothing to send */
	int recv_peer;		/* -1: nothing to receive */
	struct xfer_seg *send;
	struct xfer_seg *recv;
	int nsend;
	int nrecv;
	int lag;		/* send i waits for receive i - lag; XFER_NO_DEP: none */
	enum dtype dt;
	enum redop op;
};

int xfer_run(struct xfer *x);
/* One buffer each way, no dependency (recursive doubling, trees, point-to-point). */
int xfer_sendrecv(struct comm *c, uint8_t tag, int send_peer, const void *sbuf, size_t slen,
    int recv_peer, void *rbuf, size_t rlen);

#endif
