/*
 * Network interfaces from sysfs: MTU, speed, state and carrier changes. An
 * MTU that differs between hosts drops or fragments the large frames NCCL's
 * socket transport and RoCE send; carrier changes count a flapping link.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "facts.h"
#include "plat_file.h"

/*
 * Links containers and virtual switches make, named after their endpoint
 * (veth4f2a1c, cali12ab): different on every host, they would only show as
 * differences. A netns host's own eth0 is kept.
 */
static int
facts_net_virtual(const char *name)
{
	static const char *const pats[] = { "lo", "veth*", "docker*", "br-*", "cali*", "cni*",
	    "flannel*", "vxlan*", "virbr*", "lxc*", "tap*", "tun*", "ifb*", "kube-*", "weave*",
	    "genev_sys_*", "vnet*" };

	for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
		if (fnmatch(pats[i], name, 0) == 0)
			return 1;
	return 0;
}

void
facts_read_net(struct facts *f, const struct facts_roots *r)
{
	static const char *const files[] = { "mtu", "speed", "operstate", "carrier_changes" };
	static const char *const keys[] = { "mtu", "speed", "state", "carrier_changes" };
	char **ifs, path[512], v[64], key[FACTS_KEY_MAX];
	int n = plat_file_list(r->root, "/sys/class/net", PLAT_FILE_LIST_ALL, &ifs), shown = 0;

	for (int i = 0; i < n; i++) {
		if (facts_net_virtual(ifs[i]) || strlen(ifs[i]) > 32)
			continue;
		shown++;
		for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
			snprintf(path, sizeof path, "/sys/class/net/%s/%s", ifs[i], files[k]);
			snprintf(key, sizeof key, "net.%s.%s", ifs[i], keys[k]);
			/* Virtual links have no speed: reading it fails with EINVAL. */
			if (plat_file_text(r->root, path, v, sizeof v) <= 0 || strcmp(v, "-1") == 0)
				facts_skip(f, key, "not reported for %s", ifs[i]);
			else if (k == 1)
				facts_add(f, key, "%s Mb/s", v);
			else
				facts_add(f, key, "%s", v);
		}
	}
	if (shown == 0)
		facts_skip(f, "net", "no network interface besides lo and virtual ones");
	plat_file_list_free(ifs, n > 0 ? n : 0);
}
