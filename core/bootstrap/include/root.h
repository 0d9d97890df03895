/*
 * The root service of a unique id: ranks connect, authenticate and join; when
 * all have joined it sends the address book to rank 0, which passes it on.
 * It also serves the communicators that shrink and split make from the first
 * one (same id, a derived communicator id), agrees for them on the ranks that
 * failed, and coordinates operator retries. It then keeps every rank's
 * connection open as a failure detector: a rank whose connection drops without
 * a BYE is announced to all others as FAILED, so every rank can name the rank
 * that died instead of the neighbour that gave up after it. A rank that never
 * arrives is named to the others when the join timeout passes.
 *
 * It runs in its own thread: in collrun (the front end) or in the process of
 * the library user that created the unique id.
 */
#ifndef COLL_ROOT_H
#define COLL_ROOT_H

#include <stdint.h>

#include "uid.h"

struct root;

/*
 * Listen at addr (port 0 picks one), make a unique id for it and start the
 * service for nranks ranks. join_timeout_ms bounds the wait for all ranks.
 */
int root_start(struct root **out, const struct net_addr *addr, int nranks, int join_timeout_ms,
    struct coll_uid *uid);
/* Stop the service and free it. */
void root_stop(struct root *root);
/* Number of ranks that have joined so far. */
int root_joined(struct root *root);
/* The first rank whose connection dropped without a goodbye, or -1. */
int root_first_dead(struct root *root);
/* Wait until no rank is connected (all left or died), at most timeout_ms: COLL_OK or COLL_ETIMEDOUT. */
int root_wait_idle(struct root *root, int timeout_ms);
/* Bytes the root has sent on rank connections that have closed (all of them, once every rank left). */
uint64_t root_bytes_sent(struct root *root);
/* Frames the root has read on proxies' channels (its ranks' frames, less the keep-alives the proxies answer). */
uint64_t root_proxied_in(struct root *root);

#endif
