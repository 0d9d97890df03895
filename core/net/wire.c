/* Encoding and decoding of everything that crosses a socket. Fuzzed: fuzz/fuzz_wire.c. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "io.h"
#include "wire.h"
#include "xmalloc.h"

void
wire_buf_init(struct wire_buf *b, void *p, size_t len)
{
	b->p = p;
	b->len = len;
	b->off = 0;
	b->err = 0;
}

void
wire_put_bytes(struct wire_buf *b, const void *p, size_t n)
{
	if (b->err || b->len - b->off < n) {
		b->err = 1;
		return;
	}
	memcpy(b->p + b->off, p, n);
	b->off += n;
}

void
wire_get_bytes(struct wire_buf *b, void *p, size_t n)
{
	if (b->err || b->len - b->off < n) {
		b->err = 1;
		memset(p, 0, n);
		return;
	}
	memcpy(p, b->p + b->off, n);
	b->off += n;
}

void
wire_put_u8(struct wire_buf *b, uint8_t v)
{
	wire_put_bytes(b, &v, 1);
}

void
wire_put_u16(struct wire_buf *b, uint16_t v)
{
	uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	wire_put_bytes(b, x, 2);
}

void
wire_put_u32(struct wire_buf *b, uint32_t v)
{
	wire_put_u16(b, (uint16_t)v);
	wire_put_u16(b, (uint16_t)(v >> 16));
}

void
wire_put_u64(struct wire_buf *b, uint64_t v)
{
	wire_put_u32(b, (uint32_t)v);
	wire_put_u32(b, (uint32_t)(v >> 32));
}

uint8_t
wire_get_u8(struct wire_buf *b)
{
	uint8_t v;

	wire_get_bytes(b, &v, 1);
	return v;
}

uint16_t
wire_get_u16(struct wire_buf *b)
{
	uint8_t x[2];

	wire_get_bytes(b, x, 2);
	return (uint16_t)(x[0] | x[1] << 8);
}

uint32_t
wire_get_u32(struct wire_buf *b)
{
	uint32_t lo = wire_get_u16(b);

	return lo | (uint32_t)wire_get_u16(b) << 16;
}

uint64_t
wire_get_u64(struct wire_buf *b)
{
	uint64_t lo = wire_get_u32(b);

	return lo | (uint64_t)wire_get_u32(b) << 32;
}

void
wire_hdr_encode(uint8_t out[WIRE_HDR_LEN], uint8_t type, uint32_t len)
{
	struct wire_buf b;

	wire_buf_init(&b, out, WIRE_HDR_LEN);
	wire_put_u32(&b, WIRE_MAGIC);
	wire_put_u8(&b, WIRE_VERSION);
	wire_put_u8(&b, type);
	wire_put_u16(&b, 0);
	wire_put_u32(&b, len);
}

int
wire_hdr_decode(struct wire_hdr *h, const uint8_t in[WIRE_HDR_LEN])
{
	struct wire_buf b;

	wire_buf_init(&b, (void *)in, WIRE_HDR_LEN);
	if (wire_get_u32(&b) != WIRE_MAGIC)
		return COLL_EPROTO;
	h->version = wire_get_u8(&b);
	h->type = wire_get_u8(&b);
	(void)wire_get_u16(&b);
	h->len = wire_get_u32(&b);
	if (h->version != WIRE_VERSION)
		return COLL_EVERSION;
	if (h->type == 0 || h->type >= WIRE_TYPE_MAX || h->len > WIRE_MAX_PAYLOAD)
		return COLL_EPROTO;
	return COLL_OK;
}

static void
wire_addr_encode(struct wire_buf *b, const struct net_addr *a)
{
	uint8_t raw[16] = { 0 };

	if (a->ss.ss_family == AF_INET6)
		memcpy(raw, &((const struct sockaddr_in6 *)&a->ss)->sin6_addr, 16);
	else
		memcpy(raw, &((const struct sockaddr_in *)&a->ss)->sin_addr, 4);
	wire_put_u8(b, a->ss.ss_family == AF_INET6 ? 6 : 4);
	wire_put_u16(b, net_addr_port(a));
	wire_put_bytes(b, raw, 16);
}

static int
wire_addr_decode(struct wire_buf *b, struct net_addr *a)
{
	uint8_t fam = wire_get_u8(b), raw[16];
	uint16_t port = wire_get_u16(b);

	wire_get_bytes(b, raw, 16);
	memset(a, 0, sizeof *a);
	if (fam == 4) {
		struct sockaddr_in *in = (struct sockaddr_in *)&a->ss;
		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, raw, 4);
		a->len = sizeof *in;
	} else if (fam == 6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->ss;
		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, raw, 16);
		a->len = sizeof *in6;
	} else {
		return COLL_EPROTO;
	}
	net_addr_set_port(a, port);
	return b->err ? COLL_EPROTO : COLL_OK;
}

/* A length-prefixed string; the decoder refuses embedded NULs and over-long ones. */
static void
wire_str_encode(struct wire_buf *b, const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	wire_put_u16(b, (uint16_t)n);
	wire_put_bytes(b, s, n);
}

