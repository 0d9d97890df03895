/*
 * Host lists. Every input is untrusted text, so an expression is read twice:
 * the first pass checks the syntax and adds up how many hosts and how long a
 * name each item gives, so that "n[0-999999999]" fails before anything is
 * allocated; the second expands into a scratch list, which is merged into the
 * caller's only once all of it parsed. Fuzzed: fuzz/fuzz_hostlist.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "hostlist.h"
#include "msg.h"
#include "regfile.h"
#include "xmalloc.h"

#define HL_NUM_MAX 999999999999999999ull	/* 18 digits: sums cannot overflow */
#define HL_NUM_DIGITS 18
#define HL_QUOTE_MAX 40		/* bytes of untrusted text quoted in a message */
#define HL_QUOTE_LEN MSG_QUOTE_LEN(HL_QUOTE_MAX)
#define HL_NAMECHARS "letters, digits, '.', '_' or '-'"

struct hl_range {
	unsigned long long lo, hi;
	int width;		/* digits of the start as written: the zero padding */
};

struct hl_group {
	const char *pre;	/* literal text before the '[' */
	size_t prelen;
	int first, nr;		/* its ranges: ranges[first .. first + nr) */
};

/* One comma-separated item of an expression, parsed but not expanded. */
struct hl_item {
	const char *s;		/* the item's text, for messages */
	size_t len;
	struct hl_group *groups;
	int ngroups;
	struct hl_range *ranges;
	int nranges;
	const char *tail;	/* literal text after the last ']' */
	size_t taillen;
	int slots;
};

/* Input quoted in messages: at most HL_QUOTE_MAX bytes (msg.h). */
static const char *
hl_quote(char *buf, const char *s, size_t len)
{
	return msg_quote(buf, s, len, HL_QUOTE_MAX);
}

/* Not isalnum(): the locale must not change what a host name is. */
static int
hl_namechar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '.' || c == '_' || c == '-';
}

static int
hl_isdigit(int c)
{
	return c >= '0' && c <= '9';
}

static int
hl_isspace(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Exactly len decimal digits into *v: 0, -1 if empty or not digits, -2 if over max. */
static int
hl_uint(const char *s, size_t len, unsigned long long max, unsigned long long *v)
{
	*v = 0;
	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!hl_isdigit(s[i]))
			return -1;
		if (*v > (max - (unsigned long long)(s[i] - '0')) / 10)
			return -2;
		*v = *v * 10 + (unsigned long long)(s[i] - '0');
	}
	return 0;
}

static int
hl_ndigits(unsigned long long v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* ssh and the launchers would read a host "-Elog" as an option: no name may start so. */
static int
hl_err_dash(const char *s, size_t len, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN];

	msg_set(err, errlen, "host %s starts with '-', so it would read as an option",
	    hl_quote(q, s, len));
	return COLL_EINVAL;
}

static int
hl_check_name(const char *s, size_t len, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN], qc[HL_QUOTE_LEN];

	if (len == 0) {
		msg_set(err, errlen, "empty host name: expected " HL_NAMECHARS);
		return COLL_EINVAL;
	}
	if (len > HOSTLIST_NAME_MAX) {
		msg_set(err, errlen, "host name %s is longer than %d characters",
		    hl_quote(q, s, len), HOSTLIST_NAME_MAX);
		return COLL_EINVAL;
	}
	if (s[0] == '-')
		return hl_err_dash(s, len, err, errlen);
	for (size_t i = 0; i < len; i++) {
		if (!hl_namechar((unsigned char)s[i])) {
			msg_set(err, errlen, "invalid character %s in host %s: expected "
			    HL_NAMECHARS, hl_quote(qc, s + i, 1), hl_quote(q, s, len));
			return COLL_EINVAL;
		}
	}
	return COLL_OK;
}

/* A slot count: a positive integer up to HOSTLIST_MAX_SLOTS. */
static int
hl_slots_parse(const char *s, size_t len, const char *what, size_t wlen, int *slots, char *err,
    size_t errlen)
{
	char q[HL_QUOTE_LEN], qw[HL_QUOTE_LEN];
	unsigned long long v;

	if (hl_uint(s, len, HOSTLIST_MAX_SLOTS, &v) != 0 || v == 0) {
		msg_set(err, errlen, "bad slot count %s in %s: expected an integer from 1 to %d",
		    hl_quote(q, s, len), hl_quote(qw, what, wlen), HOSTLIST_MAX_SLOTS);
		return COLL_EINVAL;
	}
	*slots = (int)v;
	return COLL_OK;
}

/* 32 bits are plenty for a million names; the index keeps them next to the host index. */
static uint32_t
hl_hash(const char *s, size_t len)
{
	uint64_t h = 14695981039346656037ull;	/* FNV-1a */

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return (uint32_t)(h ^ h >> 32);
}

/*
 * An index entry packs a name's hash (high half) with its host index + 1 (low
 * half, 0: empty), so probing and growing rarely touch the names: with a
 * million hosts every name read is a cache miss.
 */
#define HL_ENT(h, id) ((uint64_t)(h) << 32 | (uint32_t)((id) + 1))
#define HL_ENT_ID(e) ((int)(uint32_t)(e) - 1)

