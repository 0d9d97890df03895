/*
 * The wire format: the bounded cursor, frame and data headers, and every
 * payload decoder, each with the inputs it must accept and those it must refuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>

#include "err.h"
#include "net.h"
#include "wire.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* wire_buf */

static void
test_wire_buf_round_trip(void **state)
{
	static const struct {
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		const char *bytes;
	} rows[] = {
		{ 0, 0, 0, 0, "" },
		{ 1, 2, 3, 4, "x" },
		{ 0xff, 0xffff, 0xffffffffu, 0xffffffffffffffffull, "hello" },
		{ 0x80, 0x8001, 0x80000001u, 0x8000000000000001ull, "\x01\x02\x03" },
		{ 0x12, 0x1234, 0x12345678u, 0x123456789abcdef0ull, "0123456789abcdef" },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		uint8_t buf[64], out[32];
		size_t n = strlen(rows[i].bytes);
		struct wire_buf b;

		wire_buf_init(&b, buf, sizeof buf);
		wire_put_u8(&b, rows[i].u8);
		wire_put_u16(&b, rows[i].u16);
		wire_put_u32(&b, rows[i].u32);
		wire_put_u64(&b, rows[i].u64);
		wire_put_bytes(&b, rows[i].bytes, n);
		assert_int_equal(b.err, 0);
		assert_int_equal(b.off, 1 + 2 + 4 + 8 + n);

		wire_buf_init(&b, buf, 15 + n);
		assert_int_equal(wire_get_u8(&b), rows[i].u8);
		assert_int_equal(wire_get_u16(&b), rows[i].u16);
		assert_int_equal(wire_get_u32(&b), rows[i].u32);
		assert_true(wire_get_u64(&b) == rows[i].u64);
		wire_get_bytes(&b, out, n);
		assert_memory_equal(out, rows[i].bytes, n);
		assert_int_equal(b.err, 0);
		assert_int_equal(b.off, b.len);
	}
}

/* Integers are little-endian on the wire whatever the host order. */
static void
test_wire_buf_little_endian(void **state)
{
	static const uint8_t want[] = {
		0xab,
		0x34, 0x12,
		0x78, 0x56, 0x34, 0x12,
		0xf0, 0xde, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12,
	};
	uint8_t buf[sizeof want];
	struct wire_buf b;

	wire_buf_init(&b, buf, sizeof buf);
	wire_put_u8(&b, 0xab);
	wire_put_u16(&b, 0x1234);
	wire_put_u32(&b, 0x12345678u);
	wire_put_u64(&b, 0x123456789abcdef0ull);
	assert_int_equal(b.err, 0);
	assert_memory_equal(buf, want, sizeof want);
}

