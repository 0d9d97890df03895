/*
 * Quoting words for a POSIX shell. The remote command of an SSH launch is one
 * string that the remote user's shell splits again: every word (host names,
 * program, arguments, variables) goes through here so none can inject code.
 */
#ifndef COLL_SHQUOTE_H
#define COLL_SHQUOTE_H

#include <stddef.h>

struct shbuf {
	char *p;
	size_t len;
	size_t cap;
};

/* Append word quoted ('...' with each ' as '\''), preceded by a space unless first. */
void shquote_word(struct shbuf *b, const char *word);
/* Append text as is (for the fixed parts of a command we write ourselves). */
void shquote_raw(struct shbuf *b, const char *text);
void shquote_free(struct shbuf *b);

#endif
