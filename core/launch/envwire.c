/* The user's variables for the ranks on an agent's stdin (envwire.h). */
#include <stdlib.h>
#include <string.h>

#include "envwire.h"
#include "xmalloc.h"

void
envwire_encode(struct shbuf *b, char *const *env)
{
	for (char *const *e = env; e != NULL && *e != NULL; e++) {
		/* At most 3 bytes for each, the prefix, the newline and the NUL. */
		char *line = xmalloc(strlen(*e) * 3 + sizeof ENVWIRE_PREFIX + 2);
		size_t k = strlen(ENVWIRE_PREFIX);

		memcpy(line, ENVWIRE_PREFIX, k);
		for (const char *p = *e; *p != '\0'; p++) {
			if (*p != '%' && *p != '\n' && *p != '\r') {
				line[k++] = *p;
				continue;
			}
			line[k++] = '%';
			line[k++] = "0123456789abcdef"[(unsigned char)*p >> 4];
			line[k++] = "0123456789abcdef"[(unsigned char)*p & 15];
		}
		line[k++] = '\n';
		line[k] = '\0';
		shquote_raw(b, line);
		free(line);
	}
}

static int
envwire_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
envwire_decode(const char *line, size_t len, char *out, size_t cap)
{
	size_t plen = strlen(ENVWIRE_PREFIX), k = 0, name;

	if (len < plen || memcmp(line, ENVWIRE_PREFIX, plen) != 0)
		return -1;
	for (size_t i = plen; i < len; i++) {
		int c = (unsigned char)line[i];

		if (c == '%') {
			int hi = i + 2 < len ? envwire_hex(line[i + 1]) : -1;
			int lo = hi >= 0 ? envwire_hex(line[i + 2]) : -1;

			if (lo < 0)
				return -1;
			c = hi << 4 | lo;
			i += 2;
		}
		if (c == '\0' || k + 1 >= cap)
			return -1;
		out[k++] = (char)c;
	}
	out[k] = '\0';
	name = strcspn(out, "=");
	return name > 0 && out[name] == '=' ? 0 : -1;
}
