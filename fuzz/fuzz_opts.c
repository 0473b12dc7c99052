/* The whole command line (src/opts.c): the input is argv, its arguments separated by NUL
 * bytes. Parsing has no side effects, so every input can be tried. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *argv[34], err[512];
	int argc = 0;
	struct opts o;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[argc++] = (char *)"redlock-run";
	for (char *p = buf; p <= buf + size && argc < 33; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;
	if (opts_parse(&o, argc, argv, err, sizeof(err)) == OPTS_RUN)
		opts_free(&o);
	free(buf);
	return 0;
}
