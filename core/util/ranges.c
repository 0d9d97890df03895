#include <stdio.h>

#include "ranges.h"

void
ranges_fold(const int *ranks, int n, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (int i = 0; i < n && off < len; ) {
		int j = i;

		while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
			j++;
		off += (size_t)snprintf(out + off, len - off, "%s%d", i ? "," : "", ranks[i]);
		if (j > i && off < len)
			off += (size_t)snprintf(out + off, len - off, "-%d", ranks[j]);
		i = j + 1;
	}
}
