/*
 * Prometheus's text format into a buffer (see promtext.h): escaping, the
 * family headers and the sample lines.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "promtext.h"
#include "xmalloc.h"

static void
promtext_reserve(struct promtext *t, size_t more)
{
	if (t->len + more + 1 <= t->cap)
		return;
	t->cap = (t->len + more + 1) * 2 > 4096 ? (t->len + more + 1) * 2 : 4096;
	t->p = xreallocarray(t->p, t->cap, 1);
}

static void
promtext_put(struct promtext *t, const char *s, size_t n)
{
	promtext_reserve(t, n);
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

void
promtext_printf(struct promtext *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	promtext_reserve(t, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

void
promtext_family(struct promtext *t, const char *name, const char *type, const char *help)
{
	promtext_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The length of a well-formed, printable UTF-8 sequence at s (2 to 4 bytes), 0 if not one. */
static size_t
promtext_utf8(const unsigned char *s)
{
	uint32_t c;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, past U+10FFFF, and the C1 controls are not printable text. */
	if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || (c >= 0xd800 && c <= 0xdfff) ||
	    c > 0x10ffff || (c >= 0x80 && c < 0xa0))
		return 0;
	return n;
}

void
promtext_label_value(struct promtext *t, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n;

	while (*u != '\0') {
		if (*u == '\\' || *u == '"') {
			promtext_put(t, "\\", 1);
			promtext_put(t, (const char *)u++, 1);
		} else if (*u == '\n') {
			promtext_put(t, "\\n", 2);
			u++;
		} else if (*u >= 0x20 && *u < 0x7f) {
			promtext_put(t, (const char *)u++, 1);
		} else if ((n = promtext_utf8(u)) > 0) {
			promtext_put(t, (const char *)u, n);
			u += n;
		} else {
			promtext_put(t, "?", 1);
			u++;
		}
	}
}

static void
promtext_labels(struct promtext *t, const char *name, const char *const *labels)
{
	int any = 0;

	promtext_put(t, name, strlen(name));
	for (int i = 0; labels != NULL && labels[i] != NULL; i += 2) {
		if (labels[i + 1] == NULL)
			continue;
		promtext_printf(t, "%s%s=\"", any++ ? "," : "{", labels[i]);
		promtext_label_value(t, labels[i + 1]);
		promtext_put(t, "\"", 1);
	}
	if (any)
		promtext_put(t, "}", 1);
}

void
promtext_sample(struct promtext *t, const char *name, const char *const *labels, double v)
{
	if (isnan(v))
		return;
	promtext_labels(t, name, labels);
	if (isinf(v))
		promtext_printf(t, " %s\n", v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		promtext_printf(t, " %.0f\n", v);
	else
		promtext_printf(t, " %.15g\n", v);
}

void
promtext_sample_u64(struct promtext *t, const char *name, const char *const *labels,
    uint64_t v)
{
	promtext_labels(t, name, labels);
	promtext_printf(t, " %" PRIu64 "\n", v);
}

void
promtext_free(struct promtext *t)
{
	free(t->p);
	*t = (struct promtext){ 0 };
}
