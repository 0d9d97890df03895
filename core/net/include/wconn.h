/*
 * A framed connection driven by a poll loop: bytes are read as they come and
 * handed out one whole frame at a time, and frames to send wait in a queue
 * that drains whenever the socket can take more. Nothing here ever blocks, so
 * one slow or silent peer cannot hold up a loop that serves thousands (the
 * root service) or the thread that must answer the root (a rank's service).
 */
#ifndef COLL_WCONN_H
#define COLL_WCONN_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct wconn {
	int fd;
	uint32_t max;		/* largest payload accepted */
	uint8_t *in;
	size_t in_off;		/* frames before this were handed out */
	size_t in_len;
	size_t in_cap;
	uint8_t *out;
	size_t out_off;		/* sent so far */
	size_t out_len;
	size_t out_cap;
	uint64_t bytes_sent;
	uint64_t bytes_received;
};

void wconn_init(struct wconn *w, int fd, uint32_t max);
/* Free the buffers; the fd is the caller's. */
void wconn_free(struct wconn *w);
/* Read what the socket has: COLL_OK, or COLL_EPEER on EOF or reset, COLL_ESYS. */
int wconn_fill(struct wconn *w);
/*
 * The next whole frame from what was read: COLL_OK with *h and *payload (a
 * pointer into the buffer, valid until the next wconn_fill), COLL_EINPROGRESS when
 * none is complete yet, COLL_EPROTO / COLL_ETOOBIG / COLL_EVERSION for bytes
 * that are not a frame of ours.
 */
int wconn_next(struct wconn *w, struct wire_hdr *h, const uint8_t **payload);
/* Queue one frame. */
void wconn_queue(struct wconn *w, uint8_t type, const void *payload, uint32_t len);
/*
 * Queue one frame of type inside a MUX frame on channel ch; or a MUX_END of
 * ch (silent_ms > 0: its rank was silent that long; wire.h).
 */
void wconn_queue_mux(struct wconn *w, uint32_t ch, uint8_t type, const void *payload,
    uint32_t len);
void wconn_queue_mux_end(struct wconn *w, uint32_t ch, uint32_t silent_ms);
/* Send what the socket takes now: COLL_OK, COLL_EPEER, COLL_ESYS. */
int wconn_flush(struct wconn *w);
/* Bytes still queued. */
size_t wconn_pending(const struct wconn *w);

#endif
