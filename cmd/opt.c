#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "hostopt.h"
#include "msg.h"
#include "opt.h"
#include "suggest.h"
#include "wrap.h"

void
opt_init(struct opt_state *st, const struct opt *opts, int argc, char **argv,
    int stop_at_operand)
{
	memset(st, 0, sizeof *st);
	st->opts = opts;
	st->argc = argc;
	st->argv = argv;
	st->ind = 1;
	st->stop_at_operand = stop_at_operand;
}

/* What every table answers, and the same long only, where a table gives the letter a meaning. */
static const struct opt opt_shared[] = { OPT_HELP_ENTRY, OPT_VERSION_ENTRY };
static const struct opt opt_shared_long[] = {
	{ OPT_ID_HELP, 0, "help", OPT_FLAG, NULL, "show this help", NULL },
	{ OPT_ID_VERSION, 0, "version", OPT_FLAG, NULL, "show the version", NULL },
};

static int
opt_end(const struct opt *o)
{
	return o->shrt == 0 && o->lng == NULL;
}

/* Which of the table's n entries has: the id (what), the letter (c) or the name (lng). */
static int
opt_has(const struct opt *const *list, int n, int id, char c, const char *lng)
{
	for (int i = 0; i < n; i++)
		if (list[i]->id == id || (c != 0 && list[i]->shrt == c) ||
		    (list[i]->lng != NULL && strcmp(list[i]->lng, lng) == 0))
			return 1;
	return 0;
}

int
opt_list(const struct opt *opts, const struct opt **list)
{
	int n = 0, mine;

	for (const struct opt *o = opts; !opt_end(o) && n < OPT_LIST_MAX - 2; o++)
		list[n++] = o;
	mine = n;
	for (size_t i = 0; i < sizeof opt_shared / sizeof opt_shared[0]; i++) {
		const struct opt *o = &opt_shared[i];

		if (opt_has(list, mine, o->id, 0, o->lng))
			continue;
		list[n++] = opt_has(list, mine, o->id, o->shrt, o->lng) ? &opt_shared_long[i] : o;
	}
	return n;
}

static const struct opt *
opt_find_long(const struct opt *opts, const char *name, size_t len)
{
	const struct opt *list[OPT_LIST_MAX];
	int n = opt_list(opts, list);

	for (int i = 0; i < n; i++)
		if (list[i]->lng != NULL && strlen(list[i]->lng) == len &&
		    strncmp(list[i]->lng, name, len) == 0)
			return list[i];
	return NULL;
}

static const struct opt *
opt_find_short(const struct opt *opts, char c)
{
	const struct opt *list[OPT_LIST_MAX];
	int n = opt_list(opts, list);

	for (int i = 0; i < n; i++)
		if (list[i]->shrt == c)
			return list[i];
	return NULL;
}

/* "unknown option '--NAME'", and the listed option it is likely a slip for. */
static int
opt_unknown_long(struct opt_state *st, const char *name, size_t len)
{
	const struct opt *list[OPT_LIST_MAX];
	char dashed[42], q[MSG_QUOTE_LEN(40)];
	struct suggest sg;
	int n = opt_list(st->opts, list);

	snprintf(dashed, sizeof dashed, "--%.*s", (int)(len < 40 ? len : 40), name);
	msg_quote(q, dashed, strlen(dashed), 40);
	suggest_init(&sg, name, len);
	for (int i = 0; i < n; i++)
		if (list[i]->help != NULL)
			suggest_offer(&sg, list[i]->lng);
	if (sg.best != NULL)
		snprintf(st->err, sizeof st->err, "unknown option %s; did you mean --%s?", q,
		    sg.best);
	else
		snprintf(st->err, sizeof st->err, "unknown option %s", q);
	return OPT_ERROR;
}

