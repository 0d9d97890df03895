/*
 * Facts folded across ranks (facts_fold.h): every rank's facts come back out
 * of a fold built the way collcheck builds it (each rank's facts folded in,
 * folds merged up a binomial tree through their wire form), key for key and
 * in each host's own order, also for hosts that list a key more or less; a
 * cluster that mostly agrees folds to about one host's size; and the parser
 * refuses what a peer must not send.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "facts_fold.h"

#define NR 100
#define NCOMMON 40

/* Rank k's facts: its own name and address, 40 shared keys, hosts that differ. */
static void
make_facts(struct facts *f, int k)
{
	facts_init(f);
	facts_add(f, "host.name", "node%03d", k);
	if (k == 60 || k == 61)
		facts_add(f, "zz.extra", "a key early in two hosts' lists only");
	for (int i = 0; i < NCOMMON; i++) {
		char key[32];

		snprintf(key, sizeof key, "common.%02d", NCOMMON - i);	/* not in key order */
		if (k == 50 && i == 7)
			continue;				/* a host that lacks a key */
		facts_add(f, key, "the same value on every host, number %d", i);
	}
	facts_add(f, "limits.memlock", "%s", k == 17 ? "64 KiB" : "unlimited");
	facts_add(f, "net.eth0.addr", "10.0.%d.%d", k / 256, k % 256);
}

/* Through the wire form, as a parent receives it. */
static void
merge_wire(struct facts_fold *dst, const struct facts_fold *src, int nranks)
{
	struct facts_fold in;
	size_t len;
	char *buf = facts_fold_pack(src, &len);

	facts_fold_init(&in);
	assert_int_equal(facts_fold_unpack(&in, buf, len, nranks), COLL_OK);
	facts_fold_merge(dst, &in);
	facts_fold_free(&in);
	free(buf);
}

static void
test_fold_gives_every_rank_back(void **state)
{
	struct facts_fold ff[NR];
	struct facts orig[NR], back[NR], *out[NR];
	size_t flat = 0, len;
	char *buf;

	(void)state;
	for (int k = 0; k < NR; k++) {
		make_facts(&orig[k], k);
		buf = facts_pack(&orig[k], &len);
		flat += len;
		free(buf);
		facts_fold_init(&ff[k]);
		facts_fold_add(&ff[k], &orig[k], k);
	}
	/* A binomial tree, as coll_fold walks it. */
	for (int mask = 1; mask < NR; mask <<= 1)
		for (int k = 0; k + mask < NR; k += 2 * mask)
			merge_wire(&ff[k], &ff[k + mask], NR);
	for (int k = 0; k < NR; k++) {
		facts_init(&back[k]);
		out[k] = k % 3 == 1 ? NULL : &back[k];	/* ranks not asked for stay empty */
	}
	facts_fold_expand(&ff[0], out, NR);
	for (int k = 0; k < NR; k++) {
		if (k % 3 == 1) {
			assert_int_equal(back[k].n, 0);
			continue;
		}
		assert_int_equal(back[k].n, orig[k].n);
		for (int i = 0; i < orig[k].n; i++) {
			assert_string_equal(back[k].v[i].key, orig[k].v[i].key);
			assert_string_equal(back[k].v[i].val, orig[k].v[i].val);
		}
	}
	/* One host's facts, plus a line per rank for each key that differs: far below all. */
	buf = facts_fold_pack(&ff[0], &len);
	assert_true(len < flat / 10);
	/* Rank 50 lists a key less and ranks 60-61 one more: their later facts are their own. */
	assert_non_null(strstr(buf, "\n41\t0-16,18-49,51-59,62-99\tlimits.memlock\tunlimited\n"));
	assert_non_null(strstr(buf, "\n40\t50\tlimits.memlock\tunlimited\n"));
	assert_non_null(strstr(buf, "\n42\t60-61\tlimits.memlock\tunlimited\n"));
	assert_non_null(strstr(buf, "\n8\t0-49,51-59,62-99\tcommon.33\t"));
	free(buf);
	for (int k = 0; k < NR; k++) {
		facts_free(&orig[k]);
		facts_free(&back[k]);
		facts_fold_free(&ff[k]);
	}
}

