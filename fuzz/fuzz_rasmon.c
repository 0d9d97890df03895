/*
 * Fuzz the reader of NCCL RAS's MONITOR stream (colltop --ras follows it on a
 * port any local process could hold): fed in two pieces at a cut the input
 * chooses, every event read has bounded, printable fields.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ras_monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rasmon m;
	struct rasmon_event ev[4];
	size_t cut = size > 0 ? data[0] % (size + 1) : 0;
	int n;

	rasmon_init(&m);
	n = rasmon_feed(&m, (const char *)data, cut, ev, 4);
	n += rasmon_feed(&m, (const char *)data + cut, size - cut, ev + n, 4 - n);
	if (n < 0 || n > 4 || m.llen > RASMON_LINE || m.olen > RASMON_OBJ)
		abort();
	for (int i = 0; i < n; i++) {
		check(ev[i].name, sizeof ev[i].name);
		check(ev[i].when, sizeof ev[i].when);
		check(ev[i].host, sizeof ev[i].host);
		check(ev[i].gpus, sizeof ev[i].gpus);
	}
	return 0;
}
