/* Point-to-point transfer under coll_send, coll_recv and coll_sendrecv. */
#ifndef COLL_P2P_H
#define COLL_P2P_H

#include <stddef.h>

#include "comm.h"

/* Send slen bytes to dst (-1: none) while receiving rlen bytes from src (-1: none). */
int p2p_run(struct comm *c, const void *sbuf, size_t slen, int dst, void *rbuf, size_t rlen,
    int src);

#endif
