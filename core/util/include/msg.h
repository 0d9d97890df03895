/*
 * One-line messages about untrusted input, for the parsers (host lists, fault
 * plans): a message goes into the caller's buffer if one was given, and text
 * from the input is quoted cut short with control bytes escaped, so that an
 * error can neither run over many lines nor drive a terminal.
 */
#ifndef COLL_MSG_H
#define COLL_MSG_H

#include <stddef.h>

/* Room for msg_quote of at most max bytes of input. */
#define MSG_QUOTE_LEN(max) (4 * (max) + 8)

/* Format into err (errlen bytes); nothing when err is NULL or errlen is 0. */
void msg_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 'TEXT' of at most max bytes of s (len long), "..." when cut; buf holds MSG_QUOTE_LEN(max). */
const char *msg_quote(char *buf, const char *s, size_t len, size_t max);
/*
 * Make untrusted text (a peer's error, a page's host, a GPU's name) safe to
 * print, in place: every control byte (below 0x20) and every byte from 0x7f
 * up becomes '?', so the length never changes and the text can neither run
 * over lines nor drive a terminal (ESC, CSI, OSC 52). Non-ASCII text (UTF-8)
 * is lost to '?' too: a lone byte of it is as good as an escape to some
 * terminals. NULL is left alone.
 */
void msg_clean(char *s);

#endif
