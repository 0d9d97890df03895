/*
 * Splitting a byte stream into whole lines, for every launcher: pipes of
 * local ranks and SSH channels of remote ones. A line longer than
 * LINEBUF_MAX is handed over in pieces of that size; at EOF the rest is
 * handed over without waiting for a newline. No byte is dropped.
 */
#ifndef COLL_LINEBUF_H
#define COLL_LINEBUF_H

#include <stddef.h>

#define LINEBUF_MAX (64u << 10)

typedef void (*linebuf_cb)(void *arg, const char *line, size_t len);

struct linebuf {
	char *buf;
	size_t len;
};

/* Room to read into: at least one byte, at most what is left of LINEBUF_MAX. */
char *linebuf_space(struct linebuf *lb, size_t *room);
/* n bytes were written into the space: hand over the complete lines. */
void linebuf_commit(struct linebuf *lb, size_t n, linebuf_cb cb, void *arg);
/* Append bytes from elsewhere (an SSH channel read into its own buffer). */
void linebuf_feed(struct linebuf *lb, const char *p, size_t n, linebuf_cb cb, void *arg);
/* End of stream: hand over what is left. */
void linebuf_flush(struct linebuf *lb, linebuf_cb cb, void *arg);
void linebuf_free(struct linebuf *lb);

#endif
