#!/usr/bin/env bats
# scripts/bench.sh still works (issue 4): its quick mode runs both tools and prints the
# table. The figures are the bench's business, never a test's.

bats_require_minimum_version 1.5.0
# The time limit is read before a test starts: set inside one, it would not count.
BATS_TEST_TIMEOUT=120
load helpers

: "${SOURCE_ROOT:?meson test sets SOURCE_ROOT}"
: "${BENCH_CRITICAL:?meson test sets BENCH_CRITICAL}"

@test "scripts/bench.sh --quick measures both tools and prints its table" {
	run --separate-stderr "$SOURCE_ROOT/scripts/bench.sh" --quick
	assert_success
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp '^redlock-run vs flock\(1\) on .*quick mode'
	assert_line --regexp '^\| `LOCK KEY -- true`, median of 20 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+× \|'
	assert_line --regexp '^\| shared counter after 40 sections \| 40 \| 40 \|'
	assert_line --regexp '^\| Redis commands sent per section \| \| [0-9.]+ \|'
	assert_line --regexp '^Commands sent in the contended run: EVALSHA [0-9]+, BLPOP [0-9]+\.$'
}
