/* collrun's stdout, written whole even when it is non-blocking (outwait.c). */
#ifndef COLL_OUTWAIT_H
#define COLL_OUTWAIT_H

/* Make stdout a stream that waits for room instead of failing with EAGAIN. */
void outwait_stdout(void);

#endif
