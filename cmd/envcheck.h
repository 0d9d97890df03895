/*
 * The COLL_* variables a user set, checked once by the front end (cmd_main):
 * a value the code would quietly ignore, and a name that is a slip for a
 * known one, each said in one warning line.
 */
#ifndef COLL_ENVCHECK_H
#define COLL_ENVCHECK_H

/* Warn on stderr as tool; skipped in a rank or worker (its front end has said it). */
void envcheck_run(const char *tool, int argc, char **argv);

#endif
