/*
 * MSG_ZEROCOPY for the large sends of a transfer (COLL_ZEROCOPY). The kernel
 * pins the sender's pages instead of copying them into the socket, and says
 * on the socket's error queue when it is done with them; until then the bytes
 * must not change, so a transfer that sent this way is not finished before
 * every notice has come back. Where the kernel copies anyway (loopback, veth,
 * a device without scatter-gather) its notice says so, and "auto" stops asking
 * on that connection: the notices cost more than they save there.
 */
#ifndef COLL_ZCOPY_H
#define COLL_ZCOPY_H

#include <stddef.h>
#include <stdint.h>

struct comm;

enum zcopy_mode { ZCOPY_OFF, ZCOPY_AUTO, ZCOPY_ON };

/* Calls that move fewer bytes than this copy: pinning costs more than copying them. */
#define ZCOPY_CALL_MIN (32 * 1024)
#define ZCOPY_MIN_BYTES_DEFAULT (1024 * 1024)

/* One sending side's account of its zero-copy sends. */
struct zcopy_side {
	int on;			/* large sends of this transfer use MSG_ZEROCOPY */
	uint32_t pending;	/* sent that way, not yet given back by the kernel */
	uint32_t sent;		/* calls sent that way, all told */
	int copied;		/* the kernel said it copied after all */
	int notice;		/* poll saw the error queue non-empty */
};

/* COLL_ZEROCOPY (auto, 1, 0) and COLL_ZEROCOPY_MIN_BYTES into c. */
void zcopy_config(struct comm *c);
int zcopy_check(char *err, size_t len);
/* Lets a new peer connection take MSG_ZEROCOPY, unless it is off. */
void zcopy_sock_init(const struct comm *c, int fd);
/* Whether a transfer sending total bytes on fd uses MSG_ZEROCOPY for its large calls. */
int zcopy_begin(const struct comm *c, int fd, size_t total);
/* Takes the kernel's notices off fd's error queue; 0, or -1 with errno. */
int zcopy_reap(const struct comm *c, int fd, struct zcopy_side *z, int *moved);

#endif
