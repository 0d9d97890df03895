/*
 * Ctrl-C in a sweep: rank 0 ends the table it has streamed so far with the
 * footer of the rows measured (or, under --json, the document of them), and
 * every rank exits 130, as a shell reports an interrupted program.
 */
#ifndef COLL_PERF_INTR_H
#define COLL_PERF_INTR_H

/*
 * Before any thread is made: SIGINT is blocked (threads made from here on
 * inherit that) and caught; perf_intr_arm then lets this thread alone take
 * it, so that the handler never runs beside perf_intr_set.
 */
void perf_intr_install(void);
void perf_intr_arm(void);
/* What the handler writes before _exit(130), from now on (taken over; NULL: nothing). */
void perf_intr_set(char *text);
/* Nothing more to write on an interrupt: the text freed. */
void perf_intr_release(void);

#endif
