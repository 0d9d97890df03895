#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "clock.h"
#include "err.h"
#include "io.h"

int
io_wait(int fd, short events, uint64_t deadline_ms, int abort_fd)
{
	struct pollfd pfd[2] = { { fd, events, 0 }, { abort_fd, POLLIN, 0 } };
	int r;

	for (;;) {
		r = poll(pfd, abort_fd >= 0 ? 2 : 1, clock_remaining_ms(deadline_ms));
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return COLL_ESYS;
		if (r == 0)
			return COLL_ETIMEDOUT;
		if (abort_fd >= 0 && pfd[1].revents)
			return COLL_EABORTED;
		return COLL_OK;
	}
}

int
io_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ms, int abort_fd)
{
	const char *p = buf;
	ssize_t n;
	int r;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno != EAGAIN && errno != EWOULDBLOCK)
			return (errno == EPIPE || errno == ECONNRESET) ? COLL_EPEER : COLL_ESYS;
		if ((r = io_wait(fd, POLLOUT, deadline_ms, abort_fd)) != COLL_OK)
			return r;
	}
	return COLL_OK;
}

int
io_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ms, int abort_fd)
{
	char *p = buf;
	ssize_t n;
	int r;

	while (len > 0) {
		n = recv(fd, p, len, 0);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return COLL_EPEER;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == ECONNRESET ? COLL_EPEER : COLL_ESYS;
		if ((r = io_wait(fd, POLLIN, deadline_ms, abort_fd)) != COLL_OK)
			return r;
	}
	return COLL_OK;
}
