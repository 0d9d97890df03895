/* COLL_SNDBUF (see sockbuf.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "comm.h"
#include "comm_impl.h"
#include "net.h"
#include "sockbuf.h"

#define SOCKBUF_BAD (-2)

/* 0 or a size in SOCKBUF_MIN..SOCKBUF_MAX, SOCKBUF_AUTO, or SOCKBUF_BAD: not a setting. */
static long
sockbuf_parse(void)
{
	const char *s = getenv("COLL_SNDBUF");
	long v;

	if (s == NULL || *s == '\0' || strcmp(s, "auto") == 0)
		return SOCKBUF_AUTO;
	if (comm_env_parse("COLL_SNDBUF", 0, SOCKBUF_MAX, &v) != COLL_OK ||
	    (v > 0 && v < SOCKBUF_MIN))
		return SOCKBUF_BAD;
	return v;
}

void
sockbuf_config(struct comm *c)
{
	long v = sockbuf_parse();

	c->sndbuf = v == SOCKBUF_BAD ? SOCKBUF_AUTO : v;
}

int
sockbuf_check(char *err, size_t len)
{
	if (sockbuf_parse() != SOCKBUF_BAD)
		return COLL_OK;
	snprintf(err, len, "COLL_SNDBUF=%s is not auto, 0 or a byte count in %d..%ld: set one, "
	    "or unset it for auto", getenv("COLL_SNDBUF"), SOCKBUF_MIN, SOCKBUF_MAX);
	return COLL_EINVAL;
}

void
sockbuf_init(const struct comm *c, int fd)
{
	int v;

	if (c->sndbuf == 0)
		return;
	if (c->sndbuf == SOCKBUF_AUTO) {
		if (!net_same_host(fd))
			return;
		v = SOCKBUF_LOCAL_DEFAULT;
	} else {
		v = (int)c->sndbuf;
	}
	/* Above net.core.wmem_max the kernel takes its maximum: still a bound. */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}
