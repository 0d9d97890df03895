#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plat_file.h"
#include "xmalloc.h"

const char *
plat_file_root(void)
{
	const char *r = getenv(PLAT_FILE_ROOT_VAR);

	return r != NULL && *r != '\0' ? r : NULL;
}

int
plat_file_path(const char *root, const char *path, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", root != NULL ? root : "", path);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

ssize_t
plat_file_read(const char *root, const char *path, char *buf, size_t len)
{
	char full[4096];
	size_t got = 0;
	ssize_t n = 0;
	int fd;

	if (len == 0)
		return -1;
	buf[0] = '\0';
	if (plat_file_path(root, path, full, sizeof full) != 0 ||
	    (fd = open(full, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return -1;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	/*
	 * A sysfs attribute the driver cannot give (a down link's speed) fails
	 * its first read; a process that ends mid-read leaves what was read.
	 */
	return n < 0 && got == 0 ? -1 : (ssize_t)got;
}

ssize_t
plat_file_text(const char *root, const char *path, char *buf, size_t len)
{
	ssize_t n = plat_file_read(root, path, buf, len);

	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	return n;
}

int
plat_file_line(const char *root, const char *path, char *buf, size_t len)
{
	if (plat_file_read(root, path, buf, len) < 0)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int
plat_file_u64(const char *root, const char *path, uint64_t *v)
{
	char buf[64], *end;
	unsigned long long x;

	*v = 0;
	if (plat_file_line(root, path, buf, sizeof buf) != 0)
		return -1;
	errno = 0;
	x = strtoull(buf, &end, 10);
	if (errno != 0 || end == buf)
		return -1;
	*v = (uint64_t)x;
	return 0;
}

static int
plat_file_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
plat_file_list(const char *root, const char *dir, int max, char ***names)
{
	char full[4096];
	struct dirent *e;
	DIR *d;
	int n = 0, cap = 0;

	*names = NULL;
	if (plat_file_path(root, dir, full, sizeof full) != 0 || (d = opendir(full)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			*names = xreallocarray(*names, (size_t)cap, sizeof **names);
		}
		(*names)[n++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (n > 1)
		qsort(*names, (size_t)n, sizeof **names, plat_file_name_cmp);
	/* The first max in order, whichever order the directory gave them in. */
	while (n > max && n > 0)
		free((*names)[--n]);
	return n;
}

void
plat_file_list_free(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
