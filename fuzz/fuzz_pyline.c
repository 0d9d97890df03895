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
		/* Reads of 512 (thread state) and 128 (frame) bytes hold what is used. */
		if (l.ts_size > 512 || l.fr_size > 128 || l.str_compact_size > 128)
			abort();
	} else if (why[0] == '\0') {
		abort();
	}
	return 0;
}
