#ifndef COLL_SAMPLE_IMPL_H
#define COLL_SAMPLE_IMPL_H

#include "sample.h"

/* sample_gpu.c: every GPU through NVML into s, or s->gpu_why. */
void sample__gpus(struct sample_host *s);

#endif
