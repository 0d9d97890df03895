/*
 * Fuzz the launcher recogniser (core/stack/launcher.c): a process's command
 * line and name are anyone's text. The input's first 15 bytes up to a
 * newline are the name, the rest the command line (NULs read as spaces, as
 * proc.c reads them). Whatever it says must be one of its own short names,
 * printable, and the same when asked twice.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stack_pinfo pi;
	const uint8_t *nl = memchr(data, '\n', size < 16 ? size : 16);
	size_t cl = nl != NULL ? (size_t)(nl - data) : 0, rest;
	const char *a, *b;

	memset(&pi, 0, sizeof pi);
	pi.pid = -1;		/* no /proc/PID/exe */
	pi.state = 'S';
	pi.rank = -1;
	memcpy(pi.comm, data, cl);
	rest = size - cl - (nl != NULL);
	if (rest > sizeof pi.cmdline - 1)
		rest = sizeof pi.cmdline - 1;
	memcpy(pi.cmdline, data + size - rest, rest);
	for (size_t i = 0; i < rest; i++)
		if (pi.cmdline[i] == '\0')
			pi.cmdline[i] = ' ';
	a = stack_launcher_name(&pi);
	b = stack_launcher_name(&pi);
	if (a != b)
		abort();
	if (a != NULL)
		for (size_t i = 0; a[i] != '\0'; i++)
			if (i >= 24 || !isprint((unsigned char)a[i]))
				abort();
	return 0;
}
