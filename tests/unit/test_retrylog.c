/*
 * The communicator's log of retried ops (retry_log_add, comm_retry_log):
 * bounded to the last COLL_RETRY_LOG, counted past that, a rerun of the same
 * op counted in its entry, the broken link's peer named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "comm_impl.h"
#include "comm.h"
#include "kind.h"

static struct comm *
fake_comm(int nranks)
{
	struct comm *c = calloc(1, sizeof *c);

	assert_non_null(c);
	pthread_mutex_init(&c->lock, NULL);
	c->nranks = nranks;
	c->kind = KIND_ALLREDUCE;
	return c;
}

static void
fake_free(struct comm *c)
{
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void
test_retrylog_empty(void **state)
{
	struct comm *c = fake_comm(4);
	struct comm_retry out[4];
	uint64_t total = 99;

	(void)state;
	assert_int_equal(comm_retry_log(c, out, 4, &total), 0);
	assert_int_equal(total, 0);
	assert_int_equal(comm_retry_log(c, out, 0, NULL), 0);
	fake_free(c);
}

/* One op retried twice: one entry, counted twice, its peer kept, the time its first. */
static void
test_retrylog_peer_counted(void **state)
{
	struct comm *c = fake_comm(4);
	struct comm_retry out[4];
	uint64_t total, before = clock_wall_ns();

	(void)state;
	c->seq = 40;
	retry_log_add(c, -1);
	retry_log_add(c, 2);
	retry_log_add(c, 3);
	c->seq = 41;
	c->kind = KIND_BROADCAST;
	retry_log_add(c, 9);	/* out of range: not a rank, not named */
	assert_int_equal(comm_retry_log(c, out, 4, &total), 2);
	assert_int_equal(total, 2);
	assert_int_equal(out[0].seq, 40);
	assert_int_equal(out[0].kind, KIND_ALLREDUCE);
	assert_int_equal(out[0].count, 3);
	assert_int_equal(out[0].peer, 2);
	assert_true(out[0].wall_ns >= before && out[0].wall_ns <= clock_wall_ns());
	assert_int_equal(out[1].seq, 41);
	assert_string_equal(coll_kind_name(out[1].kind), "broadcast");
	assert_int_equal(out[1].count, 1);
	assert_int_equal(out[1].peer, -1);
	fake_free(c);
}

/* Past COLL_RETRY_LOG ops the oldest go, the total still counts them; max takes the newest. */
static void
test_retrylog_bounded(void **state)
{
	struct comm *c = fake_comm(8);
	struct comm_retry out[COLL_RETRY_LOG + 8];
	uint64_t total;
	int n;

	(void)state;
	for (int i = 1; i <= COLL_RETRY_LOG + 10; i++) {
		c->seq = (uint64_t)i;
		retry_log_add(c, i % 8);
	}
	n = comm_retry_log(c, out, COLL_RETRY_LOG + 8, &total);
	assert_int_equal(n, COLL_RETRY_LOG);
	assert_int_equal(total, COLL_RETRY_LOG + 10);
	for (int i = 0; i < n; i++) {
		assert_int_equal(out[i].seq, (uint64_t)(11 + i));
		assert_int_equal(out[i].peer, (11 + i) % 8);
		assert_int_equal(out[i].count, 1);
	}
	n = comm_retry_log(c, out, 3, NULL);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].seq, COLL_RETRY_LOG + 8);
	assert_int_equal(out[2].seq, COLL_RETRY_LOG + 10);
	assert_int_equal(comm_retry_log(c, out, -1, NULL), 0);
	fake_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retrylog_empty),
		cmocka_unit_test(test_retrylog_peer_counted),
		cmocka_unit_test(test_retrylog_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
