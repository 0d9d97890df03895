/*
 * What the fact readers share, inside the facts module only.
 */
#ifndef COLL_FACTS_IMPL_H
#define COLL_FACTS_IMPL_H

#include <stddef.h>

/* Shared by the readers: PATH with its first component ("/sys") replaced by root. */
void facts__path(const char *root, const char *path, char *out, size_t len);
/* PATH (as facts__path) read whole, trailing blanks trimmed; its length or -1. */
int facts__read(const char *root, const char *path, char *buf, size_t len);
/* Names in a directory (as facts__path), sorted; count, or -1. Free with facts__free_names. */
int facts__list(const char *root, const char *dir, char ***names);
void facts__free_names(char **names, int n);

#endif
