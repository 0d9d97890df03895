/*
 * Unique ids: the printable form round-trips, and the parser (which reads an
 * environment variable, untrusted text) refuses every malformed id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "net.h"
#include "uid.h"

#define JOB "0123456789abcdef"
#define SECRET "00112233445566778899aabbccddeeff"
#define PREFIX "coll1:" JOB ":" SECRET

static const uint8_t secret_bytes[UID_SECRET_LEN] = {
	0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
	0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
};

/* Well-formed ids: parsed fields, and the canonical form uid_format gives back. */
static const struct {
	const char *in;
	uint64_t jobid;
	const char *addr;	/* net_addr_format of the root */
	const char *canon;	/* uid_format of the parsed id */
} good_ids[] = {
	{ PREFIX "@127.0.0.1:5000", 0x0123456789abcdefull, "127.0.0.1:5000",
	  PREFIX "@127.0.0.1:5000" },
	{ PREFIX "@10.1.2.3:1", 0x0123456789abcdefull, "10.1.2.3:1", PREFIX "@10.1.2.3:1" },
	{ PREFIX "@192.168.0.1:65535", 0x0123456789abcdefull, "192.168.0.1:65535",
	  PREFIX "@192.168.0.1:65535" },
	{ PREFIX "@[::1]:6000", 0x0123456789abcdefull, "[::1]:6000", PREFIX "@[::1]:6000" },
	{ PREFIX "@[fd00::2]:443", 0x0123456789abcdefull, "[fd00::2]:443",
	  PREFIX "@[fd00::2]:443" },
	{ PREFIX "@[2001:db8::a:b:c]:7", 0x0123456789abcdefull, "[2001:db8::a:b:c]:7",
	  PREFIX "@[2001:db8::a:b:c]:7" },
	/* Upper-case hex is read; the canonical form is lower case. */
	{ "coll1:0123456789ABCDEF:00112233445566778899AABBCCDDEEFF@127.0.0.1:80",
	  0x0123456789abcdefull, "127.0.0.1:80", PREFIX "@127.0.0.1:80" },
	{ "coll1:ffffffffffffffff:" SECRET "@127.0.0.1:80", 0xffffffffffffffffull,
	  "127.0.0.1:80", "coll1:ffffffffffffffff:" SECRET "@127.0.0.1:80" },
	{ "coll1:0000000000000000:" SECRET "@127.0.0.1:80", 0, "127.0.0.1:80",
	  "coll1:0000000000000000:" SECRET "@127.0.0.1:80" },
};

