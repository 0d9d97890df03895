/*
 * Fuzz the kernel log's line parser and classifier (core/facts/facts_kmsg*.c):
 * the log holds what drivers and other users' programs print. The input is
 * split into lines as a file of the log is; every record's text stays
 * within its bound, and an event's device keeps only the bytes a fact key
 * may hold and its kind what its kind names.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facts_kmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_check_event(const struct kmsg_event *ev, int kind)
{
	size_t n = strnlen(ev->dev, sizeof ev->dev);

	if (kind != ev->kind || n == sizeof ev->dev || strnlen(ev->what, sizeof ev->what) ==
	    sizeof ev->what)
		abort();
	if (kind == KMSG_NONE)
		return;
	if (n == 0 || ev->what[0] == '\0' || strspn(ev->dev, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-?") != n)
		abort();
	if ((kind == KMSG_XID || kind == KMSG_SXID) && strspn(ev->what, "0123456789") !=
	    strlen(ev->what))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		struct kmsg_rec r;
		struct kmsg_event ev;

		if (facts_kmsg_parse(p, len, &r) == 0) {
			if (strnlen(r.text, sizeof r.text) == sizeof r.text || r.usec < -1)
				abort();
			fuzz_check_event(&ev, facts_kmsg_classify(r.text, &ev));
		}
		p += len + 1;
	}
	return 0;
}
