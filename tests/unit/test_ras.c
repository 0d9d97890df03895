/*
 * NCCL RAS reports read into collstack's shape: the JSON and the text
 * report NCCL 2.28.9 wrote on the GPU machine during a hang (rank 1 one
 * all-reduce behind), and reports that are neither; a hostile one is read
 * in time linear in its length, and refused over its bounds. The service is
 * asked only where the job holds its listening socket (sockown.c): the
 * kernel's table read from a fixture, then a real listener.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ras.h"
#include "ras_monitor.h"
#include "sockown.h"

static char *
slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf = malloc(1 << 16);

	snprintf(path, sizeof path, "%s/tests/stack/ras/%s", COLL_SRC, name);
	assert_non_null(f = fopen(path, "r"));
	*len = fread(buf, 1, (1 << 16) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

/* Each rank's AllReduce count, and its pid, in the first communicator. */
static void
check_counts(json_t *r, int with_status)
{
	json_t *c = json_array_get(json_object_get(r, "comms"), 0);
	json_t *ranks = json_object_get(c, "ranks");
	static const int pid[] = { 673, 674 }, count[] = { 6, 5 };

	assert_string_equal(json_string_value(json_object_get(r, "version")), "2.28.9");
	assert_string_equal(json_string_value(json_object_get(c, "hash")), "0x92906a7ad1050f54");
	assert_int_equal(json_array_size(ranks), 2);
	for (int i = 0; i < 2; i++) {
		json_t *x = json_array_get(ranks, (size_t)i);

		assert_int_equal(json_integer_value(json_object_get(x, "rank")), i);
		assert_int_equal(json_integer_value(json_object_get(x, "pid")), pid[i]);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(x, "counts"),
		    "AllReduce")), count[i]);
		if (with_status)
			assert_int_equal(json_integer_value(json_object_get(x, "async_error")), 0);
	}
	assert_int_equal(json_array_size(json_object_get(c, "missing")), 0);
}

static void
report_json(void **state)
{
	size_t len;
	char *buf = slurp("verbose_status.json", &len), why[256];
	json_t *r = ras_parse(buf, len, why, sizeof why);

	(void)state;
	assert_non_null(r);
	check_counts(r, 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(
	    json_object_get(json_array_get(json_object_get(r, "comms"), 0), "ranks"), 0),
	    "counts"), "Broadcast")), 0);
	json_decref(r);
	free(buf);
}

static void
report_text(void **state)
{
	size_t len;
	char *buf = slurp("verbose_status.txt", &len), why[256];
	json_t *r = ras_parse(buf, len, why, sizeof why);

	(void)state;
	assert_non_null(r);
	check_counts(r, 0);
	json_decref(r);
	free(buf);
}

static void
report_refused(void **state)
{
	char why[256];
	static const char *bad[] = { "", "hello\n", "{\"communicators\": 3}", "{\"a\": 1, \"a\": 2}",
		"{\"communicators\": [", "<html>" };

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		why[0] = '\0';
		assert_null(ras_parse(bad[i], strlen(bad[i]), why, sizeof why));
		assert_true(strstr(why, "NCCL RAS report") != NULL);
	}
}

/* Ranks that are not objects, counts that are not numbers: left out, not believed. */
static void
report_odd_values(void **state)
{
	static const char *in = "{\"nccl_version\": \"2.28.9\", \"communicators\": [{\"hash\": "
	    "\"0x1\", \"size\": 3, \"ranks\": [7, {\"rank\": 0, \"collective_counts\": "
	    "{\"AllReduce\": \"x\", \"AllGather\": -4, \"Reduce\": 2}}], \"missing_ranks\": "
	    "[2, {\"rank\": 1}, \"z\"]}]}";
	char why[256];
	json_t *r = ras_parse(in, strlen(in), why, sizeof why), *c, *cnt;

	(void)state;
	assert_non_null(r);
	c = json_array_get(json_object_get(r, "comms"), 0);
	assert_int_equal(json_array_size(json_object_get(c, "ranks")), 1);
	cnt = json_object_get(json_array_get(json_object_get(c, "ranks"), 0), "counts");
	assert_int_equal(json_object_size(cnt), 1);
	assert_int_equal(json_integer_value(json_object_get(cnt, "Reduce")), 2);
	assert_int_equal(json_array_size(json_object_get(c, "missing")), 2);
	json_decref(r);
}


