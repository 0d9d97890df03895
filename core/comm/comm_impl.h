/*
 * The communicator's insides, shared by the modules that implement it
 * (comm, bootstrap, peer, xfer, the algorithms). Not for tools: they use comm.h.
 */
#ifndef COLL_COMM_IMPL_H
#define COLL_COMM_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "comm.h"
#include "err.h"
#include "status.h"
#include "wire.h"

struct comm {
	struct coll_uid uid;
	int rank;
	int nranks;
	int timeout_ms;
	char ifname[128];
	uint64_t commid;
	char host[WIRE_HOST_LEN + 1];
	struct wire_entry *book;	/* nranks entries once joined */

	int root_fd;			/* to the root service: failure notices */
	int listen_fd;			/* peers of lower rank connect here */
	int abort_fd;			/* eventfd, readable once aborted or destroyed */
	int *peer_fd;			/* -1 until connected */

	pthread_mutex_t lock;		/* guards peer_fd and async_msg */
	pthread_cond_t cond;		/* a peer connected, or abort */
	pthread_t service;
	pthread_t init_thread;
	int service_started;
	int handshakes;			/* peer handshake threads running, under lock */
	int init_started;
	atomic_int state;		/* COLL_EINPROGRESS, COLL_OK or the fatal error */
	atomic_int aborted;
	atomic_int stopping;
	char async_msg[COLL_ERR_LEN];	/* why the root says the job failed */
	char err[COLL_ERR_LEN];		/* detail of the last failure */

	uint64_t seq;			/* sequence number of the current or last op */
	uint32_t kind;			/* kind of that op */
	struct status status;
	uint8_t *scratch;		/* staging for reductions, comm->scratch_len bytes */
	size_t scratch_len;
	uint64_t *p2p_send_seq;		/* per-peer counters of point-to-point messages */
	uint64_t *p2p_recv_seq;
};

/* Record a failure: formats c->err, marks the status page, logs it; returns code. */
int comm_fail(struct comm *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/*
 * A peer broke off (closed, reset, timed out). Wait briefly for the root to say
 * which rank died, so the error names the cause rather than a bystander.
 */
int comm_fail_peer(struct comm *c, int peer, int code, const char *doing);
/* Deadline for a wait that starts now. */
uint64_t comm_deadline(const struct comm *c);
/* Name of the op being run, for messages. */
const char *comm_op_name(const struct comm *c);

/* bootstrap.c: connect to the root, join, receive the address book. */
int bootstrap_join(struct comm *c);
/* bootstrap.c: tell the root we leave cleanly. */
void bootstrap_leave(struct comm *c);

/* peer.c: the connected socket to a peer, connecting (or waiting for it) first. */
int peer_get(struct comm *c, int peer, int *fd);
/* peer.c: accept one connection from a lower rank (service thread). */
void peer_accept(struct comm *c);
/* peer.c: wait for handshakes in flight to finish (destroy, after the abort fd fired). */
void peer_drain(struct comm *c);

#endif
