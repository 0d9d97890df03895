/*
 * Fuzz `ethtool -S` text's parser (core/facts/facts_ethtool_parse.c): the
 * text is a fixture's or a user's. A kept statistic's name is within its
 * bound, printable and one of the names kept; a refusal names a line of the
 * text; a name made a fact key holds only the bytes a key part may.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facts_ethtool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_check_stat(const struct etht_stat *s)
{
	char key[ETHT_NAME_MAX + 1];
	size_t n = strnlen(s->name, sizeof s->name);

	if (n == 0 || n == sizeof s->name || !facts_ethtool_wanted(s->name, n))
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s->name[i] < 0x20 || (unsigned char)s->name[i] > 0x7e)
			abort();
	facts_ethtool_keyname(s->name, key, sizeof key);
	if (strlen(key) != n || strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_-") != n)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct etht_stat s[ETHT_KEEP];
	int line, n = facts_ethtool_parse((const char *)data, size, s, ETHT_KEEP, &line);
	size_t lines = 1;

	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (n < -1 || n > ETHT_KEEP || (n < 0 && (line < 1 || (size_t)line > lines)) ||
	    (n >= 0 && line != 0))
		abort();
	for (int i = 0; i < n; i++)
		fuzz_check_stat(&s[i]);
	return 0;
}
