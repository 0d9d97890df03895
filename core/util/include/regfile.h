/*
 * Opening a file someone else may have put at a path: a configuration file, a
 * host file, a dump. A FIFO there would block open(2) or read(2) for as long
 * as its writer likes, and a device or a directory is not a file either, so
 * the open never waits (O_NONBLOCK), and what it opened must be a regular
 * file, or it is closed and refused. The descriptor is then made blocking
 * again: reads of a regular file never wait on anyone.
 */
#ifndef COLL_REGFILE_H
#define COLL_REGFILE_H

#include <stddef.h>
#include <sys/stat.h>

/*
 * Open path read-only (flags adds O_NOFOLLOW and the like). COLL_OK with *fd
 * and, if sb is not NULL, its stat; COLL_EUNSAFE if it is not a regular file
 * (a FIFO, a device, a directory, a socket); COLL_ESYS with errno otherwise.
 */
int regfile_open(const char *path, int flags, int *fd, struct stat *sb);
/*
 * A whole small file into *out (NUL-terminated, *outlen bytes; free it): a
 * regular file, or a pipe (bash's <(...)) read until its writer closes it
 * within wait_ms (wait_ms < 0: no pipe either). COLL_EUNSAFE for anything else (sb says what), COLL_ETOOBIG
 * past max bytes, COLL_ETIMEDOUT for a pipe that stays open and silent,
 * COLL_ESYS with errno.
 */
int regfile_read(const char *path, size_t max, int wait_ms, char **out, size_t *outlen,
    struct stat *sb);
/* What a refused file is, for messages: "a FIFO", "a directory", "a character device", ... */
const char *regfile_kind(mode_t mode);

#endif
