/*
 * Host lists: bracket expressions, hostfiles and Slurm's variables expand as
 * pdsh, Open MPI and Slurm write them; every malformed input is refused with
 * a message naming the bad part; fold is parse's inverse; placement fills
 * hosts in block or round-robin order and refuses to oversubscribe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "hostlist.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define DUMP_LEN 4096

/* The list as "name name:slots ...", slots shown only when given. */
static const char *
dump(const struct hostlist *hl, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < hl->n && o < len; i++) {
		o += (size_t)snprintf(buf + o, len - o, i ? " %s" : "%s", hl->hosts[i].name);
		if (hl->hosts[i].slots && o < len)
			o += (size_t)snprintf(buf + o, len - o, ":%d", hl->hosts[i].slots);
	}
	return buf;
}

static void
expect_err(int r, int want, const char *err, const char *needle, const char *input)
{
	if (r != want)
		fail_msg("%s: got %d, want %d (err: %s)", input, r, want, err);
	if (strstr(err, needle) == NULL)
		fail_msg("%s: error \"%s\" does not contain \"%s\"", input, err, needle);
}

static const struct {
	const char *in;
	const char *want;
} good_exprs[] = {
	{ "node[01-03]", "node01 node02 node03" },
	{ "node[01-10]", "node01 node02 node03 node04 node05 node06 node07 node08 node09 node10" },
	{ "n[8-10]", "n8 n9 n10" },
	{ "n[9-010]", "n9 n10" },			/* padding is the start's width */
	{ "n[001-3]", "n001 n002 n003" },
	{ "n[098-101]", "n098 n099 n100 n101" },
	{ "n[1-3,7]", "n1 n2 n3 n7" },
	{ "n[3,1-2]", "n3 n1 n2" },			/* order as written */
	{ "n[7]", "n7" },
	{ "n[07]", "n07" },
	{ "n[0]", "n0" },
	{ "n[00-01]", "n00 n01" },
	{ "[1-3]", "1 2 3" },
	{ "x[1-2]y", "x1y x2y" },
	{ "rack[1-2]-node[01-02]", "rack1-node01 rack1-node02 rack2-node01 rack2-node02" },
	{ "a[1-2]b[3,5]c", "a1b3c a1b5c a2b3c a2b5c" },
	{ "a,b", "a b" },
	{ "login", "login" },
	{ "a-,b.,_c,.d,0", "a- b. _c .d 0" },	/* only a leading '-' is refused */
	{ "host.example.com,under_score,dash-ed,UPPER",
	  "host.example.com under_score dash-ed UPPER" },
	{ "node[1-2]:2", "node1:2 node2:2" },
	{ "a:3,b", "a:3 b" },
	{ "rack[1-2]-n[1-2]:4", "rack1-n1:4 rack1-n2:4 rack2-n1:4 rack2-n2:4" },
	/* Repeats keep their first place and add their slots. */
	{ "a:2,b,a:3", "a:5 b" },
	{ "a,a", "a" },
	{ "a:2,a", "a:2" },
	{ "n[1-3],n2", "n1 n2 n3" },
	{ "n[1-2]:1,n[2-3]:1", "n1:1 n2:2 n3:1" },
	{ "n[1-2],n[1-2]", "n1 n2" },
	{ "n[1,1,1]", "n1" },
	{ "n[000000000000000000000001-2]", "n000000000000000000000001 n000000000000000000000002" },
	{ "n[999999999999999998-999999999999999999]", "n999999999999999998 n999999999999999999" },
};

