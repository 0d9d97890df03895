/*
 * PyTorch flight recorder dumps: read into a set by rank (fr.c), matched
 * across ranks into a report and findings (fr_match.c).
 */
#ifndef COLL_FR_H
#define COLL_FR_H

#include <jansson.h>
#include <sys/types.h>

struct fr_dump;

struct fr_set {
	struct fr_dump *d;	/* by rank */
	int n;
	char **skipped;		/* files of a directory that are not dumps, and why */
	int nskipped;
	char *note;		/* how the dumps' owner was chosen, when guessed; NULL none */
};

struct fr_report {
	json_t *lines;		/* the report, line by line */
	json_t *findings;	/* what is wrong, one object each: kind, pg, rank, seq... */
	int problems;
	int unreadable;		/* groups that could not be matched */
};

/*
 * Read the dumps: files, directories of them, or PREFIXes of PREFIX<rank>;
 * -1 with why. Only owner's are taken; with guess (root, no --user), and no
 * dump of root's, those of the lowest rank's owner, said in s->note.
 */
int fr_open(struct fr_set *s, const char *const *paths, int npaths, uid_t owner, int guess,
    char *err, size_t len);
/*
 * A dump's bytes, pickle or JSON (told by its first byte that is not
 * space), into one form: an object whose "entries" is an array (JSON
 * leaves it out when empty) of at most FR_ENTRIES_MAX. NULL with why.
 */
#define FR_ENTRIES_MAX (1 << 20)
json_t *fr_parse(const void *buf, size_t len, char *err, size_t errlen);
/* Add a dump read elsewhere (a worker's, from a live job); a reference to root is taken. */
int fr_add_root(struct fr_set *s, int rank, const char *label, json_t *root, char *err,
    size_t len);
/* What of a dump the report reads: its process groups and its newest keep entries. */
json_t *fr_trim(json_t *root, size_t keep);
void fr_close(struct fr_set *s);
/* Match the ranks' entries per process group by collective_seq_id. */
void fr_analyze(const struct fr_set *s, struct fr_report *r);
void fr_report_free(struct fr_report *r);

#endif