static int
opt_long(struct opt_state *st, const char *a, const char **val)
{
	const char *eq = strchr(a, '=');
	size_t len = eq ? (size_t)(eq - a) : strlen(a);
	const struct opt *o = opt_find_long(st->opts, a, len);

	if (o == NULL)
		return opt_unknown_long(st, a, len);
	if (o->type == OPT_FLAG && eq != NULL) {
		snprintf(st->err, sizeof st->err, "option '--%s' takes no value", o->lng);
		return OPT_ERROR;
	}
	if (o->type == OPT_VALUE) {
		if (eq != NULL) {
			*val = eq + 1;
		} else if (st->ind < st->argc) {
			*val = st->argv[st->ind++];
		} else {
			snprintf(st->err, sizeof st->err, "option '--%s' needs a value (%s)", o->lng,
			    o->arg);
			return OPT_ERROR;
		}
	}
	return o->id;
}

/*
 * The long option a letter stood for before one letter got one meaning
 * (-f fanout, -t timeout, -x exclude in collrun), where this table has it.
 */
static const char *
opt_letter_was(const struct opt *opts, char c)
{
	static const struct { char c; const char *lng; } moved[] = {
		{ 'f', "fanout" }, { 't', "timeout" }, { 'x', "exclude" },
	};

	for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++)
		if (moved[i].c == c && opt_find_long(opts, moved[i].lng, strlen(moved[i].lng)))
			return moved[i].lng;
	return NULL;
}

static int
opt_short(struct opt_state *st, const char **val)
{
	const struct opt *o = opt_find_short(st->opts, *st->cluster);
	char c = *st->cluster++;

	if (o == NULL) {
		char q[MSG_QUOTE_LEN(2)], dashed[3] = { '-', c, '\0' };
		const char *was = opt_letter_was(st->opts, c);

		msg_quote(q, dashed, 2, 2);
		if (was != NULL)
			snprintf(st->err, sizeof st->err, "unknown option %s; did you mean --%s?", q,
			    was);
		else
			snprintf(st->err, sizeof st->err, "unknown option %s", q);
		st->cluster = NULL;
		return OPT_ERROR;
	}
	if (o->type == OPT_VALUE) {
		if (*st->cluster != '\0') {
			*val = st->cluster;
		} else if (st->ind < st->argc) {
			*val = st->argv[st->ind++];
		} else {
			snprintf(st->err, sizeof st->err, "option '-%c' needs a value (%s)", c, o->arg);
			st->cluster = NULL;
			return OPT_ERROR;
		}
		st->cluster = NULL;
	} else if (*st->cluster == '\0') {
		st->cluster = NULL;
	}
	return o->id;
}

int
opt_next(struct opt_state *st, const char **val)
{
	const char *a;

	*val = NULL;
	if (st->cluster != NULL)
		return opt_short(st, val);
	while (st->ind < st->argc) {
		a = st->argv[st->ind];
		if (strcmp(a, "--") == 0) {
			st->ind++;
			return OPT_DONE;
		}
		if (a[0] != '-' || a[1] == '\0') {
			if (st->stop_at_operand)
				return OPT_DONE;
			snprintf(st->err, sizeof st->err, "unexpected argument '%s'", a);
			return OPT_ERROR;
		}
		st->ind++;
		if (a[1] == '-')
			return opt_long(st, a + 2, val);
		st->cluster = a + 1;
		return opt_short(st, val);
	}
	return OPT_DONE;
}

int
opt_int(const char *name, const char *s, long min, long max, long *out, char *err, size_t len)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		snprintf(err, len, "%s must be an integer from %ld to %ld, not '%s'", name, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

int
opt_double(const char *name, const char *s, double min, double max, double *out, char *err,
    size_t len)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= min && v <= max)) {
		snprintf(err, len, "%s must be a number from %g to %g, not '%s'", name, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

int
opt_size(const char *name, const char *s, size_t *out, char *err, size_t len)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end != s && *end != '\0' && end[1] == '\0') {
		switch (*end) {
		case 'K': case 'k': mul = 1ull << 10; end++; break;
		case 'M': case 'm': mul = 1ull << 20; end++; break;
		case 'G': case 'g': mul = 1ull << 30; end++; break;
		default: break;
		}
	}
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v > (1ull << 40) / mul) {
		snprintf(err, len, "%s must be a byte count such as 8, 64K, 256M or 1G, not '%s'",
		    name, s);
		return -1;
	}
	*out = (size_t)(v * mul);
	return 0;
}

