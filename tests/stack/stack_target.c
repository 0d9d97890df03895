/*
 * A program not built on coll, for collstack's tests: one thread blocked in
 * each of a mutex, a condition variable, read(2) on a pipe and nanosleep,
 * one spinning, and the main thread waiting in pause(). Every thread has a
 * name (t-mutex ...) and its own function, so a test can tell from the
 * merged tree that each stack is whole and right. target_nap is inlined into
 * target_sleep, for the inlined frames. "ready" on stdout once all run.
 *
 *   stack_target [EXIT_AFTER_MS [THREADS [nospin]]]
 *
 * EXIT_AFTER_MS 0 runs until killed; THREADS (at least 6, the default) adds
 * threads asleep in target_sleep; nospin makes the busy thread sleep too (the
 * benchmark's 64 processes should not fight it for the CPUs).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int pipefd[2];
static volatile unsigned long spins;
static volatile int started;

static __attribute__((noinline)) void
target_mutex_wait(void)
{
	pthread_mutex_lock(&held);
}

static __attribute__((noinline)) void
target_cond_wait(void)
{
	pthread_mutex_lock(&cmu);
	for (;;)
		pthread_cond_wait(&cond, &cmu);
}

static __attribute__((noinline)) void
target_pipe_read(void)
{
	char c;

	for (;;)
		if (read(pipefd[0], &c, 1) <= 0)
			return;
}

static inline __attribute__((always_inline)) void
target_nap(void)
{
	struct timespec ts = { 1000, 0 };

	nanosleep(&ts, NULL);
}

static __attribute__((noinline)) void
target_sleep(void)
{
	for (;;)
		target_nap();
}

static __attribute__((noinline)) void
target_spin(void)
{
	for (;;)
		spins++;
}

static int nospin;

static void *
target_thread(void *arg)
{
	static const char *const names[] = { "t-mutex", "t-cond", "t-read", "t-sleep", "t-spin" };
	long which = (long)arg;

	if (which > 4 || (which == 4 && nospin))
		which = 3;
	pthread_setname_np(pthread_self(), names[which]);
	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	switch (which) {
	case 0: target_mutex_wait(); break;
	case 1: target_cond_wait(); break;
	case 2: target_pipe_read(); break;
	case 3: target_sleep(); break;
	default: target_spin(); break;
	}
	return NULL;
}

static void
target_alarm(int sig)
{
	(void)sig;
	_exit(0);
}

int
main(int argc, char **argv)
{
	long nthreads = argc > 2 ? atol(argv[2]) - 1 : 5;
	pthread_t t;

	nospin = argc > 3 && strcmp(argv[3], "nospin") == 0;
	if (pipe(pipefd) != 0 || nthreads < 5 || nthreads > 1000)
		return 1;
	pthread_mutex_lock(&held);
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&t, NULL, target_thread, (void *)i) != 0)
			return 1;
	while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < nthreads)
		usleep(1000);
	usleep(20000);	/* each is in its wait by now */
	if (argc > 1 && atol(argv[1]) > 0) {
		long ms = atol(argv[1]);
		struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };

		signal(SIGALRM, target_alarm);
		setitimer(ITIMER_REAL, &it, NULL);
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
