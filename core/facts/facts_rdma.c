/*
 * RDMA devices: per port, the state, physical state, rate, link layer and
 * first GID from sysfs (what ibstat shows), the firmware, and the active MTU
 * from libibverbs (sysfs has none), loaded with dlopen so hosts without
 * rdma-core still run. The header is needed at build time only.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "facts.h"
#include "facts_impl.h"

#ifdef COLL_HAVE_IBVERBS
#include <infiniband/verbs.h>

struct facts_ibv {
	void *h;
	struct ibv_device **(*get_list)(int *);
	void (*free_list)(struct ibv_device **);
	const char *(*name)(struct ibv_device *);
	struct ibv_context *(*open)(struct ibv_device *);
	int (*close)(struct ibv_context *);
	int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
};

static int
facts_ibv_load(struct facts_ibv *v)
{
	memset(v, 0, sizeof *v);
	if ((v->h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL)) == NULL)
		return -1;
	*(void **)&v->get_list = dlsym(v->h, "ibv_get_device_list");
	*(void **)&v->free_list = dlsym(v->h, "ibv_free_device_list");
	*(void **)&v->name = dlsym(v->h, "ibv_get_device_name");
	*(void **)&v->open = dlsym(v->h, "ibv_open_device");
	*(void **)&v->close = dlsym(v->h, "ibv_close_device");
	/* The exported function (the header's macro wraps it): it fills the old layout. */
	*(void **)&v->query_port = dlsym(v->h, "ibv_query_port");
	if (!v->get_list || !v->free_list || !v->name || !v->open || !v->close ||
	    !v->query_port) {
		dlclose(v->h);
		return -1;
	}
	return 0;
}

static int
facts_mtu_bytes(int m)
{
	return m >= 1 && m <= 5 ? 128 << m : 0;
}

/* Active and max MTU of every port, from the verbs library. */
static void
facts_rdma_verbs(struct facts *f)
{
	struct facts_ibv v;
	struct ibv_device **list;
	int n = 0;

	if (facts_ibv_load(&v) != 0)
		return;
	if ((list = v.get_list(&n)) != NULL) {
		for (int i = 0; i < n; i++) {
			struct ibv_context *ctx = v.open(list[i]);
			char key[FACTS_KEY_MAX];

			for (int p = 1; ctx != NULL && p <= 8; p++) {
				struct ibv_port_attr pa;

				memset(&pa, 0, sizeof pa);
				if (v.query_port(ctx, (uint8_t)p, &pa) != 0)
					break;
				snprintf(key, sizeof key, "rdma.%s.%d.mtu", v.name(list[i]), p);
				facts_add(f, key, "%d (max %d)", facts_mtu_bytes(pa.active_mtu),
				    facts_mtu_bytes(pa.max_mtu));
			}
			if (ctx != NULL)
				v.close(ctx);
		}
		v.free_list(list);
	}
	dlclose(v.h);
}
#endif

void
facts_read_rdma(struct facts *f, const struct facts_roots *r)
{
	static const char *const files[] = { "state", "phys_state", "rate", "link_layer",
	    "gids/0" };
	static const char *const keys[] = { "state", "phys_state", "rate", "link_layer", "gid0" };
	char **devs, path[512], v[256], key[FACTS_KEY_MAX];
	int n = facts__list(r->sys, "/sys/class/infiniband", &devs);

	if (n <= 0) {
		facts_skip(f, "rdma", "no RDMA devices (/sys/class/infiniband)");
		facts__free_names(devs, n > 0 ? n : 0);
		return;
	}
	facts_add(f, "rdma.count", "%d", n);
	for (int i = 0; i < n; i++) {
		char **ports;
		int np;

		snprintf(path, sizeof path, "/sys/class/infiniband/%s/fw_ver", devs[i]);
		snprintf(key, sizeof key, "rdma.%s.fw", devs[i]);
		if (facts__read(r->sys, path, v, sizeof v) >= 0)
			facts_add(f, key, "%s", v);
		else
			facts_skip(f, key, "no fw_ver");
		snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports", devs[i]);
		np = facts__list(r->sys, path, &ports);
		for (int p = 0; p < np; p++) {
			for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
				snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%s/%s",
				    devs[i], ports[p], files[k]);
				snprintf(key, sizeof key, "rdma.%s.%s.%s", devs[i], ports[p], keys[k]);
				if (facts__read(r->sys, path, v, sizeof v) >= 0)
					facts_add(f, key, "%s", v);
				else
					facts_skip(f, key, "cannot read %s", path);
			}
		}
		facts__free_names(ports, np > 0 ? np : 0);
	}
	facts__free_names(devs, n);
#ifdef COLL_HAVE_IBVERBS
	if (r->sys == NULL)
		facts_rdma_verbs(f);
#endif
}
