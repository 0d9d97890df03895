/*
 * A bounded reader of the pickles PyTorch's flight recorder writes (its
 * torch::jit::Pickler, protocol 2, and Python's pickle of plain data up to
 * protocol 5), into jansson values. It knows only the opcodes of plain data:
 * dicts, lists, tuples, strings, bytes, ints, floats, bools and None, with
 * the memo. Nothing names a class or a function (GLOBAL, REDUCE, BUILD...),
 * so nothing runs; anything else is refused with its offset. Limits on the
 * stack and the nesting, and a budget of bytes that every value, slot, key
 * and memo copy made is charged against, keep a hostile file's memory in
 * proportion to its size (a 2 MB file of memo fetches of a big list, or of
 * a dict with a long key, once made gigabytes).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "xmalloc.h"

#define PK_DEPTH_MAX 64		/* MARKs open at once */
#define PK_NEST_MAX 256		/* containers in containers: jansson frees and prints recursively */
#define PK_STACK_MAX (1u << 22)
#define PK_MEMO_MAX (1u << 22)
/*
 * The memory a value costs, as jansson allocates it (the struct, malloc's
 * header, a container's first table), charged when it is made or copied: a
 * budget of PK_BYTES_PER_BYTE per byte of input plus PK_BYTES_MIN. A dump's
 * keys are memo fetches of two bytes copied into each entry: 22 to 33 times
 * its size in the tests' dumps, 94 for 2000 entries sharing one list of 20
 * frames (350 KB, within the floor).
 */
#define PK_COST_SCALAR 48
#define PK_COST_ARRAY 128
#define PK_COST_OBJECT 256
#define PK_COST_SLOT 16		/* an array's item: its table doubles */
#define PK_COST_PAIR 96		/* a dict's item, its key copied besides */
#define PK_COST_MEMO (sizeof(json_t *) + sizeof(uint16_t))
#define PK_BYTES_PER_BYTE 64
#define PK_BYTES_MIN (64u << 20)

struct pk {
	const uint8_t *p;
	size_t len, off;
	json_t **stack;
	uint16_t *depth;		/* per slot: how deep its containers nest */
	size_t n, cap;
	size_t marks[PK_DEPTH_MAX];
	int nmarks;
	json_t **memo;
	uint16_t *memo_depth;
	size_t nmemo, nset;		/* slots, and entries stored (MEMOIZE's next index) */
	size_t spent, budget;	/* bytes charged, and the most that may be */
	char *err;
	size_t errlen;
};

static int
pk_fail(struct pk *k, const char *fmt, size_t at)
{
	snprintf(k->err, k->errlen, fmt, at);
	return -1;
}

static int
pk_need(struct pk *k, size_t n)
{
	if (k->len - k->off < n)
		return pk_fail(k, "it ends in the middle of a value at byte %zu (a truncated "
		    "dump?)", k->off);
	return 0;
}

static uint64_t
pk_le(const uint8_t *b, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* Charge bytes of memory made: -1, said, once the pickle's budget is spent. */
static int
pk_charge(struct pk *k, size_t bytes, size_t at)
{
	if (bytes > k->budget - k->spent) {
		snprintf(k->err, k->errlen, "it would take more than %zu MiB of memory to read "
		    "(%d times its size): over the reader's limit at byte %zu", k->budget >> 20,
		    PK_BYTES_PER_BYTE, at);
		return -1;
	}
	k->spent += bytes;
	return 0;
}

/* Push v, charging cost bytes for it. */
static int
pk_push_at(struct pk *k, json_t *v, unsigned depth, size_t cost)
{
	if (v == NULL)
		return pk_fail(k, "out of memory at byte %zu", k->off);
	if (k->n == PK_STACK_MAX) {
		json_decref(v);
		return pk_fail(k, "too many values (over the reader's limit) at byte %zu", k->off);
	}
	if (pk_charge(k, cost, k->off) != 0) {
		json_decref(v);
		return -1;
	}
	if (depth > PK_NEST_MAX) {
		json_decref(v);
		return pk_fail(k, "containers nested deeper than the reader's limit at byte %zu",
		    k->off);
	}
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 64;
		k->stack = xreallocarray(k->stack, k->cap, sizeof *k->stack);
		k->depth = xreallocarray(k->depth, k->cap, sizeof *k->depth);
	}
	k->depth[k->n] = (uint16_t)depth;
	k->stack[k->n++] = v;
	return 0;
}

