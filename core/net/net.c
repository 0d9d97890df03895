/* Socket helpers. Every socket the core owns is non-blocking and CLOEXEC. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "io.h"
#include "net.h"

int
net_set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags == -1 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1)
		return COLL_ESYS;
	return COLL_OK;
}

int
net_addr_parse(struct net_addr *addr, const char *host, uint16_t port)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)&addr->ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&addr->ss;

	memset(addr, 0, sizeof *addr);
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		addr->len = sizeof *in4;
		return COLL_OK;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		addr->len = sizeof *in6;
		return COLL_OK;
	}
	return COLL_EINVAL;
}

uint16_t
net_addr_port(const struct net_addr *addr)
{
	if (addr->ss.ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)&addr->ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)&addr->ss)->sin_port);
}

void
net_addr_set_port(struct net_addr *addr, uint16_t port)
{
	if (addr->ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&addr->ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)&addr->ss)->sin_port = htons(port);
}

int
net_addr_is_loopback(const struct net_addr *addr)
{
	if (addr->ss.ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&addr->ss)->sin6_addr);
	return (ntohl(((const struct sockaddr_in *)&addr->ss)->sin_addr.s_addr) >> 24) == 127;
}

int
net_addr_is_any(const struct net_addr *addr)
{
	if (addr->ss.ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)&addr->ss)->sin6_addr);
	return ((const struct sockaddr_in *)&addr->ss)->sin_addr.s_addr == htonl(INADDR_ANY);
}

void
net_addr_host(const struct net_addr *addr, char *buf, size_t len)
{
	const void *src = &((const struct sockaddr_in *)&addr->ss)->sin_addr;

	if (addr->ss.ss_family == AF_INET6)
		src = &((const struct sockaddr_in6 *)&addr->ss)->sin6_addr;
	if (inet_ntop(addr->ss.ss_family, src, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

void
net_addr_format(const struct net_addr *addr, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	net_addr_host(addr, host, sizeof host);
	if (addr->ss.ss_family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", host, net_addr_port(addr));
	else
		snprintf(buf, len, "%s:%u", host, net_addr_port(addr));
}

void
net_addr_any(struct net_addr *addr)
{
	int fd;

	if (net_addr_parse(addr, "::", 0) == COLL_OK && net_listen(addr, 1, &fd) == COLL_OK)
		close(fd);
	else
		net_addr_parse(addr, "0.0.0.0", 0);
	net_addr_set_port(addr, 0);
}

int
net_listen(struct net_addr *addr, int backlog, int *fd_out)
{
	int fd, one = 1;

	fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1)
		return COLL_ESYS;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (addr->ss.ss_family == AF_INET6) {
		int zero = 0;	/* "::" takes IPv4 too, as v4-mapped addresses */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
	}
	if (bind(fd, (struct sockaddr *)&addr->ss, addr->len) == -1 ||
	    listen(fd, backlog) == -1 ||
	    getsockname(fd, (struct sockaddr *)&addr->ss, &addr->len) == -1) {
		int e = errno;
		close(fd);
		errno = e;
		return COLL_ESYS;
	}
	*fd_out = fd;
	return COLL_OK;
}

void
net_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
}

static int
net_connect_wait(int fd, uint64_t deadline_ms, int abort_fd)
{
	int err = 0, r;
	socklen_t elen = sizeof err;

	if ((r = io_wait(fd, POLLOUT, deadline_ms, abort_fd)) != COLL_OK)
		return r;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == -1)
		return COLL_ESYS;
	if (err != 0) {
		errno = err;
		return COLL_ESYS;
	}
	return COLL_OK;
}

int
net_connect(const struct net_addr *addr, uint64_t deadline_ms, int abort_fd, int *fd_out)
{
	int fd, r;

	fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1)
		return COLL_ESYS;
	if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) == 0)
		r = COLL_OK;
	else if (errno == EINPROGRESS)
		r = net_connect_wait(fd, deadline_ms, abort_fd);
	else
		r = COLL_ESYS;
	if (r != COLL_OK) {
		int e = errno;
		close(fd);
		errno = e;
		return r;
	}
	net_tune(fd);
	*fd_out = fd;
	return COLL_OK;
}

int
net_local_addr(int fd, struct net_addr *addr)
{
	addr->len = sizeof addr->ss;
	if (getsockname(fd, (struct sockaddr *)&addr->ss, &addr->len) == -1)
		return COLL_ESYS;
	return COLL_OK;
}

/*
 * Both ends on this host: a loopback address, or the same address at both
 * ends (ranks of one host that meet on its public address, which the kernel
 * also carries over loopback).
 */
int
net_same_host(int fd)
{
	struct net_addr me, peer = { .len = sizeof peer.ss };
	char a[NET_ADDRSTR_LEN], b[NET_ADDRSTR_LEN];

	if (net_local_addr(fd, &me) != COLL_OK ||
	    getpeername(fd, (struct sockaddr *)&peer.ss, &peer.len) == -1)
		return 0;
	if (net_addr_is_loopback(&me))
		return 1;
	net_addr_host(&me, a, sizeof a);
	net_addr_host(&peer, b, sizeof b);
	return strcmp(a, b) == 0;
}