/* Writing past the end sets err, writes nothing past the end, and stays failed. */
static void
test_wire_buf_put_overrun(void **state)
{
	static const struct {
		size_t cap;	/* room in the buffer */
		int width;	/* 1, 2, 4, 8: the put that overruns */
	} rows[] = {
		{ 0, 1 }, { 0, 2 }, { 1, 2 }, { 0, 4 }, { 3, 4 }, { 0, 8 }, { 7, 8 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		uint8_t buf[16];
		struct wire_buf b;

		memset(buf, 0xee, sizeof buf);
		wire_buf_init(&b, buf, rows[i].cap);
		switch (rows[i].width) {
		case 1: wire_put_u8(&b, 0x11); break;
		case 2: wire_put_u16(&b, 0x1111); break;
		case 4: wire_put_u32(&b, 0x11111111u); break;
		default: wire_put_u64(&b, 0x1111111111111111ull); break;
		}
		assert_int_equal(b.err, 1);
		assert_true(b.off <= rows[i].cap);
		for (size_t j = rows[i].cap; j < sizeof buf; j++)
			assert_int_equal(buf[j], 0xee);
		/* Once failed, even a put that fits is refused. */
		wire_buf_init(&b, buf, 8);
		b.err = 1;
		wire_put_u8(&b, 1);
		assert_int_equal(b.off, 0);
		assert_int_equal(b.err, 1);
	}
}

/* Reading past the end sets err and yields zero, and every later read yields zero. */
static void
test_wire_buf_get_overrun(void **state)
{
	uint8_t buf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[4];
	struct wire_buf b;

	wire_buf_init(&b, buf, 3);
	assert_int_equal(wire_get_u16(&b), 0x0201);
	assert_int_equal(wire_get_u16(&b), 0);
	assert_int_equal(b.err, 1);
	assert_int_equal(wire_get_u8(&b), 0);
	assert_int_equal(wire_get_u32(&b), 0);
	assert_true(wire_get_u64(&b) == 0);
	memset(out, 0xee, sizeof out);
	wire_get_bytes(&b, out, sizeof out);
	assert_memory_equal(out, "\0\0\0\0", 4);
	assert_int_equal(b.err, 1);

	/* A u64 with only 7 bytes left overruns too. */
	wire_buf_init(&b, buf, 7);
	(void)wire_get_u64(&b);
	assert_int_equal(b.err, 1);
}

/* Frame header */

static void
test_hdr_round_trip(void **state)
{
	static const struct {
		uint8_t type;
		uint32_t len;
	} rows[] = {
		{ WIRE_AUTH_HELLO, 0 }, { WIRE_AUTH_CHALLENGE, 48 }, { WIRE_JOIN, 100 },
		{ WIRE_BOOK, 12345 }, { WIRE_PEER_HELLO, 4 }, { WIRE_TYPE_MAX - 1, 1 },
		{ WIRE_FAILED, WIRE_MAX_PAYLOAD },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		uint8_t raw[WIRE_HDR_LEN];
		struct wire_hdr h;

		wire_hdr_encode(raw, rows[i].type, rows[i].len);
		assert_memory_equal(raw, "COLL", 4);
		assert_int_equal(wire_hdr_decode(&h, raw), COLL_OK);
		assert_int_equal(h.version, WIRE_VERSION);
		assert_int_equal(h.type, rows[i].type);
		assert_int_equal(h.len, rows[i].len);
	}
}

static void
test_hdr_rejects(void **state)
{
	static const struct {
		const char *what;
		uint8_t raw[WIRE_HDR_LEN];
		int want;
	} rows[] = {
		{ "zero magic", { 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0 }, COLL_EPROTO },
		{ "data magic", { 'C', 'D', 'A', 'T', WIRE_VERSION, 1, 0, 0, 0, 0, 0, 0 }, COLL_EPROTO },
		{ "swapped magic", { 'L', 'L', 'O', 'C', WIRE_VERSION, 1, 0, 0, 0, 0, 0, 0 }, COLL_EPROTO },
		{ "http", { 'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1' },
		  COLL_EPROTO },
		{ "version 0", { 'C', 'O', 'L', 'L', 0, 1, 0, 0, 0, 0, 0, 0 }, COLL_EVERSION },
		{ "version 1 (MACs without side and role)", { 'C', 'O', 'L', 'L', 1, 1, 0, 0, 0, 0,
		  0, 0 }, COLL_EVERSION },
		{ "version 3 (joins without a block's base)", { 'C', 'O', 'L', 'L', 3, 1, 0, 0, 0,
		  0, 0, 0 }, COLL_EVERSION },
		{ "version 4 (entries without lanes)", { 'C', 'O', 'L', 'L', 4, 1, 0, 0, 0, 0, 0,
		  0 }, COLL_EVERSION },
		{ "version 5 (no proxies' frames)", { 'C', 'O', 'L', 'L', 5, 1, 0, 0, 0, 0, 0, 0 },
		  COLL_EVERSION },
		{ "version 6 (proxies pass every rank's keep-alives)", { 'C', 'O', 'L', 'L', 6, 1, 0,
		  0, 0, 0, 0, 0 }, COLL_EVERSION },
		{ "version 7 (no FAILED_SET)", { 'C', 'O', 'L', 'L', 7, 1, 0, 0, 0, 0, 0, 0 },
		  COLL_EVERSION },
		{ "version 9", { 'C', 'O', 'L', 'L', 9, 1, 0, 0, 0, 0, 0, 0 }, COLL_EVERSION },
		{ "version 255", { 'C', 'O', 'L', 'L', 255, 1, 0, 0, 0, 0, 0, 0 },
		  COLL_EVERSION },
		{ "type 0", { 'C', 'O', 'L', 'L', WIRE_VERSION, 0, 0, 0, 0, 0, 0, 0 }, COLL_EPROTO },
		{ "type max", { 'C', 'O', 'L', 'L', WIRE_VERSION, WIRE_TYPE_MAX, 0, 0, 0, 0, 0, 0 },
		  COLL_EPROTO },
		{ "type 255", { 'C', 'O', 'L', 'L', WIRE_VERSION, 255, 0, 0, 0, 0, 0, 0 }, COLL_EPROTO },
		{ "len max+1", { 'C', 'O', 'L', 'L', WIRE_VERSION, 1, 0, 0, 0x01, 0, 0, 0x01 }, COLL_EPROTO },
		{ "len 2^32-1", { 'C', 'O', 'L', 'L', WIRE_VERSION, 1, 0, 0, 0xff, 0xff, 0xff, 0xff },
		  COLL_EPROTO },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		struct wire_hdr h;
		int r = wire_hdr_decode(&h, rows[i].raw);

		if (r != rows[i].want)
			fail_msg("%s: wire_hdr_decode = %d, want %d", rows[i].what, r, rows[i].want);
	}
}

/* Address book entries */

static void
make_entry(struct wire_entry *e, uint32_t rank, uint32_t nranks, const char *ip, uint16_t port,
    const char *host)
{
	memset(e, 0, sizeof *e);
	e->rank = rank;
	e->nranks = nranks;
	e->pid = 1000 + rank;
	e->lanes = (uint8_t)(1 + rank % WIRE_MAX_LANES);
	e->lane_min = 4096 + rank;
	assert_int_equal(net_addr_parse(&e->addr, ip, port), COLL_OK);
	snprintf(e->host, sizeof e->host, "%s", host);
}

static void
assert_entry_equal(const struct wire_entry *a, const struct wire_entry *b)
{
	char x[NET_ADDRSTR_LEN], y[NET_ADDRSTR_LEN];

	assert_int_equal(a->rank, b->rank);
	assert_int_equal(a->nranks, b->nranks);
	assert_int_equal(a->pid, b->pid);
	assert_int_equal(a->lanes, b->lanes);
	assert_int_equal(a->lane_min, b->lane_min);
	assert_int_equal(a->addr.ss.ss_family, b->addr.ss.ss_family);
	assert_int_equal(a->addr.len, b->addr.len);
	net_addr_format(&a->addr, x, sizeof x);
	net_addr_format(&b->addr, y, sizeof y);
	assert_string_equal(x, y);
	assert_string_equal(a->host, b->host);
}

static const char host64[] =
	"hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh";

static const struct {
	uint32_t rank, nranks;
	const char *ip;
	uint16_t port;
	const char *host;
} entry_rows[] = {
	{ 0, 1, "127.0.0.1", 1, "localhost" },
	{ 3, 8, "10.0.0.7", 29500, "node-7" },
	{ 7, 8, "255.255.255.255", 65535, "" },
	{ 0, 2, "::1", 80, "v6-loopback" },
	{ 1, 2, "fd00::2", 4444, "node.example.com" },
	{ 5, 1000, "2001:db8:1:2:3:4:5:6", 65535, host64 },
};

static void
test_entry_round_trip(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(entry_rows); i++) {
		struct wire_entry in, out;
		uint8_t buf[256];
		struct wire_buf b;
		size_t n;

		make_entry(&in, entry_rows[i].rank, entry_rows[i].nranks, entry_rows[i].ip,
		    entry_rows[i].port, entry_rows[i].host);
		wire_buf_init(&b, buf, sizeof buf);
		n = wire_entry_encode(&b, &in);
		assert_int_equal(b.err, 0);
		assert_int_equal(n, 17 + 19 + 2 + strlen(entry_rows[i].host));
		wire_buf_init(&b, buf, n);
		assert_int_equal(wire_entry_decode(&b, &out), COLL_OK);
		assert_int_equal(b.off, n);
		assert_entry_equal(&in, &out);
	}
}

