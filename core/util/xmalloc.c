/* Checked allocation: overflow-safe sizes, abort on failure (tmux xmalloc.c). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xmalloc.h"

static void (*fatal_hook)(void);

void
xmalloc_set_fatal_hook(void (*hook)(void))
{
	fatal_hook = hook;
}

static void
xmalloc_fail(size_t n)
{
	char msg[96];
	int len;

	if (fatal_hook != NULL)
		fatal_hook();
	/* write(2): stdio may itself need memory. */
	len = snprintf(msg, sizeof msg, "fatal: out of memory allocating %zu bytes\n", n);
	if (len > 0 && write(STDERR_FILENO, msg, (size_t)len) < 0)
		abort();
	abort();
}

void *
xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p == NULL)
		xmalloc_fail(size);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p;

	if (n == 0 || size == 0)
		n = size = 1;
	if (SIZE_MAX / n < size)
		xmalloc_fail(SIZE_MAX);
	p = calloc(n, size);
	if (p == NULL)
		xmalloc_fail(n * size);
	return p;
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	void *q;

	if (n == 0 || size == 0)
		n = size = 1;
	if (SIZE_MAX / n < size)
		xmalloc_fail(SIZE_MAX);
	q = realloc(p, n * size);
	if (q == NULL)
		xmalloc_fail(n * size);
	return q;
}

char *
xstrdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		xmalloc_fail(strlen(s) + 1);
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		xmalloc_fail(strlen(fmt));
	return s;
}
