/*
 * Fuzz the tree launch's protocol (treeproto.h): whatever bytes come up from
 * a relay, or down to one as its plan, every line that parses stays within
 * its job's ranks and hosts, its text within the line, and a plan never
 * places a rank twice or outside the job.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "linebuf.h"
#include "treeproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_RANKS 64
#define FUZZ_HOSTS 16

struct fuzz_ctx {
	int rank_host[FUZZ_RANKS];
};

static void
fuzz_line(void *arg, const char *line, size_t len)
{
	struct fuzz_ctx *x = arg;
	struct treeproto_up u;
	int before[FUZZ_RANKS], host;
	char name[32];

	if (treeproto_parse_up(line, len, FUZZ_RANKS, FUZZ_HOSTS, &u) == COLL_OK) {
		if (u.text < line || u.text + u.len > line + len)
			abort();
		if (u.kind == TREEPROTO_HOST ? (u.host < 0 || u.host >= FUZZ_HOSTS) :
		    (u.rank < 0 || u.rank >= FUZZ_RANKS))
			abort();
	}
	memcpy(before, x->rank_host, sizeof before);
	if (treeproto_parse_host(line, len, FUZZ_RANKS, FUZZ_HOSTS, &host, name, sizeof name,
	    x->rank_host) == COLL_OK) {
		if (host < 0 || host >= FUZZ_HOSTS || memchr(name, '\0', sizeof name) == NULL)
			abort();
		for (int r = 0; r < FUZZ_RANKS; r++)
			if (before[r] != -1 && x->rank_host[r] != before[r])
				abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_ctx x;
	struct linebuf lb = { 0 };

	for (int r = 0; r < FUZZ_RANKS; r++)
		x.rank_host[r] = -1;
	linebuf_feed(&lb, (const char *)data, size, fuzz_line, &x);
	linebuf_flush(&lb, fuzz_line, &x);
	linebuf_free(&lb);
	return 0;
}
