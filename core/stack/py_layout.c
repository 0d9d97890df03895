/*
 * What we need to know of CPython's private structures, per minor version:
 * offsets taken with offsetof from its headers (3.11: Debian's
 * python3.11-dev and 3.11.7; 3.12: 3.12.1, checked against py-spy's and
 * pystack's; 3.13: 3.13.0), and the location table that maps an instruction
 * to its line. From 3.13 on the interpreter publishes most of these offsets
 * itself (_Py_DebugOffsets at the start of _PyRuntime): where it does, they
 * are taken from the process and the table fills in the rest.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "stack_py.h"

static const struct stack_py_layout stack_py_layouts[] = {
	{
		.minor = 11,
		.rt_interp_head = 40,
		.is_next = 0, .is_threads_head = 16,
		.ts_next = 8, .ts_native_tid = 160, .ts_cframe = 56, .ts_size = 168,
		.cf_current = 8,
		.fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_owner = 69, .fr_size = 72,
		.fr_entry = 68, .owner_cstack = -1, .owner_generator = 1,
		.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_linetable = 136,
		.co_firstlineno = 72, .co_firsttraceable = 168, .co_code = 184,
		.str_length = 16, .str_state = 32, .str_ascii_size = 48, .str_compact_size = 72,
		.bytes_size = 16, .bytes_data = 32,
		.ob_type = 8,
	},
	{
		.minor = 12,
		.rt_interp_head = 40,
		.is_next = 0, .is_threads_head = 72,
		.ts_next = 8, .ts_native_tid = 144, .ts_cframe = 56, .ts_size = 152,
		.cf_current = 0,
		.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70, .fr_size = 72,
		.fr_entry = -1, .owner_cstack = 3, .owner_generator = 1,
		.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_linetable = 136,
		.co_firstlineno = 68, .co_firsttraceable = 176, .co_code = 192,
		.str_length = 16, .str_state = 32, .str_ascii_size = 40, .str_compact_size = 56,
		.bytes_size = 16, .bytes_data = 32,
		.ob_type = 8,
	},
	{
		.minor = 13,
		.rt_interp_head = 632,
		.is_next = 7264, .is_threads_head = 7344,
		.ts_next = 8, .ts_native_tid = 160, .ts_cframe = 72, .ts_size = 168,
		.cf_current = -1,
		.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70, .fr_size = 72,
		.fr_entry = -1, .owner_cstack = 3, .owner_generator = 1,
		.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_linetable = 136,
		.co_firstlineno = 68, .co_firsttraceable = 184, .co_code = 200,
		.str_length = 16, .str_state = 32, .str_ascii_size = 40, .str_compact_size = 56,
		.bytes_size = 16, .bytes_data = 32,
		.ob_type = 8,
	},
};

/*
 * 3.13's _Py_DebugOffsets, as uint64 words: where each offset we use sits
 * (the cookie is word 0, the version word 1, the free-threading flag word 2).
 * Its shape changes with the minor version too, so it is read for 3.13 only.
 */
enum {
	PYDBG_VERSION = 1, PYDBG_FREE_THREADED = 2, PYDBG_INTERP_HEAD = 5,
	PYDBG_IS_NEXT = 8, PYDBG_IS_THREADS = 9,
	PYDBG_TS_NEXT = 21, PYDBG_TS_FRAME = 23, PYDBG_TS_NATIVE = 25,
	PYDBG_FR_PREVIOUS = 29, PYDBG_FR_CODE = 30, PYDBG_FR_INSTR = 31, PYDBG_FR_OWNER = 33,
	PYDBG_CO_FILENAME = 35, PYDBG_CO_NAME = 36, PYDBG_CO_QUALNAME = 37,
	PYDBG_CO_LINETABLE = 38, PYDBG_CO_FIRSTLINE = 39, PYDBG_CO_CODE = 43,
	PYDBG_OB_TYPE = 45, PYDBG_BYTES_SIZE = 65, PYDBG_BYTES_DATA = 66,
	PYDBG_STR_STATE = 68, PYDBG_STR_LENGTH = 69, PYDBG_STR_ASCII = 70,
	PYDBG_WORDS = 73
};

