#include <stdlib.h>
#include <string.h>

#include "linebuf.h"
#include "xmalloc.h"

char *
linebuf_space(struct linebuf *lb, size_t *room)
{
	if (lb->buf == NULL)
		lb->buf = xmalloc(LINEBUF_MAX);
	*room = LINEBUF_MAX - lb->len;
	return lb->buf + lb->len;
}

static void
linebuf_emit(struct linebuf *lb, int eof, linebuf_cb cb, void *arg)
{
	size_t start = 0;
	char *nl;

	while ((nl = memchr(lb->buf + start, '\n', lb->len - start)) != NULL) {
		cb(arg, lb->buf + start, (size_t)(nl - lb->buf) - start);
		start = (size_t)(nl - lb->buf) + 1;
	}
	if (lb->len - start >= LINEBUF_MAX || (eof && lb->len > start)) {
		cb(arg, lb->buf + start, lb->len - start);
		start = lb->len;
	}
	memmove(lb->buf, lb->buf + start, lb->len - start);
	lb->len -= start;
}

void
linebuf_commit(struct linebuf *lb, size_t n, linebuf_cb cb, void *arg)
{
	lb->len += n;
	linebuf_emit(lb, 0, cb, arg);
}

void
linebuf_feed(struct linebuf *lb, const char *p, size_t n, linebuf_cb cb, void *arg)
{
	size_t room, k;
	char *dst;

	while (n > 0) {
		dst = linebuf_space(lb, &room);
		k = n < room ? n : room;
		memcpy(dst, p, k);
		linebuf_commit(lb, k, cb, arg);
		p += k;
		n -= k;
	}
}

void
linebuf_flush(struct linebuf *lb, linebuf_cb cb, void *arg)
{
	if (lb->buf != NULL)
		linebuf_emit(lb, 1, cb, arg);
}

void
linebuf_free(struct linebuf *lb)
{
	free(lb->buf);
	lb->buf = NULL;
	lb->len = 0;
}
