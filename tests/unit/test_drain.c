/*
 * collcheck --drain (cmd/collcheck/drain.c): the Reason names the finding by
 * its head, bounded and cleaned of what a kernel log line may carry (quotes,
 * escapes, bytes past ASCII); a node name must be one node's; a host with an
 * ERROR is drained, one with warnings only, an unreachable one, or one whose
 * error every host shares on a compared fact, never; scontrol (a stand-in on
 * PATH here) gets its arguments as argv, and its failure is exit 3.
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

#include "check.h"
#include "xmalloc.h"

static void
test_reason_head(void **state)
{
	char out[DRAIN_REASON_MAX + 1];

	(void)state;
	drain_reason("Xid 79 on GPU 3 (0000:3b:00), 1 time: GPU has fallen off the bus: drain "
	    "the node (last: NVRM: Xid (PCI:0000:3b:00): 79, pid=1)", 0, out, sizeof out);
	assert_string_equal(out, "collcheck: Xid 79 on GPU 3 (0000:3b:00), 1 time");
	/* A value after a colon is no head's end, nor one inside parentheses. */
	drain_reason("RDMA mlx5_1 port 1 is 1: DOWN (3: Disabled), not ACTIVE", 2, out,
	    sizeof out);
	assert_string_equal(out, "collcheck: RDMA mlx5_1 port 1 is 1: DOWN (3: Disabled), not "
	    "ACTIVE (+2 more)");
	drain_reason("nvidia.driver=535.1 differs from 3 others (550.2)", 0, out, sizeof out);
	assert_string_equal(out, "collcheck: nvidia.driver=535.1 differs from 3 others (550.2)");
}

static void
test_reason_clean(void **state)
{
	char out[DRAIN_REASON_MAX + 1];

	(void)state;
	drain_reason("SXid 20034 on NVSwitch \"a'b`c\\d\x1b[31m\n\xc3\xa9\x7f x", 0, out,
	    sizeof out);
	assert_string_equal(out, "collcheck: SXid 20034 on NVSwitch ?a?b?c?d?[31m???? x");
	for (const char *p = out; *p != '\0'; p++)
		assert_true(*p >= 0x20 && *p < 0x7f && !strchr("\"'`\\", *p));
}

static void
test_reason_bound(void **state)
{
	char msg[2048], out[DRAIN_REASON_MAX + 1], small[40];
	size_t n;

	(void)state;
	memset(msg, 0, sizeof msg);
	for (size_t i = 0; i + 6 < sizeof msg; i += 6)
		memcpy(msg + i, "word. ", 6);
	drain_reason(msg, 12, out, sizeof out);
	n = strlen(out);
	assert_true(n <= DRAIN_REASON_MAX);
	assert_string_equal(out + n - strlen("... (+12 more)"), "... (+12 more)");
	assert_memory_equal(out, "collcheck: word. word", 21);
	drain_reason(msg, 0, small, sizeof small);
	assert_true(strlen(small) < sizeof small);
	assert_string_equal(small + strlen(small) - 3, "...");
	drain_reason("", 0, out, sizeof out);
	assert_string_equal(out, "collcheck: ");
}

static void
test_node_ok(void **state)
{
	static const char *const good[] = { "node01", "gpu-a.rack2", "n_1" };
	static const char *const bad[] = { "", "node[01-04]", "a,b", "a b", "-n", ".n", "n=1",
		"u@node01", "n\x1b", "nöde" };
	char longname[70];

	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		assert_true(drain_node_ok(good[i]));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_false(drain_node_ok(bad[i]));
	memset(longname, 'n', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	assert_false(drain_node_ok(longname));
}

/* A stand-in scontrol first on PATH: its arguments, one a line, into DIR/args; exit CODE. */
static char dir[] = "/tmp/coll-test-drain-XXXXXX";

static void
fake_scontrol(int code)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/scontrol", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\nfor a; do printf '%%s\\n' \"$a\"; done >>%s/args\n%s\n", dir,
	    code ? "echo 'slurm_update error: Invalid user id' >&2; exit 1" : "exit 0");
	fclose(f);
	chmod(path, 0755);
	snprintf(path, sizeof path, "%s/args", dir);
	unlink(path);
}

