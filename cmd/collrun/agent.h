/* The remote side of an SSH launch (agent.c). */
#ifndef COLL_AGENT_H
#define COLL_AGENT_H

/* Run as `collrun --agent ...`; returns the exit status to use. */
int agent_main(int argc, char **argv);
/* Run as `collrun --relay ...` (relay.c): a host of the tree launch's upper layers. */
int relay_main(int argc, char **argv);

#endif
