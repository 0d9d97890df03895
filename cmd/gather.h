/*
 * --gather: keep each rank's stdout and print identical outputs once, under
 * the folded set of hosts and ranks that produced them, as clush -b and
 * dshbak -c do. A thousand ranks that print the same thing print it once.
 */
#ifndef COLL_GATHER_H
#define COLL_GATHER_H

#include <stddef.h>
#include <stdio.h>

struct gather;

struct gather *gather_new(int nranks);
void gather_add(struct gather *g, int rank, const char *line, size_t len);
/* Print the groups, largest first; hosts[rank_host[r]] names rank r's host. */
void gather_print(struct gather *g, FILE *f, const char *const *hosts, const int *rank_host);
void gather_free(struct gather *g);

#endif
