/*
 * Small files of sysfs, procfs and /etc, read whole into the caller's buffer:
 * the one reader of the fact readers, the dashboard's samplers and the
 * process table. Every path is absolute ("/sys/class/net"), and read under a
 * root when one is given: the root stands for "/", so that a fixture tree
 * (ROOT/sys/..., ROOT/proc/..., ROOT/etc/...) takes the host's place in
 * tests. COLL_FS_ROOT names that root (plat_file_root); a reader of live
 * processes passes NULL and reads the host's own.
 *
 * Opens never wait (O_NONBLOCK: a FIFO planted in a tree blocks no one) and
 * reads stop at the caller's bound, whatever the file holds: /proc of other
 * users' processes can be as large as they like.
 */
#ifndef COLL_PLAT_FILE_H
#define COLL_PLAT_FILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PLAT_FILE_ROOT_VAR "COLL_FS_ROOT"
#define PLAT_FILE_LIST_ALL INT_MAX	/* plat_file_list: no bound on the count */

/* The fixture root from COLL_FS_ROOT; NULL when unset or empty (the host's own files). */
const char *plat_file_root(void);
/* root + path into out; 0, or -1 when it does not fit (nothing is read then). */
int plat_file_path(const char *root, const char *path, char *out, size_t len);
/*
 * Up to len - 1 bytes of root + path into buf, NUL-terminated (bytes past the
 * bound are left unread); the count, or -1 when it cannot be opened or nothing could be read.
 */
ssize_t plat_file_read(const char *root, const char *path, char *buf, size_t len);
/* As plat_file_read, trailing newlines, blanks and tabs cut. */
ssize_t plat_file_text(const char *root, const char *path, char *buf, size_t len);
/* The first line alone (a sysfs attribute); 0, or -1. */
int plat_file_line(const char *root, const char *path, char *buf, size_t len);
/* The file's leading decimal number; 0, or -1 when unreadable or not a number. */
int plat_file_u64(const char *root, const char *path, uint64_t *v);
/*
 * The names in directory root + dir, dot files left out, sorted by bytes
 * (strcmp: the same order in every locale), the first max of them; the count,
 * or -1 (*names NULL) when it cannot be opened. Free with plat_file_list_free.
 */
int plat_file_list(const char *root, const char *dir, int max, char ***names);
void plat_file_list_free(char **names, int n);

#endif
