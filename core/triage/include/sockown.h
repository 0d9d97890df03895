/*
 * sockown.c: whose is a listening TCP socket. A local service (NCCL's RAS on
 * localhost:28028) speaks for a job only if the socket that would take our
 * connection is held by one of the job's processes: any user can bind a
 * free port on the loopback first. The socket is found in the kernel's
 * table (/proc/net/tcp, tcp6) by address and port, and its inode looked
 * for among the processes' fds (/proc/PID/fd -> "socket:[INODE]").
 */
#ifndef COLL_TRIAGE_SOCKOWN_H
#define COLL_TRIAGE_SOCKOWN_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define SOCKOWN_MAX 16		/* listeners that could take one connection */

struct sockown_listener {
	unsigned long inode;
	uid_t uid;		/* the socket's creator, as the table says */
	/*
	 * How the kernel ranks it for the connection, 0 first: bound to the
	 * very address (IPv4, then v4-mapped IPv6), then to the wildcard (IPv4,
	 * then IPv6). Only the listeners of the best rank present take it.
	 */
	int rank;
};

/*
 * The LISTEN sockets on sa's port in the table text (the format of
 * /proc/net/tcp, or of tcp6 when v6) that could take a connection to sa:
 * appended to out (n of max used), the new count returned.
 */
int sockown_parse(const char *text, int v6, const struct sockaddr *sa,
    struct sockown_listener *out, int n, int max);

/* Does pid hold the socket of this inode (among /proc/PID/fd)? */
int sockown_held(pid_t pid, unsigned long inode);

/* How long the holder of a foreign listener is looked for, for a message. */
#define SOCKOWN_SEARCH_MS 200

/*
 * A process that holds it, found under /proc within ms milliseconds (and a
 * cap on the fds looked at); 0 if none can be seen, -1 if the search was cut
 * short (at once when ms <= 0).
 */
pid_t sockown_holder(unsigned long inode, int ms);

/*
 * Why the foreign listener l is not the job's: "belongs to pid P of user U,
 * not to the job", or with the table's uid when no holder was found within
 * ms: "belongs to user U (its process was not looked for), ...".
 */
void sockown_whose(const struct sockown_listener *l, int ms, char *why, size_t whylen);

/*
 * Is the socket that would take a connection to sa held by one of pids?
 * 1 yes; 0 nothing listens there; -1 another's, with why ("belongs to pid P
 * of user U, not to the job", or "to no process of the job").
 */
int sockown_check(const struct sockaddr *sa, const pid_t *pids, int n, char *why,
    size_t whylen);

#endif
