/* Unique ids. The parser takes untrusted text (an environment variable) and is fuzzed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "err.h"
#include "hex.h"
#include "uid.h"
#include "xmalloc.h"

int
uid_random(void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = getrandom(p, len, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return COLL_ESYS;
		p += n;
		len -= (size_t)n;
	}
	return COLL_OK;
}

int
uid_generate(struct coll_uid *uid, const struct net_addr *root)
{
	memset(uid, 0, sizeof *uid);
	uid->version = UID_VERSION;
	uid->root = *root;
	if (uid_random(&uid->jobid, sizeof uid->jobid) != COLL_OK ||
	    uid_random(uid->secret, sizeof uid->secret) != COLL_OK)
		return COLL_ESYS;
	return COLL_OK;
}

void
uid_format(const struct coll_uid *uid, char *buf, size_t len)
{
	char secret[2 * UID_SECRET_LEN + 1], addr[NET_ADDRSTR_LEN];

	for (int i = 0; i < UID_SECRET_LEN; i++)
		snprintf(secret + 2 * i, 3, "%02x", uid->secret[i]);
	net_addr_format(&uid->root, addr, sizeof addr);
	snprintf(buf, len, "coll%d:%016" PRIx64 ":%s@%s", uid->version, uid->jobid, secret, addr);
}

/* Decode exactly 2*n hex digits from s into out; returns the end or NULL. */
static const char *
uid_hex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int b = hex_byte(s + 2 * i);

		if (b < 0)
			return NULL;
		out[i] = (uint8_t)b;
	}
	return s + 2 * n;
}

int
uid_addr_parse(struct net_addr *addr, const char *s)
{
	char host[64];
	const char *port, *end;
	unsigned long p;
	size_t hlen;

	if (*s == '[') {
		end = strchr(s, ']');
		if (end == NULL || end[1] != ':')
			return COLL_EUID;
		s++;
		hlen = (size_t)(end - s);
		port = end + 2;
	} else {
		end = strrchr(s, ':');
		if (end == NULL)
			return COLL_EUID;
		hlen = (size_t)(end - s);
		port = end + 1;
	}
	if (hlen == 0 || hlen >= sizeof host || *port < '0' || *port > '9')
		return COLL_EUID;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	errno = 0;
	p = strtoul(port, (char **)&end, 10);
	if (errno != 0 || *end != '\0' || p == 0 || p > 65535)
		return COLL_EUID;
	if (net_addr_parse(addr, host, (uint16_t)p) != COLL_OK)
		return COLL_EUID;
	return COLL_OK;
}

int
uid_parse(struct coll_uid *uid, const char *s)
{
	uint8_t job[8];
	char *end;
	long ver;

	memset(uid, 0, sizeof *uid);
	if (strncmp(s, "coll", 4) != 0 || s[4] < '0' || s[4] > '9')
		return COLL_EUID;
	errno = 0;
	ver = strtol(s + 4, &end, 10);
	if (errno != 0 || *end != ':')
		return COLL_EUID;
	if (ver != UID_VERSION)
		return COLL_EVERSION;
	uid->version = (int)ver;
	s = uid_hex(end + 1, job, sizeof job);
	if (s == NULL || *s != ':')
		return COLL_EUID;
	for (int i = 0; i < 8; i++)
		uid->jobid = uid->jobid << 8 | job[i];
	s = uid_hex(s + 1, uid->secret, UID_SECRET_LEN);
	if (s == NULL || *s != '@')
		return COLL_EUID;
	return uid_addr_parse(&uid->root, s + 1);
}

int
uid_parse_list(const char *s, int max, struct coll_uid **out, int *n)
{
	struct coll_uid *v;
	const char *p = s, *comma;
	char one[UID_STR_LEN];
	int k = 1, r = COLL_OK;
	size_t len;

	*out = NULL;
	*n = 0;
	for (const char *q = s; *q != '\0'; q++)
		k += *q == ',';
	if (k > max)
		return COLL_EINVAL;
	v = xcalloc((size_t)k, sizeof *v);
	for (int i = 0; i < k && r == COLL_OK; i++) {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (len >= sizeof one) {
			r = COLL_EUID;
			break;
		}
		memcpy(one, p, len);
		one[len] = '\0';
		r = uid_parse(&v[i], one);
		p = comma != NULL ? comma + 1 : p + len;
	}
	if (r != COLL_OK) {
		free(v);
		return r;
	}
	*out = v;
	*n = k;
	return COLL_OK;
}
