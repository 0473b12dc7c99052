#!/usr/bin/env bats
# scripts/bench.sh still works (issues 4, 9 and 14): its quick mode runs both tools, every
# engine against one plain server, and prints the table. The figures are the bench's business, never a
# test's.

bats_require_minimum_version 1.5.0
# The time limit is read before a test starts: set inside one, it would not count.
BATS_TEST_TIMEOUT=120
load helpers

: "${SOURCE_ROOT:?meson test sets SOURCE_ROOT}"
: "${BENCH_CRITICAL:?meson test sets BENCH_CRITICAL}"

@test "scripts/bench.sh --quick measures both tools and prints its table" {
	run --separate-stderr "$SOURCE_ROOT/scripts/bench.sh" --quick
	# What went wrong (a run that failed, sections that overlapped) is on stderr.
	[ "$status" -eq 0 ] || echo "$stderr" | grep -v '^INFO\|^ninja\|^\[' >&2
	assert_success
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp '^redlock-run vs flock\(1\) on .*quick mode'
	assert_line --regexp '^\| `LOCK KEY -- true`, median of 20 \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+× \|'
	assert_line --regexp '^\| shared counter after 40 sections \| 40 \| 40 \|'
	assert_line --regexp '^\| Redis commands sent per section \| \| [0-9.]+ \|'
	assert_line --regexp '^Commands sent in the contended run: EVALSHA [0-9]+, (EVAL [0-9]+, )?BLPOP [0-9]+\.$'
	# a semaphore, as a ratio to the lock in the same run, never more inside than its limit
	assert_line --regexp '^\| 4 workers × 10 under `--limit 4`: sections/s \| \| [0-9]+ \| [0-9.]+× a lock \([0-9]+\); at most [1-4] inside at once \|'
	# the executed commands and the server's CPU time, next to a plain pair's
	assert_line --regexp '^\| Redis commands executed per uncontended run .* \| \| [0-9.]+ \| [0-9.]+× a plain SET NX'
	assert_line --regexp '^\| Redis CPU time per uncontended run \| \| [0-9.]+ µs \| [0-9.]+× the plain pair'
	# the CPU time a run costs, beside flock's: the processes', then the server's added
	assert_line --regexp '^\| `LOCK KEY -- true`: CPU time of a run .* \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+× \|'
	assert_line --regexp '^\| CPU time of an uncontended run, the server.s included \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+× \|'
	assert_line --regexp '^\| 10 started together: CPU time per section, .* \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+× \|'
	# every engine, as a ratio to the plain server in the same run
	local engine engines=("\`--limit 4\`" "3 servers \(Redlock\)" "Sentinel .*"
		"Cluster, through the node that owns the slot" "Cluster, through a node that does not .*")
	[[ $("$RR" --version) == *"(TLS: yes)"* ]] && engines+=("rediss:// \(TLS\)")
	for engine in "${engines[@]}"; do
		assert_line --regexp "^\| \`LOCK KEY -- true\`, $engine, median of 10 \| \| [0-9.]+ ms \| [0-9.]+× one plain server \([0-9.]+ ms\) \|"
	done
	assert_line --regexp '^\| 4 workers × 10 on 3 servers: sections/s \| \| [0-9]+ \| [0-9]+% of one server'
}
