/*
 * pickle.c: the plain-data pickles of PyTorch's flight recorder, read into
 * jansson values without running anything (see pickle.c for what is read).
 */
#ifndef COLL_PICKLE_H
#define COLL_PICKLE_H

#include <jansson.h>
#include <stddef.h>

/*
 * The value of the pickle in buf: dicts become objects (keys as text),
 * lists and tuples arrays. NULL with a one-line reason in err.
 */
json_t *pickle_read(const void *buf, size_t len, char *err, size_t errlen);

#endif
