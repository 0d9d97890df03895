/*
 * The root service's insides, shared by its loop (root.c) and its
 * coordination of regroups and retries (root_coord.c). One thread owns all of
 * it: the loop's.
 */
#ifndef COLL_ROOT_IMPL_H
#define COLL_ROOT_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "hspool.h"
#include "loop.h"
#include "root.h"
#include "wconn.h"
#include "wire.h"

/* Control frames are small; only the book is big, and it only goes out. */
#define ROOT_MAX_FRAME (4u + 4u * (uint32_t)WIRE_MAX_RANKS + 64u)

enum root_member_state { RM_ABSENT, RM_JOINED, RM_LEFT, RM_DEAD };

struct root_conn {
	struct root *root;
	struct wconn w;		/* its own socket; unused (fd -1) on a proxy's channel */
	struct root_link *link;	/* or the proxy that carries it (root_link.c), and */
	uint32_t ch;		/* its channel there */
	struct root_group *g;
	int rank;
	uint32_t ka_ms;		/* the rank pings this often */
	uint32_t ka_limit;	/* and is dead after this many silent intervals */
	uint64_t last_rx;
	uint64_t next_ping;
};

struct root_member {
	int state;
	struct root_conn *conn;
	struct wire_entry e;
	/* A regroup request. */
	int rg_asked;
	int32_t color;
	int32_t key;
	/* A retry round: answered "stopped at seq, input intact". */
	int rt_ready;
	char *dead_msg;		/* why it was declared dead, for leaders who come later */
};

struct root_group {
	uint64_t commid;
	int nranks;
	uint32_t base;		/* init from several ids: our ranks are base.. of the communicator */
	uint32_t nroots;	/* the communicator's roots, as its first rank said (0: none yet) */
	int joined;
	int live;		/* joined and not yet gone */
	int started;		/* the book went out */
	int expired;		/* the join deadline passed before it started */
	char doomed[WIRE_MSG_LEN];	/* a rank died before the start: why late joiners are refused */
	uint64_t deadline;	/* for every rank to join */
	struct root_member *m;
	/* One regroup (shrink or split) at a time. */
	int rg_kind;		/* 0: none under way */
	uint8_t *rg_excl;	/* nranks flags: excluded by some rank's list */
	uint64_t rg_deadline;
	uint64_t regroups;	/* regroups done, to derive new communicator ids */
	/* One retry round at a time. */
	int rt_active;
	uint64_t rt_seq;
	uint32_t rt_epoch;
	uint64_t rt_deadline;
	uint64_t rt_refused;	/* the last seq refused: late requests for it are not a new round */
	uint64_t rt_seq2;	/* links broke in two ops at once: the earlier (rt_seq the later) */
	/* A rank could not run the op again: said at rt_refuse_at, unless a death explains it first. */
	uint64_t rt_refuse_at;
	int rt_refuse_rank;
	char rt_refuse_msg[WIRE_MSG_LEN];
	struct root_group *parent;	/* the group a shrink or split made this one from */
	int *origin;		/* for each rank here, its rank in parent (NULL: none) */
	struct root_group *next;
};

struct root {
	struct coll_uid uid;
	int join_timeout_ms;
	int listen_fd;
	int stop_fd;
	int joins[2];		/* finished handshakes, from their threads */
	struct hspool hs;	/* the listener's handshakes (hspool.h) */
	struct loop *loop;	/* the one thread's: every fd below, a tick, a flush before each wait */
	int done;		/* the loop's: stop_fd fired */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct root_group *groups;
	struct root_group *first;	/* the group of the unique id itself */
	atomic_int joined;
	atomic_int live;		/* ranks connected, of every group, after the last round */
	atomic_int first_dead;
	atomic_uint_fast64_t bytes_sent;
	atomic_uint_fast64_t proxied_in;	/* frames read on proxies' channels */
	pthread_t thread;
	/* For leaders of other blocks (root_fetch.c), under lock: the first group's book. */
	struct wire_entry *book;
	uint32_t book_n;
	char book_err[WIRE_MSG_LEN];	/* or why it never started */
	int book_code;
	int book_joined;		/* ranks that had joined when it failed */
	uint32_t first_nroots;		/* as the first group's first JOIN said (0: none yet) */
	int *dead_order;		/* the loop's: ranks of the first group, as they died */
	int ndead;
	int fetchers;		/* threads serving a fetch */
	int stopping;
	/*
	 * Leaders of other blocks keep the connection they fetched on: they hear
	 * our block's deaths there and pass them on to theirs. The fetch threads
	 * hand the sockets to the loop through a pipe; the loop owns the rest.
	 */
	int watch[2];
	struct root_link *links;	/* the loop's: proxies carrying ranks (root_link.c) */
	int nlinks;
	struct root_conn **watchers;
	int nwatchers;
	uint64_t next_watch_ping;
};

