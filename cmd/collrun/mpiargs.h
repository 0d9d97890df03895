/* mpirun's spellings of collrun's options (mpiargs.c). */
#ifndef COLL_MPIARGS_H
#define COLL_MPIARGS_H

#include <stddef.h>

#include "opt.h"

/*
 * A copy of argv (free it; its strings are argv's or constants) with the
 * options before the program in the spellings of opts: mpirun's one-dash
 * long options (-np, -hostfile, -oversubscribe), its names for ours
 * (--tag-output, --host, -npernode) and -t, collrun's old letter for -T.
 */
char **mpiargs_normalize(const struct opt *opts, int argc, char **argv);
/* Free what mpiargs_normalize made of argv. */
void mpiargs_free(char **v, int argc, char **argv);
/* The longest value -x takes (it reaches a remote agent as one line of stdin). */
#define MPIARGS_EXPORT_MAX 16384
/*
 * -x NAME[=VALUE] as "NAME=VALUE", the value taken from our environment when
 * not given (free it); NULL with err when NAME is no name, is not set here or
 * its value is over MPIARGS_EXPORT_MAX bytes.
 */
char *mpiargs_export(const char *arg, char *err, size_t len);

#endif