static void
add_host(struct check_result *r, const char *name, int rank)
{
	r->hosts[r->nhosts] = (struct check_host){ .name = xstrdup(name), .rank = rank };
	facts_init(&r->hosts[r->nhosts++].facts);
}

/* node1 ERROR, node2 WARN, node3 unreachable, node4 OK. */
static void
make_result(struct check_result *r)
{
	memset(r, 0, sizeof *r);
	r->hosts = xcalloc(4, sizeof *r->hosts);
	add_host(r, "node1", 0);
	add_host(r, "node2", 1);
	add_host(r, "node3", -1);
	add_host(r, "node4", 2);
	check_find(r, 0, SEV_WARN, "links", "slow");
	check_find(r, 0, SEV_ERROR, "kmsg.xid.0000:01:00.79", "Xid 79 on GPU 0 (0000:01:00), "
	    "1 time: GPU has fallen off the bus");
	check_find(r, 1, SEV_WARN, "kmsg.xid.0000:01:00.13", "Xid 13 on GPU 0");
	check_find(r, 2, SEV_UNREACHABLE, "host", "ssh: connect refused");
}

static const char *
host_field(json_t *out, int h, const char *key)
{
	json_t *v = json_object_get(json_array_get(out, (size_t)h), key);

	return json_is_boolean(v) ? (json_is_true(v) ? "true" : "false") : json_string_value(v);
}

