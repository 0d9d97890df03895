/* Pick the interface to listen on from the environment, as NCCL_SOCKET_IFNAME does. */
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "ifsel.h"

int
ifsel_parse(struct ifsel *sel, const char *spec)
{
	const char *p = spec, *comma;
	size_t len;

	memset(sel, 0, sizeof *sel);
	if (*p == '^') {
		sel->exclude = 1;
		p++;
	}
	if (*p == '=') {
		sel->exact = 1;
		p++;
	}
	while (*p != '\0') {
		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0 || len >= sizeof sel->names[0] || sel->n == IFSEL_MAX)
			return COLL_EINVAL;
		memcpy(sel->names[sel->n], p, len);
		sel->names[sel->n++][len] = '\0';
		p += len + (comma != NULL);
		if (comma != NULL && *p == '\0')
			return COLL_EINVAL;
	}
	return sel->n > 0 ? COLL_OK : COLL_EINVAL;
}

int
ifsel_match(const struct ifsel *sel, const char *ifname)
{
	int hit = 0;

	for (int i = 0; i < sel->n && !hit; i++) {
		if (sel->exact)
			hit = strcmp(ifname, sel->names[i]) == 0;
		else
			hit = strncmp(ifname, sel->names[i], strlen(sel->names[i])) == 0;
	}
	return sel->exclude ? !hit : hit;
}

static int
ifsel_scan(const struct ifsel *sel, int af, struct net_addr *addr, char *ifname, size_t len)
{
	struct ifaddrs *ifa, *it;
	int found = 0;

	if (getifaddrs(&ifa) == -1)
		return COLL_ESYS;
	for (it = ifa; it != NULL && !found; it = it->ifa_next) {
		if (it->ifa_addr == NULL || it->ifa_addr->sa_family != af ||
		    !(it->ifa_flags & IFF_UP) || !ifsel_match(sel, it->ifa_name))
			continue;
		memset(addr, 0, sizeof *addr);
		addr->len = af == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
		memcpy(&addr->ss, it->ifa_addr, addr->len);
		net_addr_set_port(addr, 0);
		snprintf(ifname, len, "%s", it->ifa_name);
		found = 1;
	}
	freeifaddrs(ifa);
	return found ? COLL_OK : COLL_ENOTFOUND;
}

int
ifsel_pick(const char *spec, int af, struct net_addr *addr, char *ifname, size_t len)
{
	struct ifsel sel;
	int r;

	if (ifsel_parse(&sel, spec) != COLL_OK)
		return COLL_EINVAL;
	if (af != AF_UNSPEC)
		return ifsel_scan(&sel, af, addr, ifname, len);
	r = ifsel_scan(&sel, AF_INET, addr, ifname, len);
	if (r == COLL_ENOTFOUND)
		r = ifsel_scan(&sel, AF_INET6, addr, ifname, len);
	return r;
}
