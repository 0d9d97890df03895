/*
 * The control connection: rank 0 connects to the front end at the address of
 * the job's root (COLL_UNIQUE_ID, which every rank is handed) and the port the
 * front end put on the workers' command line, and both prove they hold the
 * job's secret with the core's handshake before a byte is read. The front
 * end then sends text lines: "interval MS" and "quit". Rank 0 reads them
 * without waiting, once an interval, and hands them on in the broadcast that
 * ends each interval.
 *
 * The secret never travels on a command line (it would show in ps): only the
 * port does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "err.h"
#include "net.h"
#include "top.h"
#include "uid.h"
#include "wire.h"

#define CTL_AUTH_MS 3000
#define CTL_ACCEPT_MS 1000	/* the screen's thread waits this long at most on a stranger */

int
ctl_listen(int remote, int *fd, int *port, char *err, size_t len)
{
	struct net_addr a;
	int r;

	if (remote)
		net_addr_any(&a);
	else
		net_addr_parse(&a, "127.0.0.1", 0);
	if ((r = net_listen(&a, 4, fd)) != COLL_OK) {
		snprintf(err, len, "cannot listen for the workers' control connection: %s",
		    strerror(errno));
		return -1;
	}
	*port = net_addr_port(&a);
	return 0;
}

int
ctl_accept(int lfd, const char *uidstr, char *err, size_t len)
{
	struct coll_uid uid;
	uint8_t role = 0;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0) {
		snprintf(err, len, "accept: %s", strerror(errno));
		return -1;
	}
	if (uid_parse(&uid, uidstr) != COLL_OK ||
	    auth_accept(fd, &uid, &role, clock_now_ms() + CTL_ACCEPT_MS, -1, err, len) != COLL_OK) {
		close(fd);
		return -1;
	}
	if (role != WIRE_ROLE_CONTROL) {
		snprintf(err, len, "a control connection asked for role %u", role);
		close(fd);
		return -1;
	}
	return fd;
}

int
ctl_send(int fd, const char *line)
{
	size_t n = strlen(line);

	return send(fd, line, n, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)n ? 0 : -1;
}

int
ctl_connect(int port, char *err, size_t len)
{
	const char *s = getenv("COLL_UNIQUE_ID");
	struct coll_uid uid;
	struct net_addr a;
	char *comma;
	char first[UID_STR_LEN];
	int fd = -1;

	if (s == NULL || port <= 0 || port > 65535) {
		snprintf(err, len, "no job id or control port");
		return -1;
	}
	/* Several ids (a scalable job): the front end is where the first one's root is. */
	snprintf(first, sizeof first, "%s", s);
	if ((comma = strchr(first, ',')) != NULL)
		*comma = '\0';
	if (uid_parse(&uid, first) != COLL_OK) {
		snprintf(err, len, "COLL_UNIQUE_ID is not a job id");
		return -1;
	}
	a = uid.root;
	net_addr_set_port(&a, (uint16_t)port);
	if (net_connect(&a, clock_now_ms() + CTL_AUTH_MS, -1, &fd) != COLL_OK) {
		snprintf(err, len, "cannot reach the front end's control port %d: %s", port,
		    strerror(errno));
		return -1;
	}
	if (auth_connect(fd, &uid, WIRE_ROLE_CONTROL, clock_now_ms() + CTL_AUTH_MS, -1, err,
	    len) != COLL_OK) {
		close(fd);
		return -1;
	}
	net_set_nonblock(fd);
	return fd;
}

/* One line from the front end into cmd; unknown lines are ignored (a newer front end). */
static void
ctl_line(const char *s, struct ctl_cmd *cmd)
{
	long v;
	char *end;

	if (strcmp(s, "quit") == 0) {
		cmd->quit = 1;
	} else if (strncmp(s, "interval ", 9) == 0) {
		errno = 0;
		v = strtol(s + 9, &end, 10);
		if (errno == 0 && *end == '\0' && v >= 10 && v <= 3600000)
			cmd->interval_ms = (int32_t)v;
	}
}

int
ctl_poll(int fd, struct ctl_cmd *cmd)
{
	static char buf[512];
	static size_t have;
	ssize_t n;
	char *nl;

	for (;;) {
		if (have == sizeof buf - 1)
			have = 0;	/* a line this long is not ours: drop it */
		n = recv(fd, buf + have, sizeof buf - 1 - have, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return -1;
		if (n < 0)
			return 0;
		have += (size_t)n;
		buf[have] = '\0';
		while ((nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			ctl_line(buf, cmd);
			have -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have + 1);
		}
	}
}
