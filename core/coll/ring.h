/*
 * Ring algorithms, pipelined through xfer: all-reduce as reduce-scatter then
 * all-gather (each rank sends and receives 2(n-1)/n of the data, the bandwidth
 * bound), and the two halves on their own. Each element is reduced on exactly
 * one path around the ring and then copied, so every rank ends bit-identical.
 */
#ifndef COLL_RING_H
#define COLL_RING_H

#include <stddef.h>

#include "comm.h"
#include "dtype.h"

int ring_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op);
int ring_reduce_scatter(struct comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
    enum dtype dt, enum redop op);
int ring_allgather(struct comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
    enum dtype dt);

#endif
