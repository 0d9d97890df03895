/*
 * frjson.c: the JSON dumps of PyTorch's flight recorder (dump_fr_trace_json),
 * read into the jansson values the pickle reader gives, within bounds.
 */
#ifndef COLL_FRJSON_H
#define COLL_FRJSON_H

#include <jansson.h>
#include <stddef.h>

#define FRJSON_BYTES_MAX (64u << 20)	/* 30,000 entries of a dump are about 15 MB */
#define FRJSON_VALUES_MAX (1u << 22)	/* values, counted before jansson makes any */
#define FRJSON_DEPTH_MAX 16		/* a dump nests 5 deep: entries, entry, sizes, size */

/*
 * The object of the JSON dump in buf, or NULL with a one-line reason in
 * err: more than FRJSON_BYTES_MAX bytes, FRJSON_VALUES_MAX values or
 * FRJSON_DEPTH_MAX levels is refused before it is parsed.
 */
json_t *frjson_read(const void *buf, size_t len, char *err, size_t errlen);

#endif
