/*
 * The facts container and its wire form.
 * Hosts send their facts as "key\tvalue\n" lines: plain text, so that the
 * core needs no JSON library, and checked line by line on the receiving side.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "facts.h"
#include "plat_file.h"
#include "xmalloc.h"

void
facts_init(struct facts *f)
{
	memset(f, 0, sizeof *f);
}

void
facts_free(struct facts *f)
{
	for (int i = 0; i < f->n; i++) {
		free(f->v[i].key);
		free(f->v[i].val);
	}
	free(f->v);
	memset(f, 0, sizeof *f);
}

static int
facts_find(const struct facts *f, const char *key)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->v[i].key, key) == 0)
			return i;
	return -1;
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0. */
static int
facts_utf8(const unsigned char *s)
{
	int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 && s[0] >= 0xc2 ? 2 :
	    (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 && s[0] <= 0xf4 ? 4 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) ||
	    (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))))
		return 0;	/* overlong, surrogate or past U+10FFFF */
	return n;
}

/*
 * Keys and values travel as one line each and end up in JSON: no tabs,
 * newlines or other controls, and valid UTF-8. The length of the character
 * at s that may stay, or 0 for one that becomes '?'.
 */
static int
facts_char(const char *s)
{
	unsigned char c = (unsigned char)*s;

	return c < 0x20 || c == 0x7f ? 0 : facts_utf8((const unsigned char *)s);
}

static void
facts_clean(char *s)
{
	while (*s != '\0') {
		int n = facts_char(s);

		if (n == 0)
			*s++ = '?';
		else
			s += n;
	}
}

int
facts_is_clean(const char *s)
{
	for (int n; *s != '\0'; s += n)
		if ((n = facts_char(s)) == 0)
			return 0;
	return 1;
}

static void
facts_push(struct facts *f, const char *key, char *val)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->v = xreallocarray(f->v, (size_t)f->cap, sizeof *f->v);
	}
	f->v[f->n].key = xstrdup(key);
	f->v[f->n].val = val;
	f->n++;
}

static void
facts_put(struct facts *f, const char *key, char *val)
{
	char k[FACTS_KEY_MAX];
	int i;

	/* Cleaned before the lookup, so that two keys that clean alike are one. */
	snprintf(k, sizeof k, "%s", key);
	facts_clean(k);
	facts_clean(val);
	if ((i = facts_find(f, k)) >= 0) {
		free(f->v[i].val);
		f->v[i].val = val;
		return;
	}
	facts_push(f, k, val);
}

static char *
facts_vformat(const char *prefix, const char *fmt, va_list ap)
{
	char buf[FACTS_VAL_MAX];
	size_t off = strlen(prefix);

	memcpy(buf, prefix, off + 1);
	vsnprintf(buf + off, sizeof buf - off, fmt, ap);
	return xstrdup(buf);
}

void
facts_add(struct facts *f, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	facts_put(f, key, facts_vformat("", fmt, ap));
	va_end(ap);
}

void
facts_append(struct facts *f, const char *key, const char *val)
{
	char k[FACTS_KEY_MAX], *v = xstrdup(val);

	snprintf(k, sizeof k, "%s", key);
	facts_clean(k);
	facts_clean(v);
	facts_push(f, k, v);
}

void
facts_skip(struct facts *f, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	facts_put(f, key, facts_vformat(FACTS_SKIP, fmt, ap));
	va_end(ap);
}

const char *
facts_get(const struct facts *f, const char *key)
{
	int i = facts_find(f, key);

	return i >= 0 ? f->v[i].val : NULL;
}

int
facts_is_skipped(const char *val)
{
	return val != NULL && strncmp(val, FACTS_SKIP, strlen(FACTS_SKIP)) == 0;
}

static int
facts_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fact *)a)->key, ((const struct fact *)b)->key);
}

void
facts_sort(struct facts *f)
{
	if (f->n > 1)
		qsort(f->v, (size_t)f->n, sizeof *f->v, facts_cmp);
}

char *
facts_pack(const struct facts *f, size_t *len)
{
	size_t cap = 1, off = 0;
	char *buf;

	for (int i = 0; i < f->n; i++)
		cap += strlen(f->v[i].key) + strlen(f->v[i].val) + 2;
	buf = xmalloc(cap);
	for (int i = 0; i < f->n; i++)
		off += (size_t)snprintf(buf + off, cap - off, "%s\t%s\n", f->v[i].key, f->v[i].val);
	buf[off] = '\0';
	*len = off;
	return buf;
}

int
facts_unpack(struct facts *f, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *tab;
		size_t klen, vlen;

		if (nl == NULL || (tab = memchr(p, '\t', (size_t)(nl - p))) == NULL)
			return COLL_EPROTO;
		klen = (size_t)(tab - p);
		vlen = (size_t)(nl - tab - 1);
		if (klen == 0 || klen >= FACTS_KEY_MAX || vlen >= FACTS_VAL_MAX ||
		    f->n >= FACTS_MAX || memchr(p, '\0', (size_t)(nl - p)) != NULL)
			return COLL_EPROTO;
		{
			char key[FACTS_KEY_MAX], *val = xmalloc(vlen + 1);

			memcpy(key, p, klen);
			key[klen] = '\0';
			memcpy(val, tab + 1, vlen);
			val[vlen] = '\0';
			facts_put(f, key, val);
		}
		p = nl + 1;
	}
	return COLL_OK;
}

void
facts_roots_env(struct facts_roots *r)
{
	memset(r, 0, sizeof *r);
	r->root = plat_file_root();
	r->home = getenv("HOME");
	r->shm = getenv("COLL_SHM_DIR");
}

void
facts_collect(struct facts *f, const struct facts_roots *r, char *const *envp)
{
	facts_read_host(f, r);
	facts_read_limits(f, r);
	facts_read_env(f, r, envp);
	facts_read_gpu(f, r);
	facts_read_pci(f, r);
	facts_read_rdma(f, r);
	facts_read_net(f, r);
	facts_read_counters(f, r);
	facts_read_kmsg(f, r);
}
