/*
 * frlive.c: the flight recorder of a live PyTorch job, asked for through
 * PyTorch's dump pipe (TORCH_FR_DEBUG_INFO_PIPE_FILE, or the older
 * TORCH_NCCL_DEBUG_INFO_PIPE_FILE) of each rank here.
 */
#ifndef COLL_TRIAGE_FRLIVE_H
#define COLL_TRIAGE_FRLIVE_H

#include <jansson.h>

#include "stack.h"

/*
 * Ask the ranks among pis (those whose environment names a dump pipe) for
 * a dump, and wait at most budget_s for them. Into blob: "fr", the dumps
 * taken, [{"rank", "pid", "dump": its newest entries (fr_trim)}], and
 * "fr_skipped", why a rank gave none ("rank R (pid P): why"); each only
 * when not empty. Another user's file at a pipe's or dump's name is said,
 * never read or written.
 */
void frlive_fetch(const struct stack_pinfo *pis, int npi, double budget_s, json_t *blob);

#endif
