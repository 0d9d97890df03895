/*
 * Fault plans. COLL_FAULT is text from the environment, so it is read like
 * any untrusted input: bounded in length and items before anything is
 * allocated, every number checked for sign, overflow and trailing junk
 * (strtoull alone takes " 1", "+1" and "-1"), and every refusal quotes the
 * item, cut short and with control bytes escaped, next to the form it should
 * have had. A plan is all or nothing: one bad item and no fault is armed, so
 * a rehearsal never runs with half of what was asked for.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fault.h"
#include "msg.h"
#include "xmalloc.h"

#define FAULT_QUOTE_MAX 32	/* bytes of untrusted text quoted in a message */
#define FAULT_QUOTE_LEN MSG_QUOTE_LEN(FAULT_QUOTE_MAX)
#define FAULT_FORM "expected RANK@SEQ:ACTION such as 3@5:kill"
#define FAULT_ACTIONS "exit, kill, hang, close, delay=MS or corrupt"

static const char *const fault_names[] = {
	[FAULT_EXIT] = "exit", [FAULT_KILL] = "kill", [FAULT_HANG] = "hang",
	[FAULT_CLOSE] = "close", [FAULT_DELAY] = "delay", [FAULT_CORRUPT] = "corrupt",
};
#define FAULT_NNAMES (sizeof fault_names / sizeof fault_names[0])

/* One comma-separated item as written, for messages. */
struct fault_item {
	const char *text;	/* in the caller's spec, whitespace around it left out */
	size_t len;
	int index;		/* counted from 1 */
};

