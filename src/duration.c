#include "duration.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "util.h"

/* clang-format off */
/* The units, as systemd spells them (people paste durations from unit files); a bare number
 * alone counts seconds. Longer spellings first: "ms" is not "m" and an "s". */
static const struct {
	const char *suffix;
	int64_t ns;
} units[] = {
	{ "usec", NS_PER_US },
	{ "us", NS_PER_US },
	{ "\xc2\xb5s", NS_PER_US }, /* µs */
	{ "msec", NS_PER_MS },
	{ "ms", NS_PER_MS },
	{ "seconds", NS_PER_S },
	{ "second", NS_PER_S },
	{ "sec", NS_PER_S },
	{ "s", NS_PER_S },
	{ "minutes", 60 * NS_PER_S },
	{ "minute", 60 * NS_PER_S },
	{ "min", 60 * NS_PER_S },
	{ "m", 60 * NS_PER_S },
	{ "hours", 3600 * NS_PER_S },
	{ "hour", 3600 * NS_PER_S },
	{ "hr", 3600 * NS_PER_S },
	{ "h", 3600 * NS_PER_S },
	{ "days", 86400 * NS_PER_S },
	{ "day", 86400 * NS_PER_S },
	{ "d", 86400 * NS_PER_S },
	{ "weeks", 604800 * NS_PER_S },
	{ "week", 604800 * NS_PER_S },
	{ "w", 604800 * NS_PER_S },
	/* (systemd's month is a twelfth of its year, which is 365.25 days.) */
	{ "months", 2629800 * NS_PER_S },
	{ "month", 2629800 * NS_PER_S },
	{ "M", 2629800 * NS_PER_S },
	{ "years", 31557600 * NS_PER_S },
	{ "year", 31557600 * NS_PER_S },
	{ "y", 31557600 * NS_PER_S },
};
/* clang-format on */

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The unit at *p, which is moved past it: its length in ns, or 0 for none. A unit is followed
 * by the end, a space or the next number. */
static int64_t
take_unit(const char **p)
{
	for (size_t i = 0; i < ARRAY_LEN(units); i++) {
		size_t n = strlen(units[i].suffix);
		char after;
		if (strncmp(*p, units[i].suffix, n) != 0)
			continue; /* (then *p holds n bytes at least) */
		after = (*p)[n];
		if (after == '\0' || after == ' ' || after == '.' || is_digit(after)) {
			*p += n;
			return units[i].ns;
		}
	}
	return 0;
}

/* One term, "<digits>[.<digits>]" and its unit (unit 0: none), added to *total. */
static enum duration_result
add_term(const char *whole, size_t whole_len, const char *frac, size_t frac_len, int64_t unit,
	 int64_t *total)
{
	int64_t ns = 0;

	for (size_t i = 0; i < whole_len; i++) {
		int64_t digit = whole[i] - '0';
		if (ns > (INT64_MAX - digit) / 10)
			return DURATION_RANGE;
		ns = ns * 10 + digit;
	}
	if (ns > INT64_MAX / unit)
		return DURATION_RANGE;
	ns *= unit;
	/* Each fraction digit adds its place value in whole nanoseconds: exact for the units up
	 * to weeks, divisible by 10 down to 1 ns; a month's and a year's digits past the
	 * eleventh each lose less than a nanosecond. */
	for (size_t i = 0; i < frac_len && unit >= 10; i++) {
		unit /= 10;
		if (ns > INT64_MAX - (frac[i] - '0') * unit)
			return DURATION_RANGE;
		ns += (frac[i] - '0') * unit;
	}
	if (*total > INT64_MAX - ns)
		return DURATION_RANGE;
	*total += ns;
	return DURATION_OK;
}

enum duration_result
duration_parse(const char *s, int64_t *out)
{
	const char *p = s;
	int64_t total = 0;
	size_t terms = 0;
	bool bare = false;

	while (*p) {
		const char *whole = p, *frac = NULL, *q;
		size_t whole_len, frac_len = 0;
		int64_t unit;
		enum duration_result r;

		/* Terms may be apart ("1h 30min"), never at the ends. */
		if (terms && *p == ' ') {
			while (*p == ' ')
				p++;
			whole = p;
		}
		while (is_digit(*p))
			p++;
		whole_len = (size_t)(p - whole);
		if (*p == '.') {
			frac = ++p;
			while (is_digit(*p))
				p++;
			frac_len = (size_t)(p - frac);
		}
		if (whole_len + frac_len == 0 || (frac && frac_len == 0))
			return DURATION_INVALID;
		/* A unit may stand apart from its number ("2 h"). */
		q = p;
		while (*q == ' ')
			q++;
		if ((unit = take_unit(&q)))
			p = q;
		if (!unit) {
			/* A bare number is seconds, when it is all there is. */
			if (terms || *p)
				return DURATION_INVALID;
			bare = true;
			unit = NS_PER_S;
		}
		if ((r = add_term(whole, whole_len, frac, frac_len, unit, &total)) != DURATION_OK)
			return r;
		terms++;
	}
	if (!terms && !bare)
		return DURATION_INVALID;
	*out = total;
	return DURATION_OK;
}

/* ns / unit, to the nearest: each form rounds to its own last digit, so that 999.7ms is
 * "1s", not "1000ms", and 59.97s "1m", not "60.0s". */
static long long
nearest(int64_t ns, int64_t unit)
{
	return (long long)(ns / unit + (ns % unit >= unit / 2));
}

/* n small units as "<big>" and "<small>" ("2m30s", "5m"), sixty small to a big one. */
static void
sixties(char *buf, size_t size, long long n, const char *big, const char *small)
{
	if (n % 60)
		snprintf(buf, size, "%lld%s%lld%s", n / 60, big, n % 60, small);
	else
		snprintf(buf, size, "%lld%s", n / 60, big);
}

char *
duration_format(int64_t ns, char *buf, size_t size)
{
	const int64_t tenth = NS_PER_S / 10, minute = 60 * NS_PER_S;

	if (ns < 0)
		ns = 0;
	if (nearest(ns, NS_PER_MS) < 1000) {
		snprintf(buf, size, "%lldms", nearest(ns, NS_PER_MS));
	} else if (nearest(ns, tenth) < 600) {
		long long t = nearest(ns, tenth);
		if (t % 10)
			snprintf(buf, size, "%lld.%llds", t / 10, t % 10);
		else
			snprintf(buf, size, "%llds", t / 10);
	} else if (nearest(ns, NS_PER_S) < 3600) {
		sixties(buf, size, nearest(ns, NS_PER_S), "m", "s");
	} else {
		sixties(buf, size, nearest(ns, minute), "h", "m");
	}
	return buf;
}
