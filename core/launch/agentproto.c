/*
 * Records of the agent protocol (agentproto.h). The parser trusts nothing:
 * a record is its type letter, one space and a payload; numbers must be
 * whole decimal numbers within the range their type allows.
 */
#include <stdio.h>
#include <string.h>

#include "agentproto.h"
#include "err.h"

struct agentproto_type {
	char letter;
	enum agentproto_kind kind;
	int stream;
	int more;
	long min, max;		/* numbers only */
};

static const struct agentproto_type agentproto_types[] = {
	{ 'o', AGENTPROTO_OUTPUT, 1, 0, 0, 0 },
	{ 'O', AGENTPROTO_OUTPUT, 1, 1, 0, 0 },
	{ 'e', AGENTPROTO_OUTPUT, 2, 0, 0, 0 },
	{ 'E', AGENTPROTO_OUTPUT, 2, 1, 0, 0 },
	/* pid 1 (init) would make a group signal reach everything: never valid. */
	{ 'p', AGENTPROTO_PID, 0, 0, 2, 0x7fffffff },
	{ 'x', AGENTPROTO_EXIT, 0, 0, 0, 255 },
	{ 's', AGENTPROTO_SIGNAL, 0, 0, 1, 64 },
	{ 'k', AGENTPROTO_KILL, 0, 0, 1, 64 },
	/* Slurm's own steps (batch, extern, ...) sit at the top of 32 bits: never ours. */
	{ 't', AGENTPROTO_STEP, 0, 0, 0, 0x7fffffff },
};

#define AGENTPROTO_NTYPES (sizeof agentproto_types / sizeof agentproto_types[0])

/* A whole decimal number in [min, max], no sign, no leading zeros beyond "0". */
static int
agentproto_number(const char *s, size_t len, long min, long max, long *out)
{
	long v = 0;

	if (len == 0 || len > 10 || (len > 1 && s[0] == '0'))
		return COLL_EPROTO;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return COLL_EPROTO;
		v = v * 10 + (s[i] - '0');
	}
	if (v < min || v > max)
		return COLL_EPROTO;
	*out = v;
	return COLL_OK;
}

int
agentproto_parse(const char *line, size_t len, struct agentproto_msg *m)
{
	const struct agentproto_type *t = NULL;

	if (len < 2 || len > AGENTPROTO_LINE - 1 || line[1] != ' ')
		return COLL_EPROTO;
	for (size_t i = 0; i < AGENTPROTO_NTYPES; i++)
		if (agentproto_types[i].letter == line[0])
			t = &agentproto_types[i];
	if (t == NULL)
		return COLL_EPROTO;
	*m = (struct agentproto_msg){ .kind = t->kind, .stream = t->stream, .more = t->more,
	    .text = line + 2, .len = len - 2 };
	if (t->kind == AGENTPROTO_OUTPUT)
		return len - 2 <= AGENTPROTO_PIECE && memchr(line, '\n', len) == NULL ?
		    COLL_OK : COLL_EPROTO;
	return agentproto_number(line + 2, len - 2, t->min, t->max, &m->value);
}

size_t
agentproto_encode_output(char *out, int stream, const char *text, size_t len, int ends_line)
{
	size_t n = 0;

	do {
		size_t k = len < AGENTPROTO_PIECE ? len : AGENTPROTO_PIECE;
		int last = k == len;

		out[n++] = (char)(stream == 2 ? (last && ends_line ? 'e' : 'E') :
		    (last && ends_line ? 'o' : 'O'));
		out[n++] = ' ';
		memcpy(out + n, text, k);
		n += k;
		out[n++] = '\n';
		text += k;
		len -= k;
	} while (len > 0);
	return n;
}

size_t
agentproto_encode_number(char *out, enum agentproto_kind kind, long value)
{
	char letter = kind == AGENTPROTO_PID ? 'p' : kind == AGENTPROTO_EXIT ? 'x' :
	    kind == AGENTPROTO_SIGNAL ? 's' : kind == AGENTPROTO_STEP ? 't' : 'k';

	return (size_t)snprintf(out, AGENTPROTO_LINE, "%c %ld\n", letter, value);
}