static const struct {
	const char *in;
	const char *needle;	/* the message must name the bad part */
} bad_exprs[] = {
	{ "", "empty item at offset 0" },
	{ "a,,b", "empty item at offset 2 of 'a,,b'" },
	{ ",a", "empty item at offset 0" },
	{ "a,", "empty item at offset 2" },
	{ "n[1-3", "unbalanced '[' in 'n[1-3'" },
	{ "a,n[1-3,b", "unbalanced '[' in 'n[1-3,b'" },
	{ "n1-3]", "unbalanced ']' in 'n1-3]'" },
	{ "]", "unbalanced ']'" },
	{ "n[1[2]]", "nested '[' in 'n[1['" },
	{ "n[]", "empty brackets in 'n[]'" },
	{ "n[1-2][]", "empty brackets in 'n[1-2][]'" },
	{ "n[5-3]", "descending range '5-3' in 'n[5-3]'" },
	{ "n[a-3]", "bad range 'a-3' in 'n[a-3]'" },
	{ "n[1-b]", "bad range '1-b'" },
	{ "n[1,,3]", "bad range '' in 'n[1,,3]'" },
	{ "n[1,]", "bad range '' in 'n[1,]'" },
	{ "n[-3]", "bad range '-3'" },
	{ "n[1-]", "bad range '1-'" },
	{ "n[1-2-3]", "bad range '1-2-3'" },
	{ "n[ 1]", "bad range ' 1'" },
	{ "n[+1]", "bad range '+1'" },
	{ "n[0x10]", "bad range '0x10'" },
	{ "n[1:2]", "bad range '1:2'" },
	{ "n[1-9999999999999999999]", "number too large in range '1-9999999999999999999'" },
	{ "n:0", "bad slot count '0' in 'n:0'" },
	{ "n:-1", "bad slot count '-1'" },
	{ "n:x", "bad slot count 'x'" },
	{ "n:", "bad slot count '' in 'n:'" },
	{ "n:1:2", "bad slot count '1:2'" },
	{ "n:1000001", "bad slot count '1000001'" },
	{ "n: 2", "bad slot count ' 2'" },
	{ ":2", "empty host name in ':2'" },
	{ "a b", "invalid character ' ' in host 'a b'" },
	{ "a, b", "invalid character ' ' in host ' b'" },
	{ "a/b", "invalid character '/' in host 'a/b'" },
	{ "a\x01", "invalid character '\\x01'" },
	{ "a\xc3\xa9", "invalid character '\\xc3'" },
	{ "fe80::1", "bad slot count ':1'" },
	{ "-Elog", "host '-Elog' starts with '-'" },
	{ "a,-[1-2]:2", "host '-[1-2]:2' starts with '-'" },
	{ "n[1-2]x!", "invalid character '!'" },
	{ "n[0-999999999]", "'n[0-999999999]' takes the list over 1000000 hosts" },
	{ "n[1-1000001]", "over 1000000 hosts" },
	{ "n[0-999999],m", "'m' takes the list over 1000000 hosts" },
	{ "a[1-1000]b[1-1001]", "'a[1-1000]b[1-1001]' takes the list over 1000000 hosts" },
	{ "a[1-1000],b[0-999999999999999999]", "'b[0-999999999999999999]' takes the list over" },
	{ "a:1000000,a:1", "host 'a' is given more than 1000000 slots" },
};

static void
test_hostlist_parse_good(void **state)
{
	for (size_t i = 0; i < N(good_exprs); i++) {
		struct hostlist hl = { 0 };
		char err[COLL_ERR_LEN] = "", buf[DUMP_LEN];
		int r = hostlist_parse(&hl, good_exprs[i].in, err, sizeof err);

		if (r != COLL_OK)
			fail_msg("%s: %d %s", good_exprs[i].in, r, err);
		assert_string_equal(dump(&hl, buf, sizeof buf), good_exprs[i].want);
		hostlist_free(&hl);
		assert_int_equal(hl.n, 0);
		assert_null(hl.hosts);
	}
}

static void
test_hostlist_parse_bad(void **state)
{
	for (size_t i = 0; i < N(bad_exprs); i++) {
		struct hostlist hl = { 0 };
		char err[COLL_ERR_LEN] = "";

		expect_err(hostlist_parse(&hl, bad_exprs[i].in, err, sizeof err), COLL_EINVAL, err,
		    bad_exprs[i].needle, bad_exprs[i].in);
		assert_int_equal(hl.n, 0);
		assert_null(strchr(err, '\n'));
		hostlist_free(&hl);
	}
}

/* Names at the 255-character bound, from literals and from expansion. */
static void
test_hostlist_parse_name_length(void **state)
{
	char name[300], expr[300], err[COLL_ERR_LEN];
	struct hostlist hl = { 0 };

	memset(name, 'a', 255);
	name[255] = '\0';
	assert_int_equal(hostlist_parse(&hl, name, err, sizeof err), COLL_OK);
	assert_int_equal((int)strlen(hl.hosts[0].name), 255);
	hostlist_free(&hl);
	name[255] = 'a';
	name[256] = '\0';
	expect_err(hostlist_parse(&hl, name, err, sizeof err), COLL_EINVAL, err,
	    "longer than 255 characters", "256 a");
	/* 250 + "[1-100000]": the widest number makes 256. */
	memset(expr, 'x', 250);
	strcpy(expr + 250, "[1-100000]");
	expect_err(hostlist_parse(&hl, expr, err, sizeof err), COLL_EINVAL, err,
	    "gives host names longer than 255 characters", "250 x");
	strcpy(expr + 250, "[1-99999]");
	assert_int_equal(hostlist_parse(&hl, expr, err, sizeof err), COLL_OK);
	assert_int_equal(hl.n, 99999);
	hostlist_free(&hl);
}

/* An expression over 16 MiB is refused before it is scanned item by item. */
static void
test_hostlist_parse_long_expr(void **state)
{
	size_t len = HOSTLIST_FILE_MAX + 1;
	char *expr = malloc(len + 1), err[COLL_ERR_LEN];
	struct hostlist hl = { 0 };

	assert_non_null(expr);
	memset(expr, ',', len);
	expr[len] = '\0';
	expect_err(hostlist_parse(&hl, expr, err, sizeof err), COLL_EINVAL, err,
	    "host list longer than 16777216 bytes", "16 MiB of commas");
	expr[len - 1] = '\0';
	expect_err(hostlist_parse(&hl, expr, err, sizeof err), COLL_EINVAL, err,
	    "empty item at offset 0", "16 MiB of commas");
	free(expr);
}

