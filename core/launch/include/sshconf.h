/*
 * The part of OpenSSH's client configuration a launcher needs: for a host as
 * the user wrote it, the User, HostName (%h expanded), Port, IdentityFile
 * list, UserKnownHostsFile, GlobalKnownHostsFile, StrictHostKeyChecking and
 * ConnectTimeout of the
 * matching "Host" blocks. As in ssh_config(5), the first value obtained for
 * a keyword wins, patterns take * ? and !negation, "Keyword=value" works,
 * keywords are case-insensitive. Match and Include blocks are skipped (said
 * in the result's note); other keywords are ignored.
 */
#ifndef COLL_SSHCONF_H
#define COLL_SSHCONF_H

#include <stddef.h>

#define SSHCONF_MAX_IDS 8

enum sshconf_strict { SSH_STRICT_UNSET, SSH_STRICT_YES, SSH_STRICT_NO, SSH_STRICT_ACCEPT_NEW };

struct sshconf {
	char user[64];
	char hostname[256];
	int port;			/* 0: unset */
	int nids;
	char ids[SSHCONF_MAX_IDS][512];
	char known_hosts[512];
	char global_known_hosts[512];
	int strict;
	int connect_timeout;		/* seconds, 0: unset */
	char note[128];			/* what was skipped, for a warning */
};

/* Settings for host from the text of a config file (never fails: bad lines are skipped). */
void sshconf_apply_text(struct sshconf *sc, const char *host, const char *text);
/* The same from a file; a missing file is no error. */
int sshconf_apply_file(struct sshconf *sc, const char *host, const char *path);
/* Fill what is still unset with OpenSSH's defaults for the current user. */
void sshconf_defaults(struct sshconf *sc, const char *host);
/* Does host match one pattern (with * and ?)? */
int sshconf_match(const char *pattern, const char *host);

#endif
