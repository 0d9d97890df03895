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

#include <stdatomic.h>
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
	int lane;		/* which of the pair's connections (lanes.c); 0: the first */
	uint8_t *scratch;	/* staging for reductions; NULL: the communicator's */
	size_t scratch_len;
	uint64_t rx;		/* bytes received */
};

/*
 * How a group of transfers runs: on the op's own thread (main: it keeps the
 * status page, drains intr_fd and injects COLL_FAULT's faults), or on a lane
 * worker beside it. stop is set, and stop_fd kicked, when another lane of the
 * op failed: the group then returns XFER_STOPPED, leaving the error to that lane.
 */
struct xfer_ctl {
	int main;
	atomic_int *stop;	/* NULL: no other lanes */
	int stop_fd;		/* -1: none */
};

#define XFER_STOPPED 1		/* not a COLL_ code: another lane's error is the op's */

/* Run n transfers at once in this thread, over their own connections (lanes). */
int xfer_run_group(struct xfer *xs, int n, const struct xfer_ctl *ctl);
/* One transfer on the op's thread; its bytes count into the op's. */
int xfer_run(struct xfer *x);
/* One buffer each way, no dependency (recursive doubling, trees, point-to-point). */
int xfer_sendrecv(struct comm *c, uint8_t tag, int send_peer, const void *sbuf, size_t slen,
    int recv_peer, void *rbuf, size_t rlen);

#endif
