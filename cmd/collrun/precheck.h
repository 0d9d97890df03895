/* What collrun checks before it starts a rank (precheck.c). */
#ifndef COLL_PRECHECK_H
#define COLL_PRECHECK_H

#include "job.h"

/* The program can be run here: EXIT_OK, or the exit code after one line said why. */
int precheck_program(const struct job_opts *jo);
/* Warn, in one line, when this machine's ranks far outnumber its CPUs. */
void precheck_cpus(const struct job_opts *jo);

#endif
