/*
 * The JSON form of PyTorch's flight recorder dump (dump_fr_trace_json, and
 * what a job's own code writes with it): one object with the pickle's keys
 * (version, comm_lib_version, pg_config, pg_status, entries), no frames, 0
 * for times not reached and strings for pg_status's numbers. Read into the
 * values pickle_read gives, so that fr.c reads both one way after parsing.
 *
 * A dump may come from anyone's file (a shared /tmp, a copy off a
 * cluster): before jansson makes a value, one pass over the bytes counts
 * the values and the nesting, outside strings, and refuses what is too
 * many or too deep; jansson's memory is then in proportion to that count,
 * and its recursion (parsing, freeing, comparing) to FRJSON_DEPTH_MAX.
 */
#include <stdio.h>
#include <string.h>

#include "frjson.h"
#include "msg.h"

/* Count values and the deepest nesting outside strings; -1 with why past a bound. */
static int
frjson_scan(const unsigned char *p, size_t len, char *err, size_t errlen)
{
	size_t values = 1;
	int depth = 0, in_str = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];

		if (in_str) {
			if (c == '\\')
				i++;	/* the escaped byte is no quote */
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"')
			in_str = 1;
		else if (c == '{' || c == '[') {
			values++;
			if (++depth > FRJSON_DEPTH_MAX) {
				snprintf(err, errlen, "JSON nested deeper than %d levels at byte %zu "
				    "(a dump nests 5)", FRJSON_DEPTH_MAX, i);
				return -1;
			}
		} else if (c == '}' || c == ']')
			depth -= depth > 0;
		else if (c == ',')
			values++;
		if (values > FRJSON_VALUES_MAX) {
			snprintf(err, errlen, "JSON of more than %u values (a dump of the largest "
			    "buffer has fewer)", FRJSON_VALUES_MAX);
			return -1;
		}
	}
	return 0;
}

json_t *
frjson_read(const void *buf, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root;

	if (len > FRJSON_BYTES_MAX) {
		snprintf(err, errlen, "JSON of %zu bytes, more than %u MiB", len,
		    FRJSON_BYTES_MAX >> 20);
		return NULL;
	}
	if (frjson_scan(buf, len, err, errlen) != 0)
		return NULL;
	/* Without JSON_ALLOW_NUL no string holds a NUL: every name is a C string. */
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		snprintf(err, errlen, "JSON that does not parse at line %d, column %d: %s",
		    je.line, je.column, je.text);
		msg_clean(err);	/* jansson quotes the bytes it stopped at */
		return NULL;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "JSON whose value is not an object");
		json_decref(root);
		return NULL;
	}
	return root;
}