/* Every field read lies inside what is read of its object. */
static int
stack_py_fits(const struct stack_py_layout *l)
{
	const uint16_t code[] = { l->co_filename, l->co_name, l->co_qualname, l->co_linetable,
		l->co_firstlineno, l->co_firsttraceable, l->ob_type };

	if (l->ts_size > STACK_PY_TS_READ || l->fr_size > STACK_PY_FR_READ ||
	    l->co_code > STACK_PY_CODE_READ || l->str_compact_size > STACK_PY_HDR_READ ||
	    l->bytes_data > STACK_PY_HDR_READ || l->bytes_size + 8 > l->bytes_data ||
	    l->str_length + 8 > l->str_ascii_size || l->str_state + 4 > l->str_ascii_size ||
	    l->ob_type + 8 > l->str_ascii_size || l->ob_type + 8 > l->bytes_data)
		return 0;
	for (size_t i = 0; i < sizeof code / sizeof *code; i++)
		if (code[i] + 8 > l->co_code)
			return 0;
	return 1;
}

int
stack__py_debug_offsets(const uint8_t *buf, size_t len, struct stack_py_layout *l, char *why,
    size_t whylen)
{
	static const struct { int word; size_t field; } map[] = {
		{ PYDBG_INTERP_HEAD, offsetof(struct stack_py_layout, rt_interp_head) },
		{ PYDBG_IS_NEXT, offsetof(struct stack_py_layout, is_next) },
		{ PYDBG_IS_THREADS, offsetof(struct stack_py_layout, is_threads_head) },
		{ PYDBG_TS_NEXT, offsetof(struct stack_py_layout, ts_next) },
		{ PYDBG_TS_FRAME, offsetof(struct stack_py_layout, ts_cframe) },
		{ PYDBG_TS_NATIVE, offsetof(struct stack_py_layout, ts_native_tid) },
		{ PYDBG_FR_PREVIOUS, offsetof(struct stack_py_layout, fr_previous) },
		{ PYDBG_FR_CODE, offsetof(struct stack_py_layout, fr_code) },
		{ PYDBG_FR_INSTR, offsetof(struct stack_py_layout, fr_instr) },
		{ PYDBG_FR_OWNER, offsetof(struct stack_py_layout, fr_owner) },
		{ PYDBG_CO_FILENAME, offsetof(struct stack_py_layout, co_filename) },
		{ PYDBG_CO_NAME, offsetof(struct stack_py_layout, co_name) },
		{ PYDBG_CO_QUALNAME, offsetof(struct stack_py_layout, co_qualname) },
		{ PYDBG_CO_LINETABLE, offsetof(struct stack_py_layout, co_linetable) },
		{ PYDBG_CO_FIRSTLINE, offsetof(struct stack_py_layout, co_firstlineno) },
		{ PYDBG_CO_CODE, offsetof(struct stack_py_layout, co_code) },
		{ PYDBG_OB_TYPE, offsetof(struct stack_py_layout, ob_type) },
		{ PYDBG_BYTES_SIZE, offsetof(struct stack_py_layout, bytes_size) },
		{ PYDBG_BYTES_DATA, offsetof(struct stack_py_layout, bytes_data) },
		{ PYDBG_STR_STATE, offsetof(struct stack_py_layout, str_state) },
		{ PYDBG_STR_LENGTH, offsetof(struct stack_py_layout, str_length) },
		{ PYDBG_STR_ASCII, offsetof(struct stack_py_layout, str_ascii_size) },
	};
	const struct stack_py_layout *base;
	uint64_t w[PYDBG_WORDS];
	int minor;

	if (len < sizeof w || memcmp(buf, "xdebugpy", 8) != 0) {
		snprintf(why, whylen, "no _Py_DebugOffsets at the start of _PyRuntime");
		return -1;
	}
	memcpy(w, buf, sizeof w);
	minor = (int)((w[PYDBG_VERSION] >> 16) & 0xff);
	if ((w[PYDBG_VERSION] >> 24) != 3 || (base = stack__py_layout(minor)) == NULL ||
	    minor < 13) {
		snprintf(why, whylen, "Python %d.%d: its frames are not read (collstack reads "
		    "3.11 to 3.13)", (int)(w[PYDBG_VERSION] >> 24), minor);
		return -1;
	}
	if (w[PYDBG_FREE_THREADED] != 0) {
		snprintf(why, whylen, "free-threaded Python 3.%d: its frames are not read", minor);
		return -1;
	}
	*l = *base;
	for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
		uint16_t v;

		if (w[map[i].word] > 8192) {
			snprintf(why, whylen, "Python 3.%d: _Py_DebugOffsets word %d is %llu, not "
			    "an offset", minor, map[i].word, (unsigned long long)w[map[i].word]);
			return -1;
		}
		v = (uint16_t)w[map[i].word];
		memcpy((char *)l + map[i].field, &v, sizeof v);
	}
	/* What we read of each must reach the fields we use in it. */
	l->ts_size = (uint16_t)((l->ts_native_tid > l->ts_cframe ? l->ts_native_tid :
	    l->ts_cframe) + 8);
	if (l->ts_next + 8 > l->ts_size)
		l->ts_size = (uint16_t)(l->ts_next + 8);
	l->fr_size = (uint16_t)((l->fr_owner > l->fr_instr ? l->fr_owner : l->fr_instr) + 8);
	if (l->fr_code + 8 > l->fr_size || l->fr_previous + 8 > l->fr_size)
		l->fr_size = (uint16_t)((l->fr_code > l->fr_previous ? l->fr_code :
		    l->fr_previous) + 8);
	l->str_compact_size = (uint16_t)(l->str_ascii_size + 16);	/* utf8_length, utf8 */
	if (!stack_py_fits(l)) {
		snprintf(why, whylen, "Python 3.%d: its _Py_DebugOffsets put a field past what "
		    "collstack reads of its objects", minor);
		return -1;
	}
	return 0;
}

