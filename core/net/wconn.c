/* Buffered, non-blocking frame connections (see wconn.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "err.h"
#include "wconn.h"
#include "xmalloc.h"

#define WCONN_READ 4096	/* control frames are small: a connection idles in one page */

void
wconn_init(struct wconn *w, int fd, uint32_t max)
{
	memset(w, 0, sizeof *w);
	w->fd = fd;
	w->max = max;
}

void
wconn_free(struct wconn *w)
{
	free(w->in);
	free(w->out);
	w->in = w->out = NULL;
	w->in_len = w->in_cap = w->out_len = w->out_off = w->out_cap = 0;
}

static void
wconn_reserve(uint8_t **buf, size_t *cap, size_t need)
{
	size_t n = *cap ? *cap : 4096;

	if (need <= *cap)
		return;
	while (n < need)
		n *= 2;
	*buf = xreallocarray(*buf, n, 1);
	*cap = n;
}

int
wconn_fill(struct wconn *w)
{
	ssize_t n;

	/* Frames handed out so far are done with: slide the rest down. */
	if (w->in_off > 0) {
		memmove(w->in, w->in + w->in_off, w->in_len - w->in_off);
		w->in_len -= w->in_off;
		w->in_off = 0;
	}
	for (;;) {
		wconn_reserve(&w->in, &w->in_cap, w->in_len + WCONN_READ);
		n = recv(w->fd, w->in + w->in_len, w->in_cap - w->in_len, MSG_DONTWAIT);
		if (n > 0) {
			w->in_len += (size_t)n;
			w->bytes_received += (uint64_t)n;
			/* Stop at a frame's worth: the caller parses before reading more. */
			if (w->in_len >= (size_t)w->max + WIRE_HDR_LEN)
				return COLL_OK;
			continue;
		}
		if (n == 0)
			return COLL_EPEER;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return COLL_OK;
		if (errno == EINTR)
			continue;
		return errno == ECONNRESET ? COLL_EPEER : COLL_ESYS;
	}
}

int
wconn_next(struct wconn *w, struct wire_hdr *h, const uint8_t **payload)
{
	size_t have = w->in_len - w->in_off;
	int r;

	if (have < WIRE_HDR_LEN)
		return COLL_EINPROGRESS;
	if ((r = wire_hdr_decode(h, w->in + w->in_off)) != COLL_OK)
		return r;
	if (h->len > w->max)
		return COLL_ETOOBIG;
	if (have < WIRE_HDR_LEN + (size_t)h->len)
		return COLL_EINPROGRESS;
	*payload = w->in + w->in_off + WIRE_HDR_LEN;
	w->in_off += WIRE_HDR_LEN + (size_t)h->len;
	return COLL_OK;
}

/* One frame whose payload is head (hlen bytes) then payload (len): copied once, in place. */
static void
wconn_queue_parts(struct wconn *w, uint8_t type, const uint8_t *head, uint32_t hlen,
    const void *payload, uint32_t len)
{
	uint8_t *at;

	if (w->out_off > 0 && w->out_off == w->out_len)
		w->out_off = w->out_len = 0;
	wconn_reserve(&w->out, &w->out_cap, w->out_len + WIRE_HDR_LEN + hlen + len);
	at = w->out + w->out_len;
	wire_hdr_encode(at, type, hlen + len);
	if (hlen > 0)
		memcpy(at + WIRE_HDR_LEN, head, hlen);
	if (len > 0)
		memcpy(at + WIRE_HDR_LEN + hlen, payload, len);
	w->out_len += WIRE_HDR_LEN + hlen + len;
}

void
wconn_queue(struct wconn *w, uint8_t type, const void *payload, uint32_t len)
{
	wconn_queue_parts(w, type, NULL, 0, payload, len);
}

void
wconn_queue_mux(struct wconn *w, uint32_t ch, uint8_t type, const void *payload, uint32_t len)
{
	uint8_t head[WIRE_MUX_HDR_LEN];
	struct wire_buf b;

	wire_buf_init(&b, head, sizeof head);
	wire_put_u32(&b, ch);
	wire_put_u8(&b, type);
	wconn_queue_parts(w, WIRE_MUX, head, sizeof head, payload, len);
}

void
wconn_queue_mux_end(struct wconn *w, uint32_t ch, uint32_t silent_ms)
{
	uint8_t buf[8];
	struct wire_buf b;

	wire_buf_init(&b, buf, sizeof buf);
	wire_put_u32(&b, ch);
	if (silent_ms > 0)
		wire_put_u32(&b, silent_ms);
	wconn_queue(w, WIRE_MUX_END, buf, (uint32_t)b.off);
}

int
wconn_flush(struct wconn *w)
{
	ssize_t n;

	while (w->out_off < w->out_len) {
		n = send(w->fd, w->out + w->out_off, w->out_len - w->out_off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			w->out_off += (size_t)n;
			w->bytes_sent += (uint64_t)n;
		} else if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return COLL_OK;
		} else if (!(n == -1 && errno == EINTR)) {
			return (errno == EPIPE || errno == ECONNRESET) ? COLL_EPEER : COLL_ESYS;
		}
	}
	w->out_off = w->out_len = 0;
	return COLL_OK;
}

size_t
wconn_pending(const struct wconn *w)
{
	return w->out_len - w->out_off;
}
