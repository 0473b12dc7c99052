#!/usr/bin/env bats
# The lean path (issue 4): an uncontended run costs one connection and two commands, the
# watchdog connects only when its first renewal is due, and nothing slow happens at start-up.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	main_server_start
}

teardown_file() {
	main_server_stop
}

# Two scenarios start a TCP server of their own: each stops it, or the first would be left
# running when the second reuses its name.
teardown() {
	redis_stop tcp
}

setup() {
	main_server_reset
	"$RR" warm-up -- true # the server knows the scripts from now on
	rcli config resetstat >/dev/null
}

# calls NAME: how many times clients sent command NAME since the last reset.
calls() { calls_on main "$1"; }

# connections: connections accepted so far (counting the one that asks).
connections() {
	rcli info stats | sed -n 's/^total_connections_received:\([0-9]*\).*/\1/p'
}

@test "an uncontended run: one connection, two commands (acquire and release)" {
	before=$(connections)
	run "$RR" job -- true
	assert_success
	# +1 for redlock-run, +1 for the redis-cli that asks
	assert_equal $(($(connections) - before)) 2
	assert_equal "$(calls evalsha)" 2
	assert_equal "$(calls eval)" 0
	assert_equal "$(calls select)" 0
	assert_equal "$(calls auth)" 0
	assert_equal "$(calls script)" 0
}

@test "an uncontended run makes Redis execute 9 commands in all, the scripts' own included" {
	run "$RR" job -- true
	assert_success
	# The acquire: EVALSHA, EXISTS (nobody in line before it), SET NX, and the fence's TIME and
	# SET ... GET; the release: EVALSHA, GET, DEL, EXISTS (nobody waits: no clean-up of the
	# line, no wake-up).
	executed=$(rcli info commandstats | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p' |
		awk '$1 !~ /^(info|config)/ { n += $2 } END { print n }')
	assert_equal "$executed" 9
	assert_equal "$(calls exists)" 2
	assert_equal "$(calls time)" 1
	assert_equal "$(calls set)" 2
	assert_equal "$(calls get)" 1
	assert_equal "$(calls zrem)" 0
	assert_equal "$(calls zremrangebyscore)" 0
}

@test "SELECT only when a db is asked for, answered before the acquire" {
	run "$RR" -r "unix://$(redis_sock main)?db=3" job -- true
	assert_success
	assert_equal "$(calls select)" 1
	assert_equal "$(calls evalsha)" 2
}

@test "renewals go over the connection the lock was taken on: one connection, however long" {
	before=$(connections)
	run "$RR" -t 30s job -- sleep 0.3 # ends long before TTL/3, however busy the machine
	assert_success
	assert_equal $(($(connections) - before)) 2 # (one of them ours, for INFO)
	before=$(connections)
	run --separate-stderr "$RR" -v -t 600ms job -- sleep 0.5 # renews at 200ms and 400ms
	assert_success
	grep -q '^redlock-run: renewed job$' <<<"$stderr"
	assert_equal $(($(connections) - before)) 2
}

@test "an address literal or a Unix socket is never resolved: no hosts file, no NSS" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -e trace=openat -o "$dir/trace" true 2>/dev/null || skip "strace cannot trace here"
	redis_start_tcp tcp
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot work under ptrace
	strace -f -e trace=openat,connect -o "$dir/trace" \
		"$RR" -r "redis://127.0.0.1:$(redis_port tcp)" job -- true
	# TLS options in the environment do not make a plain run load OpenSSL either
	REDLOCK_CACERT=/etc/hostname strace -f -e trace=openat,connect -o "$dir/trace.unix" \
		"$RR" job -- true
	run grep -E 'nsswitch|/etc/hosts|resolv\.conf|libnss|gai\.conf|:53' "$dir/trace" "$dir/trace.unix"
	assert_failure
	# and no TLS library is loaded for a plain connection
	run grep -E 'libssl|libcrypto' "$dir/trace" "$dir/trace.unix"
	assert_failure
}

@test "a quiet run opens nothing for its messages; the first message opens stderr's own description" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -e trace=openat -o "$dir/trace" true 2>/dev/null || skip "strace cannot trace here"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot work under ptrace
	# stderr a pipe, where messages need a description of their own
	strace -f -e trace=openat -o "$dir/trace" "$RR" job -- true 2>&1 | cat >"$dir/err"
	run grep -F '/proc/self/fd/2' "$dir/trace"
	assert_failure
	strace -f -e trace=openat -o "$dir/trace.v" "$RR" -v job -- true 2>&1 | cat >"$dir/err"
	grep -q 'acquired job' "$dir/err"
	grep -qF '/proc/self/fd/2' "$dir/trace.v"
}

@test "a host name is resolved once: a connection opened again goes to the address that worked" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -f -e trace=openat -o "$dir/trace" true 2>/dev/null || skip "strace cannot trace here"
	redis_start_tcp tcp
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot work under ptrace
	# The command has the server close the run's connection: the watchdog opens another.
	strace -f -e trace=openat -o "$dir/trace" \
		"$RR" -v -r "redis://localhost:$(redis_port tcp)" -t 30s job -c \
		"redis-cli -p $(redis_port tcp) client kill type normal >/dev/null; sleep 1" 2>"$dir/err"
	grep -q '^redlock-run: renewed job$' "$dir/err"
	run redis-cli -p "$(redis_port tcp)" exists '{job}:fence'
	assert_output 1
	run grep -c '"/etc/hosts"' "$dir/trace"
	assert_output 1
}