/* Malformed ids: every one must give COLL_EUID. */
static const char *const bad_ids[] = {
	"",
	"coll",
	"coll1",
	"coll1:",
	"coll:" JOB ":" SECRET "@127.0.0.1:80",			/* no version */
	"colx1:" JOB ":" SECRET "@127.0.0.1:80",		/* bad prefix */
	"COLL1:" JOB ":" SECRET "@127.0.0.1:80",
	"coll-1:" JOB ":" SECRET "@127.0.0.1:80",
	"coll1x:" JOB ":" SECRET "@127.0.0.1:80",
	" coll1:" JOB ":" SECRET "@127.0.0.1:80",		/* leading junk */
	/* missing parts */
	"coll1:" JOB,
	"coll1:" JOB ":",
	"coll1:" JOB ":" SECRET,
	"coll1:" JOB ":" SECRET "@",
	"coll1:" SECRET "@127.0.0.1:80",			/* no job id */
	"coll1::" SECRET "@127.0.0.1:80",
	"coll1:" JOB "::@127.0.0.1:80",				/* no secret */
	"coll1:" JOB ":" SECRET "@127.0.0.1",			/* no port */
	"coll1:" JOB ":" SECRET "@127.0.0.1:",
	"coll1:" JOB ":" SECRET "@:80",				/* empty host */
	"coll1:" JOB ":" SECRET "@[]:80",
	"coll1:" JOB ":" SECRET "@[::1]",
	"coll1:" JOB ":" SECRET "@[::1]:",
	"coll1:" JOB ":" SECRET "@[::1:80",			/* no ']' */
	"coll1:" JOB ":" SECRET "@::1]:80",
	/* bad hex */
	"coll1:0123456789abcdeg:" SECRET "@127.0.0.1:80",
	"coll1:0123456789abcde:" SECRET "@127.0.0.1:80",	/* 15 digits */
	"coll1:0123456789abcdef0:" SECRET "@127.0.0.1:80",	/* 17 digits */
	"coll1: 123456789abcdef:" SECRET "@127.0.0.1:80",
	"coll1:-123456789abcdef:" SECRET "@127.0.0.1:80",
	"coll1:" JOB ":00112233445566778899aabbccddeefg@127.0.0.1:80",
	"coll1:" JOB ":0011223344556677889 aabbccddeeff@127.0.0.1:80",
	/* short and long secrets */
	"coll1:" JOB ":00112233445566778899aabbccddee@127.0.0.1:80",
	"coll1:" JOB ":00112233445566778899aabbccddeef@127.0.0.1:80",
	"coll1:" JOB ":00112233445566778899aabbccddeeff0@127.0.0.1:80",
	"coll1:" JOB ":" SECRET "00@127.0.0.1:80",
	/* no '@' */
	"coll1:" JOB ":" SECRET "127.0.0.1:80",
	"coll1:" JOB ":" SECRET ":127.0.0.1:80",
	/* bad ports */
	"coll1:" JOB ":" SECRET "@127.0.0.1:0",
	"coll1:" JOB ":" SECRET "@127.0.0.1:65536",
	"coll1:" JOB ":" SECRET "@127.0.0.1:99999999999999999999999",
	"coll1:" JOB ":" SECRET "@127.0.0.1:-1",
	"coll1:" JOB ":" SECRET "@127.0.0.1:+80",
	"coll1:" JOB ":" SECRET "@127.0.0.1: 80",
	"coll1:" JOB ":" SECRET "@127.0.0.1:0x50",
	"coll1:" JOB ":" SECRET "@[::1]:0",
	"coll1:" JOB ":" SECRET "@[::1]:65536",
	/* trailing junk */
	"coll1:" JOB ":" SECRET "@127.0.0.1:80x",
	"coll1:" JOB ":" SECRET "@127.0.0.1:80 ",
	"coll1:" JOB ":" SECRET "@127.0.0.1:80\n",
	"coll1:" JOB ":" SECRET "@127.0.0.1:80:81",
	"coll1:" JOB ":" SECRET "@[::1]:80]",
	"coll1:" JOB ":" SECRET "@[::1]x:80",
	"coll1:" JOB ":" SECRET "@[::1]:80/x",
	/* hosts that are not numeric addresses */
	"coll1:" JOB ":" SECRET "@localhost:80",
	"coll1:" JOB ":" SECRET "@node-1.example.com:80",
	"coll1:" JOB ":" SECRET "@[localhost]:80",
	"coll1:" JOB ":" SECRET "@256.0.0.1:80",
	"coll1:" JOB ":" SECRET "@1.2.3:80",
	"coll1:" JOB ":" SECRET "@1.2.3.4.5:80",
	"coll1:" JOB ":" SECRET "@ 127.0.0.1:80",
	"coll1:" JOB ":" SECRET "@[::g]:80",
	"coll1:" JOB ":" SECRET "@[1:2:3:4:5:6:7:8:9]:80",
	/* a host longer than any address */
	"coll1:" JOB ":" SECRET "@[0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:1]:80",
};

/* Ids of another format version: COLL_EVERSION, so the user is told to upgrade. */
static const char *const other_version_ids[] = {
	"coll2:" JOB ":" SECRET "@127.0.0.1:80",
	"coll0:" JOB ":" SECRET "@127.0.0.1:80",
	"coll9:" JOB ":" SECRET "@[::1]:80",
	"coll12:" JOB ":" SECRET "@127.0.0.1:80",
};

static void
test_uid_parse_good(void **state)
{
	for (size_t i = 0; i < sizeof good_ids / sizeof good_ids[0]; i++) {
		struct coll_uid uid;
		char addr[NET_ADDRSTR_LEN];

		assert_int_equal(uid_parse(&uid, good_ids[i].in), COLL_OK);
		assert_int_equal(uid.version, UID_VERSION);
		assert_true(uid.jobid == good_ids[i].jobid);
		assert_memory_equal(uid.secret, secret_bytes, UID_SECRET_LEN);
		net_addr_format(&uid.root, addr, sizeof addr);
		assert_string_equal(addr, good_ids[i].addr);
	}
}

static void
test_uid_parse_canonical(void **state)
{
	for (size_t i = 0; i < sizeof good_ids / sizeof good_ids[0]; i++) {
		struct coll_uid uid;
		char buf[UID_STR_LEN];

		assert_int_equal(uid_parse(&uid, good_ids[i].in), COLL_OK);
		uid_format(&uid, buf, sizeof buf);
		assert_string_equal(buf, good_ids[i].canon);
	}
}

