/*
 * The symbol cache of a host (sym.c): names for (module file, offset)
 * pairs, kept across the processes of a host, which mostly run the same
 * binaries at the same call sites: a pc named once is never looked up in
 * DWARF again, whichever process it comes from.
 */
#ifndef COLL_STACK_SYM_H
#define COLL_STACK_SYM_H

#include <elfutils/libdwfl.h>
#include <stdint.h>

#include "stack.h"

#define STACK_SYM_INLINE_MAX 16	/* frames one pc can stand for: itself and its inlined callees */

/* Frames for pc in mod (NULL: in no module), innermost first; their count (>= 1). */
int stack__sym(struct stack_syms *s, Dwfl_Module *mod, uint64_t pc, struct stack_frame *out,
    int max);

#endif