/* A failed parse leaves the list as it was, however far it got. */
static void
test_hostlist_parse_atomic(void **state)
{
	struct hostlist hl = { 0 };
	char err[COLL_ERR_LEN], buf[DUMP_LEN];

	assert_int_equal(hostlist_parse(&hl, "a:2,b", err, sizeof err), COLL_OK);
	assert_int_equal(hostlist_parse(&hl, "c,d,n[1-3", err, sizeof err), COLL_EINVAL);
	assert_int_equal(hostlist_parse(&hl, "a:1,c,x y", err, sizeof err), COLL_EINVAL);
	assert_int_equal(hostlist_parse(&hl, "c,a:999999", err, sizeof err), COLL_EINVAL);
	assert_string_equal(dump(&hl, buf, sizeof buf), "a:2 b");
	assert_int_equal(hostlist_parse(&hl, "c,a:1", err, sizeof err), COLL_OK);
	assert_string_equal(dump(&hl, buf, sizeof buf), "a:3 b c");
	hostlist_free(&hl);
}

/* A million hosts is the bound: reached exactly, then refused. */
static void
test_hostlist_parse_bound(void **state)
{
	struct hostlist hl = { 0 };
	char err[COLL_ERR_LEN];

	assert_int_equal(hostlist_parse(&hl, "n[1-1000000]", err, sizeof err), COLL_OK);
	assert_int_equal(hl.n, HOSTLIST_MAX_HOSTS);
	assert_string_equal(hl.hosts[999999].name, "n1000000");
	assert_int_equal(hostlist_find(&hl, "n123456"), 123455);
	assert_int_equal(hostlist_parse(&hl, "n5,n[7-9]", err, sizeof err), COLL_OK);
	expect_err(hostlist_parse(&hl, "n5,x", err, sizeof err), COLL_EINVAL, err,
	    "more than 1000000 hosts", "n5,x");
	expect_err(hostlist_add(&hl, "x", 0, err, sizeof err), COLL_EINVAL, err,
	    "more than 1000000 hosts", "add x");
	assert_int_equal(hl.n, HOSTLIST_MAX_HOSTS);
	assert_int_equal(hostlist_find(&hl, "x"), -1);
	hostlist_free(&hl);
}

static void
test_hostlist_add(void **state)
{
	static const struct {
		const char *name;
		int slots;
		const char *needle;
	} bad[] = {
		{ "", 0, "empty host name" },
		{ "a b", 0, "invalid character ' ' in host 'a b'" },
		{ "n[1-2]", 0, "invalid character '['" },
		{ "a:2", 0, "invalid character ':'" },
		{ "-v", 0, "host '-v' starts with '-'" },
		{ "a", -1, "bad slot count -1 for host 'a'" },
		{ "a", HOSTLIST_MAX_SLOTS + 1, "bad slot count 1000001" },
		{ "b", HOSTLIST_MAX_SLOTS, "host 'b' is given more than 1000000 slots" },
	};
	struct hostlist hl;
	char err[COLL_ERR_LEN], buf[DUMP_LEN];

	hostlist_init(&hl);
	assert_int_equal(hostlist_find(&hl, "a"), -1);
	assert_int_equal(hostlist_add(&hl, "a", 2, err, sizeof err), COLL_OK);
	assert_int_equal(hostlist_add(&hl, "b", 1, err, sizeof err), COLL_OK);
	assert_int_equal(hostlist_add(&hl, "a", 3, err, sizeof err), COLL_OK);
	assert_int_equal(hostlist_add(&hl, "c", 0, NULL, 0), COLL_OK);
	assert_string_equal(dump(&hl, buf, sizeof buf), "a:5 b:1 c");
	assert_int_equal(hostlist_find(&hl, "b"), 1);
	for (size_t i = 0; i < N(bad); i++)
		expect_err(hostlist_add(&hl, bad[i].name, bad[i].slots, err, sizeof err),
		    COLL_EINVAL, err, bad[i].needle, bad[i].name);
	assert_int_equal(hostlist_add(&hl, "d", 0, NULL, 0), COLL_OK);
	assert_int_equal(hostlist_add(&hl, "a b", 0, NULL, 0), COLL_EINVAL);
	assert_string_equal(dump(&hl, buf, sizeof buf), "a:5 b:1 c d");
	hostlist_free(&hl);
}

