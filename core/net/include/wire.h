/*
 * The wire format: every control message is a 12-byte frame header and a
 * bounded payload, little-endian, decoded field by field with bounds checks.
 * Data transfers of a collective start with a 24-byte data header naming the
 * op's sequence number, kind and length, so that a rank that called a
 * different collective is detected instead of misreading bytes.
 *
 * frame: magic "COLL" u32 | version u8 | type u8 | reserved u16 | len u32
 * data:  magic "CDAT" u32 | kind u8 | tag u8 | reserved u16 | seq u64 | len u64
 */
#ifndef COLL_WIRE_H
#define COLL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "net.h"

#define WIRE_MAGIC 0x4c4c4f43u		/* "COLL" */
#define WIRE_DATA_MAGIC 0x54414443u	/* "CDAT" */
#define WIRE_VERSION 8	/* 8: FAILED_SET; 7: proxies keep their ranks alive; 6: root proxies */
#define WIRE_HDR_LEN 12
#define WIRE_DATA_HDR_LEN 24
#define WIRE_MAX_PAYLOAD (16u << 20)
#define WIRE_HOST_LEN 64
#define WIRE_NONCE_LEN 16
#define WIRE_MAC_LEN 32
#define WIRE_MSG_LEN 240

enum wire_type {
	WIRE_AUTH_HELLO = 1,	/* connector: job id, nonce, role */
	WIRE_AUTH_CHALLENGE,	/* acceptor: nonce, its proof */
	WIRE_AUTH_PROOF,	/* connector: its proof */
	WIRE_AUTH_FAIL,		/* acceptor: why it refuses */
	WIRE_JOIN,		/* rank -> root: who I am, where I listen */
	WIRE_BOOK,		/* root -> rank: every rank's entry */
	WIRE_ERROR,		/* root -> rank: the job cannot start */
	WIRE_BYE,		/* rank -> root: leaving cleanly */
	WIRE_FAILED,		/* root -> rank: another rank failed */
	WIRE_PEER_HELLO,	/* rank -> rank: my rank on this connection */
	WIRE_PING,		/* both ways on a root connection: still alive */
	WIRE_REGROUP,		/* rank -> root: shrink or split request */
	WIRE_REGROUP_DONE,	/* root -> rank: the agreed new communicator */
	WIRE_RETRY_REQ,		/* rank -> root: a link of op seq broke, retry it */
	WIRE_RETRY_QUERY,	/* root -> rank: where are you, can you retry seq */
	WIRE_RETRY_STATE,	/* rank -> root: the answer */
	WIRE_RETRY_GO,		/* root -> rank: every rank stopped at seq: run it again */
	WIRE_RETRY_REFUSE,	/* root -> rank: seq cannot be retried, and why */
	WIRE_FETCH,		/* block leader -> another root: your block's book, once complete */
	WIRE_MUX,		/* root proxy <-> root: one rank's frame on channel ch */
	WIRE_MUX_END,		/* root proxy <-> root: channel ch is closed */
	WIRE_FAILED_SET,	/* root -> rank: several ranks failed at once */
	WIRE_TYPE_MAX
};

enum wire_role {
	WIRE_ROLE_ROOT = 1,
	WIRE_ROLE_PEER = 2,
	WIRE_ROLE_CONTROL = 3,
	WIRE_ROLE_PROXY = 4,	/* a root proxy: carries many ranks' root connections */
};

/*
 * MUX: channel u32 | type u8 | the frame's payload. One proxy connection
 * carries the root connections of many ranks, each its own channel, so that
 * no root takes a connection per rank (core/bootstrap/proxy.c). MUX_END:
 * channel u32 [| silent ms u32]; the channel is closed (either way), or,
 * with the second field, its rank was silent that long and its proxy gave
 * it up: a proxy keeps its ranks alive itself (PINGs both ways), and only
 * the proxy's own PINGs travel on its link, so the root's keep-alive work
 * is per proxy, not per rank.
 */
#define WIRE_MUX_HDR_LEN 5

