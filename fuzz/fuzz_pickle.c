/*
 * Fuzz the flight recorder's pickle reader (collstack --fr reads dumps
 * copied off a cluster). A pickle that reads must give a value jansson can
 * print, and printing it must end: the reader makes no cycles.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	json_t *v = pickle_read(data, size, err, sizeof err);
	char *s;

	if (v == NULL) {
		if (err[0] == '\0')
			abort();	/* a refusal always says why */
		return 0;
	}
	if ((s = json_dumps(v, JSON_ENCODE_ANY)) == NULL)
		abort();
	free(s);
	json_decref(v);
	return 0;
}
