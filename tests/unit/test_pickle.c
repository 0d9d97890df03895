/*
 * The flight recorder's pickle reader on hand-made pickles: each kind of
 * value torch's pickler writes (ints of every width with their signs, big-
 * endian floats, strings, None and bools, dicts, lists, tuples, the memo),
 * and the refusals that keep a hostile file harmless: a class or a call, a
 * container that would hold itself, values hidden under a MARK, a string
 * running past the end, no STOP; and 2 MB pickles of memo fetches that
 * would each take gigabytes, read within their budget of memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "fr.h"
#include "pickle.h"

static json_t *
read_ok(const char *p, size_t len)
{
	char err[256];
	json_t *v = pickle_read(p, len, err, sizeof err);

	if (v == NULL)
		fail_msg("refused: %s", err);
	return v;
}

static void
refused(const char *p, size_t len, const char *why)
{
	char err[256];
	json_t *v = pickle_read(p, len, err, sizeof err);

	assert_null(v);
	if (strstr(err, why) == NULL)
		fail_msg("'%s' does not say '%s'", err, why);
}

#define PK(s) s, sizeof(s) - 1

static void
test_scalars(void **state)
{
	json_t *v;

	(void)state;
	/* (-1 LONG1 1 byte, -1 LONG1 8 bytes, 2**40 LONG1, -70000 BININT, 255 BININT1, 65535 BININT2) */
	v = read_ok(PK("\x80\x02(\x8a\x01\xff\x8a\x08\xff\xff\xff\xff\xff\xff\xff\xff"
	    "\x8a\x06\x00\x00\x00\x00\x00\x01J\x90\xee\xfe\xffK\xffM\xff\xfft."));
	assert_int_equal(json_array_size(v), 6);
	assert_int_equal(json_integer_value(json_array_get(v, 0)), -1);
	assert_int_equal(json_integer_value(json_array_get(v, 1)), -1);
	assert_int_equal(json_integer_value(json_array_get(v, 2)), 1LL << 40);
	assert_int_equal(json_integer_value(json_array_get(v, 3)), -70000);
	assert_int_equal(json_integer_value(json_array_get(v, 4)), 255);
	assert_int_equal(json_integer_value(json_array_get(v, 5)), 65535);
	json_decref(v);
	/* 1.5 as BINFLOAT, None, True, False, "ab" BINUNICODE, "c" SHORT_BINUNICODE: a tuple. */
	v = read_ok(PK("\x80\x02(G?\xf8\x00\x00\x00\x00\x00\x00N\x88\x89X\x02\x00\x00\x00" "ab"
	    "\x8c\x01" "ct."));
	assert_true(json_real_value(json_array_get(v, 0)) == 1.5);
	assert_true(json_is_null(json_array_get(v, 1)));
	assert_true(json_is_true(json_array_get(v, 2)));
	assert_true(json_is_false(json_array_get(v, 3)));
	assert_string_equal(json_string_value(json_array_get(v, 4)), "ab");
	assert_string_equal(json_string_value(json_array_get(v, 5)), "c");
	json_decref(v);
}

static void
test_containers(void **state)
{
	json_t *v;

	(void)state;
	/* {"k": [1, (2, 3)], 7: "x"} with memo puts, and the memo string fetched again. */
	v = read_ok(PK("\x80\x02}q\x00(X\x01\x00\x00\x00kq\x01]q\x02(K\x01K\x02K\x03\x86" "e"
	    "K\x07X\x01\x00\x00\x00xq\x03u" "h\x03" "K\x08s."));
	assert_non_null(v);
	assert_true(json_is_object(v));
	assert_int_equal(json_array_size(json_object_get(v, "k")), 2);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(
	    json_object_get(v, "k"), 1), 1)), 3);
	assert_string_equal(json_string_value(json_object_get(v, "7")), "x");
	/* SETITEM with the memo's "x" as key. */
	assert_int_equal(json_integer_value(json_object_get(v, "x")), 8);
	json_decref(v);
	/* A list fetched from the memo into itself is a copy: [[]], no cycle. */
	v = read_ok(PK("\x80\x02]q\x00h\x00" "a."));
	assert_int_equal(json_array_size(v), 1);
	assert_int_equal(json_array_size(json_array_get(v, 0)), 0);
	json_decref(v);
	/* MEMOIZE (protocol 4) numbers entries as Python does: 0, 1, ... */
	v = read_ok(PK("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00(\x8c\x01" "a\x94\x8c\x01"
	    "b\x94h\x00h\x01t."));
	assert_string_equal(json_string_value(json_array_get(v, 2)), "a");
	assert_string_equal(json_string_value(json_array_get(v, 3)), "b");
	json_decref(v);
}

