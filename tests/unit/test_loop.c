/* The event loop: fd watchers, timers, wake-ups, signals through the self-pipe. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "loop.h"

struct seen {
	int calls;
	int fd;
	int events;
	char byte;
};

static void
on_fd(struct loop *l, int fd, int events, void *arg)
{
	struct seen *s = arg;

	(void)l;
	s->calls++;
	s->fd = fd;
	s->events = events;
	if ((events & LOOP_READ) && read(fd, &s->byte, 1) != 1)
		s->byte = 0;
}

static void
readable_fd_calls_back(void **state)
{
	struct loop *l = loop_new();
	struct seen s = { 0 };
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(loop_watch(l, p[0], LOOP_READ, on_fd, &s), COLL_OK);
	assert_int_equal(loop_once(l, 0), 0);	/* nothing yet */
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(loop_once(l, 1000), 1);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.fd, p[0]);
	assert_true(s.events & LOOP_READ);
	assert_int_equal(s.byte, 'x');
	close(p[1]);				/* hang-up: readable and an error */
	assert_int_equal(loop_once(l, 1000), 1);
	assert_true(s.events & LOOP_READ);
	assert_true(s.events & LOOP_ERROR);
	loop_free(l);
	close(p[0]);
}

static void
mask_selects_events(void **state)
{
	struct loop *l = loop_new();
	struct seen s = { 0 };
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(loop_watch(l, p[1], LOOP_WRITE, on_fd, &s), COLL_OK);
	assert_int_equal(loop_once(l, 1000), 1);
	assert_int_equal(s.events, LOOP_WRITE);
	assert_int_equal(loop_mask(l, p[1], 0), COLL_OK);	/* paused */
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(loop_count(l), 1);
	loop_unwatch(l, p[1]);
	assert_int_equal(loop_count(l), 0);
	assert_int_equal(loop_mask(l, p[1], LOOP_READ), COLL_EINVAL);
	assert_int_equal(loop_watch(l, -1, LOOP_READ, on_fd, &s), COLL_EINVAL);
	loop_free(l);
	close(p[0]);
	close(p[1]);
}

/* Two readable fds: the first callback closes the second and reuses its number. */
struct reuse {
	int victim;
	int fresh_calls;
	int victim_calls;
	int first_calls;
	int spare[2];
};

static void
on_fresh(struct loop *l, int fd, int events, void *arg)
{
	(void)l, (void)fd, (void)events;
	((struct reuse *)arg)->fresh_calls++;
}

static void
on_victim(struct loop *l, int fd, int events, void *arg)
{
	(void)l, (void)fd, (void)events;
	((struct reuse *)arg)->victim_calls++;
}

static void
on_first(struct loop *l, int fd, int events, void *arg)
{
	struct reuse *r = arg;
	char c;

	(void)events;
	r->first_calls++;
	if (read(fd, &c, 1) != 1)
		return;
	loop_unwatch(l, r->victim);
	/* The same fd number, now another file that is readable too. */
	assert_int_equal(dup2(r->spare[0], r->victim), r->victim);
	assert_int_equal(loop_watch(l, r->victim, LOOP_READ, on_fresh, r), COLL_OK);
}

static void
unwatched_fd_gets_no_stale_event(void **state)
{
	struct loop *l = loop_new();
	struct reuse r = { 0 };
	int a[2], b[2];

	(void)state;
	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(b), 0);
	assert_int_equal(pipe(r.spare), 0);
	assert_true(a[0] < b[0]);		/* dispatch goes up by fd */
	r.victim = b[0];
	assert_int_equal(write(a[1], "a", 1), 1);
	assert_int_equal(write(b[1], "b", 1), 1);
	assert_int_equal(write(r.spare[1], "s", 1), 1);
	assert_int_equal(loop_watch(l, a[0], LOOP_READ, on_first, &r), COLL_OK);
	assert_int_equal(loop_watch(l, b[0], LOOP_READ, on_victim, &r), COLL_OK);
	assert_int_equal(loop_once(l, 1000), 1);
	assert_int_equal(r.first_calls, 1);
	assert_int_equal(r.victim_calls, 0);
	assert_int_equal(r.fresh_calls, 0);	/* the old round's event was not its */
	assert_int_equal(loop_once(l, 1000), 1);
	assert_int_equal(r.fresh_calls, 1);
	loop_free(l);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
		close(r.spare[i]);
	}
}

struct ticks {
	int n;
	int repeat;
	uint64_t cancel;
};

static int
on_tick(struct loop *l, uint64_t id, void *arg)
{
	struct ticks *t = arg;

	(void)id;
	t->n++;
	if (t->cancel)
		loop_cancel(l, t->cancel);
	return t->n < t->repeat ? 1 : -1;
}

