/* The user's variables for the ranks on an agent's stdin (envwire.h). */
#include <stdlib.h>
#include <string.h>

#include "envwire.h"
#include "hex.h"
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

int
envwire_decode(const char *line, size_t len, char *out, size_t cap)
{
	size_t plen = strlen(ENVWIRE_PREFIX), k = 0, name;

	if (len < plen || memcmp(line, ENVWIRE_PREFIX, plen) != 0)
		return -1;
	for (size_t i = plen; i < len; i++) {
		int c = (unsigned char)line[i];

		if (c == '%') {
			/* Both digits within the line: it is not NUL-terminated. */
			if (i + 2 >= len || (c = hex_byte(line + i + 1)) < 0)
				return -1;
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
