/*
 * user.c: a user's name for a message about whose a file or socket is.
 */
#ifndef COLL_USER_H
#define COLL_USER_H

#include <stddef.h>
#include <sys/types.h>

/* The name of uid (its number where it has none), made printable. */
void user_name(uid_t uid, char *buf, size_t len);

#endif