/* Every proper prefix of a valid entry is refused. */
static void
test_entry_truncated(void **state)
{
	for (size_t i = 0; i < ARRAY_LEN(entry_rows); i++) {
		struct wire_entry in, out;
		uint8_t buf[256];
		struct wire_buf b;
		size_t n;

		make_entry(&in, entry_rows[i].rank, entry_rows[i].nranks, entry_rows[i].ip,
		    entry_rows[i].port, entry_rows[i].host);
		wire_buf_init(&b, buf, sizeof buf);
		n = wire_entry_encode(&b, &in);
		for (size_t cut = 0; cut < n; cut++) {
			wire_buf_init(&b, buf, cut);
			if (wire_entry_decode(&b, &out) != COLL_EPROTO)
				fail_msg("row %zu: entry cut to %zu of %zu bytes accepted", i, cut, n);
		}
	}
}

/* Entries whose fields are out of range: bad family, rank >= nranks, bad host. */
static void
test_entry_rejects(void **state)
{
	static const struct {
		const char *what;
		size_t off;	/* byte to overwrite in an encoded 4-byte-host entry */
		uint8_t val;
	} rows[] = {
		{ "lanes 0", 12, 0 },
		{ "lanes over the most", 12, WIRE_MAX_LANES + 1 },
		{ "lane_min 0", 13, 0 },
		{ "family 0", 17, 0 },
		{ "family 5", 17, 5 },
		{ "family AF_INET", 17, AF_INET },
		{ "nranks 0", 4, 0 },
		{ "rank == nranks", 0, 4 },
		{ "rank > nranks", 3, 0x80 },
		{ "host length 65", 36, 65 },
		{ "host length too long for buffer", 36, 5 },
		{ "embedded NUL in host", 39, 0 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		struct wire_entry in, out;
		uint8_t buf[64];
		struct wire_buf b;
		size_t n;

		make_entry(&in, 1, 4, "10.0.0.1", 80, "abcd");
		wire_buf_init(&b, buf, sizeof buf);
		n = wire_entry_encode(&b, &in);
		assert_int_equal(n, 42);
		if (rows[i].off == 4 || rows[i].off == 13)	/* a u32: zero all of it */
			memset(buf + rows[i].off, 0, 4);
		buf[rows[i].off] = rows[i].val;
		wire_buf_init(&b, buf, n);
		if (wire_entry_decode(&b, &out) != COLL_EPROTO)
			fail_msg("%s: accepted", rows[i].what);
	}
}

/* Notes (ERROR, FAILED) */

static void
test_note_round_trip(void **state)
{
	static char long_msg[WIRE_MSG_LEN + 1];
	static const struct {
		int32_t code, rank;
		const char *msg;
	} rows[] = {
		{ COLL_OK, -1, "" },
		{ COLL_ERANKDEAD, 3, "rank 3 on node-2 exited with status 1" },
		{ COLL_ETIMEDOUT, -1, "timed out waiting for 2 of 8 ranks" },
		{ -100, 0x7fffffff, "lowest code" },
		{ COLL_EPROTO, 0, NULL },	/* NULL: WIRE_MSG_LEN bytes */
	};

	memset(long_msg, 'm', WIRE_MSG_LEN);
	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		struct wire_note in = { rows[i].code, rows[i].rank, "" }, out;
		uint8_t buf[512];
		struct wire_buf b;

		snprintf(in.msg, sizeof in.msg, "%s", rows[i].msg ? rows[i].msg : long_msg);
		wire_buf_init(&b, buf, sizeof buf);
		wire_note_encode(&b, &in);
		assert_int_equal(b.err, 0);
		assert_int_equal(b.off, 10 + strlen(in.msg));
		memset(&out, 0x55, sizeof out);
		assert_int_equal(wire_note_decode(buf, b.off, &out), COLL_OK);
		assert_int_equal(out.code, in.code);
		assert_int_equal(out.rank, in.rank);
		assert_string_equal(out.msg, in.msg);
	}
}

