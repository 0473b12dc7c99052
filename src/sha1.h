/*
 * SHA-1, only to name Lua scripts for EVALSHA the way Redis does (SCRIPT LOAD returns the
 * same digest). Not for anything that needs a secure hash.
 */
#ifndef REDLOCK_SHA1_H
#define REDLOCK_SHA1_H

#include <stddef.h>

#define SHA1_HEX_SIZE 41 /* 40 lower-case hex digits and a NUL */

void sha1_hex(const void *data, size_t len, char out[SHA1_HEX_SIZE]);

#endif
