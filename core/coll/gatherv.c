/*
 * Gather of variable-size blobs up a binomial tree: each rank sends its
 * subtree's records, [rank u32 | len u64 | bytes], to its parent, first the
 * total length (so the parent can bound and allocate) and then the records.
 * The root checks every record before handing the blobs out: ranks are
 * authenticated, but a length is still never trusted.
 *
 * The fold (coll_fold) walks the same tree, but a parent merges each child's
 * blob into its own before it sends on, so the bytes that reach the root are
 * log2(n) merged blobs instead of n records.
 */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "comm_impl.h"
#include "xfer.h"
#include "xmalloc.h"

enum { GV_TAG_LEN = 30, GV_TAG_DATA = 31 };
#define GV_REC_HDR 12

struct gv_buf {
	uint8_t *p;
	size_t len;
	size_t cap;
};

static void
gv_append(struct gv_buf *b, const void *p, size_t n)
{
	if (b->cap - b->len < n) {
		b->cap = (b->len + n) * 2;
		b->p = xreallocarray(b->p, 1, b->cap);
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static int
gv_recv_child(struct comm *c, int child, struct gv_buf *b)
{
	uint8_t lenbuf[8];
	struct wire_buf w;
	uint64_t len;
	int rc;

	if ((rc = xfer_sendrecv(c, GV_TAG_LEN, -1, NULL, 0, child, lenbuf, 8)) != COLL_OK)
		return rc;
	wire_buf_init(&w, lenbuf, 8);
	len = wire_get_u64(&w);
	if (len > COLL_GATHERV_MAX || b->len + len > COLL_GATHERV_MAX)
		return comm_fail(c, COLL_ETOOBIG, "rank %d sent %llu bytes to gather, over the "
		    "%u-byte bound", child, (unsigned long long)len, COLL_GATHERV_MAX);
	if (b->cap - b->len < len) {
		b->cap = b->len + len;
		b->p = xreallocarray(b->p, 1, b->cap);
	}
	rc = xfer_sendrecv(c, GV_TAG_DATA, -1, NULL, 0, child, b->p + b->len, len);
	if (rc == COLL_OK)
		b->len += len;
	return rc;
}

static int
gv_send_parent(struct comm *c, int parent, const struct gv_buf *b)
{
	uint8_t lenbuf[8];
	struct wire_buf w;
	int rc;

	wire_buf_init(&w, lenbuf, 8);
	wire_put_u64(&w, b->len);
	rc = xfer_sendrecv(c, GV_TAG_LEN, parent, lenbuf, 8, -1, NULL, 0);
	if (rc == COLL_OK)
		rc = xfer_sendrecv(c, GV_TAG_DATA, parent, b->p, b->len, -1, NULL, 0);
	return rc;
}

/* Turn the records at the root into blobs; every rank must appear exactly once. */
static int
gv_unpack(struct comm *c, struct gv_buf *b, struct coll_blobs *out)
{
	struct wire_buf w;
	int n = c->nranks;

	out->n = n;
	out->off = xcalloc((size_t)n, sizeof *out->off);
	out->len = xcalloc((size_t)n, sizeof *out->len);
	for (int i = 0; i < n; i++)
		out->off[i] = SIZE_MAX;
	wire_buf_init(&w, b->p, b->len);
	for (int i = 0; i < n; i++) {
		uint32_t rank = wire_get_u32(&w);
		uint64_t len = wire_get_u64(&w);

		if (w.err || rank >= (uint32_t)n || out->off[rank] != SIZE_MAX ||
		    len > b->len - w.off)
			return comm_fail(c, COLL_EPROTO, "gather: malformed record from the tree "
			    "(rank %u): mixed coll versions?", rank);
		out->off[rank] = w.off;
		out->len[rank] = len;
		w.off += len;
	}
	if (w.off != b->len)
		return comm_fail(c, COLL_EPROTO, "gather: trailing bytes after the last record");
	out->data = b->p;
	b->p = NULL;
	return COLL_OK;
}

int
gatherv_tree(struct comm *c, const void *buf, size_t len, int root, struct coll_blobs *out)
{
	int n = c->nranks, v = (c->rank - root + n) % n, rc = COLL_OK;
	struct gv_buf b = { 0 };
	uint8_t hdr[GV_REC_HDR];
	struct wire_buf w;

	wire_buf_init(&w, hdr, sizeof hdr);
	wire_put_u32(&w, (uint32_t)c->rank);
	wire_put_u64(&w, len);
	gv_append(&b, hdr, sizeof hdr);
	gv_append(&b, buf, len);
	for (int mask = 1; mask < n && rc == COLL_OK; mask <<= 1) {
		if (v & mask) {
			rc = gv_send_parent(c, (v - mask + root) % n, &b);
			break;
		}
		if (v + mask < n)
			rc = gv_recv_child(c, (v + mask + root) % n, &b);
	}
	if (rc == COLL_OK && v == 0)
		rc = gv_unpack(c, &b, out);
	free(b.p);
	return rc;
}

int
fold_tree(struct comm *c, int root, const struct coll_fold_ops *ops)
{
	int n = c->nranks, v = (c->rank - root + n) % n, rc = COLL_OK;
	struct gv_buf b = { 0 };

	for (int mask = 1; mask < n && rc == COLL_OK; mask <<= 1) {
		int peer = (v + mask + root) % n;

		if (v & mask) {
			/* The children's blobs are merged: their buffer goes, ours is sent. */
			free(b.p);
			b.p = ops->pack(ops->arg, &b.len);
			rc = gv_send_parent(c, (v - mask + root) % n, &b);
			break;
		}
		if (v + mask >= n)
			continue;
		b.len = 0;
		if ((rc = gv_recv_child(c, peer, &b)) == COLL_OK &&
		    ops->merge(ops->arg, b.p != NULL ? (const void *)b.p : "", b.len, peer) != COLL_OK)
			rc = comm_fail(c, COLL_EPROTO, "fold: rank %d sent a blob that does not "
			    "merge: mixed coll versions?", peer);
	}
	free(b.p);
	return rc;
}
