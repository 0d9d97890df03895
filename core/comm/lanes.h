/*
 * Lanes (lanes.c): several connections per pair of ranks, each carrying a
 * slice of a large op, driven by several threads.
 */
#ifndef COLL_LANES_H
#define COLL_LANES_H

#include <stddef.h>

#include "comm_impl.h"
#include "xfer.h"

/* What this rank offers: COLL_NTHREADS x COLL_NSOCKS, else from the link's speed (comm_new). */
void lanes_config(struct comm *c);
/* COLL_EINVAL, and why in err, when a lane setting is out of its range. */
int lanes_check(char *err, size_t len);
/*
 * Lanes an op of bytes is cut into, at most units (the slices it can be cut
 * in): 1 below twice the agreed smallest slice. Every rank gets the same.
 */
int lanes_for(struct comm *c, size_t bytes, size_t units);
/* Run xs[i] on lane i, for i < n, on this thread and the lane workers. */
int lanes_run(struct comm *c, struct xfer *xs, int n);
/* Stop the lane workers (destroy, when no op runs). */
void lanes_free(struct comm *c);

#endif
