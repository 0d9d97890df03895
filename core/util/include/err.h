/*
 * Error codes of the collective core. Every core function returns COLL_OK or
 * one of these negative codes; detail (which rank, host, op) is kept by the
 * object that failed, e.g. comm_last_error().
 */
#ifndef COLL_ERR_H
#define COLL_ERR_H

#define COLL_ERR_LEN 256

enum coll_err {
	COLL_OK = 0,
	COLL_ENOMEM = -1,
	COLL_EINVAL = -2,	/* bad argument from the caller */
	COLL_ESYS = -3,		/* a system call failed, see errno in the detail */
	COLL_ETIMEDOUT = -4,	/* a wait ran past its timeout */
	COLL_EABORTED = -5,	/* the communicator was aborted */
	COLL_EPEER = -6,	/* a peer closed or reset its connection */
	COLL_EPROTO = -7,	/* a peer sent bytes that do not decode */
	COLL_EAUTH = -8,	/* a peer failed authentication */
	COLL_EVERSION = -9,	/* a peer speaks another protocol version */
	COLL_EMISMATCH = -10,	/* ranks called different collectives */
	COLL_EINPROGRESS = -11,	/* non-blocking operation still running */
	COLL_ERANKDEAD = -12,	/* another rank of the job failed */
	COLL_EUID = -13,	/* malformed unique id */
	COLL_ENOTFOUND = -14,	/* no such interface, file or entry */
	COLL_ETOOBIG = -15,	/* a length over its bound */
	COLL_EOWNER = -16,	/* a file or directory owned by another user */
	COLL_EUNSAFE = -17,	/* a link, not a plain file or directory, or writable by others */
	COLL_EBUSY = -18,	/* busy: a page mid-update past the retry limit, an op still in flight */
	COLL_ERETRY = -19,	/* an op stopped so that every rank can run it again */
	COLL_EROOTLOST = -20,	/* the root service (the failure detector) is gone */
};

/* Describe an error code in a few lower-case words. */
const char *coll_strerror(int err);

#endif
