/*
 * libibverbs (libibverbs.so.1, rdma-core's: found by the loader, never by a
 * variable), for what sysfs does not show (a port's active MTU). Loaded once
 * per process and kept; its types are verbs.h's, which only a caller that
 * reads the structures needs.
 */
#ifndef COLL_PLAT_IBV_H
#define COLL_PLAT_IBV_H

#include <stddef.h>
#include <stdint.h>

#define PLAT_IBV_LIB "libibverbs.so.1"

struct ibv_device;
struct ibv_context;
struct ibv_port_attr;

struct plat_ibv {
	struct ibv_device **(*get_list)(int *);
	void (*free_list)(struct ibv_device **);
	const char *(*name)(struct ibv_device *);
	struct ibv_context *(*open)(struct ibv_device *);
	int (*close)(struct ibv_context *);
	/* The exported function (verbs.h's macro wraps it): it fills the old layout. */
	int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
};

/*
 * The verbs table into *t (thread-safe; loaded on the first call). COLL_OK;
 * COLL_ENOTFOUND when libibverbs.so.1 cannot be loaded (why: the loader's
 * words, naming it); COLL_EVERSION when it lacks a function (why names it).
 */
int plat_ibv_load(const struct plat_ibv **t, char *why, size_t len);

#endif
