#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "regfile.h"
#include "xmalloc.h"

int
regfile_open(const char *path, int flags, int *fd, struct stat *sb)
{
	struct stat st;
	int fl, r = COLL_OK;

	*fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | flags);
	if (*fd < 0)
		return COLL_ESYS;
	if (fstat(*fd, &st) != 0)
		r = COLL_ESYS;
	else if (!S_ISREG(st.st_mode))
		r = COLL_EUNSAFE;
	else if ((fl = fcntl(*fd, F_GETFL)) == -1 || fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) == -1)
		r = COLL_ESYS;
	if (r != COLL_OK) {
		int e = errno;

		close(*fd);
		*fd = -1;
		errno = e;
		if (r == COLL_EUNSAFE && sb != NULL)
			*sb = st;	/* the caller names what it was */
		return r;
	}
	if (sb != NULL)
		*sb = st;
	return COLL_OK;
}

const char *
regfile_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return S_ISREG(mode) ? "a regular file" : "a file of an unknown type";
}

/* Read what a pipe holds until its writer closes it, or wait_ms pass. */
static int
regfile_drain(int fd, size_t max, int wait_ms, int fifo, char *buf, size_t *len)
{
	uint64_t until = clock_now_ms() + (uint64_t)wait_ms;

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		uint64_t now = clock_now_ms();
		ssize_t n;

		if (now >= until)
			return COLL_ETIMEDOUT;
		if (poll(&p, 1, (int)(until - now)) < 0 && errno != EINTR)
			return COLL_ESYS;
		n = read(fd, buf + *len, max + 1 - *len);
		/*
		 * A FIFO no one ever opened to write reads as ended at once: not a
		 * file's end until a writer hung up, or the wait is over.
		 */
		if (n == 0 && (!fifo || *len > 0 || (p.revents & POLLHUP)))
			return COLL_OK;
		if (n == 0 && clock_now_ms() >= until)
			return COLL_ETIMEDOUT;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return COLL_ESYS;
		if (n > 0 && (*len += (size_t)n) > max)
			return COLL_ETOOBIG;
	}
}

int
regfile_read(const char *path, size_t max, int wait_ms, char **out, size_t *outlen,
    struct stat *sb)
{
	struct stat st;
	size_t len = 0;
	char *buf;
	int fd, r;

	*out = NULL;
	*outlen = 0;
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return COLL_ESYS;
	if (fstat(fd, &st) != 0) {
		r = errno;
		close(fd);
		errno = r;
		return COLL_ESYS;
	}
	if (!S_ISREG(st.st_mode) && (!S_ISFIFO(st.st_mode) || wait_ms < 0)) {
		close(fd);
		if (sb != NULL)
			*sb = st;
		return COLL_EUNSAFE;
	}
	if (sb != NULL)
		*sb = st;
	buf = xmalloc(max + 2);
	r = regfile_drain(fd, max, S_ISFIFO(st.st_mode) ? wait_ms : INT32_MAX,
	    S_ISFIFO(st.st_mode), buf, &len);
	close(fd);
	if (r != COLL_OK) {
		int e = errno;

		free(buf);
		errno = e;
		return r;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return COLL_OK;
}