/* The index slot holding name, or the empty one where it would go. */
static size_t
hl_probe(const struct hostlist *hl, const char *name, size_t len, uint32_t h)
{
	size_t mask = hl->index_len - 1, i = h & mask;
	uint64_t e;

	while ((e = hl->index[i]) != 0) {
		if ((uint32_t)(e >> 32) == h) {
			const char *s = hl->hosts[HL_ENT_ID(e)].name;

			if (strncmp(s, name, len) == 0 && s[len] == '\0')
				return i;
		}
		i = (i + 1) & mask;
	}
	return i;
}

static void
hl_index_put(uint64_t *index, size_t mask, uint64_t e)
{
	size_t i = (size_t)(e >> 32) & mask;

	while (index[i] != 0)
		i = (i + 1) & mask;
	index[i] = e;
}

/* Double the index; entries carry their hashes, so no name is read. */
static void
hl_index_grow(struct hostlist *hl)
{
	size_t len = hl->index_len ? hl->index_len * 2 : 64;
	uint64_t *index = xcalloc(len, sizeof *index);

	for (size_t i = 0; i < hl->index_len; i++)
		if (hl->index[i] != 0)
			hl_index_put(index, len - 1, hl->index[i]);
	free(hl->index);
	hl->index = index;
	hl->index_len = len;
}

/* Rebuild from the names, once hosts have moved. */
static void
hl_index_rebuild(struct hostlist *hl)
{
	if (hl->index_len == 0)
		return;
	memset(hl->index, 0, hl->index_len * sizeof *hl->index);
	for (int i = 0; i < hl->n; i++) {
		const char *s = hl->hosts[i].name;

		hl_index_put(hl->index, hl->index_len - 1, HL_ENT(hl_hash(s, strlen(s)), i));
	}
}

static int
hl_find(const struct hostlist *hl, const char *name, size_t len)
{
	if (hl->index_len == 0)
		return -1;
	return HL_ENT_ID(hl->index[hl_probe(hl, name, len, hl_hash(name, len))]);
}

static void
hl_append(struct hostlist *hl, const char *name, size_t len, int slots)
{
	if (hl->n == hl->cap) {
		hl->cap = hl->cap ? hl->cap * 2 : 16;
		hl->hosts = xreallocarray(hl->hosts, (size_t)hl->cap, sizeof *hl->hosts);
	}
	hl->hosts[hl->n].name = xmalloc(len + 1);
	memcpy(hl->hosts[hl->n].name, name, len);
	hl->hosts[hl->n].name[len] = '\0';
	hl->hosts[hl->n].slots = slots;
	hl->n++;
}

/* Add a valid name with its slots, merging a repeat, within the bounds. */
static int
hl_insert(struct hostlist *hl, const char *name, size_t len, int slots, char *err,
    size_t errlen)
{
	char q[HL_QUOTE_LEN];
	uint32_t h = hl_hash(name, len);
	size_t s;
	int i;

	/* Keep the load at most one half, so probes stay short. */
	if ((size_t)hl->n * 2 + 2 > hl->index_len)
		hl_index_grow(hl);
	s = hl_probe(hl, name, len, h);
	if (hl->index[s] != 0) {
		i = HL_ENT_ID(hl->index[s]);
		if (hl->hosts[i].slots > HOSTLIST_MAX_SLOTS - slots) {
			msg_set(err, errlen, "host %s is given more than %d slots in all",
			    hl_quote(q, name, len), HOSTLIST_MAX_SLOTS);
			return COLL_EINVAL;
		}
		hl->hosts[i].slots += slots;
		return COLL_OK;
	}
	if (hl->n >= HOSTLIST_MAX_HOSTS) {
		msg_set(err, errlen, "more than %d hosts in the list", HOSTLIST_MAX_HOSTS);
		return COLL_EINVAL;
	}
	hl_append(hl, name, len, slots);
	hl->index[s] = HL_ENT(h, hl->n - 1);
	return COLL_OK;
}

/* Add src's hosts to dst, all or nothing: a failed parse must not leave half a list. */
static int
hl_merge(struct hostlist *dst, struct hostlist *src, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN];
	int added = 0;

	/* The usual case, and a million hosts need not be copied. */
	if (dst->n == 0) {
		hostlist_free(dst);
		*dst = *src;
		memset(src, 0, sizeof *src);
		return COLL_OK;
	}
	for (int i = 0; i < src->n; i++) {
		const struct host_entry *h = &src->hosts[i];
		int j = hostlist_find(dst, h->name);

		if (j < 0) {
			added++;
		} else if (dst->hosts[j].slots > HOSTLIST_MAX_SLOTS - h->slots) {
			msg_set(err, errlen, "host %s is given more than %d slots in all",
			    hl_quote(q, h->name, strlen(h->name)), HOSTLIST_MAX_SLOTS);
			return COLL_EINVAL;
		}
	}
	if (added > HOSTLIST_MAX_HOSTS - dst->n) {
		msg_set(err, errlen, "more than %d hosts in the list", HOSTLIST_MAX_HOSTS);
		return COLL_EINVAL;
	}
	for (int i = 0; i < src->n; i++)
		hl_insert(dst, src->hosts[i].name, strlen(src->hosts[i].name), src->hosts[i].slots,
		    NULL, 0);
	return COLL_OK;
}

void
hostlist_init(struct hostlist *hl)
{
	memset(hl, 0, sizeof *hl);
}

void
hostlist_free(struct hostlist *hl)
{
	for (int i = 0; i < hl->n; i++)
		free(hl->hosts[i].name);
	free(hl->hosts);
	free(hl->index);
	memset(hl, 0, sizeof *hl);
}