static void
timers_fire_repeat_and_cancel(void **state)
{
	struct loop *l = loop_new();
	struct ticks once = { .repeat = 1 }, thrice = { .repeat = 3 }, never = { .repeat = 1 };
	uint64_t start = clock_now_ms(), id;

	(void)state;
	assert_true(loop_timer(l, 30, on_tick, &once) > 0);
	assert_true(loop_timer(l, 0, on_tick, &thrice) > 0);
	id = loop_timer(l, 5, on_tick, &never);
	loop_cancel(l, id);
	while (once.n == 0 || thrice.n < 3)
		assert_true(loop_once(l, 5000) >= 0);
	assert_true(clock_now_ms() - start >= 30);	/* not before its time */
	assert_int_equal(once.n, 1);
	assert_int_equal(thrice.n, 3);
	assert_int_equal(never.n, 0);
	assert_int_equal(loop_once(l, 0), 0);		/* all ended */
	loop_free(l);
}

static int
on_self_cancel(struct loop *l, uint64_t id, void *arg)
{
	(void)arg;
	loop_cancel(l, id);
	((struct ticks *)arg)->n++;
	return 0;		/* would fire again, but it cancelled itself */
}

static void
timer_cancels_itself(void **state)
{
	struct loop *l = loop_new();
	struct ticks t = { 0 };

	(void)state;
	assert_true(loop_timer(l, 0, on_self_cancel, &t) > 0);
	assert_int_equal(loop_once(l, 1000), 1);
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(t.n, 1);
	loop_free(l);
}

static void *
waker(void *arg)
{
	loop_wake(arg);
	return NULL;
}

static void
wake_ends_the_wait(void **state)
{
	struct loop *l = loop_new();
	pthread_t th;
	uint64_t start = clock_now_ms();

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, waker, l), 0);
	/* Without the wake this round would wait 30 s. */
	assert_int_equal(loop_once(l, 30000), 0);
	assert_true(clock_now_ms() - start < 20000);
	pthread_join(th, NULL);
	loop_free(l);
}

static int hooked;

static void
on_hook(struct loop *l, void *arg)
{
	(void)l, (void)arg;
	hooked++;
}

static void
hook_counts_rounds(void **state)
{
	struct loop *l = loop_new();

	(void)state;
	loop_before(l, on_hook, NULL);
	for (int i = 0; i < 3; i++)
		assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(hooked, 3);
	loop_free(l);
}

static int got_signo, got_count;

static void
on_signal(struct loop *l, int signo, void *arg)
{
	(void)l, (void)arg;
	got_signo = signo;
	got_count++;
}

static void
signal_runs_in_the_loop(void **state)
{
	struct loop *l = loop_new(), *other = loop_new();
	struct sigaction before, after;

	(void)state;
	sigaction(SIGUSR1, NULL, &before);
	assert_int_equal(loop_signal(l, SIGUSR1, on_signal, NULL), COLL_OK);
	assert_int_equal(loop_signal(other, SIGUSR1, on_signal, NULL), COLL_EINVAL);
	assert_int_equal(loop_signal(l, 0, on_signal, NULL), COLL_EINVAL);
	assert_int_equal(raise(SIGUSR1), 0);
	for (int i = 0; i < 100 && got_signo == 0; i++)
		assert_true(loop_once(l, 1000) >= 0);
	assert_int_equal(got_signo, SIGUSR1);
	/* Two before the loop looks: both count (collrun's agent kills on the second SIGTERM). */
	got_count = 0;
	assert_int_equal(raise(SIGUSR1), 0);
	assert_int_equal(raise(SIGUSR1), 0);
	for (int i = 0; i < 20 && got_count < 2; i++)
		assert_true(loop_once(l, 100) >= 0);
	assert_int_equal(got_count, 2);
	loop_free(l);
	sigaction(SIGUSR1, NULL, &after);
	assert_ptr_equal(after.sa_handler, before.sa_handler);	/* put back */
	assert_int_equal(loop_signal(other, SIGUSR1, on_signal, NULL), COLL_OK);
	loop_free(other);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(readable_fd_calls_back),
		cmocka_unit_test(mask_selects_events),
		cmocka_unit_test(unwatched_fd_gets_no_stale_event),
		cmocka_unit_test(timers_fire_repeat_and_cancel),
		cmocka_unit_test(timer_cancels_itself),
		cmocka_unit_test(wake_ends_the_wait),
		cmocka_unit_test(hook_counts_rounds),
		cmocka_unit_test(signal_runs_in_the_loop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