static void
test_hostlist_exclude(void **state)
{
	static const struct {
		const char *hosts, *exclude, *want;
	} cases[] = {
		{ "node[01-05]", "node[02-03]", "node01 node04 node05" },
		{ "a,b,c", "b", "a c" },
		{ "a,b", "z", "a b" },
		{ "n[1-3]:2", "n2", "n1:2 n3:2" },
		{ "a,b", "a,b", "" },
		{ "a,b", "b:4", "a" },		/* slots mean nothing here */
		{ "rack[1-2]-n[1-3]", "rack[1-2]-n2,rack1-n1", "rack1-n3 rack2-n1 rack2-n3" },
		{ "n[1-100]", "n[2-100]", "n1" },
	};
	char err[COLL_ERR_LEN], buf[DUMP_LEN];

	for (size_t i = 0; i < N(cases); i++) {
		struct hostlist hl = { 0 };
		int n0;

		assert_int_equal(hostlist_parse(&hl, cases[i].hosts, err, sizeof err), COLL_OK);
		assert_int_equal(hostlist_exclude(&hl, cases[i].exclude, err, sizeof err), COLL_OK);
		assert_string_equal(dump(&hl, buf, sizeof buf), cases[i].want);
		/* The index follows: what was removed can come back, at the end. */
		for (int h = 0; h < hl.n; h++)
			assert_int_equal(hostlist_find(&hl, hl.hosts[h].name), h);
		n0 = hl.n;
		assert_int_equal(hostlist_parse(&hl, cases[i].exclude, err, sizeof err), COLL_OK);
		assert_true(hl.n > n0);
		for (int h = 0; h < hl.n; h++)
			assert_int_equal(hostlist_find(&hl, hl.hosts[h].name), h);
		/* The hosts kept are still first, as they were. */
		if (strncmp(dump(&hl, buf, sizeof buf), cases[i].want, strlen(cases[i].want)) != 0)
			fail_msg("%s after re-adding %s: \"%s\"", cases[i].want, cases[i].exclude, buf);
		hostlist_free(&hl);
	}
}

static void
test_hostlist_exclude_bad(void **state)
{
	struct hostlist hl = { 0 };
	char err[COLL_ERR_LEN], buf[DUMP_LEN];

	assert_int_equal(hostlist_parse(&hl, "n[1-3]", err, sizeof err), COLL_OK);
	expect_err(hostlist_exclude(&hl, "n1,n[2", err, sizeof err), COLL_EINVAL, err,
	    "unbalanced '['", "n1,n[2");
	expect_err(hostlist_exclude(&hl, "n[3-1]", err, sizeof err), COLL_EINVAL, err,
	    "descending range '3-1'", "n[3-1]");
	expect_err(hostlist_exclude(&hl, NULL, err, sizeof err), COLL_EINVAL, err,
	    "no host list", "NULL");
	assert_string_equal(dump(&hl, buf, sizeof buf), "n1 n2 n3");
	hostlist_free(&hl);
}

static const struct {
	const char *text, *want;
} good_files[] = {
	{ "a\nb\n", "a b" },
	{ "a", "a" },
	{ "", "" },
	{ "\n\n   \n\t\n", "" },
	{ "# only a comment\n#another\n", "" },
	{ "# cluster\n\n  a slots=2  \n\tb:3\nc slots=4 max_slots=8 # trailing\n", "a:2 b:3 c:4" },
	{ "a#comment\nb\t# comment\n", "a b" },
	{ "a\r\nb slots=2\r\n", "a b:2" },
	{ "a\na\n", "a" },
	{ "a slots=2\nb\na slots=3\n", "a:5 b" },
	{ "a max_slots=3\nb max-slots=0 slots=1\n", "a b:1" },
	{ "node01.example.com slots=16\nnode02.example.com slots=16\n",
	  "node01.example.com:16 node02.example.com:16" },
};

static const struct {
	const char *text, *needle;
} bad_files[] = {
	{ "a\nb c\n", "line 2: unknown keyword 'c': expected slots=N" },
	{ "a slots=0", "line 1: bad slot count '0' in 'slots=0'" },
	{ "a slots=x", "line 1: bad slot count 'x'" },
	{ "a slots=", "line 1: unknown keyword 'slots='" },
	{ "a slots=-2", "line 1: bad slot count '-2'" },
	{ "ok\n\nbad/host\n", "line 3: invalid character '/' in host 'bad/host'" },
	{ "a:2 slots=3", "line 1: slots given twice at 'slots=3'" },
	{ "a slots=2 slots=3", "line 1: slots given twice" },
	{ "a max_slots=x", "line 1: bad 'max_slots=x'" },
	{ "a:", "line 1: bad slot count '' in 'a:'" },
	{ ":2", "line 1: empty host name" },
	{ "a:0", "line 1: bad slot count '0'" },
	{ "node[1-2]", "line 1: invalid character '['" },
	{ "a,b", "line 1: invalid character ','" },
	{ "ok\n-Flocal slots=2", "line 2: host '-Flocal' starts with '-'" },
	{ "x\ny\nz\x7f\n", "line 3: invalid character '\\x7f'" },
	{ "a slots=600000\na slots=600000\n", "line 2: host 'a' is given more than 1000000 slots" },
};