static void
test_refusals(void **state)
{
	(void)state;
	refused(PK("\x80\x02" "cdatetime\ndate\nq\x00."), "opcode 0x63");
	refused(PK("\x80\x02}(K\x01K\x02" "s."), "no dict under it");
	refused(PK("\x80\x02]K\x01(a."), "no list under it");
	refused(PK("\x80\x02X\xff\x00\x00\x00" "ab."), "runs past the end");
	refused(PK("\x80\x02K\x01"), "no STOP");
	refused(PK("\x80\x02h\x05."), "never stored");
	refused(PK("\x80\x02K\x01K\x02."), "other than one value");
	refused(PK("\x80\x02X\x02\x00\x00\x00\xc3(."), "not UTF-8");
	refused(PK("\x80\x06N."), "protocol over 5");
	refused(PK("\x80\x02\x8a\x09\x01\x01\x01\x01\x01\x01\x01\x01\x01."), "wider than 64");
}

static void
test_nesting_limit(void **state)
{
	char buf[200];

	(void)state;
	memset(buf, '(', sizeof buf);
	refused(buf, sizeof buf, "nested deeper");
	/* Nesting without MARKs: a list wrapped in 300 one-tuples (jansson frees recursively). */
	{
		char deep[304];

		memcpy(deep, "\x80\x02]", 3);
		memset(deep + 3, 0x85, 300);
		deep[303] = '.';
		refused(deep, sizeof deep, "nested deeper");
		deep[3 + 200] = '.';
		json_decref(read_ok(deep, 3 + 201));
	}
}

/* A live dump is cut to the newest entries of each process group, not of all together. */
static void
test_fr_trim(void **state)
{
	json_t *root = json_pack("{s:[], s:{s:i}}", "entries", "pg_config", "0", 1), *t, *e;
	json_t *ents = json_object_get(root, "entries");

	(void)state;
	json_array_append_new(ents, json_pack("{s:[s,s], s:i}", "process_group", "quiet", "q",
	    "collective_seq_id", 1));
	for (int i = 1; i <= 10; i++)
		json_array_append_new(ents, json_pack("{s:[s,s], s:i}", "process_group", "busy",
		    "b", "collective_seq_id", i));
	t = fr_trim(root, 3);
	e = json_object_get(t, "entries");
	assert_int_equal(json_array_size(e), 4);
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(e,
	    0), "process_group"), 0)), "quiet");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(e, 1),
	    "collective_seq_id")), 8);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(e, 3),
	    "collective_seq_id")), 10);
	assert_non_null(json_object_get(t, "pg_config"));
	json_decref(t);
	json_decref(root);
}


/* jansson's memory, counted: what is held now, and the most held at once. */
static size_t held, peak;

static void *
count_malloc(size_t n)
{
	void *p = malloc(n);

	if (p != NULL && (held += malloc_usable_size(p)) > peak)
		peak = held;
	return p;
}

static void
count_free(void *p)
{
	if (p != NULL)
		held -= malloc_usable_size(p);
	free(p);
}

/*
 * A 2 MB pickle: the value made once (head, memo'd as entry 0 and appended
 * to an outer list), then fetched from the memo and appended until 2 MB.
 * Each fetch copies the value's containers: refused, said, and the memory
 * held at most 64 times the input (plus the reader's 64 MiB floor).
 */
static void
memo_bomb(const char *head, size_t hlen)
{
	size_t len = 2u << 20, off = 0;
	char *p = malloc(len), err[256];
	json_t *v;

	memcpy(p + off, "\x80\x02]", 3), off += 3;
	memcpy(p + off, head, hlen), off += hlen;
	p[off++] = 'a';
	while (off + 4 < len)
		memcpy(p + off, "h\x00" "a", 3), off += 3;
	p[off++] = '.';
	held = peak = 0;
	json_set_alloc_funcs(count_malloc, count_free);
	v = pickle_read(p, off, err, sizeof err);
	json_set_alloc_funcs(malloc, free);
	assert_null(v);
	if (strstr(err, "MiB of memory") == NULL)
		fail_msg("not refused for its memory: '%s'", err);
	if (peak > 64 * off + (64u << 20) + (1u << 20))
		fail_msg("%zu MB held for a %zu byte pickle", peak >> 20, off);
	free(p);
}

static void
test_memory_bound(void **state)
{
	char head[8192];
	size_t n = 0;

	(void)state;
	/* A list of 1000 empty dicts: each fetch made 1001 containers (2 GB for 2 MB). */
	memcpy(head, "]q\x00(", 4), n = 4;
	memset(head + n, '}', 1000), n += 1000;
	head[n++] = 'e';
	memo_bomb(head, n);
	/* A dict of one 4 KiB key: each copy copies the key (jansson owns its keys). */
	memcpy(head, "}q\x00X\x00\x10\x00\x00", 8), n = 8;
	memset(head + n, 'k', 4096), n += 4096;
	memcpy(head + n, "K\x01s", 3), n += 3;
	memo_bomb(head, n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_nesting_limit),
		cmocka_unit_test(test_fr_trim),
		cmocka_unit_test(test_memory_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
