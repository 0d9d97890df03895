/*
 * Records of the tree launch (treeproto.h). Like agentproto.c, the parsers
 * trust nothing: every number is whole decimal within its range, a host
 * name is the characters a host list allows, and ranks come in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentproto.h"
#include "err.h"
#include "ranges.h"
#include "treeproto.h"
#include "xmalloc.h"

/* A whole decimal number below max at *s, ending at a space, comma, '-' or the end. */
static int
treeproto_number(const char **s, const char *end, long max, long *out)
{
	const char *p = *s;
	long v = 0;

	if (p == end || *p < '0' || *p > '9' || (*p == '0' && p + 1 < end && p[1] >= '0' &&
	    p[1] <= '9'))
		return COLL_EPROTO;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v >= max)
			return COLL_EPROTO;
	}
	*s = p;
	*out = v;
	return COLL_OK;
}

int
treeproto_parse_up(const char *line, size_t len, int nranks, int nhosts,
    struct treeproto_up *u)
{
	const char *p = line, *end = line + len;
	long v;

	if (memchr(line, '\n', len) != NULL)
		return COLL_EPROTO;
	if (len >= 2 && line[0] == 'h' && line[1] == ' ') {
		p += 2;
		if (treeproto_number(&p, end, nhosts, &v) != COLL_OK || p == end || *p != ' ')
			return COLL_EPROTO;
		*u = (struct treeproto_up){ .kind = TREEPROTO_HOST, .rank = -1, .host = (int)v,
		    .text = p + 1, .len = (size_t)(end - p - 1) };
		return u->len <= AGENTPROTO_PIECE ? COLL_OK : COLL_EPROTO;
	}
	if (treeproto_number(&p, end, nranks, &v) != COLL_OK || p == end || *p != ' ')
		return COLL_EPROTO;
	*u = (struct treeproto_up){ .rank = (int)v, .host = -1, .text = p + 1,
	    .len = (size_t)(end - p - 1) };
	if (u->len == 1 && (u->text[0] == 'f' || u->text[0] == 'l')) {
		u->kind = u->text[0] == 'f' ? TREEPROTO_FAILED : TREEPROTO_LOST;
		return COLL_OK;
	}
	{
		struct agentproto_msg m;

		/* Only what an agent says: 'k' goes down, never up. */
		if (agentproto_parse(u->text, u->len, &m) != COLL_OK || m.kind == AGENTPROTO_KILL)
			return COLL_EPROTO;
	}
	u->kind = TREEPROTO_RECORD;
	return COLL_OK;
}

/* The characters of a host name (hostlist.c's, less the range syntax). */
static int
treeproto_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '.' || c == '_' || c == ':';
}

int
treeproto_parse_host(const char *line, size_t len, int nranks, int nhosts, int *host,
    char *name, size_t namecap, int *rank_host)
{
	const char *p = line + 2, *end = line + len, *n;
	long h, a, b, last = -1;

	if (len < 2 || line[0] != 'h' || line[1] != ' ' ||
	    treeproto_number(&p, end, nhosts, &h) != COLL_OK || p == end || *p++ != ' ')
		return COLL_EPROTO;
	for (n = p; p < end && treeproto_name_char(*p); p++)
		;
	if (p == n || p == end || *p != ' ' || (size_t)(p - n) >= namecap)
		return COLL_EPROTO;
	snprintf(name, namecap, "%.*s", (int)(p - n), n);
	p++;
	do {
		if (treeproto_number(&p, end, nranks, &a) != COLL_OK)
			return COLL_EPROTO;
		b = a;
		if (p < end && *p == '-') {
			p++;
			if (treeproto_number(&p, end, nranks, &b) != COLL_OK)
				return COLL_EPROTO;
		}
		if (a <= last || b < a)
			return COLL_EPROTO;
		for (long r = a; r <= b; r++)
			if (rank_host[r] != -1)
				return COLL_EPROTO;
		for (long r = a; r <= b; r++)
			rank_host[r] = (int)h;
		last = b;
		if (p == end)
			break;
		if (*p++ != ',')
			return COLL_EPROTO;
	} while (1);
	*host = (int)h;
	return COLL_OK;
}

char *
treeproto_encode_host(int host, const char *name, const int *ranks, int n)
{
	/* Each rank adds at most a separator and 10 digits: ranges_fold never cuts it short. */
	size_t cap = 32 + strlen(name) + (size_t)n * 12, len;
	char *out = xmalloc(cap);

	len = (size_t)snprintf(out, cap, "h %d %s ", host, name);
	ranges_fold(ranks, n, out + len, cap - len);
	return out;
}
