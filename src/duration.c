#include "duration.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "util.h"

/* The units; a bare number counts seconds. */
static const struct {
	const char *suffix;
	int64_t ns;
} units[] = {
	{ "ms", NS_PER_MS },      { "s", NS_PER_S }, { "m", 60 * NS_PER_S },
	{ "h", 3600 * NS_PER_S }, { "", NS_PER_S },
};

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

enum duration_result
duration_parse(const char *s, int64_t *out)
{
	const char *p = s, *whole = s, *frac = NULL;
	size_t whole_len, frac_len = 0;
	int64_t unit = 0, ns = 0;

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
	for (size_t i = 0; i < ARRAY_LEN(units); i++) {
		if (strcmp(p, units[i].suffix) == 0) {
			unit = units[i].ns;
			break;
		}
	}
	if (!unit)
		return DURATION_INVALID;

	for (size_t i = 0; i < whole_len; i++) {
		int64_t digit = whole[i] - '0';
		if (ns > (INT64_MAX - digit) / 10)
			return DURATION_RANGE;
		ns = ns * 10 + digit;
	}
	if (ns > INT64_MAX / unit)
		return DURATION_RANGE;
	ns *= unit;
	/* Every unit is a whole number of nanoseconds divisible by 10 down to 1 ns, so each
	 * fraction digit adds an exact amount until the place value drops below 1 ns. */
	for (size_t i = 0; i < frac_len && unit >= 10; i++) {
		unit /= 10;
		if (ns > INT64_MAX - (frac[i] - '0') * unit)
			return DURATION_RANGE;
		ns += (frac[i] - '0') * unit;
	}
	*out = ns;
	return DURATION_OK;
}

char *
duration_format(int64_t ns, char *buf, size_t size)
{
	if (ns < 0)
		ns = 0;
	if (ns < NS_PER_S)
		snprintf(buf, size, "%lldms", (long long)((ns + NS_PER_MS / 2) / NS_PER_MS));
	else if (ns < 60 * NS_PER_S && ns % NS_PER_S)
		snprintf(buf, size, "%.1fs", (double)ns / (double)NS_PER_S);
	else if (ns < 60 * NS_PER_S)
		snprintf(buf, size, "%llds", (long long)(ns / NS_PER_S));
	else if (ns < 3600 * NS_PER_S) {
		long long s = (long long)(ns / NS_PER_S);
		if (s % 60)
			snprintf(buf, size, "%lldm%llds", s / 60, s % 60);
		else
			snprintf(buf, size, "%lldm", s / 60);
	} else {
		long long m = (long long)(ns / (60 * NS_PER_S));
		if (m % 60)
			snprintf(buf, size, "%lldh%lldm", m / 60, m % 60);
		else
			snprintf(buf, size, "%lldh", m / 60);
	}
	return buf;
}