static void
put_note(struct wire_buf *b, uint32_t code, uint32_t rank, uint16_t len, const void *msg, size_t n)
{
	wire_put_u32(b, code);
	wire_put_u32(b, rank);
	wire_put_u16(b, len);
	wire_put_bytes(b, msg, n);
}

static void
test_note_rejects(void **state)
{
	static char big[WIRE_MSG_LEN + 2];
	static const struct {
		const char *what;
		uint32_t code, rank;
		uint16_t len;		/* the length field */
		const char *msg;	/* NULL: the big buffer */
		size_t n;		/* bytes that follow */
	} rows[] = {
		{ "embedded NUL", (uint32_t)COLL_EPEER, 0, 5, "ab\0cd", 5 },
		{ "leading NUL", (uint32_t)COLL_EPEER, 0, 3, "\0ab", 3 },
		{ "length over WIRE_MSG_LEN", (uint32_t)COLL_EPEER, 0, WIRE_MSG_LEN + 1, NULL,
		  WIRE_MSG_LEN + 1 },
		{ "length 65535", (uint32_t)COLL_EPEER, 0, 0xffff, "abc", 3 },
		{ "length past the end", (uint32_t)COLL_EPEER, 0, 10, "abc", 3 },
		{ "trailing bytes", (uint32_t)COLL_EPEER, 0, 3, "abcd", 4 },
		{ "positive code 1", 1, 0, 3, "abc", 3 },
		{ "positive code max", 0x7fffffffu, 0, 3, "abc", 3 },
		{ "code -101", (uint32_t)-101, 0, 3, "abc", 3 },
		{ "rank -2", (uint32_t)COLL_EPEER, (uint32_t)-2, 3, "abc", 3 },
	};

	memset(big, 'x', sizeof big);
	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		uint8_t buf[512];
		struct wire_note out;
		struct wire_buf b;

		wire_buf_init(&b, buf, sizeof buf);
		put_note(&b, rows[i].code, rows[i].rank, rows[i].len,
		    rows[i].msg ? rows[i].msg : big, rows[i].n);
		assert_int_equal(b.err, 0);
		if (wire_note_decode(buf, b.off, &out) != COLL_EPROTO)
			fail_msg("%s: accepted", rows[i].what);
	}
}

static void
test_note_truncated(void **state)
{
	struct wire_note in = { COLL_EPEER, 2, "peer went away" }, out;
	uint8_t buf[64];
	struct wire_buf b;

	wire_buf_init(&b, buf, sizeof buf);
	wire_note_encode(&b, &in);
	for (size_t cut = 0; cut < b.off; cut++)
		if (wire_note_decode(buf, cut, &out) != COLL_EPROTO)
			fail_msg("note cut to %zu of %zu bytes accepted", cut, b.off);
}

