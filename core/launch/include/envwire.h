/*
 * The user's variables for the ranks (collrun -x), on a remote agent's or
 * relay's stdin instead of its command line: anyone on a host can read a
 * process's argv (ps), and -x is how tokens and keys reach a job.
 *
 * After the unique id's line, an agent or relay started with --env-stdin
 * reads lines "env NAME=VALUE" up to a line "." (a relay: among its plan's
 * lines). VALUE is percent-escaped: '%', '\n' and '\r' as %25, %0a and %0d,
 * so that a value with a newline stays one line.
 */
#ifndef COLL_ENVWIRE_H
#define COLL_ENVWIRE_H

#include <stddef.h>

#include "shquote.h"

#define ENVWIRE_PREFIX "env "

/* Append one line "env VAR\n" for each of env (NULL-terminated; NULL is none). */
void envwire_encode(struct shbuf *b, char *const *env);
/*
 * Decode line (len bytes, no newline) into out (cap bytes) as "NAME=VALUE":
 * 0, or -1 if it is not such a line (no prefix, no '=' after a name, a bad
 * escape, a NUL, or too long).
 */
int envwire_decode(const char *line, size_t len, char *out, size_t cap);

#endif