/* --help's option column: the names from column 2, their text from column OPT_HELP_TEXT. */
#define OPT_HELP_NAMES 24
#define OPT_HELP_TEXT (2 + OPT_HELP_NAMES + 2)

static void
opt_print_one(const struct opt *o, FILE *f)
{
	char left[96];
	const char *sp = o->arg ? " " : "", *arg = o->arg ? o->arg : "";
	size_t n;

	if (o->shrt && o->lng)
		snprintf(left, sizeof left, "-%c, --%s%s%s", o->shrt, o->lng, sp, arg);
	else if (o->shrt)
		snprintf(left, sizeof left, "-%c%s%s", o->shrt, sp, arg);
	else
		snprintf(left, sizeof left, "    --%s%s%s", o->lng, sp, arg);
	n = wrap_cols(left, strlen(left));
	/* A name too long for its column puts its text on the next line. */
	if (n > OPT_HELP_NAMES)
		fprintf(f, "  %s\n%*s", left, OPT_HELP_TEXT, "");
	else
		fprintf(f, "  %s%*s", left, (int)(OPT_HELP_TEXT - 2 - n), "");
	wrap_print(f, o->help, OPT_HELP_TEXT, OPT_HELP_TEXT, WRAP_WIDTH, 0);
}

void
opt_print_help(const struct opt *opts, void *stream)
{
	const struct opt *list[OPT_LIST_MAX];
	int n = opt_list(opts, list);

	for (int i = 0; i < n; i++)
		if (list[i]->help != NULL)
			opt_print_one(list[i], stream);
}

/* The options the loop answers itself, and the host options: 0 taken, 1 not, -1 err. */
static int
opt_parse_shared(const struct opt_parser *p, int id, const char *val, char *err, size_t len)
{
	if (id == OPT_ID_HELP) {
		cmd_usage(p->cmd, stdout);
		return -2;
	}
	if (id == OPT_ID_VERSION) {
		printf("%s %s\n", p->cmd->tool, COLL_VERSION);
		return -2;
	}
	return p->ho != NULL ? hostopt_value(p->ho, id, val, err, len) : 1;
}

int
opt_parse(const struct opt_parser *p, int argc, char **argv, int *rest)
{
	struct opt_state st;
	const char *val;
	char err[512];
	int id, r;

	opt_init(&st, p->cmd->opts, argc, argv, p->operands != OPT_OPERANDS_NONE);
	/* Operands between options: "--" does not end the options there (collstack's way). */
	while ((id = opt_next(&st, &val)) != OPT_DONE ||
	    (p->operands == OPT_OPERANDS_BETWEEN && st.ind < argc)) {
		if (id == OPT_DONE) {
			p->operand(p->args, argv[st.ind++]);
			continue;
		}
		if (id == OPT_ERROR)
			return cmd_usage_error(p->cmd, st.err);
		if ((r = opt_parse_shared(p, id, val, err, sizeof err)) == -2)
			return -1;
		if (r < 0 || (r > 0 && p->value(p->args, id, val, err, sizeof err) != 0))
			return cmd_usage_error(p->cmd, err);
	}
	if (p->operands == OPT_OPERANDS_NONE && st.ind < argc) {
		snprintf(err, sizeof err, "unexpected argument '%s'", argv[st.ind]);
		return cmd_usage_error(p->cmd, err);
	}
	if (rest != NULL)
		*rest = st.ind;
	return EXIT_OK;
}
