/*
 * Whose is a listening TCP socket: the kernel's table names each socket's
 * address, port, state and inode; a process holds the socket if one of its
 * fds links to "socket:[INODE]". The table is read line by line (a busy
 * host has many sockets), and nothing here trusts what a process says of
 * itself.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sockown.h"

#define SOCKOWN_LISTEN 0x0A	/* TCP_LISTEN in the table's st column */

/* 8 hex digits per 32-bit word, each the word's value as it sits in memory. */
static int
sockown_hex(const char *hex, unsigned char *out, size_t words)
{
	char w[9];

	if (strlen(hex) != words * 8)
		return -1;
	for (size_t i = 0; i < words; i++) {
		uint32_t v;

		memcpy(w, hex + i * 8, 8);
		w[8] = '\0';
		v = (uint32_t)strtoul(w, NULL, 16);
		memcpy(out + i * 4, &v, 4);
	}
	return 0;
}

/* The rank of a listener bound to addr (a v4 one, or v6 from tcp6) for a connection to sa; -1 none. */
static int
sockown_rank(const unsigned char *addr, int v6, const struct sockaddr *sa)
{
	static const unsigned char any[16], mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (sa->sa_family == AF_INET) {
		const unsigned char *to = (const unsigned char *)
		    &((const struct sockaddr_in *)(const void *)sa)->sin_addr;

		if (!v6)
			return memcmp(addr, to, 4) == 0 ? 0 : memcmp(addr, any, 4) == 0 ? 2 : -1;
		if (memcmp(addr, mapped, 12) == 0 && memcmp(addr + 12, to, 4) == 0)
			return 1;
		return memcmp(addr, any, 16) == 0 ? 3 : -1;
	}
	if (sa->sa_family != AF_INET6 || !v6)
		return -1;
	if (memcmp(addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16) == 0)
		return 0;
	return memcmp(addr, any, 16) == 0 ? 1 : -1;
}

static unsigned
sockown_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
}

/* One line of the table: 1 if it is a listener that could take a connection to sa, into l. */
static int
sockown_line(const char *line, int v6, const struct sockaddr *sa, struct sockown_listener *l)
{
	char local[40], remote[40];
	unsigned char addr[16];
	unsigned lport, rport, st, uid;
	unsigned long inode;

	if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x %*s %*s %*s %u %*d %lu",
	    local, &lport, remote, &rport, &st, &uid, &inode) != 7)
		return 0;
	if (st != SOCKOWN_LISTEN || lport != sockown_port(sa) ||
	    sockown_hex(local, addr, v6 ? 4 : 1) != 0)
		return 0;
	l->rank = sockown_rank(addr, v6, sa);
	l->inode = inode;
	l->uid = (uid_t)uid;
	return l->rank >= 0;
}

int
sockown_parse(const char *text, int v6, const struct sockaddr *sa,
    struct sockown_listener *out, int n, int max)
{
	while (text != NULL && *text != '\0' && n < max) {
		const char *nl = strchr(text, '\n');
		char line[256];

		snprintf(line, sizeof line, "%.*s", (int)(nl ? nl - text : (long)strlen(text)),
		    text);
		if (sockown_line(line, v6, sa, &out[n]))
			n++;
		text = nl ? nl + 1 : NULL;
	}
	return n;
}

/* The listeners of this host's table (the network namespace we connect from). */
static int
sockown_read(const char *path, int v6, const struct sockaddr *sa,
    struct sockown_listener *out, int n, int max)
{
	char line[256];
	FILE *f = fopen(path, "re");

	if (f == NULL)
		return n;
	while (n < max && fgets(line, sizeof line, f) != NULL)
		if (sockown_line(line, v6, sa, &out[n]))
			n++;
	fclose(f);
	return n;
}

int
sockown_held(pid_t pid, unsigned long inode)
{
	char dir[64], want[48], link[64];
	struct dirent *de;
	int dfd, held = 0;
	DIR *d;

	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	snprintf(want, sizeof want, "socket:[%lu]", inode);
	if ((d = opendir(dir)) == NULL)
		return 0;
	dfd = dirfd(d);
	while (!held && (de = readdir(d)) != NULL) {
		ssize_t n = readlinkat(dfd, de->d_name, link, sizeof link - 1);

		if (n > 0) {
			link[n] = '\0';
			held = strcmp(link, want) == 0;
		}
	}
	closedir(d);
	return held;
}

pid_t
sockown_holder(unsigned long inode)
{
	struct dirent *de;
	pid_t found = 0;
	DIR *d = opendir("/proc");

	if (d == NULL)
		return 0;
	while (found == 0 && (de = readdir(d)) != NULL)
		if (isdigit((unsigned char)de->d_name[0]) &&
		    sockown_held((pid_t)atoi(de->d_name), inode))
			found = (pid_t)atoi(de->d_name);
	closedir(d);
	return found;
}

/* "pid P of user U" or "user U" (the table's uid) for the foreign listener l. */
static void
sockown_whose(const struct sockown_listener *l, char *why, size_t whylen)
{
	pid_t pid = sockown_holder(l->inode);
	char dir[32], name[64];
	struct stat sb;
	uid_t uid = l->uid;
	struct passwd *pw;

	snprintf(dir, sizeof dir, "/proc/%d", (int)pid);
	if (pid > 0 && stat(dir, &sb) == 0)
		uid = sb.st_uid;
	if ((pw = getpwuid(uid)) != NULL)
		snprintf(name, sizeof name, "%s", pw->pw_name);
	else
		snprintf(name, sizeof name, "%u", (unsigned)uid);
	if (pid > 0)
		snprintf(why, whylen, "belongs to pid %d of user %s, not to the job", (int)pid,
		    name);
	else
		snprintf(why, whylen, "belongs to no process of the job (its socket was made by user %s)",
		    name);
}

int
sockown_check(const struct sockaddr *sa, const pid_t *pids, int n, char *why, size_t whylen)
{
	struct sockown_listener l[SOCKOWN_MAX];
	int nl = 0, best = 4;

	nl = sockown_read("/proc/net/tcp", 0, sa, l, nl, SOCKOWN_MAX);
	nl = sockown_read("/proc/net/tcp6", 1, sa, l, nl, SOCKOWN_MAX);
	for (int i = 0; i < nl; i++)
		best = l[i].rank < best ? l[i].rank : best;
	if (nl == 0)
		return 0;
	/* Every listener of the best rank (SO_REUSEPORT shares a port) must be the job's. */
	for (int i = 0; i < nl; i++) {
		int held = 0;

		if (l[i].rank != best)
			continue;
		for (int k = 0; k < n && !held; k++)
			held = sockown_held(pids[k], l[i].inode);
		if (!held) {
			sockown_whose(&l[i], why, whylen);
			return -1;
		}
	}
	return 1;
}