int
hostlist_find(const struct hostlist *hl, const char *name)
{
	return hl_find(hl, name, strlen(name));
}

int
hostlist_add(struct hostlist *hl, const char *name, int slots, char *err, size_t errlen)
{
	size_t len = strlen(name);
	char q[HL_QUOTE_LEN];
	int r;

	if ((r = hl_check_name(name, len, err, errlen)) != COLL_OK)
		return r;
	if (slots < 0 || slots > HOSTLIST_MAX_SLOTS) {
		msg_set(err, errlen, "bad slot count %d for host %s: expected 0 to %d", slots,
		    hl_quote(q, name, len), HOSTLIST_MAX_SLOTS);
		return COLL_EINVAL;
	}
	return hl_insert(hl, name, len, slots, err, errlen);
}

/* One "N" or "N-M" of a bracket group. */
static int
hl_range_parse(const struct hl_item *it, const char *s, size_t len, struct hl_range *r,
    char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN], qi[HL_QUOTE_LEN];
	const char *dash = memchr(s, '-', len);
	size_t slen = dash ? (size_t)(dash - s) : len;
	int a, b;

	a = hl_uint(s, slen, HL_NUM_MAX, &r->lo);
	b = dash ? hl_uint(dash + 1, len - slen - 1, HL_NUM_MAX, &r->hi) : 0;
	if (!dash)
		r->hi = r->lo;
	r->width = (int)slen;
	if (a == -1 || b == -1) {
		msg_set(err, errlen, "bad range %s in %s: expected a number or a range such as 1-4",
		    hl_quote(q, s, len), hl_quote(qi, it->s, it->len));
		return COLL_EINVAL;
	}
	if (a == -2 || b == -2) {
		msg_set(err, errlen, "number too large in range %s in %s: expected values of at "
		    "most %d digits", hl_quote(q, s, len), hl_quote(qi, it->s, it->len),
		    HL_NUM_DIGITS);
		return COLL_EINVAL;
	}
	if (r->hi < r->lo) {
		msg_set(err, errlen, "descending range %s in %s: expected start <= end",
		    hl_quote(q, s, len), hl_quote(qi, it->s, it->len));
		return COLL_EINVAL;
	}
	return COLL_OK;
}

/* The comma list between '[' and ']', body not including them. */
static int
hl_group_parse(struct hl_item *it, const char *body, size_t len, char *err, size_t errlen)
{
	struct hl_group *g = &it->groups[it->ngroups++];
	char q[HL_QUOTE_LEN];
	size_t start = 0;

	g->first = it->nranges;
	if (len == 0) {
		msg_set(err, errlen, "empty brackets in %s: expected numbers such as [1-4]",
		    hl_quote(q, it->s, it->len));
		return COLL_EINVAL;
	}
	for (size_t i = 0; i <= len; i++) {
		if (i < len && body[i] != ',')
			continue;
		if (hl_range_parse(it, body + start, i - start, &it->ranges[it->nranges++], err,
		    errlen) != COLL_OK)
			return COLL_EINVAL;
		start = i + 1;
	}
	g->nr = it->nranges - g->first;
	return COLL_OK;
}

/* Where the item's ":slots" begins (the ':' outside brackets), or len. */
static size_t
hl_colon(const char *s, size_t len)
{
	int depth = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '[')
			depth++;
		else if (s[i] == ']')
			depth--;
		else if (s[i] == ':' && depth == 0)
			return i;
	}
	return len;
}

/* Literal text and bracket groups of an item's name part; brackets are balanced. */
static int
hl_pattern_parse(struct hl_item *it, const char *s, size_t len, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN], qc[HL_QUOTE_LEN];
	size_t lit = 0, nb = 0, nc = 0;

	for (size_t i = 0; i < len; i++) {
		nb += s[i] == '[';
		nc += s[i] == ',';
	}
	if (len > 0 && s[0] == '-')
		return hl_err_dash(it->s, it->len, err, errlen);
	it->groups = xcalloc(nb ? nb : 1, sizeof *it->groups);
	it->ranges = xcalloc(nb + nc ? nb + nc : 1, sizeof *it->ranges);
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '[') {
			const char *close = memchr(s + i, ']', len - i);
			struct hl_group *g = &it->groups[it->ngroups];

			g->pre = s + lit;
			g->prelen = i - lit;
			if (hl_group_parse(it, s + i + 1, (size_t)(close - s) - i - 1, err,
			    errlen) != COLL_OK)
				return COLL_EINVAL;
			i = (size_t)(close - s);
			lit = i + 1;
		} else if (!hl_namechar((unsigned char)s[i])) {
			msg_set(err, errlen, "invalid character %s in host %s: expected "
			    HL_NAMECHARS, hl_quote(qc, s + i, 1), hl_quote(q, it->s, it->len));
			return COLL_EINVAL;
		}
	}
	it->tail = s + lit;
	it->taillen = len - lit;
	return COLL_OK;
}

static void
hl_item_free(struct hl_item *it)
{
	free(it->groups);
	free(it->ranges);
	memset(it, 0, sizeof *it);
}

static int
hl_item_parse(struct hl_item *it, const char *s, size_t len, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN];
	size_t colon = hl_colon(s, len);

	memset(it, 0, sizeof *it);
	it->s = s;
	it->len = len;
	if (colon == 0) {
		msg_set(err, errlen, "empty host name in %s: expected a name before ':'",
		    hl_quote(q, s, len));
		return COLL_EINVAL;
	}
	if (colon < len && hl_slots_parse(s + colon + 1, len - colon - 1, s, len, &it->slots, err,
	    errlen) != COLL_OK)
		return COLL_EINVAL;
	return hl_pattern_parse(it, s, colon, err, errlen);
}

