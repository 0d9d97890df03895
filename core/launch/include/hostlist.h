/*
 * Host lists: the one parser every tool uses for -w/--hosts, -x/--exclude,
 * hostfiles and Slurm's environment. All of it is untrusted text, so every
 * expansion is bounded before anything is allocated, and a failed call leaves
 * the list as it was.
 *
 *   node[01-16]              node01 .. node16 (padding: width of the start)
 *   n[1-3,7],login           n1 n2 n3 n7 login
 *   rack[1-2]-node[01-04]    cartesian product, the left group varies slowest
 *   node[1-4]:2              2 slots on each
 *
 * A host named twice keeps its first position and its slots add up (a host
 * given without slots adds nothing, so "a,a" stays at 0, "not given"), as
 * Open MPI does for repeated hostfile lines.
 */
#ifndef COLL_HOSTLIST_H
#define COLL_HOSTLIST_H

#include <stddef.h>
#include <stdint.h>

#define HOSTLIST_MAX_HOSTS 1000000	/* per list, and per expression expanded */
#define HOSTLIST_NAME_MAX 255
#define HOSTLIST_MAX_SLOTS 1000000	/* per host, after merging */
#define HOSTLIST_FILE_MAX (16u << 20)

struct host_entry {
	char *name;
	int slots;		/* 0: not given */
};

/* Zero-initialised is empty. Only n and hosts are for callers to read. */
struct hostlist {
	int n;
	struct host_entry *hosts;	/* in order of first appearance */
	int cap;
	uint64_t *index;	/* open-addressing hash of the names, see hostlist.c */
	size_t index_len;	/* a power of two, or 0 */
};

enum place_mode {
	PLACE_BLOCK = 0,	/* fill each host before the next */
	PLACE_ROUNDROBIN = 1,	/* one rank per host in turn, skipping full hosts */
};

/* Make hl an empty list. */
void hostlist_init(struct hostlist *hl);
/* Free what hl holds and leave it empty; the struct itself is the caller's. */
void hostlist_free(struct hostlist *hl);
/* Append one host (merged if present); COLL_EINVAL with err set on a bad name or slots. */
int hostlist_add(struct hostlist *hl, const char *name, int slots, char *err, size_t errlen);
/* Index of the host called name, or -1. */
int hostlist_find(const struct hostlist *hl, const char *name);
/* Append the hosts of a bracket expression; COLL_EINVAL with a one-line err. */
int hostlist_parse(struct hostlist *hl, const char *expr, char *err, size_t errlen);
/* Remove the hosts an expression names; naming a host not in hl is not an error. */
int hostlist_exclude(struct hostlist *hl, const char *expr, char *err, size_t errlen);
/* Append the hosts of Open MPI hostfile text; errors name the line. */
int hostlist_parse_text(struct hostlist *hl, const char *text, char *err, size_t errlen);
/*
 * Append the hosts of an Open MPI hostfile: COLL_ENOTFOUND if it does not
 * exist, COLL_ETOOBIG over HOSTLIST_FILE_MAX, COLL_ESYS if unreadable.
 */
int hostlist_parse_file(struct hostlist *hl, const char *path, char *err, size_t errlen);
/*
 * Append Slurm's allocation: SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE
 * ("2(x3),1"), which must count exactly one entry per node. tasks may be
 * NULL, leaving the slots not given.
 */
int hostlist_parse_slurm(struct hostlist *hl, const char *nodelist, const char *tasks,
    char *err, size_t errlen);
/*
 * Fold names into bracket form, "node01,node02,node07" -> "node[01-02,07]".
 * Groups keep the order of their first name; numbers within a group are
 * sorted and duplicates dropped, so hostlist_parse gives back the same set.
 * COLL_ETOOBIG if out is too short (it then holds a truncated prefix).
 */
int hostlist_fold(const char **names, int n, char *out, size_t outlen);
/*
 * Map rank r to host rank_host[r]. per_host > 0 gives every host that many
 * ranks, else each host takes its slots (0 counts as 1). Oversubscription is
 * refused: COLL_EINVAL ("N ranks but only M slots") rather than a silently
 * overloaded node.
 */
int hostlist_place(const struct hostlist *hl, int nranks, int per_host, enum place_mode mode,
    int *rank_host, char *err, size_t errlen);

#endif
