/*
 * Fuzz the flight recorder's JSON reader (collstack --fr reads dumps copied
 * off a cluster, and a live rank's dump file may be anyone's): through
 * fr_parse, as collstack reads a dump, so the choice between JSON and
 * pickle and the one form after it are fuzzed too. A dump that reads is an
 * object with an entries list, fr_trim takes it as a live job's worker
 * does, and printing both ends; a refusal says why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	json_t *v = fr_parse(data, size, err, sizeof err), *t;
	char *s;

	if (v == NULL) {
		if (err[0] == '\0')
			abort();
		return 0;
	}
	if (!json_is_object(v) || !json_is_array(json_object_get(v, "entries")))
		abort();
	t = fr_trim(v, 4);
	if ((s = json_dumps(t, 0)) == NULL)
		abort();
	free(s);
	json_decref(t);
	json_decref(v);
	return 0;
}
