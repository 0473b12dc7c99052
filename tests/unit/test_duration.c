/* duration: what the command line accepts as a duration, and how messages print one. */
#include "check.h"
#include "clock.h"
#include "duration.h"

static void
parses(const char *s, int64_t ns)
{
	int64_t got = -1;

	CHECK_INT(duration_parse(s, &got), DURATION_OK);
	CHECK_INT(got, ns);
}

static void
rejects(const char *s, enum duration_result why)
{
	int64_t got = 12345;

	CHECK_INT(duration_parse(s, &got), why);
	CHECK_INT(got, 12345); /* untouched */
}

int
main(void)
{
	parses("250ms", 250 * NS_PER_MS);
	parses("30s", 30 * NS_PER_S);
	parses("5m", 300 * NS_PER_S);
	parses("1h", 3600 * NS_PER_S);
	parses("2", 2 * NS_PER_S);
	parses("0", 0);
	parses("1.5", 1500 * NS_PER_MS);
	parses("0.25s", 250 * NS_PER_MS);
	parses(".5", 500 * NS_PER_MS);
	parses("1.5ms", 1500 * NS_PER_US);
	parses("0.5m", 30 * NS_PER_S);
	parses("1.000000001", NS_PER_S + 1);
	parses("0.0000000019", 1); /* digits below a nanosecond are dropped */
	parses("9223372036", 9223372036 * NS_PER_S);
	/* systemd's spellings, as people paste them from unit files. */
	parses("10min", 600 * NS_PER_S);
	parses("1h30m", 5400 * NS_PER_S);
	parses("1h 30min", 5400 * NS_PER_S);
	parses("2d", 2 * 86400 * NS_PER_S);
	parses("1w", 7 * 86400 * NS_PER_S);
	/* systemd's months and years: 30.44 and 365.25 days; "M" is not "m". */
	parses("1y", 31557600 * NS_PER_S);
	parses("2 years", 2 * 31557600 * NS_PER_S);
	parses("1M", 2629800 * NS_PER_S);
	parses("1month 1m", 2629800 * NS_PER_S + 60 * NS_PER_S);
	parses("1sec", NS_PER_S);
	parses("2 hours", 7200 * NS_PER_S);
	parses("55s500ms", 55500 * NS_PER_MS);
	parses("1.5h", 5400 * NS_PER_S);
	parses("500us", 500 * NS_PER_US);
	parses("500\xc2\xb5s", 500 * NS_PER_US);
	parses("90", 90 * NS_PER_S);

	rejects("", DURATION_INVALID);
	rejects("abc", DURATION_INVALID);
	rejects("-1", DURATION_INVALID);
	rejects("+1", DURATION_INVALID);
	rejects(" 1", DURATION_INVALID);
	rejects("1 ", DURATION_INVALID);
	rejects("1x", DURATION_INVALID);
	rejects("1.", DURATION_INVALID);
	rejects(".", DURATION_INVALID);
	rejects("1.5.5", DURATION_INVALID);
	rejects("1e3", DURATION_INVALID);
	rejects("ms", DURATION_INVALID);
	rejects("inf", DURATION_INVALID);
	rejects("0x10", DURATION_INVALID);
	rejects("1S", DURATION_INVALID);
	rejects("1s5", DURATION_INVALID);
	rejects("1h 30", DURATION_INVALID); /* a bare number only alone */
	rejects("30 1h", DURATION_INVALID);
	rejects("1h  ", DURATION_INVALID);
	rejects("1hh", DURATION_INVALID);
	rejects("1mo", DURATION_INVALID);
	rejects("1h,30m", DURATION_INVALID);
	rejects("1 2", DURATION_INVALID);
	rejects("100000w", DURATION_RANGE);
	rejects("200000d 200000d", DURATION_RANGE);
	rejects("9223372037", DURATION_RANGE);
	rejects("99999999999999999999999", DURATION_RANGE);
	rejects("3000000h", DURATION_RANGE);

	char buf[32];
	CHECK_STR(duration_format(250 * NS_PER_MS, buf, sizeof(buf)), "250ms");
	CHECK_STR(duration_format(0, buf, sizeof(buf)), "0ms");
	CHECK_STR(duration_format(-5, buf, sizeof(buf)), "0ms");
	CHECK_STR(duration_format(1500 * NS_PER_MS, buf, sizeof(buf)), "1.5s");
	CHECK_STR(duration_format(30 * NS_PER_S, buf, sizeof(buf)), "30s");
	CHECK_STR(duration_format(150 * NS_PER_S, buf, sizeof(buf)), "2m30s");
	CHECK_STR(duration_format(300 * NS_PER_S, buf, sizeof(buf)), "5m");
	CHECK_STR(duration_format(3600 * NS_PER_S, buf, sizeof(buf)), "1h");
	CHECK_STR(duration_format(5400 * NS_PER_S, buf, sizeof(buf)), "1h30m");
	/* Each form rounds to its last digit, and one that rounds up to the next form takes it. */
	CHECK_STR(duration_format(999 * NS_PER_MS + 700000, buf, sizeof(buf)), "1s");
	CHECK_STR(duration_format(999 * NS_PER_MS + 400000, buf, sizeof(buf)), "999ms");
	CHECK_STR(duration_format(1960 * NS_PER_MS, buf, sizeof(buf)), "2s");
	CHECK_STR(duration_format(1000 * NS_PER_MS + 1, buf, sizeof(buf)), "1s");
	CHECK_STR(duration_format(59970 * NS_PER_MS, buf, sizeof(buf)), "1m");
	CHECK_STR(duration_format(150600 * NS_PER_MS, buf, sizeof(buf)), "2m31s");
	CHECK_STR(duration_format(3599600 * NS_PER_MS, buf, sizeof(buf)), "1h");
	CHECK_STR(duration_format(INT64_MAX, buf, sizeof(buf)), "2562047h47m");
	return check_done("duration");
}
