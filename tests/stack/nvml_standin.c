/*
 * A stand-in for NVML (libnvidia-ml.so.1) in collstack's tests (t0720): four
 * GPUs as seed 003's hang showed them, each at 100% utilisation and 150 to
 * 210 W of a 700 W limit, so that the verdict's GPU signature is shown on a
 * machine without GPUs. Only what core/sample/sample_gpu.c needs is here;
 * the rest it looks up is absent, as on an old driver.
 */
#include <stdint.h>

struct nvml_util {
	unsigned int gpu, memory;
};

int nvmlInit_v2(void);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **d);
int nvmlDeviceGetUtilizationRates(void *d, struct nvml_util *u);
int nvmlDeviceGetPowerUsage(void *d, unsigned int *mw);
int nvmlDeviceGetEnforcedPowerLimit(void *d, unsigned int *mw);

int
nvmlInit_v2(void)
{
	return 0;
}

int
nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = 4;
	return 0;
}

int
nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **d)
{
	*d = (void *)(uintptr_t)(i + 1);
	return i < 4 ? 0 : 2;
}

int
nvmlDeviceGetUtilizationRates(void *d, struct nvml_util *u)
{
	(void)d;
	u->gpu = 100;
	u->memory = 3;
	return 0;
}

int
nvmlDeviceGetPowerUsage(void *d, unsigned int *mw)
{
	*mw = 150000 + 20000 * (unsigned int)((uintptr_t)d - 1);
	return 0;
}

int
nvmlDeviceGetEnforcedPowerLimit(void *d, unsigned int *mw)
{
	(void)d;
	*mw = 700000;
	return 0;
}