/* A new value: a scalar nests nothing, an empty container one level. */
static int
pk_push(struct pk *k, json_t *v)
{
	size_t cost = json_is_array(v) ? PK_COST_ARRAY : json_is_object(v) ? PK_COST_OBJECT :
	    PK_COST_SCALAR + (json_is_string(v) ? json_string_length(v) : 0);

	return pk_push_at(k, v, v != NULL && (json_is_array(v) || json_is_object(v)), cost);
}

/* The container at slot c now holds the values from first up: its depth grows to fit. */
static int
pk_deepen(struct pk *k, size_t c, size_t first, size_t at)
{
	unsigned d = k->depth[c];

	for (size_t i = first; i < k->n; i++)
		if (k->depth[i] + 1u > d)
			d = k->depth[i] + 1u;
	if (d > PK_NEST_MAX)
		return pk_fail(k, "containers nested deeper than the reader's limit at byte %zu", at);
	k->depth[c] = (uint16_t)d;
	return 0;
}

/* The values above the innermost MARK: their first index, or -1. */
static int
pk_mark_pop(struct pk *k, size_t *first, size_t at)
{
	if (k->nmarks == 0)
		return pk_fail(k, "a container closes with no MARK open at byte %zu", at);
	*first = k->marks[--k->nmarks];
	return 0;
}

/* Values under the innermost open MARK are out of reach until it closes. */
static size_t
pk_floor(const struct pk *k)
{
	return k->nmarks > 0 ? k->marks[k->nmarks - 1] : 0;
}

/* Are there n values above the floor? */
static int
pk_have(const struct pk *k, size_t n)
{
	return k->n >= pk_floor(k) + n;
}

/* Dict keys are text: a string as it is, an int or float in decimal, None as "None". */
static int
pk_key(json_t *key, char *buf, size_t len, const char **out)
{
	if (json_is_string(key))
		*out = json_string_value(key);
	else if (json_is_integer(key))
		snprintf(buf, len, "%lld", (long long)json_integer_value(key)), *out = buf;
	else if (json_is_real(key))
		snprintf(buf, len, "%.17g", json_real_value(key)), *out = buf;
	else if (json_is_null(key))
		*out = "None";
	else if (json_is_boolean(key))
		*out = json_is_true(key) ? "True" : "False";
	else
		return -1;
	return 0;
}

static int
pk_setitems(struct pk *k, size_t first, size_t at)
{
	json_t *d;
	char buf[40];
	const char *key;

	if (first <= pk_floor(k) || (k->n - first) % 2 != 0 ||
	    !json_is_object(d = k->stack[first - 1]))
		return pk_fail(k, "dict items with no dict under them at byte %zu", at);
	if (pk_deepen(k, first - 1, first, at) != 0)
		return -1;
	for (size_t i = first; i < k->n; i += 2) {
		if (pk_key(k->stack[i], buf, sizeof buf, &key) != 0)
			return pk_fail(k, "a dict key that is a container at byte %zu", at);
		/* jansson copies the key into the dict: a memo'd long key costs its length each time. */
		if (pk_charge(k, PK_COST_PAIR + strlen(key), at) != 0)
			return -1;
		if (json_object_set(d, key, k->stack[i + 1]) != 0)
			return pk_fail(k, "a dict key that is not text at byte %zu", at);
	}
	while (k->n > first)
		json_decref(k->stack[--k->n]);
	return 0;
}