/* Hosts the item expands to, saturating just past the bound. */
static unsigned long long
hl_item_count(const struct hl_item *it)
{
	unsigned long long total = 1, over = (unsigned long long)HOSTLIST_MAX_HOSTS + 1;

	for (int g = 0; g < it->ngroups; g++) {
		unsigned long long n = 0;

		for (int k = 0; k < it->groups[g].nr && n < over; k++) {
			const struct hl_range *r = &it->ranges[it->groups[g].first + k];

			n += r->hi - r->lo + 1;
		}
		total = n >= over ? over : total * n;
		if (total >= over)
			return over;
	}
	return total;
}

/* Length of the longest name the item gives. */
static size_t
hl_item_namemax(const struct hl_item *it)
{
	size_t len = it->taillen;

	for (int g = 0; g < it->ngroups; g++) {
		int w = 0;

		for (int k = 0; k < it->groups[g].nr; k++) {
			const struct hl_range *r = &it->ranges[it->groups[g].first + k];
			int d = hl_ndigits(r->hi);

			w = r->width > w ? r->width : w;
			w = d > w ? d : w;
		}
		len += it->groups[g].prelen + (size_t)w;
	}
	return len;
}

/* First pass: the item is within the bounds, and *total the hosts so far. */
static int
hl_item_check(const struct hl_item *it, unsigned long long *total, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN];

	*total += hl_item_count(it);
	if (*total > HOSTLIST_MAX_HOSTS) {
		msg_set(err, errlen, "%s takes the list over %d hosts", hl_quote(q, it->s, it->len),
		    HOSTLIST_MAX_HOSTS);
		return COLL_EINVAL;
	}
	if (hl_item_namemax(it) > HOSTLIST_NAME_MAX) {
		msg_set(err, errlen, "%s gives host names longer than %d characters",
		    hl_quote(q, it->s, it->len), HOSTLIST_NAME_MAX);
		return COLL_EINVAL;
	}
	return COLL_OK;
}

/* The name at the current odometer position; hl_item_check bounded its length. */
static size_t
hl_item_name(const struct hl_item *it, const int *ri, const unsigned long long *v, char *buf)
{
	size_t o = 0;

	for (int g = 0; g < it->ngroups; g++) {
		memcpy(buf + o, it->groups[g].pre, it->groups[g].prelen);
		o += it->groups[g].prelen;
		o += (size_t)snprintf(buf + o, HOSTLIST_NAME_MAX + 1 - o, "%0*llu",
		    it->ranges[ri[g]].width, v[g]);
	}
	memcpy(buf + o, it->tail, it->taillen);
	o += it->taillen;
	buf[o] = '\0';
	return o;
}

/* Step the odometer, the rightmost group fastest; 0 once every name was given. */
static int
hl_item_next(const struct hl_item *it, int *ri, unsigned long long *v)
{
	for (int g = it->ngroups - 1; g >= 0; g--) {
		const struct hl_group *gr = &it->groups[g];

		if (v[g] < it->ranges[ri[g]].hi) {
			v[g]++;
			return 1;
		}
		if (ri[g] + 1 < gr->first + gr->nr) {
			v[g] = it->ranges[++ri[g]].lo;
			return 1;
		}
		ri[g] = gr->first;
		v[g] = it->ranges[ri[g]].lo;
	}
	return 0;
}

static int
hl_item_expand(const struct hl_item *it, struct hostlist *hl, char *err, size_t errlen)
{
	int n = it->ngroups ? it->ngroups : 1, r;
	int *ri = xcalloc((size_t)n, sizeof *ri);
	unsigned long long *v = xcalloc((size_t)n, sizeof *v);
	char name[HOSTLIST_NAME_MAX + 1];

	for (int g = 0; g < it->ngroups; g++) {
		ri[g] = it->groups[g].first;
		v[g] = it->ranges[ri[g]].lo;
	}
	do {
		size_t len = hl_item_name(it, ri, v, name);

		r = hl_insert(hl, name, len, it->slots, err, errlen);
	} while (r == COLL_OK && hl_item_next(it, ri, v));
	free(ri);
	free(v);
	return r;
}

/* Length of the item at s, up to a comma outside brackets, checking the brackets. */
static int
hl_item_split(const char *expr, const char *s, size_t *len, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN];
	size_t i;
	int depth = 0;

	for (i = 0; s[i] != '\0' && (s[i] != ',' || depth); i++) {
		if (s[i] == '[' && depth) {
			msg_set(err, errlen, "nested '[' in %s: brackets do not nest",
			    hl_quote(q, s, i + 1));
			return COLL_EINVAL;
		}
		if (s[i] == ']' && !depth) {
			msg_set(err, errlen, "unbalanced ']' in %s: expected '[' before it",
			    hl_quote(q, s, i + 1));
			return COLL_EINVAL;
		}
		depth += s[i] == '[' ? 1 : s[i] == ']' ? -1 : 0;
	}
	if (depth) {
		msg_set(err, errlen, "unbalanced '[' in %s: expected ']'", hl_quote(q, s, i));
		return COLL_EINVAL;
	}
	if (i == 0) {
		msg_set(err, errlen, "empty item at offset %zu of %s: expected a host name",
		    (size_t)(s - expr), hl_quote(q, expr, strlen(expr)));
		return COLL_EINVAL;
	}
	*len = i;
	return COLL_OK;
}