/*
 * 2 MB of MISMATCH warnings, each of its own communicator: read in well under
 * a second now (each found by hash); the walk of every communicator per
 * warning it replaced took a minute.
 */
static void
report_many_comms(void **state)
{
	size_t cap = 2u << 20, len = 0;
	char *buf = malloc(cap + 64), why[256];
	struct timespec t0, t1;
	int n = 0;
	json_t *r;

	(void)state;
	len += (size_t)sprintf(buf, "NCCL version 2.28.9\n");
	while (len + 40 < cap)
		len += (size_t)sprintf(buf + len, "#0-0 (%016x) MISMATCH\n", n++);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = ras_parse(buf, len, why, sizeof why);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_non_null(r);
	assert_int_equal(json_array_size(json_object_get(r, "comms")), n);
	/* Generous for a sanitizer build on a loaded machine; the quadratic walk took 60 s. */
	assert_true(t1.tv_sec - t0.tv_sec < 10);
	json_decref(r);
	free(buf);
}

/* Over 8 MiB, or more kinds of operation than NCCL has: refused, and said. */
static void
report_over_bounds(void **state)
{
	size_t len = RAS_MAX + 1, off;
	char *buf = malloc(len + 1), why[256];

	(void)state;
	memset(buf, ' ', len);
	memcpy(buf, "NCCL version 2.28.9\n", 20);
	assert_null(ras_parse(buf, len, why, sizeof why));
	assert_string_equal(why, "the NCCL RAS report is over 8 MiB: not read");
	off = (size_t)sprintf(buf, "NCCL version 2.28.9\n#0-0 (1) MISMATCH\n");
	for (int i = 0; i < 65; i++)
		off += (size_t)sprintf(buf + off, "  Communicator ranks have different Op%d "
		    "operation counts\n", i);
	assert_null(ras_parse(buf, off, why, sizeof why));
	assert_string_equal(why, "the NCCL RAS report names 65 kinds of operation, more than "
	    "NCCL has (64): not read");
	free(buf);
}

/* addr in the table's form: each 32-bit word as it sits in memory, in hex. */
static void
hexaddr(const void *addr, size_t words, char *out)
{
	for (size_t i = 0; i < words; i++) {
		uint32_t w;

		memcpy(&w, (const char *)addr + i * 4, 4);
		sprintf(out + i * 8, "%08X", w);
	}
}

static struct sockaddr_in
v4(const char *ip, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	inet_pton(AF_INET, ip, &sa.sin_addr);
	return sa;
}

/*
 * The table as /proc/net/tcp writes it: a listener on the very address wins
 * over the wildcard; a connection, another port or a closed socket is none.
 */
