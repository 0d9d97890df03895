/*
 * Facts folded across ranks (factsfold.h): every rank's facts come back out
 * of a fold built the way collcheck builds it (each rank's facts folded in,
 * folds merged up a binomial tree through their wire form), key for key and
 * in each host's own order; a cluster that mostly agrees folds to about one
 * host's size; and the parser refuses what a peer must not send.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "factsfold.h"

#define NR 100
#define NCOMMON 40

/* Rank k's facts: its own name and address, 40 shared keys, two hosts that differ. */
static void
make_facts(struct facts *f, int k)
{
	facts_init(f);
	facts_add(f, "host.name", "node%03d", k);
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
	assert_non_null(strstr(buf, "\t0-16,18-99\tlimits.memlock\tunlimited\n"));
	assert_non_null(strstr(buf, "\t0-49,51-99\tcommon.33\t"));
	free(buf);
	for (int k = 0; k < NR; k++) {
		facts_free(&orig[k]);
		facts_free(&back[k]);
		facts_fold_free(&ff[k]);
	}
}

/* A merge keeps the place its lowest rank gave a fact: hosts list keys alike. */
static void
test_merge_keeps_earliest_place(void **state)
{
	struct facts_fold a, b;
	const char *x = "3\t1\tk\tv\n", *y = "1\t0,2\tk\tv\n0\t2\tz\tw\n";

	(void)state;
	facts_fold_init(&a);
	facts_fold_init(&b);
	assert_int_equal(facts_fold_unpack(&a, x, strlen(x), 3), COLL_OK);
	assert_int_equal(facts_fold_unpack(&b, y, strlen(y), 3), COLL_OK);
	facts_fold_merge(&a, &b);
	assert_int_equal(a.n, 2);
	assert_int_equal(a.v[0].ord, 1);
	assert_int_equal(rankset_count(&a.v[0].ranks), 3);
	assert_string_equal(a.v[1].key, "z");
	/* src is left as it was. */
	assert_int_equal(b.n, 2);
	assert_int_equal(rankset_count(&b.v[0].ranks), 2);
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
		{ "0\t0\tk\0x\tv\n", 0, 0 },
	};
	char big[FACTS_VAL_MAX + 32];

	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct facts_fold ff;
		size_t len = strlen(rows[i].text);

		if (i == sizeof rows / sizeof rows[0] - 1)
			len = 11;				/* a NUL in the key */
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
		cmocka_unit_test(test_merge_keeps_earliest_place),
		cmocka_unit_test(test_unpack_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