/* Check (hl NULL: the first pass) or expand each item of expr. */
static int
hl_expr_walk(const char *expr, struct hostlist *hl, char *err, size_t errlen)
{
	unsigned long long total = 0;
	const char *s = expr;

	for (;;) {
		struct hl_item it;
		size_t len;
		int r;

		if ((r = hl_item_split(expr, s, &len, err, errlen)) != COLL_OK)
			return r;
		r = hl_item_parse(&it, s, len, err, errlen);
		if (r == COLL_OK)
			r = hl == NULL ? hl_item_check(&it, &total, err, errlen) :
			    hl_item_expand(&it, hl, err, errlen);
		hl_item_free(&it);
		if (r != COLL_OK || s[len] == '\0')
			return r;
		s += len + 1;
	}
}

/* Parse expr into out, an empty scratch list. */
static int
hl_expr_parse(struct hostlist *out, const char *expr, char *err, size_t errlen)
{
	int r;

	if (expr == NULL) {
		msg_set(err, errlen, "no host list given");
		return COLL_EINVAL;
	}
	/* Counts of brackets and ranges then fit in an int. */
	if (strnlen(expr, HOSTLIST_FILE_MAX + 1) > HOSTLIST_FILE_MAX) {
		msg_set(err, errlen, "host list longer than %u bytes", HOSTLIST_FILE_MAX);
		return COLL_EINVAL;
	}
	if ((r = hl_expr_walk(expr, NULL, err, errlen)) != COLL_OK)
		return r;
	return hl_expr_walk(expr, out, err, errlen);
}

int
hostlist_parse(struct hostlist *hl, const char *expr, char *err, size_t errlen)
{
	struct hostlist tmp = { 0 };
	int r = hl_expr_parse(&tmp, expr, err, errlen);

	if (r == COLL_OK)
		r = hl_merge(hl, &tmp, err, errlen);
	hostlist_free(&tmp);
	return r;
}

int
hostlist_exclude(struct hostlist *hl, const char *expr, char *err, size_t errlen)
{
	struct hostlist ex = { 0 };
	int r = hl_expr_parse(&ex, expr, err, errlen), n = 0;

	if (r == COLL_OK) {
		for (int i = 0; i < hl->n; i++) {
			if (hostlist_find(&ex, hl->hosts[i].name) >= 0)
				free(hl->hosts[i].name);
			else
				hl->hosts[n++] = hl->hosts[i];
		}
		hl->n = n;
		hl_index_rebuild(hl);
	}
	hostlist_free(&ex);
	return r;
}

/* One hostfile token after the host: slots=N, or max_slots=M, read and ignored. */
static int
hl_line_keyword(const char *tok, size_t len, int *slots, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN];
	unsigned long long v;

	if (len > 6 && memcmp(tok, "slots=", 6) == 0) {
		if (*slots != 0) {
			msg_set(err, errlen, "slots given twice at %s", hl_quote(q, tok, len));
			return COLL_EINVAL;
		}
		return hl_slots_parse(tok + 6, len - 6, tok, len, slots, err, errlen);
	}
	if (len >= 10 && (memcmp(tok, "max_slots=", 10) == 0 ||
	    memcmp(tok, "max-slots=", 10) == 0)) {
		if (hl_uint(tok + 10, len - 10, HL_NUM_MAX, &v) == 0)
			return COLL_OK;
		msg_set(err, errlen, "bad %s: expected a number after max_slots=",
		    hl_quote(q, tok, len));
		return COLL_EINVAL;
	}
	msg_set(err, errlen, "unknown keyword %s: expected slots=N or max_slots=N",
	    hl_quote(q, tok, len));
	return COLL_EINVAL;
}

/* The host of a hostfile line, "host" or "host:N". */
static int
hl_line_host(const char *tok, size_t len, size_t *namelen, int *slots, char *err,
    size_t errlen)
{
	const char *colon = memchr(tok, ':', len);

	*namelen = colon ? (size_t)(colon - tok) : len;
	if (hl_check_name(tok, *namelen, err, errlen) != COLL_OK)
		return COLL_EINVAL;
	if (colon == NULL)
		return COLL_OK;
	return hl_slots_parse(colon + 1, len - *namelen - 1, tok, len, slots, err, errlen);
}

/* One line of a hostfile, without its newline; err gets no line number. */
static int
hl_line_parse(struct hostlist *hl, const char *s, size_t len, char *err, size_t errlen)
{
	const char *hash = memchr(s, '#', len), *host = NULL;
	size_t hostlen = 0, namelen = 0;
	int slots = 0;

	if (hash != NULL)
		len = (size_t)(hash - s);
	for (size_t i = 0; i < len;) {
		size_t j = i;

		while (j < len && !hl_isspace(s[j]))
			j++;
		if (j == i) {
			i++;
			continue;
		}
		if (host == NULL) {
			host = s + i;
			hostlen = j - i;
			if (hl_line_host(host, hostlen, &namelen, &slots, err, errlen) != COLL_OK)
				return COLL_EINVAL;
		} else if (hl_line_keyword(s + i, j - i, &slots, err, errlen) != COLL_OK) {
			return COLL_EINVAL;
		}
		i = j;
	}
	if (host == NULL)
		return COLL_OK;
	return hl_insert(hl, host, namelen, slots, err, errlen);
}

