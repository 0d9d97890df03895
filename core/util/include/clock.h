/* Monotonic and wall clocks in one place, so timeouts never use wall time. */
#ifndef COLL_CLOCK_H
#define COLL_CLOCK_H

#include <stdint.h>

/* Monotonic time in nanoseconds. */
uint64_t clock_now_ns(void);
/* Monotonic time in milliseconds. */
uint64_t clock_now_ms(void);
/* Wall-clock time in nanoseconds since the epoch (for status pages read by others). */
uint64_t clock_wall_ns(void);
/* Milliseconds from now until deadline_ms, clamped to [0, INT32_MAX]; -1 if deadline is 0. */
int clock_remaining_ms(uint64_t deadline_ms);

#endif