static int
wire_str_decode(struct wire_buf *b, char *s, size_t max)
{
	uint16_t n = wire_get_u16(b);

	if (b->err || n > max || b->len - b->off < n)
		return COLL_EPROTO;
	wire_get_bytes(b, s, n);
	s[n] = '\0';
	return strlen(s) == n ? COLL_OK : COLL_EPROTO;
}

size_t
wire_entry_encode(struct wire_buf *b, const struct wire_entry *e)
{
	size_t start = b->off;

	wire_put_u32(b, e->rank);
	wire_put_u32(b, e->nranks);
	wire_put_u32(b, e->pid);
	wire_put_u8(b, e->lanes);
	wire_put_u32(b, e->lane_min);
	wire_addr_encode(b, &e->addr);
	wire_str_encode(b, e->host, WIRE_HOST_LEN);
	return b->off - start;
}

int
wire_entry_decode(struct wire_buf *b, struct wire_entry *e)
{
	e->rank = wire_get_u32(b);
	e->nranks = wire_get_u32(b);
	e->pid = wire_get_u32(b);
	e->lanes = wire_get_u8(b);
	e->lane_min = wire_get_u32(b);
	if (wire_addr_decode(b, &e->addr) != COLL_OK)
		return COLL_EPROTO;
	if (wire_str_decode(b, e->host, WIRE_HOST_LEN) != COLL_OK)
		return COLL_EPROTO;
	if (b->err || e->nranks == 0 || e->rank >= e->nranks || e->lanes == 0 ||
	    e->lanes > WIRE_MAX_LANES || e->lane_min == 0)
		return COLL_EPROTO;
	return COLL_OK;
}

void
wire_auth_encode(struct wire_buf *b, uint8_t type, const struct wire_auth *a)
{
	if (type == WIRE_AUTH_HELLO) {
		wire_put_u64(b, a->jobid);
		wire_put_u8(b, a->role);
		wire_put_bytes(b, a->nonce, WIRE_NONCE_LEN);
	} else if (type == WIRE_AUTH_CHALLENGE) {
		wire_put_bytes(b, a->nonce, WIRE_NONCE_LEN);
		wire_put_bytes(b, a->mac, WIRE_MAC_LEN);
	} else {
		wire_put_bytes(b, a->mac, WIRE_MAC_LEN);
	}
}

int
wire_auth_decode(const uint8_t *p, size_t len, uint8_t type, struct wire_auth *a)
{
	struct wire_buf b;

	wire_buf_init(&b, (void *)p, len);
	memset(a, 0, sizeof *a);
	if (type == WIRE_AUTH_HELLO) {
		a->jobid = wire_get_u64(&b);
		a->role = wire_get_u8(&b);
		wire_get_bytes(&b, a->nonce, WIRE_NONCE_LEN);
		if (a->role < WIRE_ROLE_ROOT || a->role > WIRE_ROLE_PROXY)
			return COLL_EPROTO;
	} else if (type == WIRE_AUTH_CHALLENGE) {
		wire_get_bytes(&b, a->nonce, WIRE_NONCE_LEN);
		wire_get_bytes(&b, a->mac, WIRE_MAC_LEN);
	} else if (type == WIRE_AUTH_PROOF) {
		wire_get_bytes(&b, a->mac, WIRE_MAC_LEN);
	} else {
		return COLL_EPROTO;
	}
	return (b.err || b.off != len) ? COLL_EPROTO : COLL_OK;
}

