/*
 * Debug logging, switched on by COLL_DEBUG=WARN|INFO|TRACE. It is the one place
 * the core writes anything: to stderr, each line prefixed with host, pid and
 * rank, so that lines of many ranks merged by a launcher stay attributable.
 */
#ifndef COLL_LOG_H
#define COLL_LOG_H

enum log_level { LOG_NONE = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_TRACE = 3 };

/* A COLL_DEBUG value (any case): its level, LOG_NONE for unset or empty, -1 for any other. */
int log_level_parse(const char *s);
/* Read COLL_DEBUG; called lazily by log_enabled(), callable again after setenv. */
void log_init(void);
/* Set the rank shown in the prefix (-1 for none). */
void log_set_rank(int rank);
int log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_warn(...) do { if (log_enabled(LOG_WARN)) log_msg(LOG_WARN, __VA_ARGS__); } while (0)
#define log_info(...) do { if (log_enabled(LOG_INFO)) log_msg(LOG_INFO, __VA_ARGS__); } while (0)
#define log_trace(...) do { if (log_enabled(LOG_TRACE)) log_msg(LOG_TRACE, __VA_ARGS__); } while (0)

#endif
