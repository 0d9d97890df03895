/* Fuzz the ssh_config reader: a file the launcher reads, for any host name. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sshconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct sshconf sc;
	const char *nl;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	/* The first line is the host name to look up, the rest the file. */
	nl = strchr(text, '\n');
	memset(&sc, 0, sizeof sc);
	if (nl != NULL) {
		text[nl - text] = '\0';
		sshconf_apply_text(&sc, text, nl + 1);
	} else {
		sshconf_apply_text(&sc, "host", text);
	}
	sshconf_defaults(&sc, "host");
	free(text);
	return 0;
}
