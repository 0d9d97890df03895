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

/*
 * Block b of count elements split n ways: the first count % n blocks get
 * one more. The rings' blocks, and every striped op's lanes (tree.c too).
 */
static inline size_t
ring_block_off(size_t count, int n, int b)
{
	size_t q = count / (size_t)n, rem = count % (size_t)n;

	return (size_t)b * q + ((size_t)b < rem ? (size_t)b : rem);
}

static inline size_t
ring_block_len(size_t count, int n, int b)
{
	return count / (size_t)n + ((size_t)b < count % (size_t)n);
}

int ring_allreduce(struct comm *c, const void *sendbuf, void *recvbuf, size_t count,
    enum dtype dt, enum redop op);
int ring_reduce_scatter(struct comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
    enum dtype dt, enum redop op);
int ring_allgather(struct comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
    enum dtype dt);

#endif
