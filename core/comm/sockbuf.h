/*
 * The send buffer of the data connections (COLL_SNDBUF). Between ranks of
 * one host the kernel's autotuning grows each socket's buffer to megabytes:
 * the bytes in flight then push the ranks' own buffers out of the CPU's
 * caches, and a ring of 4 local ranks moved half as much from 2 MiB up
 * (bench/README.md). There is no wire latency to cover on such a connection,
 * so "auto" bounds it there and leaves every other connection to the kernel,
 * whose autotuning a long or fast link needs.
 */
#ifndef COLL_SOCKBUF_H
#define COLL_SOCKBUF_H

#include <stddef.h>

struct comm;

#define SOCKBUF_AUTO (-1)
/* What "auto" asks for on a same-host connection (the kernel doubles it). */
#define SOCKBUF_LOCAL_DEFAULT (256 * 1024)
#define SOCKBUF_MIN 4096
#define SOCKBUF_MAX (1L << 30)

/* COLL_SNDBUF into c: auto (unset), 0 (the kernel's everywhere) or bytes for every connection. */
void sockbuf_config(struct comm *c);
/* COLL_OK, or COLL_EINVAL with a line naming a bad COLL_SNDBUF in err. */
int sockbuf_check(char *err, size_t len);
/* Sets connected data socket fd's send buffer as c's setting says. */
void sockbuf_init(const struct comm *c, int fd);

#endif