/* FAILED_SET: several ranks at once, as ranges. */
static void
test_failed_set(void **state)
{
	static struct wire_failed_set in, out;
	static uint8_t buf[64 + WIRE_MSG_LEN + WIRE_SET_MAX_RANGES * 8];
	struct wire_buf b;

	(void)state;
	in.note = (struct wire_note){ COLL_ERANKDEAD, 4, "rank 4 and 6 more lost its proxy" };
	in.n = 2;
	in.first[0] = 4, in.count[0] = 3, in.first[1] = 9, in.count[1] = 4;
	wire_buf_init(&b, buf, sizeof buf);
	wire_failed_set_encode(&b, &in);
	assert_int_equal(wire_failed_set_decode(buf, b.off, 16, &out), COLL_OK);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.first[1], 9);
	assert_int_equal(out.count[1], 4);
	assert_string_equal(out.note.msg, in.note.msg);
	/* The proxy carries it down to a rank. */
	assert_true(wire_mux_carries(WIRE_FAILED_SET));
	/* Past the communicator's ranks: 9 + 4 > 12. */
	assert_int_equal(wire_failed_set_decode(buf, b.off, 12, &out), COLL_EPROTO);
	for (size_t cut = 0; cut < b.off; cut++)
		if (wire_failed_set_decode(buf, cut, 16, &out) != COLL_EPROTO)
			fail_msg("a set cut to %zu of %zu bytes accepted", cut, b.off);
	{
		static const struct {
			const char *what;
			uint32_t n, f0, c0, f1, c1;
			int32_t rank;
		} rows[] = {
			{ "no ranges", 0, 0, 0, 0, 0, 0 },
			{ "an empty range", 2, 0, 0, 5, 1, 0 },
			{ "overlapping", 2, 0, 5, 4, 2, 0 },
			{ "touching (not merged)", 2, 0, 5, 5, 2, 0 },
			{ "out of order", 2, 8, 1, 2, 1, 8 },
			{ "first + count wraps", 1, 0xfffffff0u, 0x20, 0, 0, -16 },
			{ "note's rank not the first", 1, 3, 1, 0, 0, 2 },
		};

		for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
			in.note.rank = rows[i].rank;
			in.n = rows[i].n;
			in.first[0] = rows[i].f0, in.count[0] = rows[i].c0;
			in.first[1] = rows[i].f1, in.count[1] = rows[i].c1;
			wire_buf_init(&b, buf, sizeof buf);
			wire_failed_set_encode(&b, &in);
			if (wire_failed_set_decode(buf, b.off, 1u << 20, &out) != COLL_EPROTO)
				fail_msg("%s: accepted", rows[i].what);
		}
	}
	/* More ranges than a set holds. */
	in.note.rank = 0;
	in.n = WIRE_SET_MAX_RANGES;
	for (uint32_t i = 0; i < in.n; i++)
		in.first[i] = 2 * i, in.count[i] = 1;
	wire_buf_init(&b, buf, sizeof buf);
	wire_failed_set_encode(&b, &in);
	assert_int_equal(wire_failed_set_decode(buf, b.off, 1u << 20, &out), COLL_OK);
	wire_buf_init(&b, buf, sizeof buf);
	wire_put_u32(&b, (uint32_t)COLL_ERANKDEAD);
	wire_put_u32(&b, 0);
	wire_put_u16(&b, 1);
	wire_put_bytes(&b, "x", 1);
	wire_put_u32(&b, WIRE_SET_MAX_RANGES + 1);
	for (uint32_t i = 0; i <= WIRE_SET_MAX_RANGES && b.off + 8 <= sizeof buf; i++) {
		wire_put_u32(&b, 2 * i);
		wire_put_u32(&b, 1);
	}
	assert_int_equal(wire_failed_set_decode(buf, b.off, 1u << 20, &out), COLL_EPROTO);
}

/* Address book */

/* Encode one chunk of n entries (nranks field count, first 0) with optional changes; its length. */
static size_t
build_book(uint8_t *buf, size_t cap, uint32_t count, uint32_t n, const uint32_t *ranks)
{
	struct wire_buf b;

	wire_buf_init(&b, buf, cap);
	wire_put_u32(&b, count);
	wire_put_u32(&b, 0);
	wire_put_u32(&b, n);
	for (uint32_t i = 0; i < n; i++) {
		struct wire_entry e;
		char host[16];

		snprintf(host, sizeof host, "node%u", i);
		make_entry(&e, ranks ? ranks[i] : i, n, i % 2 ? "::1" : "127.0.0.1",
		    (uint16_t)(5000 + i), host);
		wire_entry_encode(&b, &e);
	}
	assert_int_equal(b.err, 0);
	return b.off;
}

static void
test_book_round_trip(void **state)
{
	static const uint32_t sizes[] = { 1, 2, 3, 8 };

	for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
		uint8_t buf[1024];
		struct wire_entry book[8];
		size_t len = build_book(buf, sizeof buf, sizes[i], sizes[i], NULL);

		uint32_t first = 99, count = 99;

		assert_int_equal(wire_book_decode(buf, len, sizes[i], book, &first, &count), COLL_OK);
		assert_int_equal(first, 0);
		assert_int_equal(count, sizes[i]);
		for (uint32_t r = 0; r < sizes[i]; r++) {
			struct wire_entry want;
			char host[16];

			snprintf(host, sizeof host, "node%u", r);
			make_entry(&want, r, sizes[i], r % 2 ? "::1" : "127.0.0.1",
			    (uint16_t)(5000 + r), host);
			assert_entry_equal(&book[r], &want);
		}
	}
}

