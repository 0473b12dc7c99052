/*
 * Durations as the command line writes them, in systemd's spellings (people paste them from
 * unit files): "250ms", "30s", "5m", "10min", "1h30m", "1h 30min", "2d", "1w", or a bare number
 * of seconds; fractions allowed ("1.5", "0.25s"), as flock's -w takes them.
 */

/* The accepted forms, for messages. */
#define DURATION_FORMS                                                                             \
	"a number and a unit, us, ms, s, m or min, h, d, w, M or y (250ms, 1.5s, 10min, 1h30m), "  \
	"or a "                                                                                    \
	"number of seconds (90, 1.5)"
#ifndef REDLOCK_DURATION_H
#define REDLOCK_DURATION_H

#include <stddef.h>
#include <stdint.h>

enum duration_result {
	DURATION_OK,
	DURATION_INVALID, /* not a duration: empty, a sign, a stray character, an unknown unit */
	DURATION_RANGE,   /* a duration, but longer than redlock-run can count (~292 years) */
};

/* Parses s into nanoseconds. Digits beyond a nanosecond are dropped. *ns is set only on
 * DURATION_OK. */
enum duration_result duration_parse(const char *s, int64_t *ns);

/* Writes ns as a short human duration ("250ms", "1.5s", "2m30s", "1h") into buf and returns
 * buf. */
char *duration_format(int64_t ns, char *buf, size_t size);

#endif
