/*
 * Interface selection with the COLL_SOCKET_IFNAME forms NCCL users know:
 * "eth" (prefix), "=eth0" (exact), "^docker,lo" (exclude prefixes),
 * "^=docker0" (exclude exact), several names separated by commas.
 */
#ifndef COLL_IFSEL_H
#define COLL_IFSEL_H

#include "net.h"

#define IFSEL_MAX 16

struct ifsel {
	int exclude;		/* "^": names are excluded, not required */
	int exact;		/* "=": names match whole, not as prefixes */
	int n;
	char names[IFSEL_MAX][32];
};

/* Parse a spec; COLL_EINVAL for an empty or over-long one. */
int ifsel_parse(struct ifsel *sel, const char *spec);
/* Does interface name match the selection? */
int ifsel_match(const struct ifsel *sel, const char *ifname);
/*
 * Find the first up interface matching spec with an address of family af
 * (AF_UNSPEC: IPv4 first). Writes the address (port 0) and interface name.
 */
int ifsel_pick(const char *spec, int af, struct net_addr *addr, char *ifname, size_t len);

#endif