int
hostlist_parse_text(struct hostlist *hl, const char *text, char *err, size_t errlen)
{
	struct hostlist tmp = { 0 };
	char msg[COLL_ERR_LEN];
	const char *p = text;
	int r = COLL_OK, line = 0;

	if (text == NULL) {
		msg_set(err, errlen, "no hostfile text given");
		return COLL_EINVAL;
	}
	while (r == COLL_OK && *p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		line++;
		if ((r = hl_line_parse(&tmp, p, len, msg, sizeof msg)) != COLL_OK)
			msg_set(err, errlen, "line %d: %s", line, msg);
		p += len + (nl != NULL);
	}
	if (r == COLL_OK)
		r = hl_merge(hl, &tmp, err, errlen);
	hostlist_free(&tmp);
	return r;
}

#define HL_PIPE_WAIT_MS 5000	/* a hostfile that is a pipe (<(...)): its writer's time */

static int
hl_read_file(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN];
	struct stat sb;
	int r, e;

	hl_quote(q, path, strlen(path));
	r = regfile_read(path, HOSTLIST_FILE_MAX, HL_PIPE_WAIT_MS, out, outlen, &sb);
	e = errno;
	if (r == COLL_EUNSAFE)
		msg_set(err, errlen, "hostfile %s is %s, not a file: give a file of host names",
		    q, regfile_kind(sb.st_mode));
	else if (r == COLL_ETOOBIG)
		msg_set(err, errlen, "hostfile %s is larger than %u bytes", q, HOSTLIST_FILE_MAX);
	else if (r == COLL_ETIMEDOUT)
		msg_set(err, errlen, "hostfile %s is a pipe that stayed silent for %d s: give a "
		    "file of host names", q, HL_PIPE_WAIT_MS / 1000);
	else if (r != COLL_OK)
		msg_set(err, errlen, "cannot open hostfile %s: %s", q, strerror(e));
	if (r == COLL_ESYS && e == ENOENT)
		return COLL_ENOTFOUND;
	return r == COLL_EUNSAFE || r == COLL_ETIMEDOUT ? COLL_EINVAL : r;
}

int
hostlist_parse_file(struct hostlist *hl, const char *path, char *err, size_t errlen)
{
	char q[HL_QUOTE_LEN], msg[COLL_ERR_LEN], *text = NULL, *nul;
	size_t len;
	int r;

	if ((r = hl_read_file(path, &text, &len, err, errlen)) != COLL_OK)
		return r;
	/* A NUL would silently end the text early. */
	if ((nul = memchr(text, '\0', len)) != NULL) {
		int line = 1;

		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		msg_set(err, errlen, "hostfile %s line %d: NUL byte: expected text",
		    hl_quote(q, path, strlen(path)), line);
		free(text);
		return COLL_EINVAL;
	}
	if ((r = hostlist_parse_text(hl, text, msg, sizeof msg)) != COLL_OK)
		msg_set(err, errlen, "hostfile %s %s", hl_quote(q, path, strlen(path)), msg);
	free(text);
	return r;
}

/* One entry of SLURM_TASKS_PER_NODE, "N" or "N(xM)". */
static int
hl_tasks_entry(const char *s, size_t len, int *tasks, int *reps)
{
	const char *paren = memchr(s, '(', len);
	size_t tlen = paren ? (size_t)(paren - s) : len;
	unsigned long long t, m = 1;

	if (hl_uint(s, tlen, HOSTLIST_MAX_SLOTS, &t) != 0 || t == 0)
		return COLL_EINVAL;
	if (paren != NULL && (len - tlen < 4 || paren[1] != 'x' || s[len - 1] != ')' ||
	    hl_uint(paren + 2, len - tlen - 3, HOSTLIST_MAX_HOSTS, &m) != 0 || m == 0))
		return COLL_EINVAL;
	*tasks = (int)t;
	*reps = (int)m;
	return COLL_OK;
}

/* Count the nodes tasks describes (hl NULL), or give hl's hosts their slots. */
static int
hl_tasks_walk(const char *tasks, struct hostlist *hl, long long *count, char *err,
    size_t errlen)
{
	char q[HL_QUOTE_LEN], qt[HL_QUOTE_LEN];
	const char *s = tasks;

	*count = 0;
	for (;;) {
		size_t len = strcspn(s, ",");
		int t, m;

		if (hl_tasks_entry(s, len, &t, &m) != COLL_OK) {
			msg_set(err, errlen, "bad SLURM_TASKS_PER_NODE entry %s in %s: expected "
			    "N or N(xM), positive integers", hl_quote(q, s, len),
			    hl_quote(qt, tasks, strlen(tasks)));
			return COLL_EINVAL;
		}
		for (int k = 0; hl != NULL && k < m; k++)
			hl->hosts[*count + k].slots = t;
		/* Bounded as it goes: "1(x999999),1(x999999),..." must not overflow. */
		*count += m;
		if (*count > HOSTLIST_MAX_HOSTS) {
			msg_set(err, errlen, "SLURM_TASKS_PER_NODE %s counts more than %d nodes",
			    hl_quote(qt, tasks, strlen(tasks)), HOSTLIST_MAX_HOSTS);
			return COLL_EINVAL;
		}
		if (s[len] == '\0')
			return COLL_OK;
		s += len + 1;
	}
}

