/*
 * RDMA devices: per port, the state, physical state, rate, link layer and
 * first GID from sysfs (what ibstat shows), the firmware, and the active MTU
 * from libibverbs (sysfs has none), plat's, loaded at run time so hosts
 * without rdma-core still run. The header is needed at build time only.
 */
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "facts.h"
#include "plat_file.h"
#include "plat_ibv.h"

#ifdef COLL_HAVE_IBVERBS
#include <infiniband/verbs.h>

static int
facts_mtu_bytes(int m)
{
	return m >= 1 && m <= 5 ? 128 << m : 0;
}

/* Active and max MTU of every port, from the verbs library. */
static void
facts_rdma_verbs(struct facts *f)
{
	const struct plat_ibv *v;
	struct ibv_device **list;
	char why[512];
	int n = 0;

	if (plat_ibv_load(&v, why, sizeof why) != COLL_OK)
		return;
	if ((list = v->get_list(&n)) != NULL) {
		for (int i = 0; i < n; i++) {
			struct ibv_context *ctx = v->open(list[i]);
			char key[FACTS_KEY_MAX];

			for (int p = 1; ctx != NULL && p <= 8; p++) {
				struct ibv_port_attr pa;

				memset(&pa, 0, sizeof pa);
				if (v->query_port(ctx, (uint8_t)p, &pa) != 0)
					break;
				snprintf(key, sizeof key, "rdma.%s.%d.mtu", v->name(list[i]), p);
				facts_add(f, key, "%d (max %d)", facts_mtu_bytes(pa.active_mtu),
				    facts_mtu_bytes(pa.max_mtu));
			}
			if (ctx != NULL)
				v->close(ctx);
		}
		v->free_list(list);
	}
}
#endif

void
facts_read_rdma(struct facts *f, const struct facts_roots *r)
{
	static const char *const files[] = { "state", "phys_state", "rate", "link_layer",
	    "gids/0" };
	static const char *const keys[] = { "state", "phys_state", "rate", "link_layer", "gid0" };
	char **devs, path[512], v[256], key[FACTS_KEY_MAX];
	int n = plat_file_list(r->root, "/sys/class/infiniband", PLAT_FILE_LIST_ALL, &devs);

	if (n <= 0) {
		facts_skip(f, "rdma", "no RDMA devices (/sys/class/infiniband)");
		plat_file_list_free(devs, n > 0 ? n : 0);
		return;
	}
	facts_add(f, "rdma.count", "%d", n);
	for (int i = 0; i < n; i++) {
		char **ports;
		int np;

		snprintf(path, sizeof path, "/sys/class/infiniband/%s/fw_ver", devs[i]);
		snprintf(key, sizeof key, "rdma.%s.fw", devs[i]);
		if (plat_file_text(r->root, path, v, sizeof v) >= 0)
			facts_add(f, key, "%s", v);
		else
			facts_skip(f, key, "no fw_ver");
		snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports", devs[i]);
		np = plat_file_list(r->root, path, PLAT_FILE_LIST_ALL, &ports);
		for (int p = 0; p < np; p++) {
			for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
				snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%s/%s",
				    devs[i], ports[p], files[k]);
				snprintf(key, sizeof key, "rdma.%s.%s.%s", devs[i], ports[p], keys[k]);
				if (plat_file_text(r->root, path, v, sizeof v) >= 0)
					facts_add(f, key, "%s", v);
				else
					facts_skip(f, key, "cannot read %s", path);
			}
		}
		plat_file_list_free(ports, np > 0 ? np : 0);
	}
	plat_file_list_free(devs, n);
#ifdef COLL_HAVE_IBVERBS
	if (r->root == NULL)
		facts_rdma_verbs(f);
#endif
}
