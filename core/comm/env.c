/* The communicator's settings from the environment, each checked and bounded. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "comm_impl.h"

int
comm_env_parse(const char *name, long lo, long hi, long *v)
{
	const char *s = getenv(name);
	char *end;
	long x;

	if (s == NULL || *s == '\0')
		return COLL_ENOTFOUND;
	errno = 0;
	x = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || x < lo || x > hi)
		return COLL_EINVAL;
	*v = x;
	return COLL_OK;
}

const char *const comm_allreduce_algos[] = { "ring", "doubling", "halving", NULL };

/* An integer setting in lo..hi, else def (a bad value is not worth failing a job for). */
static long
comm_env_long(const char *name, long lo, long hi, long def)
{
	long v;

	return comm_env_parse(name, lo, hi, &v) == COLL_OK ? v : def;
}

int
comm_env_timeout_ms(void)
{
	const char *s = getenv("COLL_TIMEOUT");
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return COLL_TIMEOUT_DEFAULT_MS;
	v = strtod(s, &end);
	if (*end != '\0' || !(v >= 0.001 && v <= 86400 * 7))
		return COLL_TIMEOUT_DEFAULT_MS;
	return (int)(v * 1000);
}

void
comm_env_load(struct comm *c)
{
	c->ka_ms = (int)comm_env_long("COLL_KEEPALIVE_MS", 10, 600000, COLL_KEEPALIVE_MS_DEFAULT);
	c->ka_limit = (int)comm_env_long("COLL_KEEPALIVE_LIMIT", 2, 100000,
	    COLL_KEEPALIVE_LIMIT_DEFAULT);
	c->retry_max = (int)comm_env_long("COLL_RETRY_MAX", 0, 1000, COLL_RETRY_MAX_DEFAULT);
	c->retry_interval_ms = (int)comm_env_long("COLL_RETRY_INTERVAL_MS", 0, 600000,
	    COLL_RETRY_INTERVAL_MS_DEFAULT);
	c->retry_save = (size_t)comm_env_long("COLL_RETRY_SAVE_BYTES", 0, 1L << 40,
	    COLL_RETRY_SAVE_DEFAULT);
}

/*
 * COLL_ROOT_VIA: the root proxy (proxy.h) that carries the job's root
 * connections, which the launch tree's relays hand their ranks. It applies
 * to the communicators of the job's own id only (COLL_UNIQUE_ID, and the
 * shrinks and splits of it, which keep its job id): another id's root does
 * not know that proxy. An unreadable value is ignored, as above: the root
 * is then reached directly, which works, only with more connections on it.
 */
void
comm_env_via(struct comm *c)
{
	const char *via = getenv("COLL_ROOT_VIA"), *id = getenv("COLL_UNIQUE_ID");
	struct coll_uid job;
	struct net_addr a;

	memset(&c->root_via, 0, sizeof c->root_via);
	if (via == NULL || id == NULL || strchr(id, ',') != NULL ||
	    uid_parse(&job, id) != COLL_OK || job.jobid != c->uid.jobid ||
	    uid_addr_parse(&a, via) != COLL_OK)
		return;
	c->root_via = a;
}