static int
pk_appends(struct pk *k, size_t first, size_t at)
{
	json_t *l;

	if (first <= pk_floor(k) || !json_is_array(l = k->stack[first - 1]))
		return pk_fail(k, "list items with no list under them at byte %zu", at);
	if (pk_deepen(k, first - 1, first, at) != 0 ||
	    pk_charge(k, (k->n - first) * PK_COST_SLOT, at) != 0)
		return -1;
	for (size_t i = first; i < k->n; i++)
		if (json_array_append(l, k->stack[i]) != 0)
			return pk_fail(k, "out of memory at byte %zu", at);
	while (k->n > first)
		json_decref(k->stack[--k->n]);
	return 0;
}

/* The top n values become one tuple (a JSON array). */
static int
pk_tuple(struct pk *k, size_t first, size_t at)
{
	json_t *t = json_array();
	unsigned d = 1;

	if (t == NULL)
		return pk_fail(k, "out of memory at byte %zu", at);
	for (size_t i = first; i < k->n; i++) {
		json_array_append(t, k->stack[i]);
		d = k->depth[i] + 1u > d ? k->depth[i] + 1u : d;
	}
	while (k->n > first)
		json_decref(k->stack[--k->n]);
	return pk_push_at(k, t, d, PK_COST_ARRAY + json_array_size(t) * PK_COST_SLOT);
}

/*
 * The bytes a copy of v costs (its containers, their slots and keys; its
 * scalars are shared), counted no further than past max.
 */
static size_t
pk_cost(json_t *v, size_t max)
{
	size_t n = 0, i;
	const char *key;
	json_t *x;

	if (json_is_array(v)) {
		n = PK_COST_ARRAY;
		json_array_foreach(v, i, x) {
			if (n > max)
				break;
			n += PK_COST_SLOT + pk_cost(x, max - n);
		}
	} else if (json_is_object(v)) {
		n = PK_COST_OBJECT;
		json_object_foreach(v, key, x) {
			if (n > max)
				break;
			n += PK_COST_PAIR + strlen(key) + pk_cost(x, max - n);
		}
	}
	return n;
}

/* A copy of the containers of v, sharing its scalars (depth is bounded). */
static json_t *
pk_copy(json_t *v)
{
	const char *key;
	json_t *c, *x;
	size_t i;

	if (json_is_array(v)) {
		c = json_array();
		json_array_foreach(v, i, x)
			json_array_append_new(c, pk_copy(x));
	} else if (json_is_object(v)) {
		c = json_object();
		json_object_foreach(v, key, x)
			json_object_set_new(c, key, pk_copy(x));
	} else {
		c = json_incref(v);
	}
	return c;
}

/*
 * A memo entry fetched: a scalar is shared; a container is copied, so that
 * no container can come to hold itself (a cycle jansson could not free or
 * print), and the copy counts against the limit on values.
 */
static int
pk_get(struct pk *k, size_t idx, size_t at)
{
	json_t *v;
	size_t n;

	if (idx >= k->nmemo || k->memo[idx] == NULL)
		return pk_fail(k, "a memo entry that was never stored is fetched at byte %zu", at);
	v = k->memo[idx];
	if (!json_is_array(v) && !json_is_object(v))
		return pk_push_at(k, json_incref(v), 0, PK_COST_SLOT);
	n = pk_cost(v, k->budget - k->spent);
	if (pk_charge(k, n, at) != 0)
		return -1;
	return pk_push_at(k, pk_copy(v), k->memo_depth[idx], 0);
}

static int
pk_put(struct pk *k, size_t idx, size_t at)
{
	json_t *v;

	if (!pk_have(k, 1))
		return pk_fail(k, "a memo store with nothing to store at byte %zu", at);
	v = k->stack[k->n - 1];
	/* Each store takes a byte or more: a real pickle's indexes stay below its length. */
	if (idx >= PK_MEMO_MAX || idx >= k->len)
		return pk_fail(k, "a memo index over the reader's limit at byte %zu", at);
	if (idx >= k->nmemo) {
		size_t n = idx + 1 > k->nmemo * 2 ? idx + 1 : k->nmemo * 2;

		if (pk_charge(k, (n - k->nmemo) * PK_COST_MEMO, at) != 0)
			return -1;
		k->memo = xreallocarray(k->memo, n, sizeof *k->memo);
		k->memo_depth = xreallocarray(k->memo_depth, n, sizeof *k->memo_depth);
		memset(k->memo + k->nmemo, 0, (n - k->nmemo) * sizeof *k->memo);
		k->nmemo = n;
	}
	if (k->memo[idx] == NULL)
		k->nset++;
	json_decref(k->memo[idx]);
	k->memo[idx] = json_incref(v);
	k->memo_depth[idx] = k->depth[k->n - 1];
	return 0;
}

