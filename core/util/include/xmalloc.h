/*
 * Allocation wrappers: an allocation failure is not recoverable in a tool that
 * must report on a cluster, so they abort. A command may install a hook that
 * restores the terminal first (colltop calls endwin()).
 */
#ifndef COLL_XMALLOC_H
#define COLL_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Install the function called before an allocation failure aborts. */
void xmalloc_set_fatal_hook(void (*hook)(void));

#endif