int
wire_mux_carries(uint8_t type)
{
	/* Only a rank's root traffic rides a channel: no handshakes, no nesting. */
	return (type > WIRE_AUTH_FAIL && type < WIRE_MUX) || type == WIRE_FAILED_SET;
}

int
wire_mux_decode(const uint8_t *p, uint32_t len, struct wire_mux *m)
{
	struct wire_buf b;

	memset(m, 0, sizeof *m);
	if (len < WIRE_MUX_HDR_LEN)
		return COLL_EPROTO;
	wire_buf_init(&b, (void *)p, len);
	m->ch = wire_get_u32(&b);
	m->type = wire_get_u8(&b);
	if (!wire_mux_carries(m->type) || m->ch == 0)
		return COLL_EPROTO;
	m->p = p + WIRE_MUX_HDR_LEN;
	m->len = len - WIRE_MUX_HDR_LEN;
	return COLL_OK;
}

int
wire_mux_end_decode(const uint8_t *p, uint32_t len, uint32_t *ch, uint32_t *silent_ms)
{
	struct wire_buf b;

	*ch = *silent_ms = 0;
	if (len != 4 && len != 8)
		return COLL_EPROTO;
	wire_buf_init(&b, (void *)p, len);
	*ch = wire_get_u32(&b);
	if (len == 8 && (*silent_ms = wire_get_u32(&b)) == 0)
		return COLL_EPROTO;
	return *ch == 0 ? COLL_EPROTO : COLL_OK;
}

void
wire_note_encode(struct wire_buf *b, const struct wire_note *n)
{
	wire_put_u32(b, (uint32_t)n->code);
	wire_put_u32(b, (uint32_t)n->rank);
	wire_str_encode(b, n->msg, WIRE_MSG_LEN);
}

/* A note at b's place (FAILED_SET starts with one). */
static int
wire_note_get(struct wire_buf *b, struct wire_note *n)
{
	n->code = (int32_t)wire_get_u32(b);
	n->rank = (int32_t)wire_get_u32(b);
	if (wire_str_decode(b, n->msg, WIRE_MSG_LEN) != COLL_OK)
		return COLL_EPROTO;
	/* Codes are ours, negative; anything else from the wire is a lie. */
	if (n->code > 0 || n->code < -100 || n->rank < -1)
		return COLL_EPROTO;
	return COLL_OK;
}

int
wire_note_decode(const uint8_t *p, size_t len, struct wire_note *n)
{
	struct wire_buf b;

	wire_buf_init(&b, (void *)p, len);
	return wire_note_get(&b, n) == COLL_OK && b.off == len ? COLL_OK : COLL_EPROTO;
}

void
wire_failed_set_encode(struct wire_buf *b, const struct wire_failed_set *f)
{
	wire_note_encode(b, &f->note);
	wire_put_u32(b, f->n);
	for (uint32_t i = 0; i < f->n; i++) {
		wire_put_u32(b, f->first[i]);
		wire_put_u32(b, f->count[i]);
	}
}

int
wire_failed_set_decode(const uint8_t *p, size_t len, uint32_t nranks,
    struct wire_failed_set *f)
{
	struct wire_buf b;
	uint64_t end = 0;

	wire_buf_init(&b, (void *)p, len);
	if (wire_note_get(&b, &f->note) != COLL_OK)
		return COLL_EPROTO;
	f->n = wire_get_u32(&b);
	if (b.err || f->n == 0 || f->n > WIRE_SET_MAX_RANGES || len - b.off != (size_t)f->n * 8)
		return COLL_EPROTO;
	for (uint32_t i = 0; i < f->n; i++) {
		f->first[i] = wire_get_u32(&b);
		f->count[i] = wire_get_u32(&b);
		if (f->count[i] == 0 || f->first[i] < end ||
		    (uint64_t)f->first[i] + f->count[i] > nranks)
			return COLL_EPROTO;
		end = (uint64_t)f->first[i] + f->count[i] + 1;
	}
	if (f->note.rank != (int32_t)f->first[0])
		return COLL_EPROTO;
	return b.err ? COLL_EPROTO : COLL_OK;
}