static void
table_fixture(void **state)
{
	struct sockaddr_in lo = v4("127.0.0.1", 28028), any = v4("0.0.0.0", 0);
	struct sockaddr_in6 lo6 = { .sin6_family = AF_INET6, .sin6_port = htons(28028) };
	struct in6_addr mapped;
	struct sockown_listener l[8];
	char h[40], w[40], m[40], z[40] = "00000000000000000000000000000000", text[2048];

	(void)state;
	hexaddr(&lo.sin_addr, 1, h);
	hexaddr(&any.sin_addr, 1, w);
	snprintf(text, sizeof text,
	    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	    "   0: %s:6D7C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 4242 1 0000000000000000 100 0 0 10 0\n"
	    "   1: %s:6D7C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 100 0 0 10 0\n"
	    "   2: %s:6D7C %s:9C40 01 00000000:00000000 00:00000000 00000000  1001        0 4444 1 0000000000000000 20 4 30 10 -1\n"
	    "   3: %s:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4545 1 0000000000000000 100 0 0 10 0\n"
	    "   4: %s:6D7C 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4646 1 0000000000000000 100 0 0 10 0\n"
	    "   5: junk\n", h, w, h, h, h, h);
	assert_int_equal(sockown_parse(text, 0, (struct sockaddr *)&lo, l, 0, 8), 2);
	assert_int_equal(l[0].inode, 4242);
	assert_int_equal(l[0].uid, 1001);
	assert_int_equal(l[0].rank, 0);
	assert_int_equal(l[1].inode, 4343);
	assert_int_equal(l[1].rank, 2);
	/* tcp6: a v4-mapped listener on the address, and the IPv6 wildcard. */
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &mapped);
	hexaddr(&mapped, 4, m);
	snprintf(text, sizeof text,
	    "   0: %s:6D7C %s:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 5151 1\n"
	    "   1: %s:6D7C %s:0000 0A 00000000:00000000 00:00000000 00000000  1003        0 5252 1\n",
	    m, z, z, z);
	assert_int_equal(sockown_parse(text, 1, (struct sockaddr *)&lo, l, 0, 8), 2);
	assert_int_equal(l[0].rank, 1);
	assert_int_equal(l[1].rank, 3);
	/* An IPv6 connection to ::1 takes no IPv4 listener, and the IPv6 wildcard after ::1. */
	lo6.sin6_addr = in6addr_loopback;
	assert_int_equal(sockown_parse(text, 1, (struct sockaddr *)&lo6, l, 0, 8), 1);
	assert_int_equal(l[0].inode, 5252);
	assert_int_equal(sockown_parse("   0: 0100007F:6D7C 00000000:0000 0A 0:0 0:0 0 0 0 1 1\n",
	    0, (struct sockaddr *)&lo6, l, 0, 8), 0);
}

/* A real listener of this process: the job's when we are in it, another's when not. */
static void
real_listener(void **state)
{
	struct sockaddr_in sa = v4("127.0.0.1", 0);
	socklen_t sl = sizeof sa;
	pid_t me = getpid(), init = 1, other[2] = { 1, 2 };
	char why[256], want[128], addr[64];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c;

	(void)state;
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(sockown_check((struct sockaddr *)&sa, &me, 1, why, sizeof why), 1);
	assert_int_equal(sockown_check((struct sockaddr *)&sa, other, 2, why, sizeof why), -1);
	snprintf(want, sizeof want, "belongs to pid %d of user ", (int)me);
	assert_memory_equal(why, want, strlen(want));
	assert_true(strstr(why, ", not to the job") != NULL);
	/* The RAS client does not even connect to it: nothing waits in its queue. */
	snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(sa.sin_port));
	assert_null(ras_fetch(addr, &init, 1, 1000, why, sizeof why));
	snprintf(want, sizeof want, "ignored: NCCL RAS on %s belongs to pid %d of user ", addr,
	    (int)me);
	assert_memory_equal(why, want, strlen(want));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	c = accept(fd, NULL, NULL);
	assert_int_equal(c, -1);
	assert_int_equal(errno, EAGAIN);
	close(fd);
	assert_int_equal(sockown_check((struct sockaddr *)&sa, &me, 1, why, sizeof why), 0);
}

/*
 * The holder of a foreign listener is looked for within a bound (anyone can
 * hold many fds): cut short, the table's uid names the socket's user.
 */
static void
holder_bounded(void **state)
{
	struct sockaddr_in sa = v4("127.0.0.1", 0);
	socklen_t sl = sizeof sa;
	struct sockown_listener l[SOCKOWN_MAX];
	struct passwd *pw = getpwuid(getuid());
	char why[256], want[160], text[512], h[40];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct stat sb;

	(void)state;
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(fstat(fd, &sb), 0);
	hexaddr(&sa.sin_addr, 1, h);
	snprintf(text, sizeof text, "   0: %s:%04X 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000 %5u        0 %lu 1\n", h, ntohs(sa.sin_port),
	    (unsigned)getuid(), (unsigned long)sb.st_ino);
	assert_int_equal(sockown_parse(text, 0, (struct sockaddr *)&sa, l, 0, SOCKOWN_MAX), 1);
	assert_int_equal(sockown_holder(l[0].inode, 0), -1);
	sockown_whose(&l[0], 0, why, sizeof why);
	snprintf(want, sizeof want, "belongs to user %s (its process was not looked for), not "
	    "to the job", pw != NULL ? pw->pw_name : "?");
	assert_string_equal(why, want);
	/* Given time, this process is found (a minute: CI hosts are busy; it takes ms). */
	assert_int_equal(sockown_holder(l[0].inode, 60000), getpid());
	sockown_whose(&l[0], 60000, why, sizeof why);
	snprintf(want, sizeof want, "belongs to pid %d of user ", (int)getpid());
	assert_memory_equal(why, want, strlen(want));
	close(fd);
}