/* root.c */
struct root_group *root_group_new(struct root *root, uint64_t commid, int nranks);
struct root_group *root_group_find(struct root *root, uint64_t commid);
void root_send(struct root_conn *rc, uint8_t type, const void *p, uint32_t len);
void root_send_note(struct root_conn *rc, uint8_t type, int code, int rank, const char *msg);
/* Every live member of g. */
void root_send_all(struct root_group *g, uint8_t type, const void *p, uint32_t len);

/* root_fetch.c: the first group started (book out) or never will (code, msg). */
void root_fetch_publish(struct root *root, struct root_group *g);
void root_fetch_fail(struct root *root, struct root_group *g, int code, const char *msg);
/* root_fetch.c: serve a FETCH (payload p, now its) on fd in a thread of its own; closes fd. */
void root_fetch_start(struct root *root, int fd, uint8_t *p, uint32_t len);
/* root_fetch.c: wait for every fetch thread to end (the root is stopping). */
void root_fetch_drain(struct root *root);
/* root_fetch.c, the loop's: take new watchers; tell them a rank of g died. */
void root_watch_admit(struct root *root);
void root_watch_notify(struct root *root, struct root_group *g, int rank, const char *msg);
/* root_fetch.c, the loop's: watch the leaders' sockets for writing while frames wait. */
void root_watch_arm(struct root *root);
/* root_fetch.c, the loop's: keep-alives out, frames flushed; at the end, BYE and close. */
void root_watch_tick(struct root *root, uint64_t now);
void root_watch_close(struct root *root);

/* root.c, for root_fetch.c and root_link.c: watch w for reading, and writing while queued. */
void root_arm(struct root *root, const struct wconn *w);
/* root.c, for root_link.c */
/*
 * The group a JOIN may join, or NULL with the reason in msg (to be sent to
 * it as an ERROR note); then make its member, on conn (a socket's, or a
 * proxy's channel).
 */
struct root_group *root_check_join(struct root *root, const struct wire_join *j, char *msg,
    size_t len);
void root_admit_member(struct root *root, struct root_group *g, struct root_conn *rc,
    const struct wire_join *j);
/* One frame from a member (BYE included): 0 once its connection is closed. */
int root_on_member_frame(struct root *root, struct root_conn *rc, const struct wire_hdr *h,
    const uint8_t *p);
void root_member_dead(struct root *root, struct root_group *g, int rank, const char *why);
/* Ranks of g that died together (any order): one notice per survivor names them all. */
void root_members_dead(struct root *root, struct root_group *g, const int *ranks, int n,
    const char *why);

/* root_link.c: proxies' connections (WIRE_ROLE_PROXY), each many members' channels. */
void root_link_admit(struct root *root, int fd);
/* Queued frames out, and each link watched for writing while some wait. */
void root_link_flush(struct root *root);
/* Keep-alives to the proxies, and proxies gone silent declared lost. */
void root_link_tick(struct root *root, uint64_t now);
/* A member on a channel: queue a frame to it; close its channel. */
void root_link_send(struct root_conn *rc, uint8_t type, const void *p, uint32_t len);
void root_link_drop(struct root_conn *rc);
void root_link_close_all(struct root *root);

/* root_coord.c */
void root_on_regroup(struct root *root, struct root_conn *rc, const uint8_t *p, uint32_t len);
void root_on_retry_req(struct root *root, struct root_conn *rc, const uint8_t *p, uint32_t len);
void root_on_retry_state(struct root *root, struct root_conn *rc, const uint8_t *p,
    uint32_t len);
/* A member died or left: regroups and retries under way may now decide. */
void root_coord_member_gone(struct root *root, struct root_group *g, int rank);
/* Deadlines of regroups and retry rounds. */
void root_coord_tick(struct root *root, struct root_group *g, uint64_t now);

#endif
