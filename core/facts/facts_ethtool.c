/*
 * The pause, PFC, ECN and CNP statistics of each interface facts_read_net
 * named, as "ctr.eth.<if>.<name>" counters for collcheck to judge against
 * the host's baseline (cmd/collcheck/health_ctr.c). The host's own come
 * through the SIOCETHTOOL ioctl (ETHTOOL_GSSET_INFO, GSTRINGS, GSTATS: no
 * privilege needed), the same numbers `ethtool -S` prints. Under a fixture
 * root the ioctl would read the host's interfaces, not the tree's, so the
 * tree gives `ethtool -S <if>` text as ROOT/ethtool/<if> instead (an
 * interface without that file has no statistics); text that is not that
 * is refused as "ctr.ethtool.<if>".
 */
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "facts_ethtool.h"
#include "plat_file.h"
#include "xmalloc.h"

#define ETHT_STATS_MAX 32768	/* a driver's statistics read at most (mlx5: thousands) */
#define ETHT_IFS 256		/* interfaces looked at */
#define ETHT_TEXT_MAX (1u << 20)	/* bytes of a fixture's text */

static int
facts_ethtool_ioctl(int fd, const char *ifname, void *data)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof ifr);
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	ifr.ifr_data = data;
	return ioctl(fd, SIOCETHTOOL, &ifr);
}

/* How many statistics the driver has; 0 when none (or it has no ethtool statistics). */
static long
facts_ethtool_count(int fd, const char *ifname)
{
	uint64_t buf[4] = { 0 };
	struct ethtool_sset_info *si = (struct ethtool_sset_info *)buf;

	si->cmd = ETHTOOL_GSSET_INFO;
	si->sset_mask = 1ULL << ETH_SS_STATS;
	if (facts_ethtool_ioctl(fd, ifname, si) != 0 || !(si->sset_mask & (1ULL << ETH_SS_STATS)))
		return 0;
	return (long)si->data[0];
}

/*
 * The kernel writes as many names and numbers as the driver has now, not as
 * many as the buffer holds: room for twice the count guards against a count
 * that grew in between (channels added), and a count that changed is no read.
 */
static int
facts_ethtool_kept(int fd, const char *ifname, long count, struct etht_stat *out)
{
	size_t room = (size_t)count * 2 + 64;
	struct ethtool_gstrings *gs = xcalloc(1, sizeof *gs + room * ETH_GSTRING_LEN);
	struct ethtool_stats *st = xcalloc(1, sizeof *st + room * sizeof(uint64_t));
	int n = 0;

	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = (uint32_t)count;
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = (uint32_t)count;
	if (facts_ethtool_ioctl(fd, ifname, gs) != 0 || gs->len != (uint32_t)count ||
	    facts_ethtool_ioctl(fd, ifname, st) != 0 || st->n_stats != (uint32_t)count)
		goto out;
	for (long i = 0; i < count && n < ETHT_KEEP; i++) {
		const char *name = (const char *)gs->data + i * ETH_GSTRING_LEN;
		size_t len = strnlen(name, ETH_GSTRING_LEN);

		if (!facts_ethtool_wanted(name, len))
			continue;
		memcpy(out[n].name, name, len);
		out[n].name[len] = '\0';
		out[n++].v = st->data[i];
	}
out:
	free(gs);
	free(st);
	return n;
}

static void
facts_ethtool_host(struct facts *f, int fd, const char *ifname)
{
	struct etht_stat s[ETHT_KEEP];
	long count;

	if (strlen(ifname) >= IFNAMSIZ || (count = facts_ethtool_count(fd, ifname)) <= 0)
		return;
	if (count > ETHT_STATS_MAX) {
		char key[FACTS_KEY_MAX];

		snprintf(key, sizeof key, "ctr.ethtool.%s", ifname);
		facts_skip(f, key, "%ld ethtool statistics, more than coll reads (%d)", count,
		    ETHT_STATS_MAX);
		return;
	}
	facts_ethtool_add(f, ifname, s, facts_ethtool_kept(fd, ifname, count, s));
}

static void
facts_ethtool_fixture(struct facts *f, const char *root, const char *ifname, char *buf)
{
	struct etht_stat s[ETHT_KEEP];
	char path[256], key[FACTS_KEY_MAX];
	ssize_t len;
	int n, line;

	snprintf(path, sizeof path, "/ethtool/%s", ifname);
	snprintf(key, sizeof key, "ctr.ethtool.%s", ifname);
	if ((len = plat_file_read(root, path, buf, ETHT_TEXT_MAX)) < 0)
		return;
	if ((size_t)len >= ETHT_TEXT_MAX - 1)
		facts_skip(f, key, "%s is longer than %u bytes", path, ETHT_TEXT_MAX - 1);
	else if ((n = facts_ethtool_parse(buf, (size_t)len, s, ETHT_KEEP, &line)) < 0)
		facts_skip(f, key, "%s is not `ethtool -S` text (line %d)", path, line);
	else
		facts_ethtool_add(f, ifname, s, n);
}

/* The interfaces of "net.<if>.mtu", copied first: adding facts moves f's array. */
static int
facts_ethtool_ifs(const struct facts *f, char (*ifs)[FACTS_KEY_MAX], int max)
{
	int n = 0;

	for (int i = 0; i < f->n && n < max; i++) {
		const char *k = f->v[i].key;
		size_t len = strlen(k);

		if (strncmp(k, "net.", 4) == 0 && len > 8 && strcmp(k + len - 4, ".mtu") == 0)
			snprintf(ifs[n++], FACTS_KEY_MAX, "%.*s", (int)(len - 8), k + 4);
	}
	return n;
}

void
facts_read_ethtool(struct facts *f, const struct facts_roots *r)
{
	char (*ifs)[FACTS_KEY_MAX] = xcalloc(ETHT_IFS, sizeof *ifs), *buf = NULL;
	int n = facts_ethtool_ifs(f, ifs, ETHT_IFS), fd = -1;

	if (r->root != NULL)
		buf = xmalloc(ETHT_TEXT_MAX);
	else if (n > 0)
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (int i = 0; i < n; i++)
		if (buf != NULL)
			facts_ethtool_fixture(f, r->root, ifs[i], buf);
		else if (fd >= 0)
			facts_ethtool_host(f, fd, ifs[i]);
	if (fd >= 0)
		close(fd);
	free(buf);
	free(ifs);
}