/* A length-prefixed string or bytes; bytes that are not UTF-8 are refused. */
static int
pk_text(struct pk *k, int lenbytes, int is_bytes, size_t at)
{
	uint64_t n;
	json_t *s;

	if (pk_need(k, (size_t)lenbytes) != 0)
		return -1;
	n = pk_le(k->p + k->off, lenbytes);
	k->off += (size_t)lenbytes;
	if (n > k->len - k->off)
		return pk_fail(k, "a string runs past the end at byte %zu", at);
	s = json_stringn((const char *)k->p + k->off, (size_t)n);
	k->off += (size_t)n;
	if (s == NULL && is_bytes)
		s = json_string("<bytes>");
	if (s == NULL)
		return pk_fail(k, "a string that is not UTF-8 at byte %zu", at);
	return pk_push(k, s);
}

static int
pk_long(struct pk *k, size_t at)
{
	uint64_t v;
	int n;

	if (pk_need(k, 1) != 0)
		return -1;
	n = k->p[k->off++];
	if (n > 8)
		return pk_fail(k, "an integer wider than 64 bits at byte %zu", at);
	if (pk_need(k, (size_t)n) != 0)
		return -1;
	v = pk_le(k->p + k->off, n);
	/* Two's complement of n bytes, sign-extended. */
	if (n > 0 && n < 8 && (k->p[k->off + n - 1] & 0x80))
		v |= ~(uint64_t)0 << (8 * n);
	k->off += (size_t)n;
	return pk_push(k, json_integer((json_int_t)(int64_t)v));
}

static int
pk_fixed_int(struct pk *k, int n, int is_signed)
{
	uint64_t v;

	if (pk_need(k, (size_t)n) != 0)
		return -1;
	v = pk_le(k->p + k->off, n);
	k->off += (size_t)n;
	if (is_signed)
		return pk_push(k, json_integer((json_int_t)(int32_t)(uint32_t)v));
	return pk_push(k, json_integer((json_int_t)v));
}

static int
pk_float(struct pk *k)
{
	uint64_t bits = 0;
	double d;

	if (pk_need(k, 8) != 0)
		return -1;
	for (int i = 0; i < 8; i++)
		bits = bits << 8 | k->p[k->off + i];	/* big-endian */
	k->off += 8;
	memcpy(&d, &bits, sizeof d);
	/* JSON has no NaN or infinity: keep the place with null. */
	return pk_push(k, isfinite(d) ? json_real(d) : json_null());
}

