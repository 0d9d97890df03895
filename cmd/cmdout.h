/*
 * Standard output as every tool writes it: a reader that went away (| head)
 * is a broken pipe, a full disk is ENOSPC, and a stdout that some other
 * process made non-blocking is waited on (poll), never reported as EAGAIN.
 */
#ifndef COLL_CMDOUT_H
#define COLL_CMDOUT_H

#include <stddef.h>

/*
 * Set up stdout for the tool (cmd_main does, first): a pipe, file or socket
 * is written through cmdout_write and its first error kept; a terminal left
 * non-blocking is opened afresh, blocking, for this process alone.
 */
void cmdout_init(void);
/* Write all of buf to fd, waiting while it is full: 0, or -1 with errno (EPIPE, ENOSPC...). */
int cmdout_write(int fd, const void *buf, size_t len);
/* Flush stdout: 0, or the errno of the first write to it that failed. */
int cmdout_flush(void);

#endif
