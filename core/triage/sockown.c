/*
 * Whose is a listening TCP socket: the kernel's table names each socket's
 * address, port, state and inode; a process holds the socket if one of its
 * fds links to "socket:[INODE]". The table is read line by line (a busy
 * host has many sockets), and nothing here trusts what a process says of
 * itself. Who holds a foreign listener is looked for within a bound: past
 * it the table's uid names the socket's user.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sockown.h"
#include "user.h"

#define SOCKOWN_LISTEN 0x0A	/* TCP_LISTEN in the table's st column */
#define SOCKOWN_FDS_MAX 200000	/* fds looked at for a foreign listener's holder */

/* What is left to the search for a holder. */
struct sockown_search {
	struct timespec until;
	long fds;
};

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

/* Has the search run out: past its deadline, or through its share of fds? */
static int
sockown_spent(struct sockown_search *q)
{
	struct timespec now;

	if (q == NULL)
		return 0;
	if (q->fds-- <= 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > q->until.tv_sec ||
	    (now.tv_sec == q->until.tv_sec && now.tv_nsec >= q->until.tv_nsec);
}

/* 1 if pid holds the socket, 0 not, -1 the search q ran out first (q NULL: no bound). */
static int
sockown_held_by(pid_t pid, const char *want, struct sockown_search *q)
{
	char dir[64], link[64];
	struct dirent *de;
	int dfd, held = 0;
	DIR *d;

	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	if ((d = opendir(dir)) == NULL)
		return 0;
	dfd = dirfd(d);
	while (!held && (de = readdir(d)) != NULL) {
		ssize_t n;

		if (sockown_spent(q)) {
			held = -1;
			break;
		}
		if ((n = readlinkat(dfd, de->d_name, link, sizeof link - 1)) > 0) {
			link[n] = '\0';
			held = strcmp(link, want) == 0;
		}
	}
	closedir(d);
	return held;
}

int
sockown_held(pid_t pid, unsigned long inode)
{
	char want[48];

	snprintf(want, sizeof want, "socket:[%lu]", inode);
	return sockown_held_by(pid, want, NULL) == 1;
}

/*
 * Only a message needs the holder, and anyone can run many processes with
 * many fds each: the search of /proc is bounded, so that no user slows
 * every collstack on the host.
 */
pid_t
sockown_holder(unsigned long inode, int ms)
{
	struct sockown_search q = { .fds = SOCKOWN_FDS_MAX };
	char want[48];
	struct dirent *de;
	pid_t found = 0;
	DIR *d;
	int r;

	if (ms <= 0)
		return -1;
	if ((d = opendir("/proc")) == NULL)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &q.until);
	q.until.tv_sec += ms / 1000;
	q.until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (q.until.tv_nsec >= 1000000000L) {
		q.until.tv_sec++;
		q.until.tv_nsec -= 1000000000L;
	}
	snprintf(want, sizeof want, "socket:[%lu]", inode);
	while (found == 0 && (de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if ((r = sockown_held_by((pid_t)atoi(de->d_name), want, &q)) != 0)
			found = r > 0 ? (pid_t)atoi(de->d_name) : -1;
	}
	closedir(d);
	return found;
}

void
sockown_whose(const struct sockown_listener *l, int ms, char *why, size_t whylen)
{
	pid_t pid = sockown_holder(l->inode, ms);
	char dir[32], name[64];
	struct stat sb;
	uid_t uid = l->uid;

	snprintf(dir, sizeof dir, "/proc/%d", (int)pid);
	if (pid > 0 && stat(dir, &sb) == 0)
		uid = sb.st_uid;
	user_name(uid, name, sizeof name);
	if (pid > 0)
		snprintf(why, whylen, "belongs to pid %d of user %s, not to the job", (int)pid,
		    name);
	else if (pid < 0)
		snprintf(why, whylen, "belongs to user %s (its process was not looked for), not "
		    "to the job", name);
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
			sockown_whose(&l[i], SOCKOWN_SEARCH_MS, why, whylen);
			return -1;
		}
	}
	return 1;
}
