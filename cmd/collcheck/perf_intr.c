/*
 * Ctrl-C in a sweep. The rows are on rank 0's stdout as they are measured
 * (flushed one by one); on SIGINT rank 0 writes the end of the table, which
 * it keeps ready after each row, so that the handler needs write(2) and
 * _exit(2) only, both safe in a signal handler, whatever the interrupted
 * code held (stdio's lock, malloc's, a collective's wait). The text is
 * swapped atomically and an old one is never freed (see perf_intr_kept).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_intr.h"

static char *_Atomic perf_intr_text;
/*
 * Texts replaced are kept, never freed: a thread made after perf_intr_arm
 * (NCCL's, CUDA's) takes SIGINT unblocked, and its handler may be reading
 * the text this thread replaces. A sweep's rows are few; the kept texts stay
 * reachable, so no leak checker counts them.
 */
static char **perf_intr_kept;
static size_t perf_intr_nkept;

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
	/* SIGTERM and the rest stay deliverable: a write to a stalled pipe must stay killable. */
	sigemptyset(&sa.sa_mask);
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
	char *old = perf_intr_text;
	char **k;

	perf_intr_text = text;
	if (old == NULL)
		return;
	if ((k = realloc(perf_intr_kept, (perf_intr_nkept + 1) * sizeof *k)) == NULL)
		return;	/* kept by nobody: a leak, never a text freed under a handler */
	perf_intr_kept = k;
	perf_intr_kept[perf_intr_nkept++] = old;
}

void
perf_intr_release(void)
{
	/* The handler stays: a Ctrl-C from here on still ends with 130, now silently. */
	perf_intr_set(NULL);
}
