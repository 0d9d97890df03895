/*
 * Hex digits read back: the unique id's secret and the percent-escapes of
 * the user's variables on an agent's stdin are both written as hex.
 */
#ifndef COLL_HEX_H
#define COLL_HEX_H

/* The value of one hex digit (either case); -1 if c is none. */
int hex_digit(char c);
/* The byte two hex digits at s make; -1 if either is none (s[1] is read only after a digit). */
int hex_byte(const char *s);

#endif
