/*
 * Fuzz what collstack reads of a Python process's memory that is not
 * checked against a type: location tables (co_linetable) and 3.13's
 * _Py_DebugOffsets. Any bytes give a line or -1, a layout or a refusal
 * that says why, and a layout taken never points a read past its buffers.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stack_py.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stack_py_layout l;
	char why[160] = "";
	int lasti = size > 0 ? data[0] * 3 : 0;
	int line = stack__py_line(data, size, 7, lasti);

	if (line < -1 || line == 0)
		abort();
	if (stack__py_debug_offsets(data, size, &l, why, sizeof why) == 0) {
		/* The reads py.c makes of each object hold every field it uses. */
		if (l.ts_size > STACK_PY_TS_READ || l.fr_size > STACK_PY_FR_READ ||
		    l.co_code > STACK_PY_CODE_READ || l.str_compact_size > STACK_PY_HDR_READ ||
		    l.ts_native_tid + 8 > l.ts_size || l.fr_owner >= l.fr_size ||
		    l.co_qualname + 8 > l.co_code || l.bytes_size + 8 > l.bytes_data ||
		    l.ts_next + 8 > l.ts_size || l.fr_previous + 8 > l.fr_size ||
		    l.fr_code + 8 > l.fr_size || l.str_state + 4 > l.str_ascii_size ||
		    l.str_length + 8 > l.str_ascii_size || l.co_filename + 8 > l.co_code)
			abort();
	} else if (why[0] == '\0') {
		abort();
	}
	return 0;
}
