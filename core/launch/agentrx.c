#include "agentproto.h"
#include "agentrx.h"
#include "err.h"

struct agentrx_ctx {
	struct agentrx *rx;
	int stream;
};

void
agentrx_init(struct agentrx *rx, struct launch *l, int rank)
{
	*rx = (struct agentrx){ .l = l, .rank = rank, .pid = -1, .step = -1 };
}

static void
agentrx_emit(void *arg, const char *line, size_t len)
{
	struct agentrx_ctx *x = arg;
	struct launch *l = x->rx->l;

	l->cb.output(l->cb.arg, x->rx->rank, x->stream, line, len);
}

static void
agentrx_output(struct agentrx *rx, const struct agentproto_msg *m)
{
	struct agentrx_ctx x = { rx, m->stream };
	struct linebuf *acc = &rx->acc[m->stream - 1];

	/* Pieces gather in the line buffer; the end of a line is a newline there. */
	linebuf_feed(acc, m->text, m->len, agentrx_emit, &x);
	if (!m->more)
		linebuf_feed(acc, "\n", 1, agentrx_emit, &x);
}

void
agentrx_line(struct agentrx *rx, const char *line, size_t len)
{
	struct agentproto_msg m;

	/* 'k' goes only to the agent: coming from it, it is not a record either. */
	if (agentproto_parse(line, len, &m) != COLL_OK || m.kind == AGENTPROTO_KILL) {
		rx->l->cb.output(rx->l->cb.arg, rx->rank, LAUNCH_STDOUT, line, len);
		return;
	}
	switch (m.kind) {
	case AGENTPROTO_OUTPUT:
		agentrx_output(rx, &m);
		break;
	case AGENTPROTO_PID:
		rx->pid = (pid_t)m.value;
		break;
	case AGENTPROTO_STEP:
		rx->step = m.value;
		break;
	case AGENTPROTO_EXIT:
	case AGENTPROTO_SIGNAL:
		rx->ended = 1;
		rx->state = m.kind == AGENTPROTO_EXIT ? LAUNCH_EXITED : LAUNCH_SIGNALED;
		rx->code = (int)m.value;
		break;
	default:
		break;
	}
}

void
agentrx_flush(struct agentrx *rx)
{
	for (int s = 0; s < 2; s++) {
		struct agentrx_ctx x = { rx, s + 1 };

		linebuf_flush(&rx->acc[s], agentrx_emit, &x);
	}
}

void
agentrx_free(struct agentrx *rx)
{
	linebuf_free(&rx->acc[0]);
	linebuf_free(&rx->acc[1]);
}