static void
test_hosts(void **state)
{
	struct check_result r;
	json_t *out;
	char args[1024] = "", path[256];
	FILE *f;

	(void)state;
	make_result(&r);
	fake_scontrol(0);
	assert_int_equal(drain_hosts(&r, &out), EXIT_OK);
	assert_string_equal(host_field(out, 0, "drained"), "true");
	assert_string_equal(host_field(out, 0, "reason"), "collcheck: Xid 79 on GPU 0 "
	    "(0000:01:00), 1 time");
	assert_string_equal(host_field(out, 1, "why"), "warnings only");
	assert_string_equal(host_field(out, 2, "why"), "unreachable (collcheck could not check it)");
	assert_string_equal(host_field(out, 3, "why"), "no ERROR finding");
	for (int h = 1; h < 4; h++)
		assert_string_equal(host_field(out, h, "drained"), "false");
	snprintf(path, sizeof path, "%s/args", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	args[fread(args, 1, sizeof args - 1, f)] = '\0';
	fclose(f);
	assert_string_equal(args, "update\nNodeName=node1\nState=DRAIN\nReason=collcheck: Xid 79 "
	    "on GPU 0 (0000:01:00), 1 time\n");
	json_decref(out);

	/* Its failure: exit 3, and the host is not said to be drained. */
	fake_scontrol(1);
	r.hosts[0].node = "node01";
	assert_int_equal(drain_hosts(&r, &out), EXIT_CANNOT);
	assert_string_equal(host_field(out, 0, "drained"), "false");
	assert_string_equal(host_field(out, 0, "node"), "node01");
	assert_string_equal(host_field(out, 0, "why"), "scontrol failed");
	json_decref(out);

	/* A name that is no node's is never handed to scontrol. */
	fake_scontrol(0);
	r.hosts[0].node = "node[1-4]";
	assert_int_equal(drain_hosts(&r, &out), EXIT_CANNOT);
	assert_string_equal(host_field(out, 0, "why"), "its name is not one Slurm node's");
	assert_int_equal(access(path, F_OK), -1);
	json_decref(out);
	check_result_free(&r);
}

/* An error on a compared fact that every checked host has (no majority) names none. */
static void
test_shared(void **state)
{
	struct check_result r = { 0 };
	json_t *out;

	(void)state;
	r.hosts = xcalloc(3, sizeof *r.hosts);
	add_host(&r, "node1", 0);
	add_host(&r, "node2", 1);
	add_host(&r, "node3", -1);
	for (int h = 0; h < 2; h++)
		check_find(&r, h, SEV_ERROR, "nvidia.driver", "nvidia.driver=%d, no majority", h);
	fake_scontrol(0);
	assert_int_equal(drain_hosts(&r, &out), EXIT_OK);
	for (int h = 0; h < 2; h++)
		assert_string_equal(host_field(out, h, "why"), "its errors are every host's (no "
		    "majority)");
	json_decref(out);
	/* The kernel log's are each host's own: the same Xid on both drains both. */
	check_find(&r, 0, SEV_ERROR, "kmsg.xid.0000:01:00.79", "Xid 79 on GPU 0");
	check_find(&r, 1, SEV_ERROR, "kmsg.xid.0000:01:00.79", "Xid 79 on GPU 0");
	assert_int_equal(drain_hosts(&r, &out), EXIT_OK);
	for (int h = 0; h < 2; h++)
		assert_string_equal(host_field(out, h, "drained"), "true");
	json_decref(out);
	check_result_free(&r);
}

/* A job's settings differ by who started collcheck, not by node: never drained for. */
static void
test_settings(void **state)
{
	struct check_result r = { 0 };
	json_t *out;
	char path[256];

	(void)state;
	r.hosts = xcalloc(3, sizeof *r.hosts);
	add_host(&r, "node1", 0);
	add_host(&r, "node2", 1);
	add_host(&r, "node3", 2);
	check_find(&r, 0, SEV_ERROR, "env.NCCL_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME=eth1 differs");
	check_find(&r, 1, SEV_ERROR, "ncclconf.user.NCCL_IB_HCA", "differs from the baseline");
	check_find(&r, 2, SEV_ERROR, "collcheck", "its worker failed");
	fake_scontrol(0);
	assert_int_equal(drain_hosts(&r, &out), EXIT_OK);
	for (int h = 0; h < 3; h++) {
		assert_string_equal(host_field(out, h, "drained"), "false");
		assert_string_equal(host_field(out, h, "why"), "its errors are settings (NCCL_*, "
		    "nccl.conf) or collcheck's own, not the node's");
	}
	snprintf(path, sizeof path, "%s/args", dir);
	assert_int_equal(access(path, F_OK), -1);
	json_decref(out);
	/* A node's own fault beside them drains it, by that fault. */
	check_find(&r, 0, SEV_ERROR, "kmsg.xid.0000:01:00.79", "Xid 79 on GPU 0");
	assert_int_equal(drain_hosts(&r, &out), EXIT_OK);
	assert_string_equal(host_field(out, 0, "reason"), "collcheck: Xid 79 on GPU 0");
	json_decref(out);
	check_result_free(&r);
}

/* A host whose name is no node's is skipped; the hosts after it are still drained. */
static void
test_bad_name_then_good(void **state)
{
	struct check_result r = { 0 };
	json_t *out;

	(void)state;
	r.hosts = xcalloc(2, sizeof *r.hosts);
	add_host(&r, "node[1-2]", 0);
	add_host(&r, "node2", 1);
	for (int h = 0; h < 2; h++)
		check_find(&r, h, SEV_ERROR, "kmsg.xid.0000:01:00.79", "Xid 79 on GPU 0");
	fake_scontrol(0);
	assert_int_equal(drain_hosts(&r, &out), EXIT_CANNOT);
	assert_string_equal(host_field(out, 0, "why"), "its name is not one Slurm node's");
	assert_string_equal(host_field(out, 1, "drained"), "true");
	json_decref(out);
	check_result_free(&r);
}

static int
setup(void **state)
{
	char p[4096];

	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(p, sizeof p, "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	return setenv("PATH", p, 1);
}

static int
teardown(void **state)
{
	char p[256];

	(void)state;
	snprintf(p, sizeof p, "%s/scontrol", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/args", dir);
	unlink(p);
	return rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason_head),
		cmocka_unit_test(test_reason_clean),
		cmocka_unit_test(test_reason_bound),
		cmocka_unit_test(test_node_ok),
		cmocka_unit_test(test_hosts),
		cmocka_unit_test(test_shared),
		cmocka_unit_test(test_settings),
		cmocka_unit_test(test_bad_name_then_good),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
