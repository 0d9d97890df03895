#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doc.h"
#include "envcheck.h"
#include "log.h"
#include "msg.h"
#include "status.h"
#include "suggest.h"

extern char **environ;

/*
 * Settings the core reads as a number and quietly replaces by its default
 * when out of range (core/comm/env.c): the same bounds. Their defaults are
 * envvar_table's.
 */
static const struct envcheck_num {
	const char *name;
	double lo, hi;
	int integer;
} envcheck_nums[] = {
	{ "COLL_TIMEOUT", 0.001, 604800, 0 },
	{ "COLL_KEEPALIVE_MS", 10, 600000, 1 },
	{ "COLL_KEEPALIVE_LIMIT", 2, 100000, 1 },
	{ "COLL_RETRY_MAX", 0, 1000, 1 },
	{ "COLL_RETRY_INTERVAL_MS", 0, 600000, 1 },
};

/* Names the code reads that coll(7) leaves out: older names, tests' and debugging knobs. */
static const char *const envcheck_more[] = { "COLL_NCCL_LIB", "COLL_NCCL_BLOCKING",
	"COLL_NCCL_KERNEL_EVENTS", "COLL_CUDA_GDB", "COLL_STACK_FRONT_PID",
	"COLL_TEST_STACK_HOLD_MS", "COLL_SPLIT_NOCOLOR", "COLL_TEST_PLAT_LIB", NULL };

static const char *
envcheck_default(const char *name)
{
	for (const struct envvar *v = envvar_table; v->name != NULL; v++)
		if (strcmp(v->name, name) == 0)
			return v->deflt;
	return NULL;
}

/* The variable set and not empty (empty means unset everywhere coll reads one), quoted into q. */
static const char *
envcheck_get(const char *name, char *q)
{
	const char *s = getenv(name);

	if (s == NULL || *s == '\0')
		return NULL;
	msg_quote(q, s, strlen(s), 64);
	return s;
}

static void
envcheck_values(const char *tool)
{
	char q[MSG_QUOTE_LEN(64)];
	struct stat sb;
	const char *s;

	if ((s = envcheck_get("COLL_DEBUG", q)) != NULL && log_level_parse(s) < 0)
		fprintf(stderr, "%s: warning: COLL_DEBUG is %s, not WARN, INFO or TRACE: nothing "
		    "is logged\n", tool, q);
	/* Pages nobody could write are no use: the default, for this tool and all it starts. */
	if ((s = envcheck_get("COLL_STATUS_DIR", q)) != NULL &&
	    (stat(s, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
		unsetenv("COLL_STATUS_DIR");
		fprintf(stderr, "%s: warning: COLL_STATUS_DIR is %s, not a directory: using %s\n",
		    tool, q, status_dir());
	}
	for (size_t i = 0; i < sizeof envcheck_nums / sizeof envcheck_nums[0]; i++) {
		const struct envcheck_num *n = &envcheck_nums[i];
		char *end;
		double v;

		if ((s = envcheck_get(n->name, q)) == NULL)
			continue;
		v = n->integer ? (double)strtol(s, &end, 10) : strtod(s, &end);
		if (*end != '\0' || !(v >= n->lo && v <= n->hi))
			fprintf(stderr, "%s: warning: %s is %s, not %s from %g to %g: using %s\n",
			    tool, n->name, q, n->integer ? "an integer" : "a number", n->lo, n->hi,
			    envcheck_default(n->name));
	}
}

static int
envcheck_known(const char *name, size_t len)
{
	for (const struct envvar *v = envvar_table; v->name != NULL; v++)
		if (strlen(v->name) == len && strncmp(v->name, name, len) == 0)
			return 1;
	for (int i = 0; envcheck_more[i] != NULL; i++)
		if (strlen(envcheck_more[i]) == len && strncmp(envcheck_more[i], name, len) == 0)
			return 1;
	return 0;
}

/* A COLL_* name that is not one, but a slip for one: said with the one it is likely to be. */
static void
envcheck_name(const char *tool, const char *name, size_t len)
{
	struct suggest sg;
	char q[MSG_QUOTE_LEN(64)];

	if (envcheck_known(name, len))
		return;
	/* Compared after COLL_: the prefix, the same in all, would make any two look alike. */
	suggest_init(&sg, name + 5, len - 5);
	for (const struct envvar *v = envvar_table; v->name != NULL; v++)
		if (strncmp(v->name, "COLL_", 5) == 0)
			suggest_offer(&sg, v->name + 5);
	if (sg.best != NULL)
		fprintf(stderr, "%s: warning: %s is not a coll variable; did you mean COLL_%s?\n",
		    tool, msg_quote(q, name, len, 64), sg.best);
}

void
envcheck_run(const char *tool, int argc, char **argv)
{
	/* A rank (collrun or a front end started it) or a worker: its front end checked. */
	if (getenv("COLL_UNIQUE_ID") != NULL)
		return;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--worker") == 0 || strcmp(argv[i], "--agent") == 0 ||
		    strcmp(argv[i], "--relay") == 0)
			return;
	envcheck_values(tool);
	for (char **e = environ; *e != NULL; e++) {
		const char *eq = strchr(*e, '=');

		if (strncmp(*e, "COLL_", 5) == 0 && eq != NULL && eq - *e > 5)
			envcheck_name(tool, *e, (size_t)(eq - *e));
	}
}
