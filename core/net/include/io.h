/*
 * Blocking-style I/O on non-blocking sockets: every call has a deadline and an
 * abort fd, so no wait can outlive its timeout or an abort.
 */
#ifndef COLL_IO_H
#define COLL_IO_H

#include <stddef.h>
#include <stdint.h>

/* Wait for events on fd; COLL_ETIMEDOUT past deadline_ms (0: none), COLL_EABORTED. */
int io_wait(int fd, short events, uint64_t deadline_ms, int abort_fd);
/* Send all len bytes. COLL_EPEER if the peer is gone. */
int io_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ms, int abort_fd);
/* Receive exactly len bytes. COLL_EPEER on EOF or reset. */
int io_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ms, int abort_fd);

#endif
