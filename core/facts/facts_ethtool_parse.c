/*
 * `ethtool -S` text and the statistics coll keeps of it (facts_ethtool.h).
 * The text is a fixture's or a user's: a line longer than a driver's name
 * and number can make, a byte no name holds or a number that does not fit
 * refuses the whole text, so that nothing half-read becomes a fact.
 */
#include <stdio.h>
#include <string.h>

#include "facts_ethtool.h"

/* Pause frames (802.3x and PFC, xoff in Intel's words) and RoCE's congestion marks. */
int
facts_ethtool_wanted(const char *name, size_t len)
{
	static const char *const words[] = { "pause", "pfc", "xoff", "ecn", "cnp" };
	char low[ETHT_NAME_MAX + 1];

	if (len == 0 || len > ETHT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
	low[len] = '\0';
	for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
		if (strstr(low, words[w]) != NULL)
			return 1;
	return 0;
}

/* Decimal digits only, within 64 bits; 0, or -1. */
static int
facts_ethtool_number(const char *p, size_t len, unsigned long long *v)
{
	*v = 0;
	if (len == 0 || len > 20)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(p[i] - '0');

		if (d > 9 || *v > (~0ULL - d) / 10)
			return -1;
		*v = *v * 10 + d;
	}
	return 0;
}

/* One line, blanks cut at both ends: 1 a statistic (into *s), 0 a header, -1 neither. */
static int
facts_ethtool_line(const char *p, size_t len, struct etht_stat *s)
{
	const char *sep = NULL;
	size_t nlen;

	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e)
			return -1;
	if (p[len - 1] == ':')
		return 0;
	for (size_t i = len; i-- > 1;)
		if (p[i - 1] == ':' && p[i] == ' ') {
			sep = p + i - 1;
			break;
		}
	if (sep == NULL)
		return -1;
	for (nlen = (size_t)(sep - p); nlen > 0 && p[nlen - 1] == ' '; nlen--)
		;
	sep += 2;
	while (sep < p + len && *sep == ' ')
		sep++;
	if (nlen == 0 || nlen > ETHT_NAME_MAX ||
	    facts_ethtool_number(sep, (size_t)(p + len - sep), &s->v) != 0)
		return -1;
	memcpy(s->name, p, nlen);
	s->name[nlen] = '\0';
	return 1;
}

int
facts_ethtool_parse(const char *text, size_t len, struct etht_stat *out, int max, int *line)
{
	const char *p = text, *end = text + len;
	int n = 0;

	*line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl != NULL ? nl : end;
		struct etht_stat s;
		int rc;

		++*line;
		if (e - p > ETHT_LINE_MAX)
			return -1;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (e > p && (rc = facts_ethtool_line(p, (size_t)(e - p), &s)) < 0)
			return -1;
		if (e > p && rc == 1 && n < max && facts_ethtool_wanted(s.name, strlen(s.name)))
			out[n++] = s;
		p = nl != NULL ? nl + 1 : end;
	}
	*line = 0;
	return n;
}

void
facts_ethtool_keyname(const char *name, char *out, size_t len)
{
	size_t i;

	for (i = 0; name[i] != '\0' && i + 1 < len; i++) {
		char c = name[i];

		out[i] = (char)((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' ? c : '_');
	}
	if (len > 0)
		out[i] = '\0';
}

void
facts_ethtool_add(struct facts *f, const char *ifname, const struct etht_stat *s, int n)
{
	char key[FACTS_KEY_MAX], name[ETHT_NAME_MAX + 1];

	for (int i = 0; i < n && i < ETHT_KEEP; i++) {
		facts_ethtool_keyname(s[i].name, name, sizeof name);
		if ((size_t)snprintf(key, sizeof key, "ctr.eth.%s.%s", ifname, name) < sizeof key)
			facts_add(f, key, "%llu", s[i].v);
	}
}
