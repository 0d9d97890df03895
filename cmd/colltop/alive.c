/*
 * Is a status page's process still there, and still the one that wrote it?
 * A job killed with SIGKILL (its collrun and ranks) leaves its pages and
 * record behind: read alone, they look like a job between two ops for ever.
 * So a page counts only while its pid is a live process of the page's owner
 * (real uid) that started before the page's last write (progress_ns, which
 * every write sets): a pid the kernel has given to a newer process since is
 * not the rank.
 *
 * The start time is the kernel's (boot time from /proc/stat plus the
 * process's start in clock ticks), against the page's wall clock: a clock
 * stepped forward after the page's last write could make a live idle rank
 * look newer, so ALIVE_SLACK_S of it is let pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stack.h"
#include "status.h"
#include "top.h"

#define ALIVE_SLACK_S 2.0

int
alive_owned(pid_t pid, uid_t owner)
{
	char path[64], line[256];
	unsigned long ruid;
	int yes = 0;
	FILE *f;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "Uid: %lu", &ruid) == 1) {
			yes = ruid == (unsigned long)owner;
			break;
		}
	fclose(f);
	return yes;
}

double
alive_boot_s(void)
{
	char line[256];
	unsigned long long bt;
	double s = -1;
	FILE *f = fopen("/proc/stat", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "btime %llu", &bt) == 1) {
			s = (double)bt;
			break;
		}
	fclose(f);
	return s;
}

/* pid's start as wall seconds; -1 unknown. The name may hold ')' and spaces: after the last. */
static double
alive_start_s(pid_t pid, double boot_s)
{
	char path[64], buf[1024], *p;
	unsigned long long start;
	long hz = sysconf(_SC_CLK_TCK);
	size_t n;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (boot_s < 0 || hz <= 0 || (f = fopen(path, "re")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	/* ") S ppid ..." : starttime is field 22, the 20th after the name. */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
	    "%*d %*d %llu", &start) != 1)
		return -1;
	return boot_s + (double)start / (double)hz;
}

void
alive_read(struct alive_proc *a, pid_t pid, uid_t owner, double boot_s)
{
	*a = (struct alive_proc){ .pid = pid, .owner = owner, .start_s = -1 };
	if (pid <= 0 || (a->state = stack_state(pid, NULL)) == 0)
		return;
	a->owned = alive_owned(pid, owner);
	if (a->owned)
		a->start_s = alive_start_s(pid, boot_s);
}

char
alive_of(const struct alive_proc *a, const struct status_page *pg)
{
	if (a->state == 0 || !a->owned)
		return 0;
	if (a->start_s >= 0 && pg->progress_ns > 0 &&
	    a->start_s > (double)pg->progress_ns / 1e9 + ALIVE_SLACK_S)
		return 0;
	return a->state;
}

char
alive_state(const struct status_page *pg, uid_t owner, double boot_s)
{
	struct alive_proc a;

	alive_read(&a, pg->pid, owner, boot_s);
	return alive_of(&a, pg);
}