static void
test_hostlist_text_good(void **state)
{
	for (size_t i = 0; i < N(good_files); i++) {
		struct hostlist hl = { 0 };
		char err[COLL_ERR_LEN] = "", buf[DUMP_LEN];
		int r = hostlist_parse_text(&hl, good_files[i].text, err, sizeof err);

		if (r != COLL_OK)
			fail_msg("%s: %d %s", good_files[i].text, r, err);
		assert_string_equal(dump(&hl, buf, sizeof buf), good_files[i].want);
		hostlist_free(&hl);
	}
}

static void
test_hostlist_text_bad(void **state)
{
	for (size_t i = 0; i < N(bad_files); i++) {
		struct hostlist hl = { 0 };
		char err[COLL_ERR_LEN] = "";

		int r = hostlist_parse_text(&hl, bad_files[i].text, err, sizeof err);

		expect_err(r, COLL_EINVAL, err, bad_files[i].needle, bad_files[i].text);
		assert_int_equal(hl.n, 0);
		hostlist_free(&hl);
	}
}

static void
write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void
test_hostlist_file(void **state)
{
	static const char good[] = "# two nodes\nn1 slots=2\nn2\n", bad[] = "n3\nn4 slots=\n",
	    nul[] = "n3\nn4\0n5\n";
	char dir[] = "/tmp/test_hostlist.XXXXXX", path[64], err[COLL_ERR_LEN], buf[DUMP_LEN];
	struct hostlist hl = { 0 };

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/hosts", dir);
	write_file(path, good, sizeof good - 1);
	assert_int_equal(hostlist_parse_file(&hl, path, err, sizeof err), COLL_OK);
	assert_string_equal(dump(&hl, buf, sizeof buf), "n1:2 n2");
	write_file(path, bad, sizeof bad - 1);
	expect_err(hostlist_parse_file(&hl, path, err, sizeof err), COLL_EINVAL, err,
	    "/hosts' line 2: unknown keyword 'slots='", "bad line");
	write_file(path, nul, sizeof nul - 1);
	expect_err(hostlist_parse_file(&hl, path, err, sizeof err), COLL_EINVAL, err,
	    "line 2: NUL byte", "NUL");
	assert_string_equal(dump(&hl, buf, sizeof buf), "n1:2 n2");
	expect_err(hostlist_parse_file(&hl, dir, err, sizeof err), COLL_EINVAL, err,
	    "is a directory, not a file", "directory");
	/* One byte over the bound; sparse, so nothing is written. */
	assert_int_equal(truncate(path, HOSTLIST_FILE_MAX + 1), 0);
	expect_err(hostlist_parse_file(&hl, path, err, sizeof err), COLL_ETOOBIG, err,
	    "larger than 16777216 bytes", "big");
	assert_int_equal(unlink(path), 0);
	expect_err(hostlist_parse_file(&hl, path, err, sizeof err), COLL_ENOTFOUND, err,
	    "cannot open hostfile '/tmp/test_hostlist.", "missing");
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(rmdir(dir), 0);
	hostlist_free(&hl);
}

static const struct {
	const char *nodes, *tasks, *want;
} good_slurm[] = {
	{ "node[01-03,07],gpu5", "2(x3),1,4", "node01:2 node02:2 node03:2 node07:1 gpu5:4" },
	{ "n[1-4]", "1(x4)", "n1:1 n2:1 n3:1 n4:1" },
	{ "n1", "3", "n1:3" },
	{ "a,b", "2,3", "a:2 b:3" },
	{ "n[1-2]", NULL, "n1 n2" },
	{ "n[1-3]", "1(x1),2(x2)", "n1:1 n2:2 n3:2" },
};

static const struct {
	const char *nodes, *tasks, *needle;
} bad_slurm[] = {
	{ "n[1-3]", "2(x0)", "bad SLURM_TASKS_PER_NODE entry '2(x0)'" },
	{ "n[1-3]", "2(x", "bad SLURM_TASKS_PER_NODE entry '2(x'" },
	{ "n1", "a", "bad SLURM_TASKS_PER_NODE entry 'a'" },
	{ "n1", "", "bad SLURM_TASKS_PER_NODE entry ''" },
	{ "n1", "0", "entry '0'" },
	{ "n1", "1,", "entry '' in '1,'" },
	{ "n1", "2(x1)x", "entry '2(x1)x'" },
	{ "n1", "2(y1)", "entry '2(y1)'" },
	{ "n1", "(x1)", "entry '(x1)'" },
	{ "n1", "2()", "entry '2()'" },
	{ "n1", "2(x-1)", "entry '2(x-1)'" },
	{ "n[1-2]", "3", "SLURM_TASKS_PER_NODE '3' counts 1 nodes but SLURM_JOB_NODELIST 'n[1-2]' "
	  "has 2" },
	{ "n1", "1(x2)", "counts 2 nodes but SLURM_JOB_NODELIST 'n1' has 1" },
	{ "n[1-3]", "2(x3),1", "counts 4 nodes" },
	{ "n1", "1(x1000000),1", "counts more than 1000000 nodes" },
	{ "n[1-2", "1(x2)", "SLURM_JOB_NODELIST: unbalanced '['" },
	{ "", "1", "SLURM_JOB_NODELIST: empty item" },
	{ NULL, "1", "SLURM_JOB_NODELIST: no host list given" },
};

