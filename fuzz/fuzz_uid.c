/* Fuzz the unique-id parser: it reads COLL_UNIQUE_ID, text from the environment. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "uid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), out[UID_STR_LEN];
	struct coll_uid uid, again;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (uid_parse(&uid, s) == COLL_OK) {
		/* Whatever parses must print and parse back to the same id. */
		uid_format(&uid, out, sizeof out);
		if (uid_parse(&again, out) != COLL_OK || again.jobid != uid.jobid ||
		    memcmp(again.secret, uid.secret, sizeof uid.secret) != 0)
			abort();
	}
	free(s);
	return 0;
}
