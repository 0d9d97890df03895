/*
 * A root proxy: it carries the root connections of the ranks below it (and
 * of proxies below it) to the root, or to the proxy above it, on one
 * connection of MUX frames, so that the root of a job of 80,000 ranks takes a
 * connection per proxy of the launch tree's first layer, not one per rank.
 * It holds no state of the job: every frame passes through unchanged, so the
 * root's agreement (shrink, split, retry) works as it does without it.
 *
 * Ranks reach it instead of the root when COLL_ROOT_VIA names it (the launch
 * tree's relays set it); they authenticate with the job's secret as they
 * would with the root, and so does the proxy with the root.
 */
#ifndef COLL_PROXY_H
#define COLL_PROXY_H

#include <stddef.h>

#include "net.h"
#include "uid.h"

struct proxy;

/*
 * Connect to upstream (the root of uid, or another proxy of it) and listen
 * at *at (port 0: any; *at gets the bound address). Fails with a one-line
 * reason in err when upstream cannot be reached or refuses us.
 */
int proxy_start(struct proxy **out, const struct coll_uid *uid, const struct net_addr *upstream,
    struct net_addr *at, int timeout_ms, char *err, size_t errlen);
/* Whether the upstream connection is gone (its ranks' root connections went with it). */
int proxy_lost(struct proxy *p);
/* Close everything: the ranks still connected see their root connection end. */
void proxy_stop(struct proxy *p);

#endif
