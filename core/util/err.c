/* Error code descriptions: one table so that messages stay consistent. */
#include "err.h"

static const struct {
	int code;
	const char *msg;
} err_table[] = {
	{ COLL_OK, "success" },
	{ COLL_ENOMEM, "out of memory" },
	{ COLL_EINVAL, "invalid argument" },
	{ COLL_ESYS, "system call failed" },
	{ COLL_ETIMEDOUT, "timed out" },
	{ COLL_EABORTED, "communicator aborted" },
	{ COLL_EPEER, "peer closed the connection" },
	{ COLL_EPROTO, "protocol error" },
	{ COLL_EAUTH, "authentication failed" },
	{ COLL_EVERSION, "protocol version mismatch" },
	{ COLL_EMISMATCH, "ranks called different collectives" },
	{ COLL_EINPROGRESS, "in progress" },
	{ COLL_ERANKDEAD, "a rank of the job failed" },
	{ COLL_EUID, "malformed unique id" },
	{ COLL_ENOTFOUND, "not found" },
	{ COLL_ETOOBIG, "length over its bound" },
	{ COLL_EOWNER, "owned by another user" },
	{ COLL_EUNSAFE, "a link or writable by other users" },
	{ COLL_EBUSY, "busy, try again" },
	{ COLL_ERETRY, "stopped for a retry" },
	{ COLL_EROOTLOST, "root service lost" },
};

const char *
coll_strerror(int err)
{
	for (unsigned i = 0; i < sizeof err_table / sizeof err_table[0]; i++)
		if (err_table[i].code == err)
			return err_table[i].msg;
	return "unknown error";
}
