/*
 * Fuzz what collstack reads of a target's files before it trusts them: the
 * interpreter modules picked out of a /proc/PID/maps text, and the bounds
 * check an ELF passes before libdwfl or the libpython symbol scan may use it
 * (stack__elf_check, on the image in memory as libelf reads it). The first
 * byte picks the reader. Every module found must be an absolute path that
 * fits its buffer; an ELF that passes must have every section inside it.
 */
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stack_elf.h"
#include "stack_py.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_maps(const uint8_t *data, size_t size)
{
	struct stack_py_mod *m = calloc(STACK_PY_MODS, sizeof *m);
	char *text = malloc(size + 1);
	int n;

	memcpy(text, data, size);
	text[size] = '\0';
	n = stack__py_map(text, m);
	if (n < 0 || n > STACK_PY_MODS)
		abort();
	for (int i = 0; i < n; i++)
		if (m[i].path[0] != '/' || strnlen(m[i].path, sizeof m[i].path) == sizeof m[i].path)
			abort();
	free(text);
	free(m);
}

static void
fuzz_elf(const uint8_t *data, size_t size)
{
	char *img = malloc(size ? size : 1), what[96];
	Elf *elf;
	Elf_Scn *scn = NULL;

	memcpy(img, data, size);
	(void)elf_version(EV_CURRENT);
	if ((elf = elf_memory(img, size)) != NULL) {
		if (stack__elf_check(elf, size, what, sizeof what) == 0)
			while ((scn = elf_nextscn(elf, scn)) != NULL) {
				GElf_Shdr sh;

				if (gelf_getshdr(scn, &sh) == NULL || (sh.sh_type != SHT_NOBITS &&
				    sh.sh_offset + sh.sh_size > size))
					abort();
				(void)elf_getdata(scn, NULL);
			}
		elf_end(elf);
	}
	free(img);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fuzz_elf(data + 1, size - 1);
	else
		fuzz_maps(data + 1, size - 1);
	return 0;
}
