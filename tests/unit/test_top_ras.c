/*
 * colltop --ras: NCCL RAS's MONITOR events in the alerts (a death is one, in
 * red; the rest dim), and the thread that follows the stream: it speaks only
 * to a listener held by a watched NCCL rank's process on this host (here:
 * this process, serving MONITOR as NCCL 2.29 does), and a peer's death it
 * reads becomes an alert.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "status.h"
#include "top.h"

static struct top_args args = { .factor = 3, .slow_k = 3, .min_late_ms = 10, .warmup = 3,
	.interval_s = 1 };

static int
find_alert(const struct top_model *m, const char *text, int *attr)
{
	char lines[16][256];
	int attrs[16], n = view_alerts(m, 0, lines, attrs, 16);

	for (int i = 0; i < n; i++)
		if (strstr(lines[i], text) != NULL) {
			*attr = attrs[i];
			return 1;
		}
	return 0;
}

static void
ras_alerts(void **state)
{
	struct top_model m;
	int attr = -1;

	(void)state;
	model_init(&m, &args);
	rasfollow_post(&m, "NCCL RAS: PEER_NEW: process 7 on h1", 0);
	rasfollow_post(&m, "NCCL RAS: PEER_DEAD: process 7 on h1 (GPU 1)", 1);
	assert_true(find_alert(&m, "PEER_DEAD: process 7 on h1 (GPU 1)", &attr));
	assert_int_equal(attr, VA_BAD);
	assert_true(find_alert(&m, "PEER_NEW", &attr));
	assert_int_equal(attr, VA_DIM);
	for (int i = 0; i < 10; i++)
		rasfollow_post(&m, "NCCL RAS: PEER_CONNECTING: 10.0.0.1<1>", 0);
	assert_int_equal(m.nras, TOP_RAS_EVENTS);	/* the last few only */
	assert_true(find_alert(&m, "PEER_DEAD", &attr));	/* a death stays in view */
	assert_int_equal(attr, VA_BAD);
	assert_false(find_alert(&m, "PEER_NEW", &attr));
	/* Deaths only: the oldest goes. */
	for (int i = 0; i < TOP_RAS_EVENTS; i++)
		rasfollow_post(&m, "NCCL RAS: PEER_DEAD: process 9 on h2", 1);
	assert_false(find_alert(&m, "process 7", &attr));
	model_free(&m);
}

/* NCCL's side: greeting, format, MONITOR's OK, then a death a moment later. */
static void *
ras_server(void *arg)
{
	int lfd = *(int *)arg, fd = accept(lfd, NULL, NULL);
	static const char *const answer[] = { "SERVER PROTOCOL 2\n", "OK\n", "OK\n",
		"{\n  \"timestamp\": \"2026-11-28 15:20:44\",\n  \"group\": \"LIFECYCLE\",\n"
		"  \"event\": \"PEER_DEAD\",\n  \"peer\": {\n    \"host\": \"10.0.0.12\",\n"
		"    \"pid\": 41207,\n    \"cuda_devs\": [1],\n    \"nvml_devs\": [1]\n  },\n"
		"  \"details\": \"\"\n}\n",
		/* A process that is no rank of the job: a note, not an alert. */
		"{\"event\": \"PEER_DEAD\", \"peer\": {\"host\": \"10.0.0.13\", \"pid\": 424242}}\n" };
	char buf[256];

	for (int i = 0; fd >= 0 && i < 3; i++) {
		size_t got = 0;
		ssize_t n;

		while ((got == 0 || buf[got - 1] != '\n') && got < sizeof buf &&
		    (n = read(fd, buf + got, sizeof buf - got)) > 0)
			got += (size_t)n;
		if (write(fd, answer[i], strlen(answer[i])) < 0)
			break;
	}
	if (fd >= 0 && write(fd, answer[3], strlen(answer[3])) > 0 &&
	    write(fd, answer[4], strlen(answer[4])) > 0)
		while (read(fd, buf, sizeof buf) > 0)	/* until colltop hangs up */
			;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void
ras_follow(void **state)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct top_front f = { .a = &args, .lock = &lock };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), attr = -1, attr2 = -1, seen = 0;
	char addr[64], err[256];
	uint64_t until = clock_now_ms() + 60000;	/* CI hosts are busy; it takes ms */
	pthread_t t;

	(void)state;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(sa.sin_port));
	setenv("NCCL_RAS_ADDR", addr, 1);
	model_init(&f.m, &args);
	/*
	 * A watched NCCL job with one rank on this host (this process, which
	 * holds the port) and one on another (the one that dies).
	 */
	f.m.jobs = calloc(1, sizeof *f.m.jobs);
	f.m.jobs[0].r = calloc(2, sizeof *f.m.jobs[0].r);
	f.m.njobs = 1;
	f.m.jobs[0].nr = 2;
	snprintf(f.m.jobs[0].jobid, sizeof f.m.jobs[0].jobid, "torchrun:750");
	snprintf(f.m.jobs[0].user, sizeof f.m.jobs[0].user, "alice");
	f.m.jobs[0].r[0].source = f.m.jobs[0].r[1].source = STATUS_SRC_NCCL;
	f.m.jobs[0].r[0].pid = getpid();
	gethostname(f.m.jobs[0].r[0].host, sizeof f.m.jobs[0].r[0].host - 1);
	f.m.jobs[0].r[1].pid = 41207;
	snprintf(f.m.jobs[0].r[1].host, sizeof f.m.jobs[0].r[1].host, "node2");
	assert_int_equal(pthread_create(&t, NULL, ras_server, &lfd), 0);
	f.ras = rasfollow_start(&f, err, sizeof err);
	assert_non_null(f.ras);
	while (!seen && clock_now_ms() < until) {
		front_lock_model(&f);
		seen = find_alert(&f.m, "process 424242", &attr2) && find_alert(&f.m, "NCCL RAS "
		    "of job torchrun:750 (alice): PEER_DEAD: process 41207 on 10.0.0.12 (GPU 1) "
		    "at 2026-11-28 15:20:44", &attr);
		front_unlock_model(&f);
		if (!seen)
			usleep(10000);
	}
	assert_true(seen);
	assert_int_equal(attr, VA_BAD);
	assert_int_equal(attr2, VA_DIM);
	assert_true(find_alert(&f.m, "PEER_DEAD (not a rank of that job colltop sees): process "
	    "424242 on 10.0.0.13", &attr2));
	assert_non_null(strstr(f.m.ras_note, "following MONITOR at 127.0.0.1:"));
	assert_non_null(strstr(f.m.ras_note, "served by job torchrun:750 (alice)"));
	rasfollow_stop(f.ras);
	pthread_join(t, NULL);
	close(lfd);
	unsetenv("NCCL_RAS_ADDR");
	model_free(&f.m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ras_alerts),
		cmocka_unit_test(ras_follow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