static void
test_hostlist_slurm(void **state)
{
	for (size_t i = 0; i < N(good_slurm); i++) {
		struct hostlist hl = { 0 };
		char err[COLL_ERR_LEN] = "", buf[DUMP_LEN];
		int r = hostlist_parse_slurm(&hl, good_slurm[i].nodes, good_slurm[i].tasks, err,
		    sizeof err);

		if (r != COLL_OK)
			fail_msg("%s / %s: %d %s", good_slurm[i].nodes, good_slurm[i].tasks, r,
			    err);
		assert_string_equal(dump(&hl, buf, sizeof buf), good_slurm[i].want);
		hostlist_free(&hl);
	}
	for (size_t i = 0; i < N(bad_slurm); i++) {
		struct hostlist hl = { 0 };
		char err[COLL_ERR_LEN] = "";

		expect_err(hostlist_parse_slurm(&hl, bad_slurm[i].nodes, bad_slurm[i].tasks, err,
		    sizeof err), COLL_EINVAL, err, bad_slurm[i].needle, bad_slurm[i].tasks);
		assert_int_equal(hl.n, 0);
		hostlist_free(&hl);
	}
}

static const struct {
	const char *names;	/* comma-separated input */
	const char *want;
} folds[] = {
	{ "node01,node02,node03,node07", "node[01-03,07]" },
	{ "n8,n9,n10", "n[8-10]" },
	{ "n09,n10,n11", "n[09-11]" },
	{ "n099,n100", "n[099-100]" },
	{ "n9,n10,n011", "n[9-10,011]" },
	{ "n0,n1", "n[0-1]" },
	{ "n00,n01", "n[00-01]" },
	{ "a,b", "a,b" },
	{ "n1", "n1" },
	{ "x,x", "x" },
	{ "n1,n1", "n1" },
	{ "n3,n1,n2", "n[1-3]" },
	{ "n1,a,n2,b,n3", "n[1-3],a,b" },
	{ "n1,n01,n2", "n[1-2,01]" },
	{ "n01,n1,n02,n2", "n[1-2,01-02]" },
	{ "n1,n3,n5", "n[1,3,5]" },
	{ "n,n1", "n,n1" },
	{ "1,2,3", "[1-3]" },
	{ "rack1-node01,rack1-node02,rack2-node01", "rack1-node[01-02],rack2-node01" },
	{ "a1b2,a1b3", "a1b[2-3]" },
	{ "web1,db1,web2,db2", "web[1-2],db[1-2]" },
	/* Suffixes over 18 digits are not numbers to fold. */
	{ "n1234567890123456789,n1234567890123456790",
	  "n1234567890123456789,n1234567890123456790" },
	{ "n999999999999999998,n999999999999999999", "n[999999999999999998-999999999999999999]" },
};

/* Split a comma list into names, in buf. */
static int
split(const char *list, char *buf, size_t len, const char **names)
{
	int n = 0;

	snprintf(buf, len, "%s", list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t != NULL;
	    t = strtok_r(NULL, ",", &save))
		names[n++] = t;
	return n;
}

/* parse(fold(names)) gives the same set of names. */
static void
check_round_trip(const char **names, int n, const char *folded)
{
	struct hostlist a = { 0 }, b = { 0 };
	char err[COLL_ERR_LEN];

	for (int i = 0; i < n; i++)
		assert_int_equal(hostlist_add(&a, names[i], 0, err, sizeof err), COLL_OK);
	if (hostlist_parse(&b, folded, err, sizeof err) != COLL_OK)
		fail_msg("fold gave \"%s\", which does not parse: %s", folded, err);
	assert_int_equal(a.n, b.n);
	for (int i = 0; i < a.n; i++)
		if (hostlist_find(&b, a.hosts[i].name) < 0)
			fail_msg("%s lost in \"%s\"", a.hosts[i].name, folded);
	hostlist_free(&a);
	hostlist_free(&b);
}

static void
test_hostlist_fold(void **state)
{
	for (size_t i = 0; i < N(folds); i++) {
		const char *names[32];
		char buf[512], out[512];
		int n = split(folds[i].names, buf, sizeof buf, names);

		assert_int_equal(hostlist_fold(names, n, out, sizeof out), COLL_OK);
		assert_string_equal(out, folds[i].want);
		check_round_trip(names, n, out);
	}
}

