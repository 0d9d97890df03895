/*
 * Network interfaces from sysfs: MTU, speed, state and carrier changes. An
 * MTU that differs between hosts drops or fragments the large frames NCCL's
 * socket transport and RoCE send; carrier changes count a flapping link.
 */
#include <stdio.h>
#include <string.h>

#include "facts.h"

void
facts_read_net(struct facts *f, const struct facts_roots *r)
{
	static const char *const files[] = { "mtu", "speed", "operstate", "carrier_changes" };
	static const char *const keys[] = { "mtu", "speed", "state", "carrier_changes" };
	char **ifs, path[512], v[64], key[FACTS_KEY_MAX];
	int n = facts__list(r->sys, "/sys/class/net", &ifs), shown = 0;

	for (int i = 0; i < n; i++) {
		if (strcmp(ifs[i], "lo") == 0 || strlen(ifs[i]) > 32)
			continue;
		shown++;
		for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
			snprintf(path, sizeof path, "/sys/class/net/%s/%s", ifs[i], files[k]);
			snprintf(key, sizeof key, "net.%s.%s", ifs[i], keys[k]);
			/* Virtual links have no speed: reading it fails with EINVAL. */
			if (facts__read(r->sys, path, v, sizeof v) <= 0 || strcmp(v, "-1") == 0)
				facts_skip(f, key, "not reported for %s", ifs[i]);
			else if (k == 1)
				facts_add(f, key, "%s Mb/s", v);
			else
				facts_add(f, key, "%s", v);
		}
	}
	if (shown == 0)
		facts_skip(f, "net", "no network interface besides lo");
	facts__free_names(ifs, n > 0 ? n : 0);
}
