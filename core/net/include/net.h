/* Sockets: addresses, listeners and non-blocking connects, IPv4 and IPv6. */
#ifndef COLL_NET_H
#define COLL_NET_H

#include <stdint.h>
#include <sys/socket.h>

#define NET_ADDRSTR_LEN 64	/* "[v6addr]:port" fits */

struct net_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

/* Put fd in non-blocking mode (redis anetSetBlock): one helper for every socket. */
int net_set_nonblock(int fd);
/* Parse a numeric address and port into addr; COLL_EINVAL if not numeric. */
int net_addr_parse(struct net_addr *addr, const char *host, uint16_t port);
uint16_t net_addr_port(const struct net_addr *addr);
void net_addr_set_port(struct net_addr *addr, uint16_t port);
int net_addr_is_loopback(const struct net_addr *addr);
/* Is it the wildcard address (0.0.0.0 or ::)? */
int net_addr_is_any(const struct net_addr *addr);
/* Format as "a.b.c.d:port" or "[v6]:port". */
void net_addr_format(const struct net_addr *addr, char *buf, size_t len);
/* Format the host part only. */
void net_addr_host(const struct net_addr *addr, char *buf, size_t len);
/*
 * The backlog of every listener of the core: generous and fixed, so that
 * strangers queued there (a small job's root had nranks) crowd no rank out;
 * the kernel caps it at net.core.somaxconn.
 */
#define NET_BACKLOG 4096
/* Listen on addr (port 0 picks one); the bound address is written back. */
int net_listen(struct net_addr *addr, int backlog, int *fd_out);
/*
 * Every address of this host, port 0: IPv6's wildcard, which takes IPv4
 * too, where the host can listen on IPv6 at all (one probe), else IPv4's.
 */
void net_addr_any(struct net_addr *addr);
/* Connect with a deadline (monotonic ms) and an abort fd that cuts the wait short. */
int net_connect(const struct net_addr *addr, uint64_t deadline_ms, int abort_fd, int *fd_out);
/* Address the kernel chose for our end of fd. */
int net_local_addr(int fd, struct net_addr *addr);
/* Whether connected fd's two ends are on this host; 0 where it cannot tell. */
int net_same_host(int fd);
/* Options every data socket gets: no Nagle, keepalive. */
void net_tune(int fd);

#endif