/* One opcode; 1 at STOP. */
static int
pk_op(struct pk *k)
{
	size_t at = k->off, first;
	uint8_t op = k->p[k->off++];

	switch (op) {
	case 0x80:		/* PROTO */
		return pk_need(k, 1) != 0 ? -1 : (k->p[k->off++] > 5 ?
		    pk_fail(k, "pickle protocol over 5 at byte %zu", at) : 0);
	case 0x95:		/* FRAME: a length we do not need */
		if (pk_need(k, 8) != 0)
			return -1;
		k->off += 8;
		return 0;
	case '.':		/* STOP */
		return 1;
	case '(':		/* MARK */
		if (k->nmarks == PK_DEPTH_MAX)
			return pk_fail(k, "containers nested deeper than the reader's limit at byte %zu",
			    at);
		k->marks[k->nmarks++] = k->n;
		return 0;
	case '}': return pk_push(k, json_object());
	case ']': return pk_push(k, json_array());
	case ')': return pk_push(k, json_array());
	case 'N': return pk_push(k, json_null());
	case 0x88: return pk_push(k, json_true());
	case 0x89: return pk_push(k, json_false());
	case 'J': return pk_fixed_int(k, 4, 1);
	case 'K': return pk_fixed_int(k, 1, 0);
	case 'M': return pk_fixed_int(k, 2, 0);
	case 0x8a: return pk_long(k, at);
	case 'G': return pk_float(k);
	case 'X': return pk_text(k, 4, 0, at);
	case 0x8c: return pk_text(k, 1, 0, at);
	case 0x8d: return pk_text(k, 8, 0, at);
	case 'C': return pk_text(k, 1, 1, at);
	case 'B': return pk_text(k, 4, 1, at);
	case 0x8e: return pk_text(k, 8, 1, at);
	case 't':		/* TUPLE */
		return pk_mark_pop(k, &first, at) != 0 ? -1 : pk_tuple(k, first, at);
	case 0x85: case 0x86: case 0x87:	/* TUPLE1..3 */
		if (!pk_have(k, (size_t)(op - 0x84)))
			return pk_fail(k, "a tuple of more values than there are at byte %zu", at);
		return pk_tuple(k, k->n - (size_t)(op - 0x84), at);
	case 's':		/* SETITEM */
		if (!pk_have(k, 3))
			return pk_fail(k, "a dict item with no dict under it at byte %zu", at);
		return pk_setitems(k, k->n - 2, at);
	case 'u':		/* SETITEMS */
		return pk_mark_pop(k, &first, at) != 0 ? -1 : pk_setitems(k, first, at);
	case 'a':		/* APPEND */
		if (!pk_have(k, 2))
			return pk_fail(k, "a list item with no list under it at byte %zu", at);
		return pk_appends(k, k->n - 1, at);
	case 'e':		/* APPENDS */
		return pk_mark_pop(k, &first, at) != 0 ? -1 : pk_appends(k, first, at);
	case 'q':		/* BINPUT */
		return pk_need(k, 1) != 0 ? -1 : pk_put(k, k->p[k->off++], at);
	case 'r':		/* LONG_BINPUT */
		if (pk_need(k, 4) != 0)
			return -1;
		k->off += 4;
		return pk_put(k, (size_t)pk_le(k->p + k->off - 4, 4), at);
	case 0x94:		/* MEMOIZE */
		return pk_put(k, k->nset, at);
	case 'h':		/* BINGET */
		return pk_need(k, 1) != 0 ? -1 : pk_get(k, k->p[k->off++], at);
	case 'j':		/* LONG_BINGET */
		if (pk_need(k, 4) != 0)
			return -1;
		k->off += 4;
		return pk_get(k, (size_t)pk_le(k->p + k->off - 4, 4), at);
	default:
		snprintf(k->err, k->errlen, "opcode 0x%02x at byte %zu is not plain data (a "
		    "class, a call or an unknown op): not a flight recorder dump, or one this "
		    "reader does not know", op, at);
		return -1;
	}
}

json_t *
pickle_read(const void *buf, size_t len, char *err, size_t errlen)
{
	struct pk k = { .p = buf, .len = len, .err = err, .errlen = errlen,
	    .budget = len < (SIZE_MAX - PK_BYTES_MIN) / PK_BYTES_PER_BYTE ?
	    len * PK_BYTES_PER_BYTE + PK_BYTES_MIN : SIZE_MAX };
	json_t *out = NULL;
	int r = 0;

	err[0] = '\0';
	while (k.off < k.len && (r = pk_op(&k)) == 0)
		;
	if (r == 0)
		pk_fail(&k, "no STOP: the pickle ends at byte %zu unfinished", k.off);
	else if (r == 1 && (k.n != 1 || k.nmarks != 0))
		pk_fail(&k, "the pickle stops with other than one value at byte %zu", k.off);
	else if (r == 1)
		out = json_incref(k.stack[0]);
	while (k.n > 0)
		json_decref(k.stack[--k.n]);
	for (size_t i = 0; i < k.nmemo; i++)
		json_decref(k.memo[i]);
	free(k.stack);
	free(k.depth);
	free(k.memo);
	free(k.memo_depth);
	return out;
}