struct wire_hdr {
	uint8_t version;
	uint8_t type;
	uint32_t len;
};

/* One rank's entry of the address book. */
struct wire_entry {
	uint32_t rank;
	uint32_t nranks;
	uint32_t pid;
	uint8_t lanes;		/* connections per peer this rank can drive (1..WIRE_MAX_LANES) */
	uint32_t lane_min;	/* the smallest slice worth a lane, bytes (COLL_LANE_MIN_BYTES) */
	struct net_addr addr;
	char host[WIRE_HOST_LEN + 1];
};

struct wire_auth {
	uint64_t jobid;
	uint8_t role;
	uint8_t nonce[WIRE_NONCE_LEN];
	uint8_t mac[WIRE_MAC_LEN];
};

/*
 * The largest communicator: the address book goes out in chunks of at most
 * WIRE_BOOK_CHUNK entries (each under WIRE_ENTRY_MAX bytes), so the frame
 * bound never limits the rank count; this does, and every tool uses it.
 */
#define WIRE_MAX_RANKS (1 << 20)
#define WIRE_ENTRY_MAX (17 + 19 + 2 + WIRE_HOST_LEN)
#define WIRE_BOOK_CHUNK 65536
/* Connections per pair of ranks, each with its own slice of a large op. */
#define WIRE_MAX_LANES 64

/* JOIN: which communicator, how often this rank pings, and its entry. */
struct wire_join {
	uint64_t commid;
	uint32_t keepalive_ms;
	uint32_t keepalive_limit;
	/*
	 * Init from several unique ids: the root serves ranks base .. base +
	 * e.nranks - 1 of the communicator, and e.rank counts from base. 0 else.
	 */
	uint32_t base;
	uint32_t nroots;	/* how many roots the communicator has (1: one) */
	struct wire_entry e;
};

/* ERROR and FAILED: a code, the rank concerned (or -1) and a message. */
struct wire_note {
	int32_t code;
	int32_t rank;
	char msg[WIRE_MSG_LEN + 1];
};

/*
 * FAILED_SET: a note (its rank the first that failed) | u32 n | n ranges
 * (u32 first, u32 count), ascending and apart. When a proxy is lost, its
 * whole subtree is: one notice per survivor naming them all, where a notice
 * per death to every survivor made dead x live frames (10^8 at 80,000 ranks).
 */
#define WIRE_SET_MAX_RANGES 4096

struct wire_failed_set {
	struct wire_note note;
	uint32_t n;
	uint32_t first[WIRE_SET_MAX_RANGES];
	uint32_t count[WIRE_SET_MAX_RANGES];
};

struct wire_data_hdr {
	uint8_t kind;
	uint8_t tag;
	uint64_t seq;
	uint64_t len;
};

/* A bounded cursor over bytes; any overrun sets err and later reads yield zero. */
struct wire_buf {
	uint8_t *p;
	size_t len;
	size_t off;
	int err;
};

void wire_buf_init(struct wire_buf *b, void *p, size_t len);
void wire_put_u8(struct wire_buf *b, uint8_t v);
void wire_put_u16(struct wire_buf *b, uint16_t v);
void wire_put_u32(struct wire_buf *b, uint32_t v);
void wire_put_u64(struct wire_buf *b, uint64_t v);
void wire_put_bytes(struct wire_buf *b, const void *p, size_t n);
uint8_t wire_get_u8(struct wire_buf *b);
uint16_t wire_get_u16(struct wire_buf *b);
uint32_t wire_get_u32(struct wire_buf *b);
uint64_t wire_get_u64(struct wire_buf *b);
void wire_get_bytes(struct wire_buf *b, void *p, size_t n);

/* Frame header: encode into 12 bytes; decode checks magic, version and bounds. */
void wire_hdr_encode(uint8_t out[WIRE_HDR_LEN], uint8_t type, uint32_t len);
int wire_hdr_decode(struct wire_hdr *h, const uint8_t in[WIRE_HDR_LEN]);

