#include <stdlib.h>
#include <string.h>

#include "envword.h"
#include "err.h"

int
envword_get(const char *name, const char *const *words, int *v)
{
	const char *s = getenv(name);

	if (s == NULL || *s == '\0')
		return COLL_ENOTFOUND;
	for (int i = 0; words[i] != NULL; i++)
		if (strcmp(s, words[i]) == 0) {
			*v = i;
			return COLL_OK;
		}
	return COLL_EINVAL;
}
