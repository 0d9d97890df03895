/*
 * A setting that is one of a few words (COLL_ALLREDUCE_ALGO=ring, COLL_CUDA_COPY=push):
 * which word, unset, or a value to refuse by name.
 */
#ifndef COLL_ENVWORD_H
#define COLL_ENVWORD_H

/*
 * Variable name against words (NULL-ended): COLL_OK and *v its index,
 * COLL_ENOTFOUND when unset or empty, COLL_EINVAL for any other value.
 */
int envword_get(const char *name, const char *const *words, int *v);

#endif
