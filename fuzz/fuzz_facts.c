/*
 * Fuzz what rank 0 and the front end read from other processes: a host's
 * facts ("key\tvalue" lines off the network) and rank 0's record (JSON on its
 * stdout). The first byte picks the parser. Facts that parse must pack and
 * parse back to the same facts; a refused record must say why on one line.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "err.h"
#include "facts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_facts(const char *buf, size_t len)
{
	struct facts f, g;
	char *packed;
	size_t plen;

	facts_init(&f);
	facts_init(&g);
	if (facts_unpack(&f, buf, len) == COLL_OK) {
		packed = facts_pack(&f, &plen);
		if (facts_unpack(&g, packed, plen) != COLL_OK || g.n != f.n)
			abort();
		for (int i = 0; i < f.n; i++)
			if (strcmp(f.v[i].key, g.v[i].key) != 0 || strcmp(f.v[i].val, g.v[i].val) != 0)
				abort();
		free(packed);
	}
	for (int i = 0; i < f.n; i++)
		if (strlen(f.v[i].key) >= FACTS_KEY_MAX || strlen(f.v[i].val) >= FACTS_VAL_MAX)
			abort();
	facts_free(&f);
	facts_free(&g);
}

static void
fuzz_record(const char *buf, size_t len)
{
	struct check_result r = { 0 };
	char err[256] = "";

	if (check_record_read(&r, buf, len, err, sizeof err) != 0 &&
	    (err[0] == '\0' || strchr(err, '\n') != NULL))
		abort();
	for (int k = 0; k < r.nranks; k++)
		if (r.rank_host[k] < 0 || r.rank_host[k] >= (r.nhosts ? r.nhosts : 1))
			abort();
	check_result_free(&r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_facts((const char *)data + 1, size - 1);
	else
		fuzz_record((const char *)data + 1, size - 1);
	return 0;
}
