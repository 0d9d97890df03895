/*
 * Per-host SSH session setup. Deliberate choices:
 * - Unknown or changed host keys are refused unless StrictHostKeyChecking is
 *   no (or accept-new, for unknown keys only); the error says how to fix it.
 * - Keys are tried agent first, then IdentityFile entries in order, as ssh
 *   does. RSA keys are tried but named in the error: Debian 12's libssh2 1.10
 *   signs only with ssh-rsa (SHA-1), which current servers refuse.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "msg.h"
#include "sshhost.h"

#define EAGAIN_SSH LIBSSH2_ERROR_EAGAIN

void
sshhost_fail(struct sshhost *h, const char *fmt, ...)
{
	va_list ap;

	if (h->state == SH_FAILED || h->state == SH_DONE)
		return;
	va_start(ap, fmt);
	vsnprintf(h->why, sizeof h->why, fmt, ap);
	va_end(ap);
	/* It names the HostName of an ssh_config (-F may be anyone's file) and what a server said. */
	msg_clean(h->why);
	h->state = SH_FAILED;
}

const char *
sshhost_error(struct sshhost *h)
{
	char *msg = NULL;

	if (h->s == NULL)
		return "no session";
	libssh2_session_last_error(h->s, &msg, NULL, 0);
	return msg ? msg : "unknown error";
}

static int
sshhost_resolve(struct sshhost *h)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char port[16];
	int r;

	snprintf(port, sizeof port, "%d", h->conf.port);
	r = getaddrinfo(h->conf.hostname, port, &hints, &res);
	if (r != 0 || res == NULL) {
		sshhost_fail(h, "cannot resolve '%s': %s", h->conf.hostname, gai_strerror(r));
		return -1;
	}
	memcpy(&h->addr.ss, res->ai_addr, res->ai_addrlen);
	h->addr.len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

void
sshhost_init(struct sshhost *h, const char *name, const char *config, int accept_new)
{
	char path[512];

	memset(h, 0, sizeof *h);
	h->name = name;
	h->fd = -1;
	h->state = SH_IDLE;
	h->accept_new = accept_new;
	if (config != NULL) {
		if (sshconf_apply_file(&h->conf, name, config) != COLL_OK)
			sshhost_fail(h, "cannot read ssh config '%s': %s", config, strerror(errno));
	} else {
		snprintf(path, sizeof path, "%s/.ssh/config", getenv("HOME") ? getenv("HOME") : "/");
		sshconf_apply_file(&h->conf, name, path);
	}
	sshconf_defaults(&h->conf, name);
	if (h->state != SH_FAILED)
		sshhost_resolve(h);
}

void
sshhost_start(struct sshhost *h, int timeout_ms)
{
	if (h->state != SH_IDLE)
		return;
	/* The command line wins, then ConnectTimeout, then 10 s. */
	if (timeout_ms <= 0)
		timeout_ms = h->conf.connect_timeout > 0 ? h->conf.connect_timeout * 1000 : 10000;
	h->timeout_ms = timeout_ms;
	h->deadline = clock_now_ms() + (uint64_t)timeout_ms;
	h->fd = socket(h->addr.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->fd == -1) {
		sshhost_fail(h, "cannot create a socket: %s", strerror(errno));
		return;
	}
	if (connect(h->fd, (struct sockaddr *)&h->addr.ss, h->addr.len) == -1 &&
	    errno != EINPROGRESS) {
		sshhost_fail(h, "cannot connect: %s", strerror(errno));
		return;
	}
	h->state = SH_CONNECT;
}

static void
sshhost_connected(struct sshhost *h)
{
	struct pollfd pfd = { h->fd, POLLOUT, 0 };
	int err = 0;
	socklen_t len = sizeof err;

	if (poll(&pfd, 1, 0) == 0)
		return;		/* still connecting */
	if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 || err != 0) {
		sshhost_fail(h, "cannot connect to port %d: %s", h->conf.port,
		    strerror(err ? err : errno));
		return;
	}
	net_tune(h->fd);
	net_local_addr(h->fd, &h->local);
	h->s = libssh2_session_init();
	if (h->s == NULL) {
		sshhost_fail(h, "cannot create an SSH session");
		return;
	}
	libssh2_session_set_blocking(h->s, 0);
	/* Notice a host that vanished: keepalives every 5 s while ranks run. */
	libssh2_keepalive_config(h->s, 1, 5);
	h->state = SH_HANDSHAKE;
}

