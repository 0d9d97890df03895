/*
 * One SSH host of a launch, driven without blocking: TCP connect, handshake,
 * host key check against OpenSSH's known_hosts (hashed entries too), then
 * authentication through ssh-agent and then key files. sshhost_step() moves
 * it as far as it can; the caller polls sshhost_events() on host->fd.
 */
#ifndef COLL_SSHHOST_H
#define COLL_SSHHOST_H

#include <libssh2.h>
#include <stdint.h>

#include "net.h"
#include "sshconf.h"

enum sshhost_state {
	SH_IDLE,		/* not started (fanout) */
	SH_CONNECT,
	SH_HANDSHAKE,
	SH_AUTH_LIST,
	SH_AUTH_AGENT,
	SH_AUTH_KEY,
	SH_READY,		/* authenticated: channels can open */
	SH_CLOSING,
	SH_DONE,
	SH_FAILED,
};

struct sshhost {
	const char *name;		/* as the user wrote it */
	struct sshconf conf;
	struct net_addr addr;
	struct net_addr local;		/* our end of the connection: the rendezvous address */
	int fd;
	int state;
	uint64_t deadline;		/* of connect and authentication */
	int timeout_ms;
	int accept_new;
	LIBSSH2_SESSION *s;
	LIBSSH2_AGENT *agent;
	struct libssh2_agent_publickey *agent_id;
	int key;			/* next IdentityFile to try */
	int tried_keys;
	char why[2048];			/* reason of SH_FAILED */
	char note[1024];		/* something the user should know (accept-new, RSA) */
};

/* Read the configuration, resolve the address; SH_FAILED with why on error. */
void sshhost_init(struct sshhost *h, const char *name, const char *config, int accept_new);
/* Start connecting, with a deadline for everything up to authentication. */
void sshhost_start(struct sshhost *h, int timeout_ms);
/* Advance; returns 1 if something moved. */
int sshhost_step(struct sshhost *h);
/* poll(2) events to wait for on h->fd. */
short sshhost_events(const struct sshhost *h);
/* Fail now (timeout, abort) unless already done. */
void sshhost_fail(struct sshhost *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Make teardown calls block, for at most a second each. */
void sshhost_block(struct sshhost *h);
/* Disconnect and free the session (blocking briefly). */
void sshhost_close(struct sshhost *h);
/* The last libssh2 error as text. */
const char *sshhost_error(struct sshhost *h);

#endif
