/*
 * Prometheus's text exposition format (version 0.0.4), written into a
 * growing buffer: colltop's /metrics (colltop/metrics.c) and collcheck's
 * textfile (collcheck/prom.c) share it. No I/O here.
 *
 * A family's samples must come together after its HELP and TYPE lines (the
 * parsers refuse a family named twice): callers write one family at a time.
 * Label values are escaped as the format asks (backslash, double quote,
 * newline) and every byte that is not printable UTF-8 becomes '?', so that
 * nothing a host, a page or a finding holds can break a line or a parser.
 */
#ifndef COLL_PROMTEXT_H
#define COLL_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>

#define PROMTEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct promtext {
	char *p;		/* NUL-terminated; NULL until the first write */
	size_t len, cap;
};

void promtext_printf(struct promtext *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The HELP and TYPE lines ("counter", "gauge"); help is ours (no escaping). */
void promtext_family(struct promtext *t, const char *name, const char *type, const char *help);
/* s as a label value, escaped, without the quotes. */
void promtext_label_value(struct promtext *t, const char *s);
/*
 * One sample: name{k1="v1",...} v. labels: pairs of name and value, NULL
 * after the last (NULL: none); a pair whose value is NULL is left out.
 * v NAN: no line at all (the value is not known).
 */
void promtext_sample(struct promtext *t, const char *name, const char *const *labels, double v);
/* The same with an exact integer (a counter past 2^53 keeps its last digits). */
void promtext_sample_u64(struct promtext *t, const char *name, const char *const *labels,
    uint64_t v);
void promtext_free(struct promtext *t);

#endif
