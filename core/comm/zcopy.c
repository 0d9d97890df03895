/*
 * MSG_ZEROCOPY (see zcopy.h). The kernel's notices name ranges of send calls,
 * counted per socket from 0; since a transfer waits for all of its own before
 * it ends, counting what is still out is enough and no ids need keeping.
 */
#include <errno.h>
#include <netinet/in.h>
#include <time.h>
#include <linux/errqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "comm.h"
#include "comm_impl.h"
#include "log.h"
#include "zcopy.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED 1
#endif

/* -1: not a mode. */
static int
zcopy_parse(const char *s)
{
	if (s == NULL || *s == '\0' || strcmp(s, "auto") == 0)
		return ZCOPY_AUTO;
	if (strcmp(s, "1") == 0 || strcmp(s, "on") == 0)
		return ZCOPY_ON;
	if (strcmp(s, "0") == 0 || strcmp(s, "off") == 0)
		return ZCOPY_OFF;
	return -1;
}

void
zcopy_config(struct comm *c)
{
	long v;
	int m = zcopy_parse(getenv("COLL_ZEROCOPY"));

	c->zcopy_mode = m < 0 ? ZCOPY_AUTO : m;
	if (comm_env_parse("COLL_ZEROCOPY_MIN_BYTES", 1, 1L << 40, &v) != COLL_OK)
		v = ZCOPY_MIN_BYTES_DEFAULT;
	c->zcopy_min = (size_t)v;
}

int
zcopy_check(char *err, size_t len)
{
	long v;

	if (zcopy_parse(getenv("COLL_ZEROCOPY")) < 0) {
		snprintf(err, len, "COLL_ZEROCOPY=%s is not auto, 1 or 0: set one of them, or "
		    "unset it for auto", getenv("COLL_ZEROCOPY"));
		return COLL_EINVAL;
	}
	if (comm_env_parse("COLL_ZEROCOPY_MIN_BYTES", 1, 1L << 40, &v) == COLL_EINVAL) {
		snprintf(err, len, "COLL_ZEROCOPY_MIN_BYTES=%s is not a byte count in 1..2^40: "
		    "set one, or unset it for %d", getenv("COLL_ZEROCOPY_MIN_BYTES"),
		    ZCOPY_MIN_BYTES_DEFAULT);
		return COLL_EINVAL;
	}
	return COLL_OK;
}

void
zcopy_sock_init(const struct comm *c, int fd)
{
	int one = 1;

	/* A kernel before 4.14 refuses: the sends then copy, as they always did. */
	if (c->zcopy_mode != ZCOPY_OFF)
		(void)setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one);
}

int
zcopy_begin(const struct comm *c, int fd, size_t total)
{
	int on = 0;
	socklen_t len = sizeof on;

	/* "auto" turned it off on this connection when the kernel copied (zcopy_reap). */
	if (c->zcopy_mode == ZCOPY_OFF || total < c->zcopy_min ||
	    getsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &on, &len) != 0)
		return 0;
	return on;
}

/* One notice: a range of calls the kernel is done with. */
static void
zcopy_notice(const struct comm *c, int fd, const struct sock_extended_err *e, struct zcopy_side *z)
{
	uint32_t n = e->ee_data - e->ee_info + 1;
	int off = 0;

	if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
		return;
	z->pending = n > z->pending ? 0 : z->pending - n;
	if (!(e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED))
		return;
	z->copied = 1;
	if (c->zcopy_mode == ZCOPY_AUTO && z->on) {
		/* The rest of this transfer, and every later one on fd, copy. */
		z->on = 0;
		(void)setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &off, sizeof off);
		log_info("rank %d: the kernel copied zero-copy sends anyway (a loopback or "
		    "virtual link): this connection copies from now on", c->rank);
	}
}

int
zcopy_reap(const struct comm *c, int fd, struct zcopy_side *z, int *moved)
{
	char ctl[CMSG_SPACE(sizeof(struct sock_extended_err)) * 4];
	struct msghdr msg;
	struct cmsghdr *cm;

	z->notice = 0;
	for (;;) {
		memset(&msg, 0, sizeof msg);
		msg.msg_control = ctl;
		msg.msg_controllen = sizeof ctl;
		if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return -1;
		}
		for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm))
			if ((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
			    (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)) {
				struct sock_extended_err e;

				memcpy(&e, CMSG_DATA(cm), sizeof e);
				zcopy_notice(c, fd, &e, z);
				*moved = 1;
			}
	}
}
