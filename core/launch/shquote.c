#include <stdlib.h>
#include <string.h>

#include "shquote.h"
#include "xmalloc.h"

static void
shquote_put(struct shbuf *b, const char *s, size_t n)
{
	if (b->cap - b->len < n + 1) {
		b->cap = (b->len + n + 1) * 2;
		b->p = xreallocarray(b->p, 1, b->cap);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
shquote_raw(struct shbuf *b, const char *text)
{
	shquote_put(b, text, strlen(text));
}

void
shquote_word(struct shbuf *b, const char *word)
{
	const char *q;

	if (b->len > 0 && b->p[b->len - 1] != ' ')
		shquote_put(b, " ", 1);
	shquote_put(b, "'", 1);
	while ((q = strchr(word, '\'')) != NULL) {
		shquote_put(b, word, (size_t)(q - word));
		shquote_put(b, "'\\''", 4);
		word = q + 1;
	}
	shquote_put(b, word, strlen(word));
	shquote_put(b, "'", 1);
}

void
shquote_free(struct shbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}
