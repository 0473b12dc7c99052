/* Small helpers shared by every module. */
#ifndef REDLOCK_UTIL_H
#define REDLOCK_UTIL_H

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
