#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"

static atomic_int log_level = -1;
static atomic_int log_rank = -1;

int
log_level_parse(const char *s)
{
	static const char *const names[] = { "WARN", "INFO", "TRACE" };

	if (s == NULL || *s == '\0')
		return LOG_NONE;
	for (int i = 0; i < 3; i++)
		if (strcasecmp(s, names[i]) == 0)
			return LOG_WARN + i;
	return -1;
}

void
log_init(void)
{
	int lvl = log_level_parse(getenv("COLL_DEBUG"));

	/* Any other value logs nothing (the front end's cmd_main said so once). */
	atomic_store(&log_level, lvl < 0 ? LOG_NONE : lvl);
}

void
log_set_rank(int rank)
{
	atomic_store(&log_rank, rank);
}

int
log_enabled(enum log_level level)
{
	if (atomic_load(&log_level) < 0)
		log_init();
	return (int)level <= atomic_load(&log_level);
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *names[] = { "", "WARN", "INFO", "TRACE" };
	char host[64] = "?", line[1024];
	int n, rank = atomic_load(&log_rank);
	va_list ap;

	gethostname(host, sizeof host - 1);
	if (rank >= 0)
		n = snprintf(line, sizeof line, "%s:%d:%d coll %s ", host, (int)getpid(), rank,
		    names[level]);
	else
		n = snprintf(line, sizeof line, "%s:%d coll %s ", host, (int)getpid(), names[level]);
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	/* One write(2) per line keeps lines of concurrent threads whole. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