void
wire_join_encode(struct wire_buf *b, const struct wire_join *j)
{
	wire_put_u64(b, j->commid);
	wire_put_u32(b, j->keepalive_ms);
	wire_put_u32(b, j->keepalive_limit);
	wire_put_u32(b, j->base);
	wire_put_u32(b, j->nroots);
	wire_entry_encode(b, &j->e);
}

int
wire_join_decode(const uint8_t *p, size_t len, struct wire_join *j)
{
	struct wire_buf b;

	wire_buf_init(&b, (void *)p, len);
	j->commid = wire_get_u64(&b);
	j->keepalive_ms = wire_get_u32(&b);
	j->keepalive_limit = wire_get_u32(&b);
	j->base = wire_get_u32(&b);
	j->nroots = wire_get_u32(&b);
	if (wire_entry_decode(&b, &j->e) != COLL_OK || b.off != len)
		return COLL_EPROTO;
	if (j->e.nranks > WIRE_MAX_RANKS || j->base > WIRE_MAX_RANKS - j->e.nranks ||
	    j->nroots == 0 || j->nroots > WIRE_MAX_RANKS || j->keepalive_ms == 0 ||
	    j->keepalive_limit == 0)
		return COLL_EPROTO;
	return COLL_OK;
}

size_t
wire_book_cap(uint32_t count)
{
	return 12 + (size_t)count * WIRE_ENTRY_MAX;
}

void
wire_book_encode(struct wire_buf *b, uint32_t nranks, uint32_t first, uint32_t count,
    const struct wire_entry *book)
{
	wire_put_u32(b, nranks);
	wire_put_u32(b, first);
	wire_put_u32(b, count);
	for (uint32_t i = first; i < first + count; i++)
		wire_entry_encode(b, &book[i]);
}

int
wire_book_decode(const uint8_t *p, size_t len, uint32_t nranks, struct wire_entry *book,
    uint32_t *first, uint32_t *count)
{
	struct wire_buf b;
	uint32_t f, n;

	wire_buf_init(&b, (void *)p, len);
	if (wire_get_u32(&b) != nranks)
		return COLL_EPROTO;
	f = wire_get_u32(&b);
	n = wire_get_u32(&b);
	if (b.err || n > WIRE_BOOK_CHUNK || f > nranks || n > nranks - f)
		return COLL_EPROTO;
	for (uint32_t i = f; i < f + n; i++) {
		if (wire_entry_decode(&b, &book[i]) != COLL_OK)
			return COLL_EPROTO;
		if (book[i].rank != i || book[i].nranks != nranks)
			return COLL_EPROTO;
	}
	*first = f;
	*count = n;
	return b.off == len ? COLL_OK : COLL_EPROTO;
}

static void
wire_ranks_encode(struct wire_buf *b, uint32_t n, const uint32_t *v)
{
	wire_put_u32(b, n);
	for (uint32_t i = 0; i < n; i++)
		wire_put_u32(b, v[i]);
}

/* A rank list: bounded by what is left of the payload and by nranks. */
static int
wire_ranks_decode(struct wire_buf *b, uint32_t nranks, uint32_t *n, uint32_t **v)
{
	*n = wire_get_u32(b);
	*v = NULL;
	if (b->err || *n > nranks || (size_t)*n * 4 > b->len - b->off)
		return COLL_EPROTO;
	*v = xcalloc(*n ? *n : 1, sizeof **v);
	for (uint32_t i = 0; i < *n; i++)
		if (((*v)[i] = wire_get_u32(b)) >= nranks)
			return COLL_EPROTO;
	return b->err ? COLL_EPROTO : COLL_OK;
}

void
wire_regroup_encode(struct wire_buf *b, const struct wire_regroup *r)
{
	wire_put_u32(b, r->kind);
	wire_put_u32(b, (uint32_t)r->color);
	wire_put_u32(b, (uint32_t)r->key);
	wire_ranks_encode(b, r->nexcl, r->excl);
}