/* The MONITOR stream in JSON (fixture written by hand: tests/stack/ras/README.md), fed in pieces. */
static void
monitor_json(void **state)
{
	struct rasmon m;
	struct rasmon_event ev[8];
	size_t len;
	char *buf = slurp("monitor.json", &len);
	int n = 0;

	(void)state;
	rasmon_init(&m);
	for (size_t i = 0; i < len; i += 7)	/* as a socket may cut it */
		n += rasmon_feed(&m, buf + i, len - i < 7 ? len - i : 7, ev + n, 8 - n);
	assert_int_equal(n, 3);
	assert_int_equal(ev[0].kind, RASMON_PEER_NEW);
	assert_int_equal(ev[1].kind, RASMON_PEER_DEAD);
	assert_string_equal(ev[1].name, "PEER_DEAD");
	assert_string_equal(ev[1].when, "2026-11-28 15:20:44");
	assert_string_equal(ev[1].host, "10.0.0.12");
	assert_int_equal(ev[1].pid, 41207);
	assert_string_equal(ev[1].gpus, "1");
	/* Known to the service only by its address. */
	assert_int_equal(ev[2].kind, RASMON_PEER_DEAD);
	assert_string_equal(ev[2].host, "10.0.0.13<37171>");
	assert_int_equal(ev[2].pid, -1);
	assert_int_equal(m.bad, 1);	/* NCCL's unescaped details: not JSON */
	free(buf);
}

/* A real stream: NCCL 2.30.7 on the GPU machine, rank 1 killed (tests/gpu/ras_monitor.sh). */
static void
monitor_json_real(void **state)
{
	struct rasmon m;
	struct rasmon_event ev[4];
	size_t len;
	char *buf = slurp("monitor_nccl2307.json", &len);
	int n;

	(void)state;
	rasmon_init(&m);
	n = rasmon_feed(&m, buf, len, ev, 4);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].kind, RASMON_PEER_DEAD);
	assert_string_equal(ev[0].when, "2026-11-28 15:49:14");
	assert_string_equal(ev[0].host, "192.0.2.2");
	assert_int_equal(ev[0].pid, 719);
	assert_string_equal(ev[0].gpus, "1");
	assert_int_equal(m.bad, 0);
	free(buf);
}

static void
monitor_text(void **state)
{
	struct rasmon m;
	struct rasmon_event ev[8];
	size_t len;
	char *buf = slurp("monitor.txt", &len);
	int n;

	(void)state;
	rasmon_init(&m);
	n = rasmon_feed(&m, "OK\n", 3, ev, 8);
	n += rasmon_feed(&m, buf, len, ev + n, 8 - n);
	assert_int_equal(n, 4);
	assert_int_equal(ev[1].kind, RASMON_PEER_DEAD);
	assert_int_equal(ev[1].pid, 41207);
	assert_string_equal(ev[1].host, "10.0.0.12");
	assert_string_equal(ev[1].gpus, "1");
	assert_int_equal(ev[2].kind, RASMON_PEER_DEAD);
	assert_string_equal(ev[2].host, "10.0.0.13<37171>");
	assert_string_equal(ev[3].gpus, "0,1");
	assert_int_equal(m.bad, 0);
	free(buf);
}