/* Facts merge only at the same place in their hosts' lists. */
static void
test_merge_joins_same_place(void **state)
{
	struct facts_fold a, b;
	const char *x = "1\t1\tk\tv\n", *y = "1\t0\tk\tv\n3\t2\tk\tv\n0\t2\tz\tw\n";

	(void)state;
	facts_fold_init(&a);
	facts_fold_init(&b);
	assert_int_equal(facts_fold_unpack(&a, x, strlen(x), 3), COLL_OK);
	assert_int_equal(facts_fold_unpack(&b, y, strlen(y), 3), COLL_OK);
	facts_fold_merge(&a, &b);
	assert_int_equal(a.n, 3);
	assert_int_equal(a.v[0].ord, 1);
	assert_int_equal(rankset_count(&a.v[0].ranks), 2);
	assert_int_equal(a.v[1].ord, 3);
	assert_true(rankset_has(&a.v[1].ranks, 2) && !rankset_has(&a.v[1].ranks, 0));
	assert_string_equal(a.v[2].key, "z");
	/* src is left as it was. */
	assert_int_equal(b.n, 3);
	assert_int_equal(rankset_count(&b.v[0].ranks), 1);
	facts_fold_free(&a);
	facts_fold_free(&b);
}

static void
test_unpack_refuses(void **state)
{
	static const struct {
		const char *text;
		int ok, n;
	} rows[] = {
		{ "0\t0-2,4\tk\tv\n1\t1\tk\tw\n", 1, 2 },
		{ "0\t0\tk\t\n", 1, 1 },			/* an empty value is a value */
		{ "", 1, 0 },
		{ "x\t0\tk\tv\n", 0, 0 },			/* ord not a number */
		{ "-1\t0\tk\tv\n", 0, 0 },
		{ "8192\t0\tk\tv\n", 0, 0 },			/* ord past FACTS_MAX */
		{ "123456\t0\tk\tv\n", 0, 0 },
		{ "\t0\tk\tv\n", 0, 0 },
		{ "0\t5\tk\tv\n", 0, 0 },			/* rank not below nranks */
		{ "0\t3-1\tk\tv\n", 0, 0 },			/* ranks not ascending */
		{ "0\t1,1\tk\tv\n", 0, 0 },
		{ "0\t\tk\tv\n", 0, 0 },			/* no ranks */
		{ "0\t0\t\tv\n", 0, 0 },			/* no key */
		{ "0\t0\tk\n", 0, 0 },				/* a field missing */
		{ "0\t0\tk\tv\tw\n", 0, 0 },			/* a field too many */
		{ "0\t0\tk\tv", 0, 0 },				/* no newline */
		{ "0\t0\tb\tv\n0\t0\ta\tv\n", 0, 1 },		/* out of order: the first is kept */
		{ "0\t0\ta\tv\n0\t1\ta\tv\n", 0, 1 },		/* the same fact twice */
		{ "1\t0\ta\tv\n0\t1\ta\tv\n", 0, 1 },		/* places out of order */
		{ "0\t0\ta\tv\r\n", 0, 0 },			/* a control in a value */
		{ "0\t0\ta\t\xff\n", 0, 0 },			/* not UTF-8 */
		{ "0\t0\t\x1b[2J\tv\n", 0, 0 },		/* a control in a key */
		{ "0\t0\tk\0x\tv\n", 0, 0 },
	};
	char big[FACTS_VAL_MAX + 32];

	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct facts_fold ff;
		size_t len = strlen(rows[i].text);

		if (i == sizeof rows / sizeof rows[0] - 1)
			len = 10;				/* a NUL in the key */
		facts_fold_init(&ff);
		if ((facts_fold_unpack(&ff, rows[i].text, len, 5) == COLL_OK) != rows[i].ok)
			fail_msg("row %zu (%s): wrong verdict", i, rows[i].text);
		assert_int_equal(ff.n, rows[i].n);
		facts_fold_free(&ff);
	}
	/* A value of FACTS_VAL_MAX bytes is one too long. */
	{
		struct facts_fold ff;
		int w = snprintf(big, sizeof big, "0\t0\tk\t");

		memset(big + w, 'a', FACTS_VAL_MAX);
		big[w + FACTS_VAL_MAX] = '\n';
		facts_fold_init(&ff);
		assert_int_equal(facts_fold_unpack(&ff, big, (size_t)w + FACTS_VAL_MAX + 1, 5),
		    COLL_EPROTO);
		assert_int_equal(facts_fold_unpack(&ff, big + 1, 0, 5), COLL_OK);
		facts_fold_free(&ff);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold_gives_every_rank_back),
		cmocka_unit_test(test_merge_joins_same_place),
		cmocka_unit_test(test_unpack_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