static int fault_bad(const struct fault_item *it, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Input quoted in messages: at most FAULT_QUOTE_MAX bytes (msg.h). */
static const char *
fault_quote(char *buf, const char *s, size_t len)
{
	return msg_quote(buf, s, len, FAULT_QUOTE_MAX);
}

/* "fault item N 'TEXT': WHY"; returns COLL_EINVAL. */
static int
fault_bad(const struct fault_item *it, char *err, size_t errlen, const char *fmt, ...)
{
	char q[FAULT_QUOTE_LEN], why[COLL_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	msg_set(err, errlen, "fault item %d %s: %s", it->index,
	    fault_quote(q, it->text, it->len), why);
	return COLL_EINVAL;
}

/* Not isspace(): the locale must not change what a spec means. */
static int
fault_isspace(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* 1 if s is a decimal number from lo to hi, digits only, into *v. */
static int
fault_number(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *v)
{
	int saved = errno, ok;
	char *end;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	*v = strtoull(s, &end, 10);
	ok = errno == 0 && *end == '\0' && *v >= lo && *v <= hi;
	errno = saved;
	return ok;
}

/* The part after ':', NUL-terminated: an action name, with =MS for delay only. */
static int
fault_parse_action(char *s, const struct fault_item *it, struct fault *f, char *err,
    size_t errlen)
{
	char *val = strchr(s, '='), q[FAULT_QUOTE_LEN];
	unsigned long long ms;
	size_t a;

	if (val != NULL)
		*val++ = '\0';
	for (a = 1; a < FAULT_NNAMES && strcmp(s, fault_names[a]) != 0; a++)
		;
	if (a == FAULT_NNAMES)
		return fault_bad(it, err, errlen, "unknown action %s: expected " FAULT_ACTIONS,
		    fault_quote(q, s, strlen(s)));
	f->action = (enum fault_action)a;
	if (a != FAULT_DELAY) {
		if (val != NULL)
			return fault_bad(it, err, errlen, "action '%s' takes no value: expected "
			    FAULT_ACTIONS, fault_names[a]);
		return COLL_OK;
	}
	if (val == NULL)
		return fault_bad(it, err, errlen, "delay needs a value: expected delay=MS with MS "
		    "from 1 to %d", FAULT_DELAY_MAX_MS);
	if (!fault_number(val, 1, FAULT_DELAY_MAX_MS, &ms))
		return fault_bad(it, err, errlen, "delay %s is not a number of milliseconds from 1 "
		    "to %d: expected delay=MS", fault_quote(q, val, strlen(val)),
		    FAULT_DELAY_MAX_MS);
	f->delay_ms = (int)ms;
	return COLL_OK;
}

/* One trimmed, NUL-terminated, non-empty item: RANK@SEQ:ACTION. */
static int
fault_parse_item(char *s, const struct fault_item *it, struct fault *f, char *err, size_t errlen)
{
	char *at = strchr(s, '@'), *colon, q[FAULT_QUOTE_LEN];
	unsigned long long v;

	if (at == NULL)
		return fault_bad(it, err, errlen, "no '@' after the rank; " FAULT_FORM);
	*at = '\0';
	if ((colon = strchr(at + 1, ':')) == NULL)
		return fault_bad(it, err, errlen, "no ':' after the seq; " FAULT_FORM);
	*colon = '\0';
	if (strcmp(s, "*") == 0)
		f->rank = FAULT_ANY_RANK;
	else if (fault_number(s, 0, FAULT_RANK_MAX, &v))
		f->rank = (int)v;
	else
		return fault_bad(it, err, errlen, "rank %s is not '*' or a number from 0 to %d; "
		    FAULT_FORM, fault_quote(q, s, strlen(s)), FAULT_RANK_MAX);
	if (!fault_number(at + 1, 1, UINT64_MAX, &v))
		return fault_bad(it, err, errlen, "seq %s is not a number from 1 to 2^64-1; "
		    FAULT_FORM, fault_quote(q, at + 1, strlen(at + 1)));
	f->seq = v;
	return fault_parse_action(colon + 1, it, f, err, errlen);
}

/*
 * The item that starts at s in the writable copy (cut at its comma) and at
 * orig in the caller's spec: trim it, refuse it empty, parse it.
 */
static int
fault_parse_one(char *s, const char *orig, int index, struct fault *f, char *err, size_t errlen)
{
	struct fault_item it = { .index = index };
	size_t lead = 0, len = strlen(s);

	while (lead < len && fault_isspace((unsigned char)s[lead]))
		lead++;
	while (len > lead && fault_isspace((unsigned char)s[len - 1]))
		len--;
	if (len == lead) {
		msg_set(err, errlen, "fault item %d is empty; " FAULT_FORM, index);
		return COLL_EINVAL;
	}
	s[len] = '\0';
	it.text = orig + lead;
	it.len = len - lead;
	return fault_parse_item(s + lead, &it, f, err, errlen);
}

static int
fault_blank(const char *s)
{
	while (fault_isspace((unsigned char)*s))
		s++;
	return *s == '\0';
}

int
fault_parse(const char *spec, struct fault_plan *plan, char *err, size_t errlen)
{
	struct fault_plan p = { 0 };
	char *copy = NULL, *s, *comma;
	size_t nitems = 1;
	int r = COLL_OK;

	plan->v = NULL;
	plan->n = 0;
	msg_set(err, errlen, "%s", "");
	if (spec == NULL)
		return COLL_OK;
	if (strnlen(spec, FAULT_SPEC_MAX + 1) > FAULT_SPEC_MAX) {
		msg_set(err, errlen, "fault spec is longer than %d characters", FAULT_SPEC_MAX);
		return COLL_EINVAL;
	}
	if (fault_blank(spec))
		return COLL_OK;
	for (s = strchr(spec, ','); s != NULL; s = strchr(s + 1, ','))
		nitems++;
	if (nitems > FAULT_ITEMS_MAX) {
		msg_set(err, errlen, "fault spec has %zu items: at most %d", nitems,
		    FAULT_ITEMS_MAX);
		return COLL_EINVAL;
	}
	copy = xstrdup(spec);
	p.v = xcalloc(nitems, sizeof *p.v);
	for (s = copy; p.n < (int)nitems; p.n++, s = comma + 1) {
		if ((comma = strchr(s, ',')) != NULL)
			*comma = '\0';
		else
			comma = s + strlen(s);
		r = fault_parse_one(s, spec + (s - copy), p.n + 1, &p.v[p.n], err, errlen);
		if (r != COLL_OK)
			goto out;
	}
	*plan = p;
	p.v = NULL;
out:
	free(p.v);
	free(copy);
	return r;
}

void
fault_plan_free(struct fault_plan *plan)
{
	free(plan->v);
	plan->v = NULL;
	plan->n = 0;
}

struct fault *
fault_take(struct fault_plan *plan, int rank, uint64_t seq, unsigned mask)
{
	for (int i = 0; plan != NULL && i < plan->n; i++) {
		struct fault *f = &plan->v[i];

		if (f->fired || f->seq != seq || (f->rank != FAULT_ANY_RANK && f->rank != rank))
			continue;
		if ((unsigned)f->action >= 32 || !(mask & FAULT_MASK(f->action)))
			continue;
		f->fired = 1;
		return f;
	}
	return NULL;
}

const char *
fault_action_name(enum fault_action a)
{
	if ((int)a < 1 || (size_t)a >= FAULT_NNAMES)
		return "unknown";
	return fault_names[a];
}
