/*
 * Run by the build: prints script_digests.h, the SHA-1 digest of every Lua script of
 * src/scripts.c in the order scripts_get gives them, so that redlock-run hashes nothing when
 * it starts.
 */
#include <stdio.h>
#include <string.h>

#include "scripts.h"
#include "sha1.h"

int
main(void)
{
	char sha[SHA1_HEX_SIZE];

	puts("/* Made by tools/script_digests.c when redlock-run is built: do not edit. */");
	printf("static const char script_digests[%zu][%d] = {\n", scripts_count(), SHA1_HEX_SIZE);
	for (size_t i = 0; i < scripts_count(); i++) {
		const char *text = scripts_get(i)->text;
		sha1_hex(text, strlen(text), sha);
		printf("\t\"%s\",\n", sha);
	}
	puts("};");
	return 0;
}
