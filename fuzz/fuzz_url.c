/* URL parsing (src/url.c): any bytes, as -r or $REDLOCK_URL would bring them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), err[256], where[300];
	struct redis_url url;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (url_parse(s, &url, err, sizeof(err)) == 0) {
		url_address(&url, where, sizeof(where));
		url_free(&url);
	}
	free(s);
	return 0;
}
