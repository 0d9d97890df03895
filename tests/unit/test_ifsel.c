/*
 * Interface selection: the NCCL_SOCKET_IFNAME spec forms (prefix, =exact,
 * ^exclude, ^=exact-exclude, comma lists), the specs that must be refused,
 * and picking an address from the interfaces of this host.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "err.h"
#include "ifsel.h"
#include "net.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *spec;
	const char *ifname;
	int match;
} match_rows[] = {
	/* prefix */
	{ "eth", "eth0", 1 },
	{ "eth", "eth", 1 },
	{ "eth", "eth10", 1 },
	{ "eth", "et", 0 },
	{ "eth", "veth0", 0 },
	{ "eth", "ETH0", 0 },
	{ "eth", "", 0 },
	{ "eth0", "eth0", 1 },
	{ "eth0", "eth01", 1 },
	{ "eth0", "eth1", 0 },
	{ "ib", "ib0", 1 },
	{ "ib", "eth0", 0 },
	/* =exact */
	{ "=eth0", "eth0", 1 },
	{ "=eth0", "eth01", 0 },
	{ "=eth0", "eth", 0 },
	{ "=eth0", "veth0", 0 },
	{ "=lo", "lo", 1 },
	{ "=lo", "lo0", 0 },
	/* ^exclude (prefixes) */
	{ "^docker", "docker0", 0 },
	{ "^docker", "docker", 0 },
	{ "^docker", "eth0", 1 },
	{ "^docker", "dock", 1 },
	{ "^lo", "lo", 0 },
	{ "^lo", "loopback1", 0 },
	{ "^lo", "eth0", 1 },
	/* ^=exact-exclude */
	{ "^=docker0", "docker0", 0 },
	{ "^=docker0", "docker01", 1 },
	{ "^=docker0", "docker", 1 },
	{ "^=docker0", "eth0", 1 },
	/* comma lists */
	{ "eth,ib", "eth0", 1 },
	{ "eth,ib", "ib1", 1 },
	{ "eth,ib", "lo", 0 },
	{ "eth,ib", "enp3s0", 0 },
	{ "=eth0,=eth1", "eth1", 0 },	/* "=" applies to the whole list, once */
	{ "=eth0,eth1", "eth1", 1 },
	{ "=eth0,eth1", "eth0", 1 },
	{ "=eth0,eth1", "eth10", 0 },
	{ "^docker,lo", "docker0", 0 },
	{ "^docker,lo", "lo", 0 },
	{ "^docker,lo", "eth0", 1 },
	{ "^docker,lo", "virbr0", 1 },
	{ "^=docker0,lo", "docker0", 0 },
	{ "^=docker0,lo", "lo", 0 },
	{ "^=docker0,lo", "lo0", 1 },
	{ "^=docker0,lo", "docker1", 1 },
	{ "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", "p1", 1 },	/* IFSEL_MAX names */
	{ "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", "q1", 0 },
	{ "0123456789012345678901234567890", "0123456789012345678901234567890", 1 },
};

static const char *const bad_specs[] = {
	"",
	",",
	",,",
	"a,",
	",a",
	"a,,b",
	"eth0,",
	"^",
	"=",
	"^=",
	"^,",
	"=,",
	"^=eth0,",
	"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q",			/* IFSEL_MAX + 1 names */
	"01234567890123456789012345678901",			/* 32 characters */
	"=01234567890123456789012345678901",
	"eth0,01234567890123456789012345678901234567890123",	/* long second name */
};

static void
test_ifsel_match(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(match_rows); i++) {
		struct ifsel sel;
		int m;

		assert_int_equal(ifsel_parse(&sel, match_rows[i].spec), COLL_OK);
		m = ifsel_match(&sel, match_rows[i].ifname);
		if (!m != !match_rows[i].match)
			fail_msg("spec \"%s\" ifname \"%s\": match %d, want %d",
			    match_rows[i].spec, match_rows[i].ifname, m, match_rows[i].match);
	}
}

static void
test_ifsel_parse_fields(void **state)
{
	static const struct {
		const char *spec;
		int exclude, exact, n;
		const char *first, *last;
	} rows[] = {
		{ "eth", 0, 0, 1, "eth", "eth" },
		{ "=eth0", 0, 1, 1, "eth0", "eth0" },
		{ "^docker,lo", 1, 0, 2, "docker", "lo" },
		{ "^=docker0,br-1,lo", 1, 1, 3, "docker0", "lo" },
		{ "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", 0, 0, IFSEL_MAX, "a", "p" },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		struct ifsel sel;

		assert_int_equal(ifsel_parse(&sel, rows[i].spec), COLL_OK);
		assert_int_equal(sel.exclude, rows[i].exclude);
		assert_int_equal(sel.exact, rows[i].exact);
		assert_int_equal(sel.n, rows[i].n);
		assert_string_equal(sel.names[0], rows[i].first);
		assert_string_equal(sel.names[sel.n - 1], rows[i].last);
	}
}

static void
test_ifsel_parse_errors(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(bad_specs); i++) {
		struct ifsel sel;
		int r = ifsel_parse(&sel, bad_specs[i]);

		if (r != COLL_EINVAL)
			fail_msg("ifsel_parse(\"%s\") = %d, want COLL_EINVAL", bad_specs[i], r);
	}
}

