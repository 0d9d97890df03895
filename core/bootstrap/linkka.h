/*
 * Keep-alives of one connection that carries many ranks' root connections
 * (a proxy's link: proxy.c on the proxy's side, root_link.c on the root's).
 * Each end pings at the fastest pace of the JOINs the link carried and
 * takes the link for silent after the longest of their limits, so the two
 * ends, which see the same JOINs, agree. Private to the bootstrap module.
 */
#ifndef COLL_LINKKA_H
#define COLL_LINKKA_H

#include <stdint.h>

#include "wconn.h"
#include "wire.h"

struct linkka {
	uint32_t ms;		/* ping this often; 0: no JOIN yet, nothing sent or judged */
	uint64_t win;		/* silent this long: lost */
	uint64_t last_rx;	/* when bytes last came in (a frame's part counts) */
	uint64_t seen;		/* bytes received by then */
	uint64_t next_ping;
};

/* A JOIN the link carried: its rank's pace and limit count. */
void linkka_join(struct linkka *ka, const struct wire_join *j, uint64_t now);
/* Milliseconds until its next PING is due (UINT64_MAX: none yet). */
uint64_t linkka_wait(const struct linkka *ka, uint64_t now);
/* Queue a PING on w when one is due; silent past the limit: how long, else 0. */
uint64_t linkka_tick(struct linkka *ka, struct wconn *w, uint64_t now);

#endif
