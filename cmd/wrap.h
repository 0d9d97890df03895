/*
 * Text laid out for an 80-column terminal: --help's usage, summary and
 * option texts, each wrapped at spaces with a hanging indent.
 */
#ifndef COLL_WRAP_H
#define COLL_WRAP_H

#include <stddef.h>
#include <stdio.h>

/* What every --help fits in. */
#define WRAP_WIDTH 80

enum wrap_flags {
	WRAP_GROUPS = 1 << 0,	/* a space inside [...] or (...) breaks only a group too wide */
};

/* Columns the first n bytes of s take on a terminal (UTF-8 continuation bytes take none). */
size_t wrap_cols(const char *s, size_t n);
/*
 * Print text starting at column at (what is already on the line), breaking at
 * spaces (a newline counts as one) so that no line passes width; later lines
 * start at column indent. A word wider than a line is cut. Ends the line.
 */
void wrap_print(FILE *f, const char *text, size_t at, size_t indent, size_t width,
    unsigned flags);

#endif
