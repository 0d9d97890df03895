/*
 * The unique id every rank of a communicator is handed: where the root service
 * listens, the job id, a 128-bit secret that authenticates every connection,
 * and a format version. Printable, so launchers can pass it in the environment:
 *
 *   coll1:<jobid, 16 hex>:<secret, 32 hex>@<ipv4>:<port>
 *   coll1:<jobid, 16 hex>:<secret, 32 hex>@[<ipv6>]:<port>
 */
#ifndef COLL_UID_H
#define COLL_UID_H

#include <stddef.h>
#include <stdint.h>

#include "net.h"

#define UID_VERSION 1
#define UID_SECRET_LEN 16
#define UID_STR_LEN 160

struct coll_uid {
	int version;
	uint64_t jobid;
	uint8_t secret[UID_SECRET_LEN];
	struct net_addr root;
};

/* Fill a new id with fresh random job id and secret for a root at addr. */
int uid_generate(struct coll_uid *uid, const struct net_addr *root);
/* Printable form; buf must hold UID_STR_LEN bytes. */
void uid_format(const struct coll_uid *uid, char *buf, size_t len);
/* Parse the printable form: COLL_EUID if malformed, COLL_EVERSION if another version. */
int uid_parse(struct coll_uid *uid, const char *s);
/*
 * Several ids joined by commas (comm_init_scalable), at most max: *out is
 * malloc'ed with *n ids. COLL_EINVAL if more than max, else as uid_parse.
 */
int uid_parse_list(const char *s, int max, struct coll_uid **out, int *n);
/* An address as an id prints it, "a.b.c.d:port" or "[v6]:port": COLL_EUID if not one. */
int uid_addr_parse(struct net_addr *addr, const char *s);
/* Read random bytes from the kernel. */
int uid_random(void *buf, size_t len);

#endif
