/*
 * collrun's stdout is often a file description it shares: a terminal with
 * the shell and with the rank that reads our stdin, a pipe with the other
 * programs of a pipeline. Any of them may set O_NONBLOCK on it (node and
 * some Python libraries do), and clearing it would break them in turn. So
 * collrun leaves the flag as it is and writes through this stream, which
 * waits for room (POLLOUT) when a write says EAGAIN: a full pipe slows the
 * job down, as a blocking one would, instead of failing it.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "outwait.h"

static ssize_t
outwait_write(void *cookie, const char *buf, size_t len)
{
	size_t done = 0;

	(void)cookie;
	while (done < len) {
		ssize_t w = write(STDOUT_FILENO, buf + done, len - done);
		struct pollfd pfd = { STDOUT_FILENO, POLLOUT, 0 };

		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN && (poll(&pfd, 1, -1) >= 0 || errno == EINTR))
			continue;
		/* Short of all: what went is counted, and stdio marks the error (errno is why). */
		return (ssize_t)done;
	}
	return (ssize_t)done;
}

void
outwait_stdout(void)
{
	cookie_io_functions_t io = { .write = outwait_write };
	FILE *f;

	fflush(stdout);
	if ((f = fopencookie(NULL, "w", io)) == NULL)
		return;
	/* As stdio does for its own stdout: by lines to a terminal, else in blocks. */
	setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
	stdout = f;
}