int
wire_regroup_decode(const uint8_t *p, size_t len, uint32_t nranks, struct wire_regroup *r)
{
	struct wire_buf b;

	wire_buf_init(&b, (void *)p, len);
	r->kind = wire_get_u32(&b);
	r->color = (int32_t)wire_get_u32(&b);
	r->key = (int32_t)wire_get_u32(&b);
	if (wire_ranks_decode(&b, nranks, &r->nexcl, &r->excl) != COLL_OK || b.off != len)
		return COLL_EPROTO;
	if (r->kind != WIRE_RG_SHRINK && r->kind != WIRE_RG_SPLIT)
		return COLL_EPROTO;
	if (r->color < WIRE_NO_COLOR)
		return COLL_EPROTO;
	return COLL_OK;
}

void
wire_regroup_done_encode(struct wire_buf *b, const struct wire_regroup_done *d)
{
	wire_put_u32(b, (uint32_t)d->code);
	wire_put_u64(b, d->commid);
	wire_put_u32(b, (uint32_t)d->rank);
	wire_put_u32(b, d->nranks);
	wire_ranks_encode(b, d->nexcl, d->excl);
	wire_str_encode(b, d->msg, WIRE_MSG_LEN);
}

int
wire_regroup_done_decode(const uint8_t *p, size_t len, uint32_t nranks,
    struct wire_regroup_done *d)
{
	struct wire_buf b;

	wire_buf_init(&b, (void *)p, len);
	d->code = (int32_t)wire_get_u32(&b);
	d->commid = wire_get_u64(&b);
	d->rank = (int32_t)wire_get_u32(&b);
	d->nranks = wire_get_u32(&b);
	if (wire_ranks_decode(&b, nranks, &d->nexcl, &d->excl) != COLL_OK ||
	    wire_str_decode(&b, d->msg, WIRE_MSG_LEN) != COLL_OK || b.off != len)
		return COLL_EPROTO;
	if (d->code > 0 || d->code < -100 || d->rank < -1 || d->nranks > nranks ||
	    (d->rank >= 0 && (uint32_t)d->rank >= d->nranks))
		return COLL_EPROTO;
	return COLL_OK;
}

void
wire_data_hdr_encode(uint8_t out[WIRE_DATA_HDR_LEN], const struct wire_data_hdr *h)
{
	struct wire_buf b;

	wire_buf_init(&b, out, WIRE_DATA_HDR_LEN);
	wire_put_u32(&b, WIRE_DATA_MAGIC);
	wire_put_u8(&b, h->kind);
	wire_put_u8(&b, h->tag);
	wire_put_u16(&b, 0);
	wire_put_u64(&b, h->seq);
	wire_put_u64(&b, h->len);
}

int
wire_data_hdr_decode(struct wire_data_hdr *h, const uint8_t in[WIRE_DATA_HDR_LEN])
{
	struct wire_buf b;

	wire_buf_init(&b, (void *)in, WIRE_DATA_HDR_LEN);
	if (wire_get_u32(&b) != WIRE_DATA_MAGIC)
		return COLL_EPROTO;
	h->kind = wire_get_u8(&b);
	h->tag = wire_get_u8(&b);
	(void)wire_get_u16(&b);
	h->seq = wire_get_u64(&b);
	h->len = wire_get_u64(&b);
	return COLL_OK;
}

int
wire_send(int fd, uint8_t type, const void *payload, uint32_t len, uint64_t deadline_ms,
    int abort_fd)
{
	uint8_t hdr[WIRE_HDR_LEN];
	int r;

	wire_hdr_encode(hdr, type, len);
	r = io_send_all(fd, hdr, sizeof hdr, deadline_ms, abort_fd);
	if (r == COLL_OK && len > 0)
		r = io_send_all(fd, payload, len, deadline_ms, abort_fd);
	return r;
}

int
wire_recv(int fd, struct wire_hdr *h, uint8_t **payload, uint32_t max, uint64_t deadline_ms,
    int abort_fd)
{
	uint8_t hdr[WIRE_HDR_LEN];
	int r;

	*payload = NULL;
	if ((r = io_recv_all(fd, hdr, sizeof hdr, deadline_ms, abort_fd)) != COLL_OK)
		return r;
	if ((r = wire_hdr_decode(h, hdr)) != COLL_OK)
		return r;
	if (h->len > max)
		return COLL_ETOOBIG;
	*payload = xmalloc(h->len + 1);
	r = io_recv_all(fd, *payload, h->len, deadline_ms, abort_fd);
	if (r != COLL_OK) {
		free(*payload);
		*payload = NULL;
	}
	return r;
}
