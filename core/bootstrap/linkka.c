/* Keep-alives of a proxy's link, the same at both its ends (linkka.h). */
#include "linkka.h"

void
linkka_join(struct linkka *ka, const struct wire_join *j, uint64_t now)
{
	uint64_t win;

	if (j->keepalive_ms == 0)
		return;
	win = (uint64_t)j->keepalive_ms * (j->keepalive_limit > 1 ? j->keepalive_limit : 2);
	/* Judged from its first JOIN on: bytes that came before it are no life of it. */
	if (ka->ms == 0)
		ka->last_rx = now;
	if (ka->ms == 0 || j->keepalive_ms < ka->ms) {
		ka->ms = j->keepalive_ms;
		ka->next_ping = now + ka->ms;
	}
	if (win > ka->win)
		ka->win = win;
}

uint64_t
linkka_wait(const struct linkka *ka, uint64_t now)
{
	if (ka->ms == 0)
		return UINT64_MAX;
	return ka->next_ping > now ? ka->next_ping - now : 0;
}

uint64_t
linkka_tick(struct linkka *ka, struct wconn *w, uint64_t now)
{
	if (w->bytes_received != ka->seen) {
		ka->seen = w->bytes_received;
		ka->last_rx = now;
	}
	if (ka->ms == 0)
		return 0;
	if (now > ka->last_rx && now - ka->last_rx > ka->win)
		return now - ka->last_rx;
	if (now >= ka->next_ping) {
		wconn_queue(w, WIRE_PING, NULL, 0);
		/* On the pace, not from whenever this tick ran: a late tick is not a later pace. */
		ka->next_ping += ka->ms;
		if (ka->next_ping <= now)
			ka->next_ping = now + ka->ms;
	}
	return 0;
}
