/*
 * The kernels' fatbin (sm_80 and sm_90 code, compute_90 PTX for newer GPUs),
 * made by nvcc at build time and embedded here with the assembler's .incbin,
 * so that the library carries its kernels and needs no file at run time.
 * Built without nvcc (COLL_CUDA=OFF, or AUTO where none is found) it has none.
 */
#include <stddef.h>

#include "cuda_int.h"

#ifdef COLL_CUDA_FATBIN
__asm__(".section .rodata\n"
    ".balign 64\n"
    ".type cuda__fatbin_start, @object\n"
    "cuda__fatbin_start:\n"
    ".incbin \"" COLL_CUDA_FATBIN "\"\n"
    "cuda__fatbin_end:\n"
    ".previous\n");

extern const unsigned char cuda__fatbin_start[], cuda__fatbin_end[];

const void *
cuda__fatbin(size_t *len)
{
	*len = (size_t)(cuda__fatbin_end - cuda__fatbin_start);
	return cuda__fatbin_start;
}
#else
const void *
cuda__fatbin(size_t *len)
{
	*len = 0;
	return NULL;
}
#endif
