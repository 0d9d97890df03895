#include <string.h>

#include "suggest.h"

#define SUGGEST_MAX 64	/* longer words are not compared: no option or variable is that long */

int
suggest_distance(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	int d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];

	if (alen > SUGGEST_MAX || blen > SUGGEST_MAX)
		return 99;
	for (size_t i = 0; i <= alen; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= blen; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= alen; i++) {
		for (size_t j = 1; j <= blen; j++) {
			int cost = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			/* Two letters swapped is one slip, not two (Damerau). */
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[alen][blen] > 99 ? 99 : d[alen][blen];
}

/* How many edits still read as a slip of the fingers on a word this long. */
static int
suggest_limit(size_t len)
{
	return len <= 4 ? 1 : len < 9 ? 2 : 3;
}

int
suggest_close(const char *word, size_t len, const char *known)
{
	if (len >= 3 && len < strlen(known) && strncmp(word, known, len) == 0)
		return 1;
	return suggest_distance(word, len, known) <= suggest_limit(strlen(known));
}

void
suggest_init(struct suggest *s, const char *word, size_t len)
{
	s->word = word;
	s->len = len;
	s->best = NULL;
	s->dist = 100;
}

void
suggest_offer(struct suggest *s, const char *known)
{
	int d;

	if (known == NULL || !suggest_close(s->word, s->len, known))
		return;
	/* A start of the word counts as one edit: --iter is nearest --iters. */
	d = strncmp(s->word, known, s->len) == 0 ? 1 : suggest_distance(s->word, s->len, known);
	if (d < s->dist) {
		s->best = known;
		s->dist = d;
	}
}