/* parse then fold then parse: the same names, in the same order where groups were sorted. */
static void
test_hostlist_fold_round_trip(void **state)
{
	static const struct {
		const char *expr;
		int same_order;
	} exprs[] = {
		{ "node[01-16]", 1 }, { "rack[1-2]-node[01-04]", 1 }, { "n[8-10],n[011-012]", 1 },
		{ "a,b,c", 1 }, { "node[1-3,7],gpu[01-02],login", 1 }, { "[0-20]", 1 },
		{ "n[7,1-3],login,n5", 0 }, { "x[1-5]y,x[1-5]z", 1 },
		{ "n[1-2],n[01-02],n[001-002]", 0 }, { "n[1-1000],m[0001-2000]", 1 },
	};
	static char out[64 << 10];

	for (size_t i = 0; i < N(exprs); i++) {
		struct hostlist a = { 0 }, b = { 0 };
		char err[COLL_ERR_LEN];
		const char **names;

		assert_int_equal(hostlist_parse(&a, exprs[i].expr, err, sizeof err), COLL_OK);
		names = calloc((size_t)a.n, sizeof *names);
		for (int h = 0; h < a.n; h++)
			names[h] = a.hosts[h].name;
		assert_int_equal(hostlist_fold(names, a.n, out, sizeof out), COLL_OK);
		check_round_trip(names, a.n, out);
		assert_int_equal(hostlist_parse(&b, out, err, sizeof err), COLL_OK);
		for (int h = 0; exprs[i].same_order && h < a.n; h++)
			assert_string_equal(a.hosts[h].name, b.hosts[h].name);
		free(names);
		hostlist_free(&a);
		hostlist_free(&b);
	}
}

static void
test_hostlist_fold_short_buffer(void **state)
{
	const char *names[] = { "node01", "node02" };
	char out[16];

	assert_int_equal(hostlist_fold(names, 2, out, 12), COLL_OK);
	assert_string_equal(out, "node[01-02]");
	assert_int_equal(hostlist_fold(names, 2, out, 11), COLL_ETOOBIG);
	assert_string_equal(out, "node[01-02");
	assert_int_equal(hostlist_fold(names, 2, out, 5), COLL_ETOOBIG);
	assert_string_equal(out, "node");
	assert_int_equal(hostlist_fold(names, 2, out, 1), COLL_ETOOBIG);
	assert_string_equal(out, "");
	assert_int_equal(hostlist_fold(names, 2, out, 0), COLL_ETOOBIG);
	assert_int_equal(hostlist_fold(names, 0, out, sizeof out), COLL_OK);
	assert_string_equal(out, "");
	assert_int_equal(hostlist_fold(names, -1, out, sizeof out), COLL_EINVAL);
}

static const struct {
	const char *hosts;
	int nranks, per_host;
	enum place_mode mode;
	const char *want;	/* host of each rank */
} places[] = {
	{ "a:2,b:2", 4, 0, PLACE_BLOCK, "0 0 1 1" },
	{ "a:2,b:2", 4, 0, PLACE_ROUNDROBIN, "0 1 0 1" },
	{ "a:3,b:1,c:2", 6, 0, PLACE_BLOCK, "0 0 0 1 2 2" },
	{ "a:3,b:1,c:2", 6, 0, PLACE_ROUNDROBIN, "0 1 2 0 2 0" },
	{ "a:3,b:1,c:2", 4, 0, PLACE_ROUNDROBIN, "0 1 2 0" },
	{ "a,b,c", 2, 0, PLACE_BLOCK, "0 1" },		/* no slots given: one each */
	{ "a,b,c", 3, 0, PLACE_ROUNDROBIN, "0 1 2" },
	{ "a,b", 4, 2, PLACE_BLOCK, "0 0 1 1" },
	{ "a,b", 4, 2, PLACE_ROUNDROBIN, "0 1 0 1" },
	{ "a:5,b:5", 2, 1, PLACE_BLOCK, "0 1" },	/* -N overrides slots */
	{ "a:4,b", 3, 0, PLACE_ROUNDROBIN, "0 1 0" },
	{ "a:4,b:4", 3, 0, PLACE_BLOCK, "0 0 0" },
	{ "a:1,b:4", 5, 0, PLACE_ROUNDROBIN, "0 1 1 1 1" },
	{ "a:2", 0, 0, PLACE_BLOCK, "" },
};

