/* Duration parsing and formatting (src/duration.c): what -t, -w, --grace and --max-hold take. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), out[32];
	int64_t ns;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (duration_parse(s, &ns) == DURATION_OK && ns >= 0)
		duration_format(ns, out, sizeof(out));
	free(s);
	return 0;
}
