/*
 * Fuzz the launcher's end of the agent protocol: whatever bytes arrive on an
 * agent's stdout (or srun's, or a hostile remote shell's), lines are parsed
 * and reassembled without overrunning anything, every record that parses is
 * within its bounds, and a pid the launcher keeps is never 0 or 1.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentproto.h"
#include "agentrx.h"
#include "err.h"
#include "linebuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_output(void *arg, int rank, int stream, const char *line, size_t len)
{
	(void)arg;
	if (rank != 3 || (stream != 1 && stream != 2) || len > LINEBUF_MAX ||
	    (len > 0 && line == NULL))
		abort();
}

static void
fuzz_line(void *arg, const char *line, size_t len)
{
	struct agentrx *rx = arg;
	struct agentproto_msg m;

	if (agentproto_parse(line, len, &m) == COLL_OK && m.kind == AGENTPROTO_OUTPUT &&
	    (m.len > AGENTPROTO_PIECE || memchr(m.text, '\n', m.len) != NULL))
		abort();
	agentrx_line(rx, line, len);
	if (rx->pid == 0 || rx->pid == 1)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct launch l = { .cb = { .output = fuzz_output } };
	struct linebuf lb = { 0 };
	struct agentrx rx;

	agentrx_init(&rx, &l, 3);
	linebuf_feed(&lb, (const char *)data, size, fuzz_line, &rx);
	linebuf_flush(&lb, fuzz_line, &rx);
	agentrx_flush(&rx);
	agentrx_free(&rx);
	linebuf_free(&lb);
	return 0;
}
