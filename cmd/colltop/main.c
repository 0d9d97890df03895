#include "cmd.h"

int
main(int argc, char **argv)
{
	return cmd_main("colltop", argc, argv);
}