/* Give each node of hl its count from SLURM_TASKS_PER_NODE, one entry per node. */
static int
hl_tasks_apply(struct hostlist *hl, const char *tasks, const char *nodelist, char *err,
    size_t errlen)
{
	char qt[HL_QUOTE_LEN], qn[HL_QUOTE_LEN];
	long long count;
	int r;

	if ((r = hl_tasks_walk(tasks, NULL, &count, err, errlen)) != COLL_OK)
		return r;
	if (count != hl->n) {
		msg_set(err, errlen, "SLURM_TASKS_PER_NODE %s counts %lld nodes but "
		    "SLURM_JOB_NODELIST %s has %d", hl_quote(qt, tasks, strlen(tasks)), count,
		    hl_quote(qn, nodelist, strlen(nodelist)), hl->n);
		return COLL_EINVAL;
	}
	return hl_tasks_walk(tasks, hl, &count, err, errlen);
}

int
hostlist_parse_slurm(struct hostlist *hl, const char *nodelist, const char *tasks,
    char *err, size_t errlen)
{
	struct hostlist tmp = { 0 };
	char msg[COLL_ERR_LEN];
	int r;

	if ((r = hl_expr_parse(&tmp, nodelist, msg, sizeof msg)) != COLL_OK)
		msg_set(err, errlen, "SLURM_JOB_NODELIST: %s", msg);
	if (r == COLL_OK && tasks != NULL)
		r = hl_tasks_apply(&tmp, tasks, nodelist, err, errlen);
	if (r == COLL_OK)
		r = hl_merge(hl, &tmp, err, errlen);
	hostlist_free(&tmp);
	return r;
}

/* --- folding names back into bracket form --- */

struct hl_fold_rec {
	int group;
	int len;		/* digits of the numeric suffix, 0 for a plain name */
	unsigned long long v;
	int name;		/* index into names */
};

struct hl_fold {
	const char **names;
	int *rep;		/* per group: the first name in it */
	int *plen;		/* per group: prefix length, -1 for a plain name */
	int ngroups;
	int *index;		/* hash of groups by prefix: group + 1, 0 empty */
	size_t mask;
	struct hl_fold_rec *recs;
	char *used;		/* per rec: already inside a range */
};

struct hl_out {
	char *p;
	size_t len, off;
	int full;
};

static void
hl_out_put(struct hl_out *o, const char *s, size_t n)
{
	if (o->full)
		return;
	if (n >= o->len - o->off) {
		n = o->len - o->off - 1;
		o->full = 1;
	}
	memcpy(o->p + o->off, s, n);
	o->off += n;
	o->p[o->off] = '\0';
}

/* Split a name into prefix and a numeric suffix of 1 to 18 digits; 0 if it has none. */
static int
hl_fold_split(const char *name, size_t *plen, int *dlen, unsigned long long *v)
{
	size_t len = strlen(name), i = len;

	while (i > 0 && hl_isdigit(name[i - 1]))
		i--;
	if (i == len || len - i > HL_NUM_DIGITS)
		return 0;
	*plen = i;
	*dlen = (int)(len - i);
	hl_uint(name + i, len - i, HL_NUM_MAX, v);
	return 1;
}

/* The group of name with key (plen -1: plain name), created on first sight. */
static int
hl_fold_group(struct hl_fold *f, int name, int plen)
{
	const char *s = f->names[name];
	size_t klen = plen < 0 ? strlen(s) : (size_t)plen;
	size_t i = (size_t)(hl_hash(s, klen) ^ (plen < 0 ? 0x9e3779b97f4a7c15ull : 0)) & f->mask;
	int g;

	while ((g = f->index[i]) != 0) {
		const char *r = f->names[f->rep[g - 1]];
		int rp = f->plen[g - 1];

		if ((rp < 0) == (plen < 0) && (rp < 0 ? strcmp(r, s) == 0 :
		    (size_t)rp == klen && memcmp(r, s, klen) == 0))
			return g - 1;
		i = (i + 1) & f->mask;
	}
	g = f->ngroups++;
	f->rep[g] = name;
	f->plen[g] = plen;
	f->index[i] = g + 1;
	return g;
}

static int
hl_fold_cmp(const void *pa, const void *pb)
{
	const struct hl_fold_rec *a = pa, *b = pb;

	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	if (a->v != b->v)
		return a->v < b->v ? -1 : 1;
	return (a->len > b->len) - (a->len < b->len);
}

/* Can a range whose start has w digits produce rec? Its width is the start's width. */
static int
hl_fold_fits(const struct hl_fold_rec *rec, int w)
{
	return rec->len == w || (rec->len > w && hl_ndigits(rec->v) == rec->len);
}

/* Grow a range from recs[i] over consecutive numbers; returns its last rec. */
static int
hl_fold_run(struct hl_fold *f, int i, int end)
{
	const struct hl_fold_rec *r = f->recs;
	int e = i;

	f->used[i] = 1;
	for (int j = i + 1; j < end && r[j].v <= r[e].v + 1; j++) {
		if (r[j].v == r[e].v + 1 && !f->used[j] && hl_fold_fits(&r[j], r[i].len)) {
			f->used[j] = 1;
			e = j;
		}
	}
	return e;
}

static void
hl_fold_digits(const struct hl_fold *f, int i, struct hl_out *o)
{
	const struct hl_fold_rec *r = &f->recs[i];

	hl_out_put(o, f->names[r->name] + f->plen[r->group], (size_t)r->len);
}