/* What a stranger's listener might send: bounded, passed over, never kept unprintable. */
static void
monitor_hostile(void **state)
{
	static char big[3 * RASMON_OBJ];
	struct rasmon m;
	struct rasmon_event ev[2];
	const char *odd = "{\"event\": \"PEER_DEAD\", \"timestamp\": \"\\u001b[2J\", "
	    "\"peer\": {\"host\": \"a b\\u0007\", \"pid\": -5, \"cuda_devs\": [99, \"x\"]}}\n";
	const char *filler = "  \"k\": \"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv\",\n";
	int n;

	(void)state;
	rasmon_init(&m);
	memset(big, 'x', sizeof big);
	big[0] = '[';
	assert_int_equal(rasmon_feed(&m, big, sizeof big, ev, 2), 0);	/* a line past the bound */
	assert_true(m.llen <= RASMON_LINE);
	assert_int_equal(rasmon_feed(&m, "\n", 1, ev, 2), 0);
	assert_int_equal(m.bad, 1);
	/* An object that never closes stops at its bound. */
	assert_int_equal(rasmon_feed(&m, "{\n", 2, ev, 2), 0);
	for (int i = 0; i < 200; i++)
		rasmon_feed(&m, filler, strlen(filler), ev, 2);
	assert_int_equal(m.in_obj, 0);
	assert_int_equal(m.bad, 2);
	n = rasmon_feed(&m, odd, strlen(odd), ev, 2);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].kind, RASMON_PEER_DEAD);
	assert_string_equal(ev[0].when, "");
	assert_string_equal(ev[0].host, "");
	assert_int_equal(ev[0].pid, -1);
	assert_string_equal(ev[0].gpus, "");
	/* More events than room: counted, not written past out. */
	n = rasmon_feed(&m, odd, strlen(odd), ev, 0);
	assert_int_equal(n, 0);
	assert_int_equal(m.dropped, 1);
}

/* A RAS service of this process for ras_monitor_open: greeting, format, then MONITOR's OK. */
static void *
monitor_server(void *arg)
{
	int lfd = *(int *)arg, fd = accept(lfd, NULL, NULL);
	static const char *const answer[] = { "SERVER PROTOCOL 2\n", "OK\n",
		"OK\n[2026-11-28 15:20:44] PEER_DEAD: Process 77 on node h1 managing GPU 0\n" };
	char buf[256];
	size_t got = 0;

	for (int i = 0; fd >= 0 && i < 3; i++) {
		ssize_t n;

		while (memchr(buf, '\n', got) == NULL && (n = read(fd, buf + got,
		    sizeof buf - got)) > 0)
			got += (size_t)n;
		got = 0;
		memset(buf, 0, sizeof buf);
		if (write(fd, answer[i], strlen(answer[i])) < 0)
			break;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void
monitor_open(void **state)
{
	struct sockaddr_in sa = v4("127.0.0.1", 0);
	socklen_t sl = sizeof sa;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;
	pid_t me = getpid(), other = 1;
	char addr[64], why[256] = "", rest[512];
	size_t restlen;
	struct rasmon m;
	struct rasmon_event ev[2];
	pthread_t t;

	(void)state;
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(sa.sin_port));
	/* Not the job's listener: not spoken to. */
	assert_int_equal(ras_monitor_open(addr, &other, 1, 2000, rest, sizeof rest, &restlen,
	    why, sizeof why), -1);
	assert_memory_equal(why, "ignored: ", 9);
	assert_int_equal(pthread_create(&t, NULL, monitor_server, &lfd), 0);
	fd = ras_monitor_open(addr, &me, 1, 5000, rest, sizeof rest, &restlen, why, sizeof why);
	assert_true(fd >= 0);
	rasmon_init(&m);
	assert_int_equal(rasmon_feed(&m, rest, restlen, ev, 2), 1);	/* came with the OK */
	assert_int_equal(ev[0].kind, RASMON_PEER_DEAD);
	assert_int_equal(ev[0].pid, 77);
	close(fd);
	pthread_join(t, NULL);
	close(lfd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(report_json),
		cmocka_unit_test(report_text),
		cmocka_unit_test(report_refused),
		cmocka_unit_test(report_odd_values),
		cmocka_unit_test(report_many_comms),
		cmocka_unit_test(report_over_bounds),
		cmocka_unit_test(table_fixture),
		cmocka_unit_test(holder_bounded),
		cmocka_unit_test(real_listener),
		cmocka_unit_test(monitor_json),
		cmocka_unit_test(monitor_json_real),
		cmocka_unit_test(monitor_text),
		cmocka_unit_test(monitor_hostile),
		cmocka_unit_test(monitor_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
