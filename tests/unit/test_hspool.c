/*
 * The handshake pool on an event loop (hspool_watch): the loop serves the
 * listener, a pool whose slots are all taken by a silent stranger wakes on
 * its own timer when the stranger may be cut off, and a newcomer then gets
 * its handshake; hspool_unwatch leaves the loop as it found it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "hspool.h"
#include "loop.h"

struct seen {
	pthread_mutex_t lock;
	struct hspool *hp;
	struct loop *l;		/* woken with the result, as an owner's pipe would be */
	int kept;		/* handshakes that read their byte */
	int cut;		/* handshakes the pool cut off */
	char byte;
};

/* A handshake: one byte within 5 s, as a peer's hello would be. */
static void
on_handshake(void *arg, int fd)
{
	struct seen *s = arg;
	struct pollfd pfd = { fd, POLLIN, 0 };
	char b = 0;
	int got;

	got = poll(&pfd, 1, 5000) == 1 && read(fd, &b, 1) == 1;
	pthread_mutex_lock(&s->lock);
	if (!hspool_settle(s->hp, fd))
		s->cut++;
	else if (got) {
		s->kept++;
		s->byte = b;
	}
	pthread_mutex_unlock(&s->lock);
	close(fd);
	loop_wake(s->l);
}

static void
before(struct loop *l, void *arg)
{
	(void)hspool_watch(arg, l, clock_now_ms());
}

static int
listen_any(struct sockaddr_in *sa)
{
	socklen_t len = sizeof *sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	*sa = (struct sockaddr_in){ .sin_family = AF_INET };
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)sa, sizeof *sa), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)sa, &len), 0);
	return fd;
}

static int
dial(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)sa, sizeof *sa), 0);
	return fd;
}

static int
seen_get(struct seen *s, const int *field)
{
	int v;

	pthread_mutex_lock(&s->lock);
	v = *field;
	pthread_mutex_unlock(&s->lock);
	return v;
}

/* Run rounds (each may wait up to 5 s) until *field reaches want or until ms passed. */
static void
run_until(struct loop *l, struct seen *s, const int *field, int want, int ms)
{
	uint64_t until = clock_now_ms() + (uint64_t)ms;

	while (seen_get(s, field) < want && clock_now_ms() < until)
		assert_true(loop_once(l, 5000) >= 0);
	assert_int_equal(seen_get(s, field), want);
}

static void
loop_serves_the_listener(void **state)
{
	struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct sockaddr_in sa;
	struct hspool hp;
	struct loop *l = loop_new();
	int lfd = listen_any(&sa), c;

	(void)state;
	s.hp = &hp;
	s.l = l;
	assert_int_equal(hspool_init(&hp, lfd, 4, on_handshake, &s, 1000, "test"), COLL_OK);
	loop_before(l, before, &hp);
	c = dial(&sa);
	assert_int_equal(write(c, "x", 1), 1);
	run_until(l, &s, &s.kept, 1, 5000);
	assert_int_equal(s.byte, 'x');
	assert_int_equal(loop_count(l), 1);	/* the listener, and nothing else */
	hspool_unwatch(&hp);
	assert_int_equal(loop_count(l), 0);
	hspool_free(&hp);
	loop_free(l);
	close(c);
	close(lfd);
}

/*
 * One slot, held by a silent stranger: the newcomer waits in the backlog,
 * the pool's own timer wakes the loop once the stranger is past the grace
 * (not the 5 s a round may wait), and the stranger is cut off for it.
 */
static void
silent_stranger_is_cut_for_a_newcomer(void **state)
{
	struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct sockaddr_in sa;
	struct hspool hp;
	struct loop *l = loop_new();
	int lfd = listen_any(&sa), silent, honest;
	uint64_t t0, took;

	(void)state;
	s.hp = &hp;
	s.l = l;
	assert_int_equal(hspool_init(&hp, lfd, 1, on_handshake, &s, 200, "test"), COLL_OK);
	loop_before(l, before, &hp);
	silent = dial(&sa);
	t0 = clock_now_ms();
	while (hspool_busy(&hp) < 1 && clock_now_ms() < t0 + 5000)
		assert_true(loop_once(l, 100) >= 0);
	assert_int_equal(hspool_busy(&hp), 1);
	honest = dial(&sa);
	assert_int_equal(write(honest, "y", 1), 1);
	run_until(l, &s, &s.kept, 1, 3000);
	took = clock_now_ms() - t0;
	assert_int_equal(s.byte, 'y');
	run_until(l, &s, &s.cut, 1, 3000);	/* its thread may end a moment later */
	assert_true(took >= 200);
	assert_true(took < 3000);
	hspool_unwatch(&hp);
	hspool_free(&hp);
	loop_free(l);
	close(silent);
	close(honest);
	close(lfd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loop_serves_the_listener),
		cmocka_unit_test(silent_stranger_is_cut_for_a_newcomer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