/* recs[a .. b) of one numeric group, b - a > 1, as "prefix[...]" */
static void
hl_fold_ranges(struct hl_fold *f, int a, int b, struct hl_out *o)
{
	const struct hl_fold_rec *r = f->recs;
	int first = 1;

	hl_out_put(o, f->names[r[a].name], (size_t)f->plen[r[a].group]);
	hl_out_put(o, "[", 1);
	for (int i = a; i < b; i++) {
		int e;

		if (f->used[i] || (i > a && r[i].v == r[i - 1].v && r[i].len == r[i - 1].len))
			continue;
		e = hl_fold_run(f, i, b);
		if (!first)
			hl_out_put(o, ",", 1);
		hl_fold_digits(f, i, o);
		if (e != i) {
			hl_out_put(o, "-", 1);
			hl_fold_digits(f, e, o);
		}
		first = 0;
	}
	hl_out_put(o, "]", 1);
}

/* One group, recs[a .. b); duplicates of a name count once. */
static void
hl_fold_emit(struct hl_fold *f, int a, int b, struct hl_out *o)
{
	const struct hl_fold_rec *r = f->recs;
	int distinct = 1;

	for (int i = a + 1; i < b; i++)
		distinct += r[i].v != r[i - 1].v || r[i].len != r[i - 1].len;
	if (f->plen[r[a].group] < 0 || distinct == 1)
		hl_out_put(o, f->names[r[a].name], strlen(f->names[r[a].name]));
	else
		hl_fold_ranges(f, a, b, o);
}

static void
hl_fold_build(struct hl_fold *f, int n)
{
	size_t len = 16;

	while (len < (size_t)n * 2)
		len *= 2;
	f->index = xcalloc(len, sizeof *f->index);
	f->mask = len - 1;
	f->rep = xcalloc((size_t)n, sizeof *f->rep);
	f->plen = xcalloc((size_t)n, sizeof *f->plen);
	f->recs = xcalloc((size_t)n, sizeof *f->recs);
	f->used = xcalloc((size_t)n, 1);
	for (int i = 0; i < n; i++) {
		struct hl_fold_rec *r = &f->recs[i];
		size_t plen;

		r->name = i;
		if (hl_fold_split(f->names[i], &plen, &r->len, &r->v))
			r->group = hl_fold_group(f, i, (int)plen);
		else
			r->group = hl_fold_group(f, i, -1);
	}
	qsort(f->recs, (size_t)n, sizeof *f->recs, hl_fold_cmp);
}

int
hostlist_fold(const char **names, int n, char *out, size_t outlen)
{
	struct hl_fold f = { .names = names };
	struct hl_out o = { .p = out, .len = outlen };

	if (n < 0)
		return COLL_EINVAL;
	if (outlen == 0)
		return COLL_ETOOBIG;
	out[0] = '\0';
	if (n == 0)
		return COLL_OK;
	hl_fold_build(&f, n);
	for (int a = 0, b; a < n; a = b) {
		for (b = a + 1; b < n && f.recs[b].group == f.recs[a].group; b++)
			;
		if (a > 0)
			hl_out_put(&o, ",", 1);
		hl_fold_emit(&f, a, b, &o);
	}
	free(f.index);
	free(f.rep);
	free(f.plen);
	free(f.recs);
	free(f.used);
	return o.full ? COLL_ETOOBIG : COLL_OK;
}

/* --- placement --- */

static int
hl_capacity(const struct hostlist *hl, int h, int per_host)
{
	if (per_host > 0)
		return per_host;
	return hl->hosts[h].slots > 0 ? hl->hosts[h].slots : 1;
}

static void
hl_place_block(const struct hostlist *hl, int nranks, int per_host, int *rank_host)
{
	int r = 0;

	for (int h = 0; h < hl->n && r < nranks; h++)
		for (int k = hl_capacity(hl, h, per_host); k > 0 && r < nranks; k--)
			rank_host[r++] = h;
}

/* Deal in rounds over the hosts not yet full: each round gives out at least one rank. */
static void
hl_place_roundrobin(const struct hostlist *hl, int nranks, int per_host, int *rank_host)
{
	int *active = xcalloc(hl->n ? (size_t)hl->n : 1, sizeof *active);
	int nactive = hl->n, r = 0;

	for (int h = 0; h < hl->n; h++)
		active[h] = h;
	for (int round = 1; r < nranks; round++) {
		int k = 0;

		for (int a = 0; a < nactive && r < nranks; a++) {
			rank_host[r++] = active[a];
			if (hl_capacity(hl, active[a], per_host) > round)
				active[k++] = active[a];
		}
		nactive = k;
	}
	free(active);
}

int
hostlist_place(const struct hostlist *hl, int nranks, int per_host, enum place_mode mode,
    int *rank_host, char *err, size_t errlen)
{
	long long total = 0;

	if (nranks < 0 || per_host < 0 || (mode != PLACE_BLOCK && mode != PLACE_ROUNDROBIN)) {
		msg_set(err, errlen, "bad placement: %d ranks, %d per host, mode %d", nranks,
		    per_host, (int)mode);
		return COLL_EINVAL;
	}
	for (int h = 0; h < hl->n; h++)
		total += hl_capacity(hl, h, per_host);
	if (nranks > total) {
		msg_set(err, errlen, "%d ranks but only %lld slots on %d hosts", nranks, total,
		    hl->n);
		return COLL_EINVAL;
	}
	if (mode == PLACE_BLOCK)
		hl_place_block(hl, nranks, per_host, rank_host);
	else
		hl_place_roundrobin(hl, nranks, per_host, rank_host);
	return COLL_OK;
}