/* Every host has a loopback interface "lo" with 127.0.0.1 or ::1. */
static void
test_ifsel_pick_loopback(void **state)
{
	static const struct {
		const char *spec;
		int af;
	} rows[] = {
		{ "lo", AF_UNSPEC }, { "=lo", AF_UNSPEC }, { "lo,nonexistent", AF_UNSPEC },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		struct net_addr addr;
		char ifname[IF_NAMESIZE + 1] = "", host[NET_ADDRSTR_LEN];

		assert_int_equal(ifsel_pick(rows[i].spec, rows[i].af, &addr, ifname,
		    sizeof ifname), COLL_OK);
		assert_string_equal(ifname, "lo");
		assert_true(net_addr_is_loopback(&addr));
		assert_int_equal(net_addr_port(&addr), 0);
		net_addr_host(&addr, host, sizeof host);
		if (strcmp(host, "127.0.0.1") != 0 && strcmp(host, "::1") != 0)
			fail_msg("lo address %s", host);
	}
}

/* AF_UNSPEC prefers IPv4: lo has 127.0.0.1 on every Linux host with IPv4. */
static void
test_ifsel_pick_family(void **state)
{
	struct net_addr addr;
	char ifname[IF_NAMESIZE + 1], host[NET_ADDRSTR_LEN];
	int r;

	assert_int_equal(ifsel_pick("=lo", AF_INET, &addr, ifname, sizeof ifname), COLL_OK);
	assert_int_equal(addr.ss.ss_family, AF_INET);
	assert_int_equal(addr.len, sizeof(struct sockaddr_in));
	net_addr_host(&addr, host, sizeof host);
	assert_string_equal(host, "127.0.0.1");

	assert_int_equal(ifsel_pick("=lo", AF_UNSPEC, &addr, ifname, sizeof ifname), COLL_OK);
	assert_int_equal(addr.ss.ss_family, AF_INET);

	/* IPv6 may be disabled; when lo has an address it is ::1. */
	r = ifsel_pick("=lo", AF_INET6, &addr, ifname, sizeof ifname);
	assert_true(r == COLL_OK || r == COLL_ENOTFOUND);
	if (r == COLL_OK) {
		assert_int_equal(addr.ss.ss_family, AF_INET6);
		assert_int_equal(addr.len, sizeof(struct sockaddr_in6));
		net_addr_host(&addr, host, sizeof host);
		assert_string_equal(host, "::1");
	}
}

/* Whether an interface other than lo is up with an IPv4 or IPv6 address. */
static int
other_interface_up(void)
{
	struct ifaddrs *ifa;
	int found = 0;

	assert_int_equal(getifaddrs(&ifa), 0);
	for (struct ifaddrs *it = ifa; it != NULL; it = it->ifa_next)
		if (it->ifa_addr != NULL && (it->ifa_addr->sa_family == AF_INET ||
		    it->ifa_addr->sa_family == AF_INET6) && (it->ifa_flags & IFF_UP) &&
		    strcmp(it->ifa_name, "lo") != 0)
			found = 1;
	freeifaddrs(ifa);
	return found;
}

/* An exclusion of lo never picks lo, and picks another interface when there is one. */
static void
test_ifsel_pick_exclude(void **state)
{
	struct net_addr addr;
	char ifname[IF_NAMESIZE + 1] = "";
	int r = ifsel_pick("^=lo", AF_UNSPEC, &addr, ifname, sizeof ifname);

	if (other_interface_up()) {
		assert_int_equal(r, COLL_OK);
		assert_string_not_equal(ifname, "lo");
	} else {
		assert_int_equal(r, COLL_ENOTFOUND);
	}
}

static void
test_ifsel_pick_not_found(void **state)
{
	static const struct {
		const char *spec;
		int af;
	} rows[] = {
		{ "=nonexistent0", AF_UNSPEC },
		{ "=nonexistent0", AF_INET },
		{ "=nonexistent0", AF_INET6 },
		{ "nonexistent", AF_UNSPEC },
		{ "=nonexistent0,=nonexistent1", AF_UNSPEC },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		struct net_addr addr;
		char ifname[IF_NAMESIZE + 1];

		assert_int_equal(ifsel_pick(rows[i].spec, rows[i].af, &addr, ifname,
		    sizeof ifname), COLL_ENOTFOUND);
	}
}

static void
test_ifsel_pick_bad_spec(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(bad_specs); i++) {
		struct net_addr addr;
		char ifname[IF_NAMESIZE + 1];

		assert_int_equal(ifsel_pick(bad_specs[i], AF_UNSPEC, &addr, ifname,
		    sizeof ifname), COLL_EINVAL);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ifsel_match),
		cmocka_unit_test(test_ifsel_parse_fields),
		cmocka_unit_test(test_ifsel_parse_errors),
		cmocka_unit_test(test_ifsel_pick_loopback),
		cmocka_unit_test(test_ifsel_pick_family),
		cmocka_unit_test(test_ifsel_pick_exclude),
		cmocka_unit_test(test_ifsel_pick_not_found),
		cmocka_unit_test(test_ifsel_pick_bad_spec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
