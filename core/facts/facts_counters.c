/*
 * Error counters, as facts for collcheck to compare with a baseline of the
 * same host: PCIe AER totals of every device (only those not zero, so a host
 * of hundreds of functions sends a handful), each RDMA port's link and
 * symbol error counters and, where the NIC has them (mlx5's hw_counters),
 * its RoCE congestion counters (ECN marks, CNPs), and a digest of each
 * port's GID table; the NICs' pause, PFC, ECN and CNP statistics
 * (facts_ethtool.c). "ctr.time" says when they were read, so a baseline
 * turns a difference into a rate. Keys start with "ctr.": collcheck never
 * compares them across hosts, where they differ by nature.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facts.h"
#include "facts_ethtool.h"
#include "plat_file.h"

#define CTR_DEVS 4096	/* PCI functions and RDMA devices looked at, at most */
#define CTR_GIDS 256	/* GID table entries read per port */

/* "TOTAL_ERR_COR 12" in an aer_dev_* file; -1 when absent. */
static long long
facts_ctr_aer_total(const char *root, const char *dev, const char *file, const char *name)
{
	char path[512], buf[2048], *p;

	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s", dev, file);
	if (plat_file_read(root, path, buf, sizeof buf) <= 0 || (p = strstr(buf, name)) == NULL)
		return -1;
	return strtoll(p + strlen(name), NULL, 10);
}

static void
facts_ctr_aer(struct facts *f, const struct facts_roots *r)
{
	static const char *const files[] = { "aer_dev_correctable", "aer_dev_nonfatal",
	    "aer_dev_fatal" };
	static const char *const totals[] = { "TOTAL_ERR_COR ", "TOTAL_ERR_NONFATAL ",
	    "TOTAL_ERR_FATAL " };
	static const char *const keys[] = { "correctable", "nonfatal", "fatal" };
	char **devs, key[FACTS_KEY_MAX];
	int n = plat_file_list(r->root, "/sys/bus/pci/devices", CTR_DEVS, &devs);

	for (int i = 0; i < n; i++)
		for (int k = 0; k < 3; k++) {
			long long v = facts_ctr_aer_total(r->root, devs[i], files[k], totals[k]);

			snprintf(key, sizeof key, "ctr.aer.%s.%s", devs[i], keys[k]);
			if (v > 0)
				facts_add(f, key, "%lld", v);
		}
	plat_file_list_free(devs, n > 0 ? n : 0);
}

/* FNV-1a over the port's GIDs that are set: a GID that changes, comes or goes changes it. */
static void
facts_ctr_gids(struct facts *f, const char *root, const char *base, const char *key)
{
	char path[512], gid[64];
	uint32_t h = 2166136261u;
	int set = 0;

	for (int g = 0; g < CTR_GIDS; g++) {
		snprintf(path, sizeof path, "%s/gids/%d", base, g);
		if (plat_file_text(root, path, gid, sizeof gid) <= 0 ||
		    strspn(gid, "0:") == strlen(gid))
			continue;
		set++;
		for (const char *p = path + strlen(base); *p != '\0'; p++)
			h = (h ^ (unsigned char)*p) * 16777619u;
		for (const char *p = gid; *p != '\0'; p++)
			h = (h ^ (unsigned char)*p) * 16777619u;
	}
	facts_add(f, key, "%d set, digest %08x", set, h);
}

static void
facts_ctr_port(struct facts *f, const char *root, const char *dev, const char *port)
{
	static const char *const files[] = { "counters/link_downed",
	    "counters/link_error_recovery", "counters/symbol_error", "counters/port_rcv_errors",
	    "hw_counters/np_cnp_sent", "hw_counters/np_ecn_marked_roce_packets",
	    "hw_counters/rp_cnp_handled" };
	char base[256], path[512], key[FACTS_KEY_MAX];
	uint64_t v;

	snprintf(base, sizeof base, "/sys/class/infiniband/%s/ports/%s", dev, port);
	for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
		snprintf(path, sizeof path, "%s/%s", base, files[k]);
		snprintf(key, sizeof key, "ctr.rdma.%s.%s.%s", dev, port, strchr(files[k], '/') + 1);
		if (plat_file_u64(root, path, &v) == 0)
			facts_add(f, key, "%llu", (unsigned long long)v);
	}
	snprintf(key, sizeof key, "ctr.gids.%s.%s", dev, port);
	facts_ctr_gids(f, root, base, key);
}

void
facts_read_counters(struct facts *f, const struct facts_roots *r)
{
	char **devs, path[512];
	int n = plat_file_list(r->root, "/sys/class/infiniband", CTR_DEVS, &devs);

	facts_add(f, "ctr.time", "%lld", (long long)time(NULL));
	facts_ctr_aer(f, r);
	for (int i = 0; i < n; i++) {
		char **ports;
		int np;

		snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports", devs[i]);
		np = plat_file_list(r->root, path, 64, &ports);
		for (int p = 0; p < np; p++)
			facts_ctr_port(f, r->root, devs[i], ports[p]);
		plat_file_list_free(ports, np > 0 ? np : 0);
	}
	plat_file_list_free(devs, n > 0 ? n : 0);
	facts_read_ethtool(f, r);
}
