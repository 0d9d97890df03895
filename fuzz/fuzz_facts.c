/*
 * Fuzz what rank 0 and the front end read from other processes: a fold of
 * facts (a child's, off the network), a host's facts ("key\tvalue" lines, as
 * baselines hold them) and rank 0's record (JSON on its stdout). The first
 * byte picks the parser. Facts and folds that parse must pack and parse back
 * the same, a fold must merge with itself unchanged and give each rank
 * exactly the facts it holds, and a refused record must say why on one line.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "err.h"
#include "facts.h"
#include "facts_fold.h"

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

#define FUZZ_RANKS 64

static void
fuzz_fold(const char *buf, size_t len)
{
	struct facts_fold ff, gg;
	struct facts got[FUZZ_RANKS], *out[FUZZ_RANKS];
	char *packed;
	size_t plen;
	int n;

	facts_fold_init(&ff);
	facts_fold_init(&gg);
	if (facts_fold_unpack(&ff, buf, len, FUZZ_RANKS) != COLL_OK)
		goto out;
	packed = facts_fold_pack(&ff, &plen);
	if (facts_fold_unpack(&gg, packed, plen, FUZZ_RANKS) != COLL_OK || gg.n != ff.n)
		abort();
	free(packed);
	n = ff.n;
	facts_fold_merge(&ff, &gg);
	if (ff.n != n)
		abort();
	for (int i = 0; i < ff.n; i++)
		if (strcmp(ff.v[i].key, gg.v[i].key) != 0 || strcmp(ff.v[i].val, gg.v[i].val) != 0 ||
		    ff.v[i].ord != gg.v[i].ord ||
		    rankset_count(&ff.v[i].ranks) != rankset_count(&gg.v[i].ranks) ||
		    rankset_last(&ff.v[i].ranks) >= FUZZ_RANKS)
			abort();
	for (int k = 0; k < FUZZ_RANKS; k++) {
		facts_init(&got[k]);
		out[k] = &got[k];
	}
	facts_fold_expand(&ff, out, FUZZ_RANKS);
	/* Each rank gets exactly the facts whose set holds it, up to FACTS_MAX. */
	for (int k = 0; k < FUZZ_RANKS; k++) {
		int held = 0;

		for (int j = 0; j < ff.n; j++)
			held += rankset_has(&ff.v[j].ranks, k);
		if (got[k].n != (held < FACTS_MAX ? held : FACTS_MAX))
			abort();
		facts_free(&got[k]);
	}
out:
	facts_fold_free(&ff);
	facts_fold_free(&gg);
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
	if (data[0] % 3 == 1)
		fuzz_facts((const char *)data + 1, size - 1);
	else if (data[0] % 3 == 2)
		fuzz_fold((const char *)data + 1, size - 1);
	else
		fuzz_record((const char *)data + 1, size - 1);
	return 0;
}
