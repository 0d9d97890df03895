/*
 * colltop's control port (ctl.c) on loopback: rank 0 gets in past a crowd
 * of silent connections (the oldest handshake is cut for a newcomer, and
 * each cut is counted as a refusal), its proven connection is the one handed
 * over, a connection asking for another role is refused, and stopping the
 * server with silent handshakes in flight does not wait out their deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth.h"
#include "clock.h"
#include "colltop/top.h"
#include "err.h"
#include "net.h"
#include "uid.h"
#include "wire.h"

#define SHAKES 8		/* ctl.c's CTL_SHAKES */

struct fixture {
	struct ctl_server *s;
	struct coll_uid uid;
	int lfd, port;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	char err[256], str[UID_STR_LEN];
	struct net_addr a;

	assert_non_null(f);
	assert_int_equal(ctl_listen(0, &f->lfd, &f->port, err, sizeof err), 0);
	net_addr_parse(&a, "127.0.0.1", (uint16_t)f->port);
	assert_int_equal(uid_generate(&f->uid, &a), COLL_OK);
	uid_format(&f->uid, str, sizeof str);
	setenv("COLL_UNIQUE_ID", str, 1);
	f->s = ctl_server_start(f->lfd, err, sizeof err);
	assert_non_null(f->s);
	assert_int_equal(ctl_server_uid(f->s, str), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	ctl_server_stop(f->s);
	close(f->lfd);
	free(f);
	return 0;
}

/* A connection that says nothing. */
static int
silent(const struct fixture *f)
{
	struct net_addr a;
	int fd = -1;

	net_addr_parse(&a, "127.0.0.1", (uint16_t)f->port);
	assert_int_equal(net_connect(&a, clock_now_ms() + 2000, -1, &fd), COLL_OK);
	return fd;
}

/* Wait (bounded) until at least n refusals were counted; the last take's fd in *fd. */
static void
wait_refused(const struct fixture *f, unsigned long n, struct ctl_refused *r, int *fd)
{
	uint64_t dl = clock_now_ms() + 5000;

	*fd = -1;
	do {
		int got = ctl_server_take(f->s, r);

		if (got >= 0)
			*fd = got;
		if (r->n >= n)
			return;
		usleep(1000);
	} while (clock_now_ms() < dl);
	fail_msg("%lu refusals counted, waited for %lu", r->n, n);
}

static void
test_rank0_past_silent_crowd(void **state)
{
	struct fixture *f = *state;
	struct ctl_cmd cmd = { 0 };
	struct ctl_refused r;
	int held[2 * SHAKES], c, fd = -1;
	char err[256];
	uint64_t dl, t0 = clock_now_ms();

	for (int i = 0; i < 2 * SHAKES; i++)
		held[i] = silent(f);
	c = ctl_connect(f->port, err, sizeof err);
	assert_true(c >= 0);
	/* Each of the 2 * SHAKES silent ones was cut, all but SHAKES - 1 of them by now. */
	wait_refused(f, SHAKES + 1, &r, &fd);
	dl = clock_now_ms() + 5000;
	while (fd < 0 && clock_now_ms() < dl) {
		fd = ctl_server_take(f->s, &r);
		usleep(1000);
	}
	assert_true(fd >= 0);
	/* No grace: each newcomer cut the oldest at once, rank 0 waited for no deadline. */
	assert_true(clock_now_ms() - t0 < 1000);
	assert_non_null(strstr(r.first, "closed to make room"));
	/* The connection handed over is rank 0's own. */
	assert_int_equal(ctl_send(fd, "interval 250\nquit\n"), 0);
	dl = clock_now_ms() + 5000;
	while (!cmd.quit && clock_now_ms() < dl) {
		assert_int_equal(ctl_poll(c, &cmd), 0);
		usleep(1000);
	}
	assert_int_equal(cmd.quit, 1);
	assert_int_equal(cmd.interval_ms, 250);
	close(fd);
	close(c);
	for (int i = 0; i < 2 * SHAKES; i++)
		close(held[i]);
}

/* A peer with the secret asking for another role is refused, and nothing is handed over. */
static int
wrong_role(const struct fixture *f)
{
	char err[256];
	int fd = silent(f);

	assert_int_equal(auth_connect(fd, &f->uid, WIRE_ROLE_PEER, clock_now_ms() + 3000, -1, err,
	    sizeof err), COLL_OK);
	return fd;
}

static void
test_wrong_role_refused(void **state)
{
	struct fixture *f = *state;
	struct ctl_refused r;
	int c = wrong_role(f), fd;

	wait_refused(f, 1, &r, &fd);
	assert_int_equal(fd, -1);
	assert_int_equal(r.n, 1);
	assert_non_null(strstr(r.last, "asked for role 2"));
	close(c);
}

static void
test_stop_cuts_handshakes(void **state)
{
	struct fixture *f = *state;
	struct ctl_refused r;
	int held[SHAKES - 1], c, fd;
	uint64_t t0;

	for (int i = 0; i < SHAKES - 1; i++)
		held[i] = silent(f);
	/* Accepted after the silent ones: once it is refused, they are all in flight. */
	c = wrong_role(f);
	wait_refused(f, 1, &r, &fd);
	t0 = clock_now_ms();
	ctl_server_stop(f->s);
	f->s = NULL;
	/* Far less than a handshake's deadline (CTL_ACCEPT_MS, 2 s). */
	assert_true(clock_now_ms() - t0 < 1000);
	close(c);
	for (int i = 0; i < SHAKES - 1; i++)
		close(held[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rank0_past_silent_crowd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_role_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_cuts_handshakes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
