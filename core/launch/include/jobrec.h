/*
 * The job record: what collrun leaves where collstack can find a running job
 * later (job id, launcher, hosts, pids), one JSON file per job in
 * $COLL_JOB_DIR (default /tmp/coll-<uid>/jobs), written atomically, removed
 * when the job ends.
 */
#ifndef COLL_JOBREC_H
#define COLL_JOBREC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct jobrec_rank {
	int rank;
	const char *host;
	pid_t pid;
};

struct jobrec {
	uint64_t jobid;
	const char *launcher;
	pid_t launcher_pid;
	char *const *argv;
	int nranks;
	const struct jobrec_rank *ranks;
};

/*
 * The directory of job records, created 0700 on demand: $COLL_JOB_DIR, else
 * $TMPDIR (or /tmp)/coll-<uid>/jobs. An existing one (or coll-<uid> above
 * the default) must be a directory, not a link, of this user and not
 * writable by others: else COLL_EOWNER or COLL_EUNSAFE, and buf names the
 * directory at fault. When another user holds coll-<uid> (anyone may make it
 * first), records go to $XDG_RUNTIME_DIR/coll/jobs, else ~/.cache/coll/jobs,
 * so that the tools still find their jobs: jobrec_tmp() says where to look
 * for the squatter, to name it.
 */
int jobrec_dir(char *buf, size_t len);
/*
 * Another user's job directory, to read (root, with collstack --user): the
 * first of jobrec_dir's places for uid that exists and is uid's and private;
 * nothing is made. COLL_ENOTFOUND when none is (buf names the first place).
 */
int jobrec_dir_of(uid_t uid, char *buf, size_t len);
/* $TMPDIR when absolute, else /tmp. */
const char *jobrec_tmp(void);
/*
 * Write the record; path gets its file name. Errors as jobrec_dir's (path
 * then names the directory at fault), COLL_ETOOBIG when the name does not fit
 * path, or COLL_ESYS with errno.
 */
int jobrec_write(const struct jobrec *j, char *path, size_t len);

#endif