size_t wire_entry_encode(struct wire_buf *b, const struct wire_entry *e);
int wire_entry_decode(struct wire_buf *b, struct wire_entry *e);
void wire_auth_encode(struct wire_buf *b, uint8_t type, const struct wire_auth *a);
int wire_auth_decode(const uint8_t *p, size_t len, uint8_t type, struct wire_auth *a);
/* A MUX frame's channel and inner frame (pointing into p); channel 0 is never used. */
struct wire_mux {
	uint32_t ch;
	uint8_t type;
	const uint8_t *p;
	uint32_t len;
};
/* Whether a frame of type may ride a channel (a rank's root traffic). */
int wire_mux_carries(uint8_t type);
int wire_mux_decode(const uint8_t *p, uint32_t len, struct wire_mux *m);
/* silent_ms: 0 when the channel just closed. */
int wire_mux_end_decode(const uint8_t *p, uint32_t len, uint32_t *ch, uint32_t *silent_ms);
void wire_note_encode(struct wire_buf *b, const struct wire_note *n);
int wire_note_decode(const uint8_t *p, size_t len, struct wire_note *n);
void wire_failed_set_encode(struct wire_buf *b, const struct wire_failed_set *f);
/* Ranges past nranks, empty, overlapping or out of order are refused. */
int wire_failed_set_decode(const uint8_t *p, size_t len, uint32_t nranks,
    struct wire_failed_set *f);
void wire_join_encode(struct wire_buf *b, const struct wire_join *j);
int wire_join_decode(const uint8_t *p, size_t len, struct wire_join *j);
/*
 * One chunk of the address book: nranks, first, count, then entries first ..
 * first + count - 1. The payload is at most WIRE_BOOK_CHUNK entries long.
 */
void wire_book_encode(struct wire_buf *b, uint32_t nranks, uint32_t first, uint32_t count,
    const struct wire_entry *book);
/* Decode a chunk into book (nranks entries); *first and *count say which it filled. */
int wire_book_decode(const uint8_t *p, size_t len, uint32_t nranks, struct wire_entry *book,
    uint32_t *first, uint32_t *count);
/* Bytes a chunk of count entries may take: allocate this much. */
size_t wire_book_cap(uint32_t count);

/* REGROUP: shrink (exclude these ranks) or split (color, key). */
enum wire_regroup_kind { WIRE_RG_SHRINK = 1, WIRE_RG_SPLIT = 2 };
#define WIRE_NO_COLOR (-1)

struct wire_regroup {
	uint32_t kind;
	int32_t color;
	int32_t key;
	uint32_t nexcl;
	uint32_t *excl;		/* malloc'ed by the decoder */
};

/* REGROUP_DONE: the new communicator (rank -1: not in one), and the ranks left out. */
struct wire_regroup_done {
	int32_t code;
	uint64_t commid;
	int32_t rank;
	uint32_t nranks;
	uint32_t nexcl;
	uint32_t *excl;		/* malloc'ed by the decoder */
	char msg[WIRE_MSG_LEN + 1];
};

void wire_regroup_encode(struct wire_buf *b, const struct wire_regroup *r);
/* Every excluded rank must be below nranks; free r->excl after. */
int wire_regroup_decode(const uint8_t *p, size_t len, uint32_t nranks, struct wire_regroup *r);
void wire_regroup_done_encode(struct wire_buf *b, const struct wire_regroup_done *d);
int wire_regroup_done_decode(const uint8_t *p, size_t len, uint32_t nranks,
    struct wire_regroup_done *d);

void wire_data_hdr_encode(uint8_t out[WIRE_DATA_HDR_LEN], const struct wire_data_hdr *h);
int wire_data_hdr_decode(struct wire_data_hdr *h, const uint8_t in[WIRE_DATA_HDR_LEN]);

/* Send one frame (header + payload) and receive one (payload malloc'ed, bounded by max). */
int wire_send(int fd, uint8_t type, const void *payload, uint32_t len, uint64_t deadline_ms,
    int abort_fd);
int wire_recv(int fd, struct wire_hdr *h, uint8_t **payload, uint32_t max, uint64_t deadline_ms,
    int abort_fd);

#endif
