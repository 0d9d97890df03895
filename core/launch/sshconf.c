/* A small ssh_config(5) reader: Host blocks and the handful of keywords a launcher uses. */
#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "err.h"
#include "regfile.h"
#include "sshconf.h"
#include "xmalloc.h"

int
sshconf_match(const char *p, const char *h)
{
	const char *star = NULL, *resume = NULL;

	/*
	 * Glob with backtracking to the last '*' only: linear in practice, where
	 * recursion on every '*' is exponential on patterns like "****a".
	 */
	while (*h != '\0') {
		if (*p == '*') {
			star = ++p;
			resume = h;
		} else if (*p == '?' || tolower((unsigned char)*p) == tolower((unsigned char)*h)) {
			p++;
			h++;
		} else if (star != NULL) {
			p = star;
			h = ++resume;
		} else {
			return 0;
		}
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

/* A Host line matches when some pattern matches and no negated one does. */
static int
sshconf_host_line(char *pats, const char *host)
{
	int hit = 0;

	for (char *save = NULL, *w = strtok_r(pats, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (*w == '!' && sshconf_match(w + 1, host))
			return 0;
		if (*w != '!' && sshconf_match(w, host))
			hit = 1;
	}
	return hit;
}

static const char *
sshconf_home(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h != NULL && *h != '\0')
		return h;
	pw = getpwuid(getuid());
	return pw ? pw->pw_dir : "/";
}

/* Expand a leading ~ and the tokens %h (host), %d (home), %u (user), %% . */
static void
sshconf_expand(char *out, size_t len, const char *in, const char *host)
{
	size_t o = 0;

	if (in[0] == '~' && (in[1] == '/' || in[1] == '\0')) {
		o = (size_t)snprintf(out, len, "%s", sshconf_home());
		if (o >= len)
			o = len - 1;
		in++;
	}
	for (; *in && o + 1 < len; in++) {
		const char *rep = NULL;

		if (*in == '%' && in[1]) {
			in++;
			rep = *in == 'h' ? host : *in == 'd' ? sshconf_home() : *in == 'u' ?
			    (getenv("USER") ? getenv("USER") : "") : *in == '%' ? "%" : "";
		}
		if (rep != NULL)
			o += (size_t)snprintf(out + o, len - o, "%s", rep);
		else
			out[o++] = *in;
		if (o >= len)
			o = len - 1;
	}
	out[o] = '\0';
}

static void
sshconf_set(struct sshconf *sc, const char *key, const char *val, const char *host)
{
	if (strcasecmp(key, "User") == 0 && sc->user[0] == '\0')
		snprintf(sc->user, sizeof sc->user, "%s", val);
	else if (strcasecmp(key, "HostName") == 0 && sc->hostname[0] == '\0')
		sshconf_expand(sc->hostname, sizeof sc->hostname, val, host);
	else if (strcasecmp(key, "Port") == 0 && sc->port == 0)
		sc->port = atoi(val) > 0 && atoi(val) < 65536 ? atoi(val) : 0;
	else if (strcasecmp(key, "IdentityFile") == 0 && sc->nids < SSHCONF_MAX_IDS)
		sshconf_expand(sc->ids[sc->nids++], sizeof sc->ids[0], val, host);
	else if (strcasecmp(key, "UserKnownHostsFile") == 0 && sc->known_hosts[0] == '\0')
		sshconf_expand(sc->known_hosts, sizeof sc->known_hosts, val, host);
	else if (strcasecmp(key, "GlobalKnownHostsFile") == 0 && sc->global_known_hosts[0] == '\0')
		sshconf_expand(sc->global_known_hosts, sizeof sc->global_known_hosts, val, host);
	else if (strcasecmp(key, "ConnectTimeout") == 0 && sc->connect_timeout == 0)
		sc->connect_timeout = atoi(val) > 0 ? atoi(val) : 0;
	else if (strcasecmp(key, "StrictHostKeyChecking") == 0 && sc->strict == SSH_STRICT_UNSET)
		sc->strict = strcasecmp(val, "no") == 0 || strcasecmp(val, "off") == 0 ?
		    SSH_STRICT_NO : strcasecmp(val, "accept-new") == 0 ? SSH_STRICT_ACCEPT_NEW :
		    SSH_STRICT_YES;
}

/* Split "Keyword value", "Keyword=value" or "Keyword = value"; strips quotes and comments. */
static int
sshconf_split(char *line, char **key, char **val)
{
	char *p = line, *end;

	while (isspace((unsigned char)*p))
		p++;
	if (*p == '\0' || *p == '#')
		return 0;
	*key = p;
	while (*p && !isspace((unsigned char)*p) && *p != '=')
		p++;
	if (*p)
		*p++ = '\0';
	while (isspace((unsigned char)*p) || *p == '=')
		p++;
	end = p + strlen(p);
	while (end > p && isspace((unsigned char)end[-1]))
		*--end = '\0';
	if (*p == '"' && end > p + 1 && end[-1] == '"') {
		end[-1] = '\0';
		p++;
	}
	*val = p;
	return **key != '\0';
}

void
sshconf_apply_text(struct sshconf *sc, const char *host, const char *text)
{
	char *copy = xstrdup(text), *save = NULL, *key, *val;
	int active = 1;		/* lines before the first Host apply to every host */

	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!sshconf_split(line, &key, &val))
			continue;
		if (strcasecmp(key, "Host") == 0) {
			active = sshconf_host_line(val, host);
		} else if (strcasecmp(key, "Match") == 0 || strcasecmp(key, "Include") == 0) {
			snprintf(sc->note, sizeof sc->note, "%s is not supported: those lines were "
			    "skipped", key);
			if (strcasecmp(key, "Match") == 0)
				active = 0;
		} else if (active) {
			sshconf_set(sc, key, val, host);
		}
	}
	free(copy);
}