static void
test_book_rejects(void **state)
{
	static const uint32_t swapped[] = { 1, 0, 2 }, repeated[] = { 0, 0, 2 },
	    skipped[] = { 0, 2, 2 };
	static const struct {
		const char *what;
		uint32_t count;		/* count field */
		uint32_t n;		/* entries encoded (each says nranks = n) */
		const uint32_t *ranks;	/* NULL: 0..n-1 */
		uint32_t expect;	/* nranks the decoder is told */
		size_t extra;		/* trailing bytes */
		size_t cut;		/* bytes removed from the end */
	} rows[] = {
		{ "count too small", 2, 3, NULL, 3, 0, 0 },
		{ "count too large", 4, 3, NULL, 3, 0, 0 },
		{ "count 0", 0, 3, NULL, 3, 0, 0 },
		{ "expecting more ranks", 3, 3, NULL, 4, 0, 0 },
		{ "expecting fewer ranks", 3, 3, NULL, 2, 0, 0 },
		{ "ranks out of order", 3, 3, swapped, 3, 0, 0 },
		{ "rank repeated", 3, 3, repeated, 3, 0, 0 },
		{ "rank skipped", 3, 3, skipped, 3, 0, 0 },
		{ "one trailing byte", 3, 3, NULL, 3, 1, 0 },
		{ "many trailing bytes", 3, 3, NULL, 3, 40, 0 },
		{ "last byte missing", 3, 3, NULL, 3, 0, 1 },
		{ "last entry missing", 3, 3, NULL, 3, 0, 12 + 19 + 2 + 5 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		uint8_t buf[1024];
		struct wire_entry book[8];
		size_t len = build_book(buf, sizeof buf, rows[i].count, rows[i].n, rows[i].ranks);

		memset(buf + len, 0, rows[i].extra);
		len += rows[i].extra;
		len -= rows[i].cut;
		uint32_t first, count;

		if (wire_book_decode(buf, len, rows[i].expect, book, &first, &count) != COLL_EPROTO)
			fail_msg("%s: accepted", rows[i].what);
	}
}

/* An entry claiming another communicator size is refused even if ranks are in order. */
static void
test_book_rejects_nranks_mismatch(void **state)
{
	uint8_t buf[256];
	struct wire_entry book[2], e;
	struct wire_buf b;

	uint32_t first, count;

	wire_buf_init(&b, buf, sizeof buf);
	wire_put_u32(&b, 2);
	wire_put_u32(&b, 0);
	wire_put_u32(&b, 2);
	make_entry(&e, 0, 2, "127.0.0.1", 1, "a");
	wire_entry_encode(&b, &e);
	make_entry(&e, 1, 3, "127.0.0.1", 2, "b");
	wire_entry_encode(&b, &e);
	assert_int_equal(wire_book_decode(buf, b.off, 2, book, &first, &count), COLL_EPROTO);
}

/* Data header */

static void
test_data_hdr_round_trip(void **state)
{
	static const struct wire_data_hdr rows[] = {
		{ 0, 0, 0, 0 },
		{ 1, 2, 3, 4 },
		{ 255, 255, 0xffffffffffffffffull, 0xffffffffffffffffull },
		{ 7, 1, 0x0102030405060708ull, 1ull << 40 },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		uint8_t raw[WIRE_DATA_HDR_LEN];
		struct wire_data_hdr h;

		wire_data_hdr_encode(raw, &rows[i]);
		assert_memory_equal(raw, "CDAT", 4);
		assert_int_equal(wire_data_hdr_decode(&h, raw), COLL_OK);
		assert_int_equal(h.kind, rows[i].kind);
		assert_int_equal(h.tag, rows[i].tag);
		assert_true(h.seq == rows[i].seq);
		assert_true(h.len == rows[i].len);
	}
}

static void
test_data_hdr_bad_magic(void **state)
{
	static const char *const magics[] = { "COLL", "\0\0\0\0", "TADC", "CDA\0", "cdat" };
	struct wire_data_hdr in = { 1, 2, 3, 4 }, out;

	for (size_t i = 0; i < ARRAY_LEN(magics); i++) {
		uint8_t raw[WIRE_DATA_HDR_LEN];

		wire_data_hdr_encode(raw, &in);
		memcpy(raw, magics[i], 4);
		assert_int_equal(wire_data_hdr_decode(&out, raw), COLL_EPROTO);
	}
}

/* Authentication messages */

static void
test_auth_round_trip(void **state)
{
	static const struct {
		uint8_t type;
		size_t len;
	} rows[] = {
		{ WIRE_AUTH_HELLO, 8 + 1 + WIRE_NONCE_LEN },
		{ WIRE_AUTH_CHALLENGE, WIRE_NONCE_LEN + WIRE_MAC_LEN },
		{ WIRE_AUTH_PROOF, WIRE_MAC_LEN },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		struct wire_auth in, out;
		uint8_t buf[128];
		struct wire_buf b;

		memset(&in, 0, sizeof in);
		in.jobid = 0x0123456789abcdefull;
		in.role = WIRE_ROLE_PEER;
		for (int j = 0; j < WIRE_NONCE_LEN; j++)
			in.nonce[j] = (uint8_t)(j + 1);
		for (int j = 0; j < WIRE_MAC_LEN; j++)
			in.mac[j] = (uint8_t)(0xa0 + j);
		wire_buf_init(&b, buf, sizeof buf);
		wire_auth_encode(&b, rows[i].type, &in);
		assert_int_equal(b.off, rows[i].len);
		assert_int_equal(wire_auth_decode(buf, b.off, rows[i].type, &out), COLL_OK);
		if (rows[i].type == WIRE_AUTH_HELLO) {
			assert_true(out.jobid == in.jobid);
			assert_int_equal(out.role, in.role);
		}
		if (rows[i].type != WIRE_AUTH_PROOF)
			assert_memory_equal(out.nonce, in.nonce, WIRE_NONCE_LEN);
		if (rows[i].type != WIRE_AUTH_HELLO)
			assert_memory_equal(out.mac, in.mac, WIRE_MAC_LEN);
	}
}

/* Each auth message has one exact length: shorter or longer is a protocol error. */
static void
test_auth_lengths(void **state)
{
	static const struct {
		uint8_t type;
		size_t len;
		int want;
	} rows[] = {
		{ WIRE_AUTH_HELLO, 25, COLL_OK },
		{ WIRE_AUTH_HELLO, 0, COLL_EPROTO },
		{ WIRE_AUTH_HELLO, 9, COLL_EPROTO },
		{ WIRE_AUTH_HELLO, 24, COLL_EPROTO },
		{ WIRE_AUTH_HELLO, 26, COLL_EPROTO },
		{ WIRE_AUTH_HELLO, 48, COLL_EPROTO },
		{ WIRE_AUTH_CHALLENGE, 48, COLL_OK },
		{ WIRE_AUTH_CHALLENGE, 0, COLL_EPROTO },
		{ WIRE_AUTH_CHALLENGE, 16, COLL_EPROTO },
		{ WIRE_AUTH_CHALLENGE, 47, COLL_EPROTO },
		{ WIRE_AUTH_CHALLENGE, 49, COLL_EPROTO },
		{ WIRE_AUTH_PROOF, 32, COLL_OK },
		{ WIRE_AUTH_PROOF, 0, COLL_EPROTO },
		{ WIRE_AUTH_PROOF, 31, COLL_EPROTO },
		{ WIRE_AUTH_PROOF, 33, COLL_EPROTO },
		{ WIRE_AUTH_FAIL, 32, COLL_EPROTO },	/* not an auth exchange message */
		{ WIRE_JOIN, 25, COLL_EPROTO },
		{ 0, 25, COLL_EPROTO },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		uint8_t buf[64];
		struct wire_auth out;
		int r;

		memset(buf, 0, sizeof buf);
		buf[8] = WIRE_ROLE_ROOT;	/* a valid role where HELLO has it */
		r = wire_auth_decode(buf, rows[i].len, rows[i].type, &out);
		if (r != rows[i].want)
			fail_msg("type %u len %zu: %d, want %d", rows[i].type, rows[i].len, r,
			    rows[i].want);
	}
}

/* A proxy's MUX frame: channel, then a rank's frame that is root traffic, never 0 or nested. */
static void
test_mux_decode(void **state)
{
	static const struct {
		const char *what;
		uint8_t raw[8];
		uint32_t len;
		int want;
	} rows[] = {
		{ "a JOIN on channel 7", { 7, 0, 0, 0, WIRE_JOIN, 'a', 'b', 'c' }, 8, COLL_OK },
		{ "an empty PING", { 1, 0, 0, 0, WIRE_PING }, 5, COLL_OK },
		{ "short of a type", { 1, 0, 0, 0 }, 4, COLL_EPROTO },
		{ "channel 0", { 0, 0, 0, 0, WIRE_PING }, 5, COLL_EPROTO },
		{ "a handshake inside", { 1, 0, 0, 0, WIRE_AUTH_HELLO }, 5, COLL_EPROTO },
		{ "MUX inside MUX", { 1, 0, 0, 0, WIRE_MUX }, 5, COLL_EPROTO },
		{ "type max", { 1, 0, 0, 0, WIRE_TYPE_MAX }, 5, COLL_EPROTO },
	};
	struct wire_mux m;
	uint32_t ch, ms;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(rows); i++)
		if (wire_mux_decode(rows[i].raw, rows[i].len, &m) != rows[i].want)
			fail_msg("%s: not %d", rows[i].what, rows[i].want);
	assert_int_equal(wire_mux_decode(rows[0].raw, 8, &m), COLL_OK);
	assert_int_equal(m.ch, 7);
	assert_int_equal(m.type, WIRE_JOIN);
	assert_int_equal(m.len, 3);
	assert_ptr_equal(m.p, rows[0].raw + WIRE_MUX_HDR_LEN);
	assert_int_equal(wire_mux_end_decode((const uint8_t[]){ 9, 1, 0, 0 }, 4, &ch, &ms),
	    COLL_OK);
	assert_int_equal(ch, 0x109);
	assert_int_equal(ms, 0);
	/* A rank its proxy gave up: how long it was silent. */
	assert_int_equal(wire_mux_end_decode((const uint8_t[]){ 9, 1, 0, 0, 0xa0, 0x86, 1, 0 }, 8,
	    &ch, &ms), COLL_OK);
	assert_int_equal(ch, 0x109);
	assert_int_equal(ms, 100000);
	assert_int_equal(wire_mux_end_decode((const uint8_t[]){ 9, 1, 0, 0, 0, 0, 0, 0 }, 8, &ch,
	    &ms), COLL_EPROTO);
	assert_int_equal(wire_mux_end_decode((const uint8_t[]){ 0, 0, 0, 0 }, 4, &ch, &ms),
	    COLL_EPROTO);
	assert_int_equal(wire_mux_end_decode((const uint8_t[]){ 9, 1, 0, 0, 0 }, 5, &ch, &ms),
	    COLL_EPROTO);
	assert_int_equal(wire_mux_end_decode((const uint8_t[]){ 9, 1, 0 }, 3, &ch, &ms),
	    COLL_EPROTO);
}

