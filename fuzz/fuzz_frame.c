/*
 * colltop's frame reader: the bytes rank 0 writes on its stdout (built from
 * every worker's snapshot, so from every host) folded into the model, then
 * drawn by the view and the batch writers as the dashboard would. Several
 * frames in a row, split at newlines, so that history, stragglers and job
 * stalls see sequences too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "top.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct top_args args = { .factor = 3, .slow_k = 2, .min_late_ms = 1, .warmup = 1,
	.stall_s = 0.5, .interval_s = 1, .iters = 1, .bytes = 8 };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct top_model m;
	struct view_table t;
	char err[256], lines[16][256], sum[512];
	int at[16];
	const char *p = (const char *)data, *end = p + size;
	double now = 0;
	FILE *null = fopen("/dev/null", "w");

	model_init(&m, &args);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		model_frame(&m, p, len, now += 0.4, err, sizeof err);
		p += len + (nl != NULL);
	}
	for (int by_host = 0; by_host < 2; by_host++) {
		view_table(&m, by_host, 3, by_host, by_host ? "a" : NULL, by_host, &t);
		view_table_free(&t);
	}
	view_alerts(&m, now + 5, lines, at, 16);
	view_summary(&m, sum, sizeof sum);
	if (null != NULL) {
		batch_text(&m, null);
		batch_json(&m, null);
		fclose(null);
	}
	model_free(&m);
	return 0;
}
