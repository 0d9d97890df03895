/*
 * PCIe facts of the devices collectives run over (NVIDIA GPUs, network and
 * InfiniBand adapters), from sysfs: the link's current generation and width
 * against its maximum, and ACS on the bridges above each device. ACS
 * redirects peer-to-peer traffic up to the root complex, which breaks or
 * slows GPUDirect between a GPU and its NIC (NCCL's docs ask for it off).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "facts.h"
#include "plat_file.h"

#define PCI_ACS_ID 0x000d
#define PCI_ACS_RR 0x04		/* P2P request redirect */
#define PCI_ACS_CR 0x08		/* P2P completion redirect */
#define PCI_ACS_EC 0x20		/* P2P egress control */

/* "gpu", "nic" or "ib" for the devices that matter; NULL for the rest. */
static const char *
facts_pci_kind(const char *root, const char *dev)
{
	char path[512], cls[32], ven[32];
	unsigned long c;

	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/class", dev);
	if (plat_file_text(root, path, cls, sizeof cls) < 0)
		return NULL;
	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/vendor", dev);
	if (plat_file_text(root, path, ven, sizeof ven) < 0)
		return NULL;
	c = strtoul(cls, NULL, 16) >> 8;
	if ((c == 0x0300 || c == 0x0302) && strcmp(ven, "0x10de") == 0)
		return "gpu";
	if (c == 0x0200)
		return "nic";
	if (c == 0x0207)
		return "ib";
	return NULL;
}

static int
facts_pci_gen(const char *speed)
{
	double gt = strtod(speed, NULL);

	return gt >= 64 ? 6 : gt >= 32 ? 5 : gt >= 16 ? 4 : gt >= 8 ? 3 : gt >= 5 ? 2 :
	    gt >= 2.5 ? 1 : 0;
}

static void
facts_pci_link(struct facts *f, const char *root, const char *dev, const char *which,
    const char *key)
{
	char path[512], speed[64], width[32];

	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s_link_speed", dev, which);
	if (plat_file_text(root, path, speed, sizeof speed) < 0) {
		facts_skip(f, key, "no %s_link_speed in sysfs", which);
		return;
	}
	snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s_link_width", dev, which);
	if (plat_file_text(root, path, width, sizeof width) < 0)
		snprintf(width, sizeof width, "?");
	if (facts_pci_gen(speed) == 0)
		facts_skip(f, key, "link speed '%s' unknown", speed);
	else
		facts_add(f, key, "gen%d x%s", facts_pci_gen(speed), width);
}

/* The ACS control bits of a bridge from its config space; -1 when unreadable, 0 without ACS. */
static int
facts_pci_acs(const char *dir)
{
	char path[PATH_MAX + 16];
	uint8_t cfg[4096];
	ssize_t n;
	int fd, off = 0x100, hops = 0;

	snprintf(path, sizeof path, "%s/config", dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, cfg, sizeof cfg);
	close(fd);
	/* Only root reads past the first 64 bytes; the extended capabilities start at 256. */
	if (n < 0x104)
		return -1;
	while (off >= 0x100 && off + 8 <= n && hops++ < 64) {
		uint32_t h = (uint32_t)cfg[off] | (uint32_t)cfg[off + 1] << 8 |
		    (uint32_t)cfg[off + 2] << 16 | (uint32_t)cfg[off + 3] << 24;

		if (h == 0 || h == 0xffffffffu)
			return 0;
		if ((h & 0xffff) == PCI_ACS_ID)
			return cfg[off + 6] | cfg[off + 7] << 8;
		off = (int)(h >> 20) & 0xffc;
	}
	return 0;
}

static int
facts_is_bdf(const char *s, size_t len)
{
	return len == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.';
}

/* Walk the bridges from the root port down to dev; name the first with ACS redirecting. */
static void
facts_pci_acs_path(struct facts *f, const char *root, const char *dev, const char *key)
{
	char link[PATH_MAX], real[PATH_MAX], dir[PATH_MAX];
	int unreadable = 0, bridges = 0;

	snprintf(dir, sizeof dir, "/sys/bus/pci/devices/%s", dev);
	if (plat_file_path(root, dir, link, sizeof link) != 0 || realpath(link, real) == NULL) {
		facts_skip(f, key, "cannot resolve %s", link);
		return;
	}
	for (char *p = strchr(real + 1, '/'); p != NULL; p = strchr(p + 1, '/')) {
		char *next = strchr(p + 1, '/');
		size_t len = next != NULL ? (size_t)(next - p - 1) : strlen(p + 1);
		int ctrl;

		if (next == NULL || !facts_is_bdf(p + 1, len))
			continue;	/* not a bridge, or dev itself */
		snprintf(dir, sizeof dir, "%.*s", (int)(next - real), real);
		bridges++;
		if ((ctrl = facts_pci_acs(dir)) < 0)
			unreadable++;
		else if (ctrl & (PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC)) {
			facts_add(f, key, "on at %.*s (control 0x%04x)", (int)len, p + 1, ctrl);
			return;
		}
	}
	if (bridges == 0)
		facts_add(f, key, "off (no bridge above)");
	else if (unreadable)
		facts_skip(f, key, "%d bridges' config space not readable (needs root)",
		    unreadable);
	else
		facts_add(f, key, "off");
}

void
facts_read_pci(struct facts *f, const struct facts_roots *r)
{
	char **devs, key[FACTS_KEY_MAX];
	int n = plat_file_list(r->root, "/sys/bus/pci/devices", PLAT_FILE_LIST_ALL, &devs);
	int found = 0;

	for (int i = 0; i < n; i++) {
		const char *kind = facts_pci_kind(r->root, devs[i]);
		char ids[64] = "", path[512], v[32];

		if (kind == NULL)
			continue;
		found++;
		snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/vendor", devs[i]);
		if (plat_file_text(r->root, path, v, sizeof v) > 2)
			snprintf(ids, sizeof ids, "%s", v + 2);
		snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/device", devs[i]);
		if (plat_file_text(r->root, path, v, sizeof v) > 2)
			snprintf(ids + strlen(ids), sizeof ids - strlen(ids), ":%s", v + 2);
		snprintf(key, sizeof key, "pci.%s.kind", devs[i]);
		facts_add(f, key, "%s %s", kind, ids);
		snprintf(key, sizeof key, "pci.%s.link", devs[i]);
		facts_pci_link(f, r->root, devs[i], "current", key);
		snprintf(key, sizeof key, "pci.%s.link_max", devs[i]);
		facts_pci_link(f, r->root, devs[i], "max", key);
		snprintf(key, sizeof key, "pci.%s.acs", devs[i]);
		facts_pci_acs_path(f, r->root, devs[i], key);
	}
	if (n < 0)
		facts_skip(f, "pci", "no /sys/bus/pci/devices");
	else if (found == 0)
		facts_skip(f, "pci", "no GPU or network adapter on PCI");
	plat_file_list_free(devs, n > 0 ? n : 0);
}