static void
test_auth_hello_role(void **state)
{
	static const struct {
		uint8_t role;
		int want;
	} rows[] = {
		{ 0, COLL_EPROTO }, { WIRE_ROLE_ROOT, COLL_OK }, { WIRE_ROLE_PEER, COLL_OK },
		{ WIRE_ROLE_CONTROL, COLL_OK }, { WIRE_ROLE_PROXY, COLL_OK }, { 5, COLL_EPROTO },
		{ 255, COLL_EPROTO },
	};

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		uint8_t buf[25] = { 0 };
		struct wire_auth out;

		buf[8] = rows[i].role;
		assert_int_equal(wire_auth_decode(buf, sizeof buf, WIRE_AUTH_HELLO, &out),
		    rows[i].want);
	}
}

/* A JOIN keeps its block's base; a block that would end past the rank bound is refused. */
static void
test_join_round_trip(void **state)
{
	struct wire_join j = { .commid = 0x1122334455667788ull, .keepalive_ms = 1000,
	    .keepalive_limit = 30, .base = 4096, .nroots = 3 }, back;
	uint8_t buf[512];
	struct wire_buf b;

	(void)state;
	j.e = (struct wire_entry){ .rank = 3, .nranks = 4096, .pid = 77, .lanes = 4,
	    .lane_min = 65536 };
	assert_int_equal(net_addr_parse(&j.e.addr, "127.0.0.1", 5000), COLL_OK);
	snprintf(j.e.host, sizeof j.e.host, "node7");
	wire_buf_init(&b, buf, sizeof buf);
	wire_join_encode(&b, &j);
	assert_int_equal(wire_join_decode(buf, b.off, &back), COLL_OK);
	assert_true(back.commid == j.commid);
	assert_int_equal(back.base, 4096);
	assert_int_equal(back.nroots, 3);
	assert_int_equal(back.e.rank, 3);
	assert_int_equal(back.e.nranks, 4096);
	assert_string_equal(back.e.host, "node7");
	j.base = WIRE_MAX_RANKS - 4095;
	wire_buf_init(&b, buf, sizeof buf);
	wire_join_encode(&b, &j);
	assert_int_equal(wire_join_decode(buf, b.off, &back), COLL_EPROTO);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_round_trip),
		cmocka_unit_test(test_wire_buf_round_trip),
		cmocka_unit_test(test_wire_buf_little_endian),
		cmocka_unit_test(test_wire_buf_put_overrun),
		cmocka_unit_test(test_wire_buf_get_overrun),
		cmocka_unit_test(test_hdr_round_trip),
		cmocka_unit_test(test_hdr_rejects),
		cmocka_unit_test(test_entry_round_trip),
		cmocka_unit_test(test_entry_truncated),
		cmocka_unit_test(test_entry_rejects),
		cmocka_unit_test(test_note_round_trip),
		cmocka_unit_test(test_note_rejects),
		cmocka_unit_test(test_note_truncated),
		cmocka_unit_test(test_book_round_trip),
		cmocka_unit_test(test_book_rejects),
		cmocka_unit_test(test_book_rejects_nranks_mismatch),
		cmocka_unit_test(test_data_hdr_round_trip),
		cmocka_unit_test(test_data_hdr_bad_magic),
		cmocka_unit_test(test_auth_round_trip),
		cmocka_unit_test(test_auth_lengths),
		cmocka_unit_test(test_auth_hello_role),
		cmocka_unit_test(test_mux_decode),
		cmocka_unit_test(test_failed_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