/* format then parse gives back every field, for generated ids on v4 and v6 roots. */
static void
test_uid_round_trip(void **state)
{
	static const struct {
		const char *host;
		uint16_t port;
	} roots[] = {
		{ "127.0.0.1", 1 }, { "10.0.0.255", 29500 }, { "255.255.255.255", 65535 },
		{ "::1", 80 }, { "fe80::1", 12345 }, { "2001:db8:0:1:2:3:4:5", 65535 },
		{ "::ffff:192.0.2.1", 8080 },
	};

	for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		struct coll_uid in, out;
		struct net_addr root;
		char buf[UID_STR_LEN], a[NET_ADDRSTR_LEN], b[NET_ADDRSTR_LEN];

		assert_int_equal(net_addr_parse(&root, roots[i].host, roots[i].port), COLL_OK);
		assert_int_equal(uid_generate(&in, &root), COLL_OK);
		uid_format(&in, buf, sizeof buf);
		assert_true(strlen(buf) < UID_STR_LEN - 1);
		assert_int_equal(uid_parse(&out, buf), COLL_OK);
		assert_int_equal(out.version, in.version);
		assert_true(out.jobid == in.jobid);
		assert_memory_equal(out.secret, in.secret, UID_SECRET_LEN);
		assert_int_equal(out.root.ss.ss_family, root.ss.ss_family);
		assert_int_equal(out.root.len, root.len);
		assert_int_equal(net_addr_port(&out.root), roots[i].port);
		net_addr_format(&in.root, a, sizeof a);
		net_addr_format(&out.root, b, sizeof b);
		assert_string_equal(a, b);
	}
}

static void
test_uid_generate_fresh(void **state)
{
	struct coll_uid a, b;
	struct net_addr root;

	assert_int_equal(net_addr_parse(&root, "127.0.0.1", 1234), COLL_OK);
	assert_int_equal(uid_generate(&a, &root), COLL_OK);
	assert_int_equal(uid_generate(&b, &root), COLL_OK);
	/* 2^-128 odds of a false failure. */
	assert_memory_not_equal(a.secret, b.secret, UID_SECRET_LEN);
}

static void
test_uid_parse_malformed(void **state)
{
	for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
		struct coll_uid uid;
		int r = uid_parse(&uid, bad_ids[i]);

		if (r != COLL_EUID)
			fail_msg("uid_parse(\"%s\") = %d, want COLL_EUID", bad_ids[i], r);
	}
}

static void
test_uid_parse_other_version(void **state)
{
	for (size_t i = 0; i < sizeof other_version_ids / sizeof other_version_ids[0]; i++) {
		struct coll_uid uid;
		int r = uid_parse(&uid, other_version_ids[i]);

		if (r != COLL_EVERSION)
			fail_msg("uid_parse(\"%s\") = %d, want COLL_EVERSION", other_version_ids[i],
			    r);
	}
}

/* COLL_UNIQUE_ID may carry several ids for comm_init_scalable, joined by commas. */
static void
test_uid_parse_list(void **state)
{
	struct coll_uid u[3], *v;
	struct net_addr a;
	char one[UID_STR_LEN], list[4 * UID_STR_LEN];
	int n;

	(void)state;
	assert_int_equal(net_addr_parse(&a, "127.0.0.1", 4000), COLL_OK);
	list[0] = '\0';
	for (int i = 0; i < 3; i++) {
		assert_int_equal(uid_generate(&u[i], &a), COLL_OK);
		uid_format(&u[i], one, sizeof one);
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "," : "", one);
	}
	assert_int_equal(uid_parse_list(list, 8, &v, &n), COLL_OK);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++) {
		assert_true(v[i].jobid == u[i].jobid);
		assert_memory_equal(v[i].secret, u[i].secret, UID_SECRET_LEN);
	}
	free(v);
	/* One id is a list of one. */
	assert_int_equal(uid_parse_list(one, 1, &v, &n), COLL_OK);
	assert_int_equal(n, 1);
	free(v);
	/* More than allowed, an empty element, a bad element: refused, nothing returned. */
	assert_int_equal(uid_parse_list(list, 2, &v, &n), COLL_EINVAL);
	assert_null(v);
	strcat(list, ",");
	assert_int_equal(uid_parse_list(list, 8, &v, &n), COLL_EUID);
	assert_null(v);
	assert_int_equal(uid_parse_list("coll1:zz,coll1:yy", 8, &v, &n), COLL_EUID);
	assert_null(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uid_parse_good),
		cmocka_unit_test(test_uid_parse_canonical),
		cmocka_unit_test(test_uid_round_trip),
		cmocka_unit_test(test_uid_generate_fresh),
		cmocka_unit_test(test_uid_parse_malformed),
		cmocka_unit_test(test_uid_parse_other_version),
		cmocka_unit_test(test_uid_parse_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
