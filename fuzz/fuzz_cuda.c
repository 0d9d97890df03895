/*
 * Fuzz the reader of cuda-gdb's "info cuda kernels" table (collstack
 * --cuda): a debugger's output, whatever version printed it. Each kernel
 * read names its device and status; nothing read is NULL, never a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudagdb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *k;

	memcpy(text, data, size);
	text[size] = '\0';
	k = cudagdb_parse(text);
	if (k != NULL && strstr(k, " (device ") == NULL)
		abort();
	free(k);
	free(text);
	return 0;
}