const struct stack_py_layout *
stack__py_layout(int minor)
{
	for (size_t i = 0; i < sizeof stack_py_layouts / sizeof *stack_py_layouts; i++)
		if (stack_py_layouts[i].minor == minor)
			return &stack_py_layouts[i];
	return NULL;
}

/* An unsigned number in 6-bit groups, low first, 0x40 meaning more; -1 past the end. */
static int
stack_py_varint(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
	uint32_t v = 0;
	int shift = 0;

	do {
		if (*p >= end || shift > 24)
			return -1;
		v |= (uint32_t)(**p & 63) << shift;
		shift += 6;
	} while (*(*p)++ & 64);
	*out = v;
	return 0;
}

/* Signed: the low bit is the sign. */
static int
stack_py_svarint(const uint8_t **p, const uint8_t *end, int32_t *out)
{
	uint32_t u;

	if (stack_py_varint(p, end, &u) != 0)
		return -1;
	*out = (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
	return 0;
}

/*
 * Entries of 1 to 8 code units each: a first byte with the top bit set, the
 * form in bits 3-6, the length less one in bits 0-2, then the form's bytes.
 * Forms: 15 no location, 14 long (line delta, end line, columns), 13 line
 * delta only, 10-12 one line further on by form-10 (two column bytes), 0-9
 * same line (one column byte).
 */
int
stack__py_line(const uint8_t *tab, size_t len, int firstline, int lasti)
{
	const uint8_t *p = tab, *end = tab + len;
	int64_t line = firstline;
	int addr = 0;

	if (lasti < 0)
		return -1;
	while (p < end) {
		uint8_t b = *p++;
		int form = (b >> 3) & 15, n = (b & 7) + 1;
		int64_t here = line;
		int32_t d;
		uint32_t skip;

		if (!(b & 0x80))
			return -1;	/* not at an entry: the table is not what we think */
		if (form == 15) {
			here = -1;
		} else if (form == 14 || form == 13) {
			if (stack_py_svarint(&p, end, &d) != 0)
				return -1;
			here = line += d;
			for (int k = 0; form == 14 && k < 3; k++)
				if (stack_py_varint(&p, end, &skip) != 0)
					return -1;
		} else {
			size_t cols = form >= 10 ? 2 : 1;

			if ((size_t)(end - p) < cols)
				return -1;
			p += cols;
			if (form >= 10)
				here = line += form - 10;
		}
		if (line < INT32_MIN || line > INT32_MAX)
			return -1;
		if (lasti < addr + n)
			return here < 1 ? -1 : (int)here;
		addr += n;
	}
	return -1;
}
