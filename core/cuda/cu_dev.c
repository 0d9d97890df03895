/*
 * Taking a GPU for an engine. The device is picked from the rank's place on
 * its host, not its global rank, so that ranks of several hosts each find
 * their own GPU without being told.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "cu_dev.h"
#include "err.h"
#include "xmalloc.h"

/* This rank's index among the ranks of its host: its GPU, as torchrun's LOCAL_RANK. */
static int
cu_dev_local_rank(struct comm *c)
{
	const char *e = getenv("COLL_LOCAL_RANK");
	int me = comm_rank(c), k = 0;

	if (e != NULL && *e != '\0')
		return atoi(e);
	for (int r = 0; r < me; r++)
		k += strcmp(comm_host(c, r), comm_host(c, me)) == 0;
	return k;
}

int
cu_dev_check(const struct cu_dev *d, int r, const char *what, char *err, size_t len)
{
	char b[96];

	if (r == CU_OK)
		return COLL_OK;
	snprintf(err, len, "%s on GPU %d: %s", what, d->dev, cu_api_error(&d->api, r, b,
	    sizeof b));
	return COLL_ESYS;
}

int
cu_dev_put(const struct cu_dev *d, cu_ptr_t dst, const void *src, size_t len, char *err,
    size_t errlen)
{
	int rc = cu_dev_check(d, d->api.memcpy_htod(dst, src, len), "copy to GPU", err, errlen);

	return rc == COLL_OK ? cu_dev_check(d, d->api.ctx_synchronize(), "copy to GPU", err,
	    errlen) : rc;
}

int
cu_dev_get(const struct cu_dev *d, void *dst, cu_ptr_t src, size_t len, char *err,
    size_t errlen)
{
	return cu_dev_check(d, d->api.memcpy_dtoh(dst, src, len), "copy from GPU", err, errlen);
}

int
cu_dev_open(struct cu_dev *d, struct comm *c, int device, const char *for_what, char *err,
    size_t len)
{
	char b[96];
	int count = 0, r;

	memset(d, 0, sizeof *d);
	if (cu_api_load(&d->api, for_what, err, len) != 0)
		return COLL_ESYS;
	if ((r = d->api.init(0)) != CU_OK || (r = d->api.device_get_count(&count)) != CU_OK) {
		snprintf(err, len, "CUDA driver: %s", cu_api_error(&d->api, r, b, sizeof b));
		return COLL_ESYS;
	}
	if (count == 0) {
		snprintf(err, len, "no GPU visible (CUDA_VISIBLE_DEVICES=%s)",
		    getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
		return COLL_ESYS;
	}
	d->dev = device >= 0 ? device : cu_dev_local_rank(c) % count;
	if (d->dev >= count) {
		snprintf(err, len, "GPU %d asked for, %d visible", d->dev, count);
		return COLL_EINVAL;
	}
	if ((r = d->api.primary_ctx_retain(&d->ctx, d->dev)) != CU_OK)
		return cu_dev_check(d, r, "cannot open a context", err, len);
	d->ctx_held = 1;
	if ((r = d->api.ctx_set_current(d->ctx)) != CU_OK ||
	    (r = d->api.stream_create(&d->stream, CU_STREAM_NON_BLOCKING)) != CU_OK)
		return cu_dev_check(d, r, "cannot make a stream", err, len);
	return COLL_OK;
}

void
cu_dev_close(struct cu_dev *d)
{
	if (d->stream != NULL)
		d->api.stream_destroy(d->stream);
	if (d->ctx_held)
		d->api.primary_ctx_release(d->dev);
	cu_api_unload(&d->api);
	memset(d, 0, sizeof *d);
}

void
cu_dev_where(const struct cu_dev *d, char *buf, size_t len)
{
	char name[96] = "?";
	int bus = 0, dev = 0, dom = 0;

	d->api.device_get_name(name, sizeof name, d->dev);
	d->api.device_get_attribute(&dom, CU_ATTR_PCI_DOMAIN, d->dev);
	d->api.device_get_attribute(&bus, CU_ATTR_PCI_BUS, d->dev);
	d->api.device_get_attribute(&dev, CU_ATTR_PCI_DEVICE, d->dev);
	snprintf(buf, len, "device %d [%04x:%02x:%02x] %.48s", d->dev, dom, bus, dev, name);
}

int
cu_dev_agree(struct comm *c, int ok, const char *stage, char *err, size_t len)
{
	int n = comm_size(c), rc, bad = 0;
	int *all = xcalloc((size_t)n, sizeof *all);
	size_t off;

	if ((rc = coll_allgather(c, &ok, all, 1, DT_INT32)) != COLL_OK) {
		snprintf(err, len, "%s", comm_last_error(c));
		free(all);
		return rc;
	}
	off = (size_t)snprintf(err, len, "%s failed on rank", stage);
	for (int r = 0; r < n; r++) {
		if (all[r])
			continue;
		if (off < len)
			off += (size_t)snprintf(err + off, len - off, "%s %d (%s)", bad ? "," : "", r,
			    comm_host(c, r));
		bad++;
	}
	if (off < len)
		snprintf(err + off, len - off, "; each says why on its own output");
	free(all);
	return bad ? COLL_EINVAL : COLL_OK;
}