int
sshconf_apply_file(struct sshconf *sc, const char *host, const char *path)
{
	char *text;
	size_t n;
	int r;

	/* A FIFO (another user's ~/.ssh/config cannot be, but a path given can) never blocks us. */
	if ((r = regfile_read(path, (1 << 20) - 1, -1, &text, &n, NULL)) == COLL_ETOOBIG) {
		errno = EFBIG;
		return r;
	}
	if (r != COLL_OK) {
		if (r == COLL_EUNSAFE)
			errno = EINVAL;
		return r == COLL_ESYS && errno == ENOENT ? COLL_ENOTFOUND : r;
	}
	sshconf_apply_text(sc, host, text);
	free(text);
	return COLL_OK;
}

void
sshconf_defaults(struct sshconf *sc, const char *host)
{
	static const char *ids[] = { "~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa" };
	struct passwd *pw = getpwuid(getuid());

	if (sc->user[0] == '\0')
		snprintf(sc->user, sizeof sc->user, "%s", pw ? pw->pw_name : "root");
	if (sc->hostname[0] == '\0')
		snprintf(sc->hostname, sizeof sc->hostname, "%s", host);
	if (sc->port == 0)
		sc->port = 22;
	for (int i = 0; sc->nids == 0 && i < 3; i++)
		sshconf_expand(sc->ids[i], sizeof sc->ids[0], ids[i], host);
	if (sc->nids == 0)
		sc->nids = 3;
	if (sc->known_hosts[0] == '\0')
		sshconf_expand(sc->known_hosts, sizeof sc->known_hosts, "~/.ssh/known_hosts", host);
	if (sc->global_known_hosts[0] == '\0')
		snprintf(sc->global_known_hosts, sizeof sc->global_known_hosts,
		    "/etc/ssh/ssh_known_hosts");
	if (sc->strict == SSH_STRICT_UNSET)
		sc->strict = SSH_STRICT_YES;
}