static int
sshhost_keymask(int type)
{
	switch (type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA: return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
	case LIBSSH2_HOSTKEY_TYPE_DSS: return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
	case LIBSSH2_HOSTKEY_TYPE_ED25519: return LIBSSH2_KNOWNHOST_KEY_ED25519;
	default: return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
	}
}

/* Append the key as a hashed known_hosts line (accept-new). */
static int
sshhost_learn(struct sshhost *h, LIBSSH2_KNOWNHOSTS *kh, const char *key, size_t len, int mask)
{
	struct libssh2_knownhost *entry;
	char line[4096], host[300];
	size_t n = 0;
	int fd, ok;

	if (h->conf.port == 22)
		snprintf(host, sizeof host, "%s", h->conf.hostname);
	else
		snprintf(host, sizeof host, "[%s]:%d", h->conf.hostname, h->conf.port);
	if (libssh2_knownhost_addc(kh, host, NULL, key, len, NULL, 0, LIBSSH2_KNOWNHOST_TYPE_PLAIN |
	    LIBSSH2_KNOWNHOST_KEYENC_RAW | mask, &entry) != 0 ||
	    libssh2_knownhost_writeline(kh, entry, line, sizeof line, &n,
	    LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0)
		return -1;
	fd = open(h->conf.known_hosts, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd == -1)
		return -1;
	ok = write(fd, line, n) == (ssize_t)n;
	close(fd);
	return ok ? 0 : -1;
}

static void
sshhost_check_key(struct sshhost *h)
{
	LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(h->s);
	struct libssh2_knownhost *found = NULL;
	const char *key;
	size_t len = 0;
	int type = 0, mask, r;

	key = libssh2_session_hostkey(h->s, &len, &type);
	if (kh == NULL || key == NULL) {
		sshhost_fail(h, "cannot read the host key: %s", sshhost_error(h));
		goto out;
	}
	mask = sshhost_keymask(type);
	/* The user's file and the system's, as ssh reads them. */
	libssh2_knownhost_readfile(kh, h->conf.known_hosts, LIBSSH2_KNOWNHOST_FILE_OPENSSH);
	libssh2_knownhost_readfile(kh, h->conf.global_known_hosts, LIBSSH2_KNOWNHOST_FILE_OPENSSH);
	r = libssh2_knownhost_checkp(kh, h->conf.hostname, h->conf.port, key, len,
	    LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | mask, &found);
	if (r == LIBSSH2_KNOWNHOST_CHECK_MATCH || h->conf.strict == SSH_STRICT_NO)
		h->state = SH_AUTH_LIST;
	else if (r == LIBSSH2_KNOWNHOST_CHECK_MISMATCH)
		sshhost_fail(h, "HOST KEY CHANGED for %s in %s: someone may be intercepting, or the "
		    "host was reinstalled; if you trust it, run 'ssh-keygen -R %s' and connect again",
		    h->conf.hostname, h->conf.known_hosts, h->conf.hostname);
	else if (h->accept_new || h->conf.strict == SSH_STRICT_ACCEPT_NEW) {
		if (sshhost_learn(h, kh, key, len, mask) == 0)
			snprintf(h->note, sizeof h->note, "added the host key of %s to %s",
			    h->conf.hostname, h->conf.known_hosts);
		h->state = SH_AUTH_LIST;
	} else
		sshhost_fail(h, "host key of %s is not in %s: check it and add it (ssh-keyscan -H "
		    "%s >> %s), or pass --accept-new", h->conf.hostname, h->conf.known_hosts,
		    h->conf.hostname, h->conf.known_hosts);
out:
	if (kh != NULL)
		libssh2_knownhost_free(kh);
}

static void
sshhost_handshake(struct sshhost *h)
{
	int r = libssh2_session_handshake(h->s, h->fd);

	if (r == EAGAIN_SSH)
		return;
	if (r != 0) {
		sshhost_fail(h, "SSH handshake failed: %s", sshhost_error(h));
		return;
	}
	sshhost_check_key(h);
}

static void
sshhost_auth_list(struct sshhost *h)
{
	const char *u = h->conf.user;
	char *list = libssh2_userauth_list(h->s, u, (unsigned)strlen(u));

	if (list == NULL && libssh2_session_last_errno(h->s) == EAGAIN_SSH)
		return;
	if (list == NULL && libssh2_userauth_authenticated(h->s)) {
		h->state = SH_READY;
		return;
	}
	if (list == NULL || strstr(list, "publickey") == NULL) {
		sshhost_fail(h, "%s@%s offers no public key authentication (offers: %s)", u,
		    h->conf.hostname, list ? list : "nothing");
		return;
	}
	h->state = SH_AUTH_AGENT;
	if (getenv("SSH_AUTH_SOCK") == NULL || (h->agent = libssh2_agent_init(h->s)) == NULL ||
	    libssh2_agent_connect(h->agent) != 0 || libssh2_agent_list_identities(h->agent) != 0)
		h->state = SH_AUTH_KEY;
}

static void
sshhost_auth_agent(struct sshhost *h)
{
	int r;

	if (h->agent_id == NULL && libssh2_agent_get_identity(h->agent, &h->agent_id, NULL) != 0) {
		h->state = SH_AUTH_KEY;
		return;
	}
	for (;;) {
		r = libssh2_agent_userauth(h->agent, h->conf.user, h->agent_id);
		if (r == EAGAIN_SSH)
			return;
		h->tried_keys++;
		if (r == 0) {
			h->state = SH_READY;
			return;
		}
		if (libssh2_agent_get_identity(h->agent, &h->agent_id, h->agent_id) != 0) {
			h->state = SH_AUTH_KEY;
			return;
		}
	}
}

static void
sshhost_auth_key(struct sshhost *h)
{
	const char *u = h->conf.user;
	int r;

	for (; h->key < h->conf.nids; h->key++) {
		const char *path = h->conf.ids[h->key];

		if (access(path, R_OK) != 0)
			continue;
		r = libssh2_userauth_publickey_fromfile_ex(h->s, u, (unsigned)strlen(u), NULL, path,
		    NULL);
		if (r == EAGAIN_SSH)
			return;
		h->tried_keys++;
		if (r == 0) {
			h->state = SH_READY;
			return;
		}
		if (strstr(path, "rsa") != NULL)
			snprintf(h->note, sizeof h->note, "RSA key %s cannot work: Debian 12's libssh2 "
			    "signs only with SHA-1, which current servers refuse; use an ed25519 or "
			    "ecdsa key", path);
	}
	sshhost_fail(h, "authentication failed for %s@%s: tried ssh-agent and %d key(s)%s%s", u,
	    h->conf.hostname, h->tried_keys, h->note[0] ? "; " : "", h->note);
}

int
sshhost_step(struct sshhost *h)
{
	int before = h->state;

	switch (h->state) {
	case SH_CONNECT: sshhost_connected(h); break;
	case SH_HANDSHAKE: sshhost_handshake(h); break;
	case SH_AUTH_LIST: sshhost_auth_list(h); break;
	case SH_AUTH_AGENT: sshhost_auth_agent(h); break;
	case SH_AUTH_KEY: sshhost_auth_key(h); break;
	default: break;
	}
	/*
	 * As OpenSSH's ConnectTimeout, the limit is on each step (the TCP
	 * connect, the handshake, authentication), not on all three: a server
	 * that answers slowly because hundreds were started at once on busy
	 * machines is still making progress, and is waited for.
	 */
	if (h->state != before && (h->state == SH_HANDSHAKE || h->state == SH_AUTH_LIST))
		h->deadline = clock_now_ms() + (uint64_t)h->timeout_ms;
	/* Tried first: a reply that came in time but was read late (a busy loop) is not a timeout. */
	if (h->state == before && h->state < SH_READY && h->state > SH_IDLE &&
	    clock_now_ms() >= h->deadline) {
		sshhost_fail(h, "timed out after %d s %s", h->timeout_ms / 1000,
		    h->state == SH_CONNECT ? "connecting" : h->state == SH_HANDSHAKE ?
		    "in the SSH handshake" : "authenticating");
		return 1;
	}
	return h->state != before;
}

short
sshhost_events(const struct sshhost *h)
{
	int dir;

	if (h->state == SH_CONNECT)
		return POLLOUT;
	if (h->s == NULL)
		return 0;
	dir = libssh2_session_block_directions(h->s);
	return (short)(POLLIN | ((dir & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : 0));
}

void
sshhost_block(struct sshhost *h)
{
	/* Teardown calls return EAGAIN (and leak) when non-blocking: bound them instead. */
	if (h->s != NULL) {
		libssh2_session_set_timeout(h->s, 1000);
		libssh2_session_set_blocking(h->s, 1);
	}
}

void
sshhost_close(struct sshhost *h)
{
	sshhost_block(h);
	if (h->agent != NULL) {
		libssh2_agent_disconnect(h->agent);
		libssh2_agent_free(h->agent);
		h->agent = NULL;
	}
	if (h->s != NULL) {
		/* Best effort: a disconnect that would block is abandoned. */
		libssh2_session_disconnect(h->s, "collrun done");
		libssh2_session_free(h->s);
		h->s = NULL;
	}
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
}
