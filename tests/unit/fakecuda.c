/*
 * A stand-in for CUDA's driver library in test_ncclprof: its soname is
 * libcuda.so.1, so the plugin, which only looks among loaded libraries,
 * finds it once the test has loaded it. A host function placed on a stream
 * waits in a queue until the test runs it, as a GPU reaching it would.
 * Stream 0xca is being captured into a graph; on stream 0xbad nothing can be
 * placed.
 */
#include <stddef.h>

#define FAKECUDA_Q 256

static struct {
	void (*fn)(void *);
	void *arg;
} fakecuda_q[FAKECUDA_Q];
static unsigned fakecuda_head, fakecuda_tail;

int cuLaunchHostFunc(void *stream, void (*fn)(void *), void *arg);
int cuStreamIsCapturing(void *stream, int *status);
int fakecuda_run(int n);
int fakecuda_pending(void);

int
cuLaunchHostFunc(void *stream, void (*fn)(void *), void *arg)
{
	if (stream == (void *)0xbad || fakecuda_tail - fakecuda_head >= FAKECUDA_Q)
		return 1;	/* CUDA_ERROR_INVALID_VALUE */
	fakecuda_q[fakecuda_tail % FAKECUDA_Q].fn = fn;
	fakecuda_q[fakecuda_tail % FAKECUDA_Q].arg = arg;
	fakecuda_tail++;
	return 0;
}

int
cuStreamIsCapturing(void *stream, int *status)
{
	*status = stream == (void *)0xca;
	return 0;
}

/* The stream goes on past n host functions (all: n < 0); how many ran. */
int
fakecuda_run(int n)
{
	int ran = 0;

	while (fakecuda_head != fakecuda_tail && (n < 0 || ran < n)) {
		unsigned i = fakecuda_head++ % FAKECUDA_Q;

		fakecuda_q[i].fn(fakecuda_q[i].arg);
		ran++;
	}
	return ran;
}

int
fakecuda_pending(void)
{
	return (int)(fakecuda_tail - fakecuda_head);
}
