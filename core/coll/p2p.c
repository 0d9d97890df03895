/*
 * Point-to-point messages. Their headers carry a per-pair counter rather than
 * the communicator's op sequence, since only two ranks take part; the
 * communicator's sequence still counts them for the status page.
 */
#include "coll.h"
#include "comm_impl.h"
#include "p2p.h"
#include "xfer.h"

enum { P2P_TAG = 40 };

int
p2p_run(struct comm *c, const void *sbuf, size_t slen, int dst, void *rbuf, size_t rlen,
    int src)
{
	struct xfer_seg ss = { (char *)sbuf, NULL, slen }, rs = { rbuf, NULL, rlen };
	struct xfer x = {
		.c = c, .kind = KIND_SEND, .tag = P2P_TAG,
		.send_peer = dst, .recv_peer = src,
		.send = &ss, .recv = &rs, .nsend = 1, .nrecv = 1,
		.lag = XFER_NO_DEP, .dt = DT_UINT8, .op = OP_SUM,
	};
	int rc;

	if (dst >= 0)
		x.seq = c->p2p_send_seq[dst] + 1;
	if (src >= 0)
		x.rseq = c->p2p_recv_seq[src] + 1;
	rc = xfer_run(&x);
	if (rc == COLL_OK && dst >= 0)
		c->p2p_send_seq[dst]++;
	if (rc == COLL_OK && src >= 0)
		c->p2p_recv_seq[src]++;
	return rc;
}
