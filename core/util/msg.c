/* One-line messages about untrusted input (see msg.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "msg.h"

void
msg_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

const char *
msg_quote(char *buf, const char *s, size_t len, size_t max)
{
	size_t o = 0;

	buf[o++] = '\'';
	for (size_t i = 0; i < len && i < max; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f)
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
	}
	if (len > max) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '\'';
	buf[o] = '\0';
	return buf;
}

void
msg_clean(char *s)
{
	for (; s != NULL && *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}
