/*
 * Fuzz the user's variables on an agent's stdin (envwire.h): whatever bytes
 * come as a line, a decoded variable is NAME=VALUE within its buffer with no
 * NUL inside, and what decodes encodes back to a line that decodes the same.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "envwire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[512], again[512];
	char *env[2] = { out, NULL };
	struct shbuf b = { 0 };
	size_t n;

	if (envwire_decode((const char *)data, size, out, sizeof out) != 0)
		return 0;
	n = strlen(out);
	if (n >= sizeof out || strchr(out, '=') == NULL || out[0] == '=')
		abort();
	envwire_encode(&b, env);
	if (b.len < 1 || b.p[b.len - 1] != '\n' || memchr(b.p, '\n', b.len - 1) != NULL)
		abort();
	if (envwire_decode(b.p, b.len - 1, again, sizeof again) != 0 || strcmp(out, again) != 0)
		abort();
	shquote_free(&b);
	return 0;
}
