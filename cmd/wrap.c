#include <string.h>

#include "wrap.h"

size_t
wrap_cols(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* Bytes of the next word of p; with WRAP_GROUPS a bracketed group is one word if it fits max. */
static size_t
wrap_word(const char *p, unsigned flags, size_t max)
{
	size_t n = 0, plain = strcspn(p, " \n");
	int depth = 0;

	if (!(flags & WRAP_GROUPS))
		return plain;
	for (; p[n] != '\0' && (depth > 0 || (p[n] != ' ' && p[n] != '\n')); n++) {
		if (p[n] == '[' || p[n] == '(')
			depth++;
		else if ((p[n] == ']' || p[n] == ')') && depth > 0)
			depth--;
	}
	return wrap_cols(p, n) <= max ? n : plain;
}

static void
wrap_newline(FILE *f, size_t indent, size_t *col)
{
	fprintf(f, "\n%*s", (int)indent, "");
	*col = indent;
}

/* A word wider than what is left of the line: as much as fits, then the rest below. */
static void
wrap_cut(FILE *f, const char *p, size_t n, size_t indent, size_t width, size_t *col)
{
	while (*col + wrap_cols(p, n) > width && *col < width) {
		size_t k = 0, room = width - *col;

		while (k < n && wrap_cols(p, k + 1) <= room)
			k++;
		/* Never split a UTF-8 sequence. */
		while (k < n && ((unsigned char)p[k] & 0xc0) == 0x80)
			k++;
		fwrite(p, 1, k, f);
		p += k;
		n -= k;
		wrap_newline(f, indent, col);
	}
	fwrite(p, 1, n, f);
	*col += wrap_cols(p, n);
}

void
wrap_print(FILE *f, const char *text, size_t at, size_t indent, size_t width, unsigned flags)
{
	const char *p = text;
	size_t col = at, room = width > indent ? width - indent : 1;
	int fresh = 1;	/* nothing of the text on this line yet */

	for (;;) {
		p += strspn(p, " \n");
		if (*p == '\0')
			break;
		size_t n = wrap_word(p, flags, room), w = wrap_cols(p, n);

		if (!fresh && col + 1 + w > width) {
			wrap_newline(f, indent, &col);
			fresh = 1;
		}
		if (!fresh) {
			fputc(' ', f);
			col++;
		}
		wrap_cut(f, p, n, indent, width, &col);
		fresh = 0;
		p += n;
	}
	fputc('\n', f);
}
