/*
 * Ctrl-C in a sweep. The rows are on rank 0's stdout as they are measured
 * (flushed one by one); on SIGINT rank 0 writes the end of the table, which
 * it keeps ready after each row, so that the handler needs write(2) and
 * _exit(2) only, both safe in a signal handler, whatever the interrupted
 * code held (stdio's lock, malloc's, a collective's wait). Only the sweep's
 * own thread takes the signal, and not while it swaps the text.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_intr.h"

static char *perf_intr_text;

static void
perf_intr_on_signal(int sig)
{
	const char *t = perf_intr_text;
	size_t len = t != NULL ? strlen(t) : 0, off = 0;
	ssize_t n;

	(void)sig;
	while (off < len && (n = write(STDOUT_FILENO, t + off, len - off)) > 0)
		off += (size_t)n;
	_exit(130);
}

static void
perf_intr_mask(int how)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	pthread_sigmask(how, &s, NULL);
}

void
perf_intr_install(void)
{
	struct sigaction sa;

	perf_intr_mask(SIG_BLOCK);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = perf_intr_on_signal;
	sigfillset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
}

void
perf_intr_arm(void)
{
	perf_intr_mask(SIG_UNBLOCK);
}

void
perf_intr_set(char *text)
{
	char *old;
	sigset_t s, was;

	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	pthread_sigmask(SIG_BLOCK, &s, &was);
	old = perf_intr_text;
	perf_intr_text = text;
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	free(old);
}

void
perf_intr_release(void)
{
	/* The handler stays: a Ctrl-C from here on still ends with 130, now silently. */
	perf_intr_set(NULL);
}
