/*
 * Communicators, in the manner of NCCL: every rank calls comm_init() with the
 * same unique id and size and its own rank. In non-blocking mode init returns
 * at once and comm_get_async_error() reports COLL_EINPROGRESS until it is done
 * (ncclCommInitRankConfig + ncclCommGetAsyncError). comm_abort() may be called
 * from any thread at any time and unblocks every wait of the communicator.
 */
#ifndef COLL_COMM_H
#define COLL_COMM_H

#include "uid.h"

struct comm;

struct coll_config {
	int blocking;		/* 1: comm_init waits; 0: poll comm_get_async_error */
	int timeout_ms;		/* bound on joining and on any wait without progress */
	const char *ifname;	/* COLL_SOCKET_IFNAME form; NULL: take it from the environment */
};

#define COLL_TIMEOUT_DEFAULT_MS 300000
#define COLL_CONFIG_INIT { 1, 0, NULL }

/* Start joining communicator uid as rank of nranks. */
int comm_init(struct comm **out, int nranks, const struct coll_uid *uid, int rank,
    const struct coll_config *cfg);
/* Join from COLL_UNIQUE_ID, COLL_RANK and COLL_SIZE (set by collrun). */
int comm_init_env(struct comm **out, const struct coll_config *cfg);
/* COLL_OK when usable, COLL_EINPROGRESS while joining, else the error that broke it. */
int comm_get_async_error(struct comm *c);
/* Unblock every wait and fail every later op; safe from any thread. */
void comm_abort(struct comm *c);
/* Leave cleanly (tell the root) and free everything. */
void comm_destroy(struct comm *c);

int comm_rank(const struct comm *c);
int comm_size(const struct comm *c);
/* Host name of a rank, from the address book. */
const char *comm_host(const struct comm *c, int rank);
uint64_t comm_jobid(const struct comm *c);
/* Process id of a rank, from the address book. */
int comm_pid(const struct comm *c, int rank);
/* One line describing the last failure: which rank, host, op and what to do. */
const char *comm_last_error(const struct comm *c);

/* Timeout in ms from COLL_TIMEOUT (seconds) or the default. */
int comm_env_timeout_ms(void);

#endif
