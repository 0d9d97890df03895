/*
 * Fuzz the NCCL RAS report reader (collstack reads it from a TCP port any
 * local process could hold). A report read gives the shape ras.h names,
 * printable by jansson; a refusal says why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ras.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256] = "";
	json_t *r = ras_parse((const char *)data, size, why, sizeof why);
	char *s;

	if (r == NULL) {
		if (why[0] == '\0')
			abort();
		return 0;
	}
	if (!json_is_array(json_object_get(r, "comms")))
		abort();
	if ((s = json_dumps(r, 0)) == NULL)
		abort();
	free(s);
	json_decref(r);
	return 0;
}
