#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "cmdout.h"

/* The first write to stdout that failed (its errno), or 0. */
static int cmdout_first;

int
cmdout_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };

		if (w > 0) {
			p += w;
			len -= (size_t)w;
		} else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* Someone else's O_NONBLOCK on a description we share: wait as a blocking write would. */
			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -1;
		} else if (w < 0 && errno != EINTR) {
			return -1;
		} else if (w == 0) {
			errno = EIO;
			return -1;
		}
	}
	return 0;
}

/* stdio's write for stdout: the bytes all written, or 0 (stdio's error) with the cause kept. */
static ssize_t
cmdout_cookie_write(void *cookie, const char *buf, size_t len)
{
	(void)cookie;
	if (cmdout_write(STDOUT_FILENO, buf, len) == 0)
		return (ssize_t)len;
	if (cmdout_first == 0)
		cmdout_first = errno;
	return 0;
}

/* A terminal left non-blocking (by a program that crashed): our own description of it, blocking. */
static void
cmdout_reopen_tty(void)
{
	int fd = open("/proc/self/fd/1", O_WRONLY | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fd != STDOUT_FILENO) {
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
}

void
cmdout_init(void)
{
	cookie_io_functions_t io = { .write = cmdout_cookie_write };
	int fl = fcntl(STDOUT_FILENO, F_GETFL);
	FILE *f;

	if (fl == -1)
		return;
	/* A terminal stays stdio's own: curses (colltop) draws through its descriptor. */
	if (isatty(STDOUT_FILENO)) {
		if (fl & O_NONBLOCK)
			cmdout_reopen_tty();
		return;
	}
	if ((f = fopencookie(NULL, "w", io)) != NULL)
		stdout = f;
}

int
cmdout_flush(void)
{
	struct pollfd pfd = { .fd = STDOUT_FILENO, .events = POLLOUT };
	int r, e;

	errno = 0;
	r = fflush(stdout);
	e = errno;
	if (r == 0 && !ferror(stdout))
		return 0;
	if (cmdout_first != 0)
		return cmdout_first;
	if (r != 0 && e != 0 && e != EAGAIN && e != EWOULDBLOCK)
		return e;
	/* An earlier write failed and errno has moved on since: a reader gone shows as POLLERR. */
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLERR) ? EPIPE : EIO;
}