static const struct {
	const char *hosts;
	int nranks, per_host;
	enum place_mode mode;
	const char *needle;
} bad_places[] = {
	{ "a:2,b:2", 5, 0, PLACE_BLOCK, "5 ranks but only 4 slots" },
	{ "a:2,b:2", 5, 0, PLACE_ROUNDROBIN, "5 ranks but only 4 slots" },
	{ "a,b", 5, 2, PLACE_BLOCK, "5 ranks but only 4 slots" },
	{ "a,b", 3, 0, PLACE_ROUNDROBIN, "3 ranks but only 2 slots" },
	{ "a:9,b:9", 3, 1, PLACE_BLOCK, "3 ranks but only 2 slots" },
	{ "a", -1, 0, PLACE_BLOCK, "bad placement" },
	{ "a", 1, -1, PLACE_BLOCK, "bad placement" },
	{ "a", 1, 0, (enum place_mode)7, "bad placement" },
};

static void
test_hostlist_place(void **state)
{
	for (size_t i = 0; i < N(places); i++) {
		struct hostlist hl = { 0 };
		char err[COLL_ERR_LEN], got[256] = "";
		int rank_host[64];

		assert_int_equal(hostlist_parse(&hl, places[i].hosts, err, sizeof err), COLL_OK);
		assert_int_equal(hostlist_place(&hl, places[i].nranks, places[i].per_host,
		    places[i].mode, rank_host, err, sizeof err), COLL_OK);
		for (int r = 0; r < places[i].nranks; r++)
			snprintf(got + strlen(got), sizeof got - strlen(got), r ? " %d" : "%d",
			    rank_host[r]);
		if (strcmp(got, places[i].want) != 0)
			fail_msg("%s, %d ranks, mode %d: got \"%s\", want \"%s\"", places[i].hosts,
			    places[i].nranks, places[i].mode, got, places[i].want);
		hostlist_free(&hl);
	}
}

static void
test_hostlist_place_bad(void **state)
{
	struct hostlist empty = { 0 };
	char err[COLL_ERR_LEN];
	int rank_host[64];

	for (size_t i = 0; i < N(bad_places); i++) {
		struct hostlist hl = { 0 };

		int r = hostlist_parse(&hl, bad_places[i].hosts, err, sizeof err);

		assert_int_equal(r, COLL_OK);
		expect_err(hostlist_place(&hl, bad_places[i].nranks, bad_places[i].per_host,
		    bad_places[i].mode, rank_host, err, sizeof err), COLL_EINVAL, err,
		    bad_places[i].needle, bad_places[i].hosts);
		hostlist_free(&hl);
	}
	expect_err(hostlist_place(&empty, 1, 0, PLACE_BLOCK, rank_host, err, sizeof err),
	    COLL_EINVAL, err, "1 ranks but only 0 slots on 0 hosts", "empty");
	assert_int_equal(hostlist_place(&empty, 0, 0, PLACE_ROUNDROBIN, NULL, err, sizeof err),
	    COLL_OK);
}

/* Round robin over a large uneven list stays linear and fills every slot exactly. */
static void
test_hostlist_place_large(void **state)
{
	struct hostlist hl = { 0 };
	char err[COLL_ERR_LEN];
	int *rank_host, *count, nranks = 1000 + 100000;

	assert_int_equal(hostlist_parse(&hl, "big:100000,n[1-1000]", err, sizeof err), COLL_OK);
	rank_host = calloc((size_t)nranks, sizeof *rank_host);
	count = calloc((size_t)hl.n, sizeof *count);
	assert_int_equal(hostlist_place(&hl, nranks, 0, PLACE_ROUNDROBIN, rank_host, err,
	    sizeof err), COLL_OK);
	for (int r = 0; r < nranks; r++)
		count[rank_host[r]]++;
	assert_int_equal(count[0], 100000);
	for (int h = 1; h < hl.n; h++)
		assert_int_equal(count[h], 1);
	assert_int_equal(rank_host[1001], 0);
	assert_int_equal(rank_host[1002], 0);
	free(rank_host);
	free(count);
	hostlist_free(&hl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostlist_parse_good),
		cmocka_unit_test(test_hostlist_parse_bad),
		cmocka_unit_test(test_hostlist_parse_name_length),
		cmocka_unit_test(test_hostlist_parse_long_expr),
		cmocka_unit_test(test_hostlist_parse_atomic),
		cmocka_unit_test(test_hostlist_parse_bound),
		cmocka_unit_test(test_hostlist_add),
		cmocka_unit_test(test_hostlist_exclude),
		cmocka_unit_test(test_hostlist_exclude_bad),
		cmocka_unit_test(test_hostlist_text_good),
		cmocka_unit_test(test_hostlist_text_bad),
		cmocka_unit_test(test_hostlist_file),
		cmocka_unit_test(test_hostlist_slurm),
		cmocka_unit_test(test_hostlist_fold),
		cmocka_unit_test(test_hostlist_fold_round_trip),
		cmocka_unit_test(test_hostlist_fold_short_buffer),
		cmocka_unit_test(test_hostlist_place),
		cmocka_unit_test(test_hostlist_place_bad),
		cmocka_unit_test(test_hostlist_place_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
