#include <stdint.h>
#include <time.h>

#include "clock.h"

uint64_t
clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t
clock_now_ms(void)
{
	return clock_now_ns() / 1000000ull;
}

uint64_t
clock_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int
clock_remaining_ms(uint64_t deadline_ms)
{
	uint64_t now;

	if (deadline_ms == 0)
		return -1;
	now = clock_now_ms();
	if (now >= deadline_ms)
		return 0;
	if (deadline_ms - now > INT32_MAX)
		return INT32_MAX;
	return (int)(deadline_ms - now);
}
