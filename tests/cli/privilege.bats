#!/usr/bin/env bats
# Secrets and least privilege (issue 8): a password from a file or the environment, never
# shown anywhere; an ACL user allowed exactly what the man page's ACL SETUSER line allows is
# enough for every feature, and one allowed less fails at once with a clear message.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	redis_start acl --requirepass 'admin secret'
	# The man page's line, for the lock prefix jobs:
	rcli_on acl -a 'admin secret' --no-auth-warning ACL SETUSER locker on '>l0cker pass' \
		resetkeys '~jobs:*' '~{jobs:*' resetchannels -@all "${LOCKER_COMMANDS[@]}" >/dev/null
}

teardown_file() {
	redis_stop acl
}

setup() {
	dir=$BATS_TEST_TMPDIR
	export REDLOCK_URL="unix://locker@$(redis_sock acl)"
	unset REDLOCK_PASSWORD REDLOCK_PASSWORD_FILE
	echo 'l0cker pass' >"$dir/password"
}

@test "--password-file and REDLOCK_PASSWORD_FILE give the first line of a file" {
	printf 'l0cker pass\r\nsecond line\n' >"$dir/crlf"
	run "$RR" --password-file "$dir/crlf" jobs:a -- echo ran
	assert_success
	assert_output ran
	run env REDLOCK_PASSWORD_FILE="$dir/password" "$RR" jobs:a -- echo ran
	assert_output ran
	# the option wins over the variables, the file variable over the plain one
	run env REDLOCK_PASSWORD_FILE=/nonexistent REDLOCK_PASSWORD=wrong \
		"$RR" --password-file "$dir/password" jobs:a -- echo ran
	assert_output ran
	run env REDLOCK_PASSWORD_FILE="$dir/password" REDLOCK_PASSWORD=wrong "$RR" jobs:a -- echo ran
	assert_output ran
}

@test "a password file that cannot be read, or is empty, is a usage error that names it" {
	run --separate-stderr "$RR" --password-file /nonexistent jobs:a -- true
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "redlock-run: --password-file '/nonexistent': no such file or directory"
	run -64 --separate-stderr "$RR" --password-file "$dir" jobs:a -- true
	assert_equal "${stderr_lines[0]}" "redlock-run: --password-file '$dir': is a directory"
	: >"$dir/empty"
	run --separate-stderr env REDLOCK_PASSWORD_FILE="$dir/empty" "$RR" jobs:a -- true
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "redlock-run: REDLOCK_PASSWORD_FILE '$dir/empty': no password on its first line"
	# a "file" without end is read no further than a password could be long
	run --separate-stderr timeout 5 "$RR" --password-file /dev/zero jobs:a -- true
	assert_equal "$status" 64
	head -c 5000 /dev/zero | tr '\0' x >"$dir/long"
	run --separate-stderr "$RR" --password-file "$dir/long" jobs:a -- true
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "redlock-run: --password-file '$dir/long': its first line is too long for a password"
}

@test "a password given any way never shows in messages, -v or --status --json" {
	secret='l0cker pass'
	wrong='n0t-the-Pa55'
	{
		"$RR" -v --password-file "$dir/password" jobs:a -- true
		REDLOCK_PASSWORD=$secret "$RR" -v jobs:a -- true
		"$RR" -v -r "unix://locker:l0cker%20pass@$(redis_sock acl)" jobs:a -- true
		REDLOCK_PASSWORD=$secret "$RR" --status --json jobs:a
		REDLOCK_PASSWORD=$secret "$RR" --status jobs:a
		REDLOCK_PASSWORD=$wrong "$RR" -v jobs:a -- true
		"$RR" -v -r "unix://locker:$wrong@$(redis_sock acl)" jobs:a -- true
		"$RR" -v -r "redis://locker:$wrong@127.0.0.1:1" jobs:a -- true
		"$RR" -r "redis://locker:$wrong@127.0.0.1:99999" jobs:a -- true
		REDLOCK_PASSWORD=$secret "$RR" -v -t 300ms jobs:a -- sleep 0.5
	} >"$dir/all" 2>&1 || true
	grep -q 'refused' "$dir/all" # the wrong ones were tried
	run grep -cE "l0cker|$wrong" "$dir/all"
	assert_output 0
}

@test "the man page's ACL line is enough: take, renew, wait and be woken, release, --status" {
	export REDLOCK_PASSWORD='l0cker pass'
	run "$RR" -t 300ms jobs:w -- sleep 1 # renewed three times
	assert_success
	"$RR" -t 30s jobs:w -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.02; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	"$RR" jobs:w -- echo woken >"$dir/woken" &
	waiter=$!
	in_line() { [[ $(rcli_on acl -a 'admin secret' --no-auth-warning zcard '{jobs:w}:waiting') == 1 ]]; }
	wait_until 5 in_line
	start=$(now_ms)
	touch "$dir/go"
	reap "$waiter"
	assert_equal "$status" 0
	assert_equal "$(cat "$dir/woken")" woken
	(($(now_ms) - start < 15000)) # by the release, not by the 30s lease: half of it
	wait "$holder"
	run "$RR" --status jobs:w
	assert_success
	assert_output --regexp "^jobs:w is free \(last fence [0-9]{16}\)$"
	run "$RR" -n '{jobs:deploy}:prod' -- echo a hash tag of the prefix
	assert_output "a hash tag of the prefix"
}

@test "a key outside the ACL's patterns: 69 at once, with the server's NOPERM and where to look" {
	export REDLOCK_PASSWORD='l0cker pass'
	run --separate-stderr timeout 10 "$RR" other -- echo never
	assert_equal "$status" 69
	[[ $stderr == *"refused to take other: NOPERM"*"see LEAST PRIVILEGE in redlock-run(1)" ]]
	# one without the wake list: refused as well, not a hang
	rcli_on acl -a 'admin secret' --no-auth-warning ACL SETUSER nowake on '>w' resetkeys \
		'~jobs:*' '~{jobs:*}:fence' '~{jobs:*}:waiting' -@all "${LOCKER_COMMANDS[@]}" >/dev/null
	run --separate-stderr timeout 10 "$RR" -r "unix://nowake:w@$(redis_sock acl)" jobs:b -- \
		echo never
	assert_equal "$status" 69
	[[ $stderr == *NOPERM* ]]
}

@test "a command left out of the ACL: 69 before anything is changed, naming it, if the options need it" {
	[[ $(rcli_on acl -a 'admin secret' --no-auth-warning eval \
		"return redis.acl_check_cmd and 1 or 0" 0) == 1 ]] || skip "the server cannot tell (Redis 6)"
	export REDLOCK_PASSWORD=p
	# Every run needs the lock's commands; one that may wait, the line's too (-n alone does
	# not, and a fleet that only ever runs -n may leave them out).
	local lock=(get set del exists pexpire pttl time zrem)
	local line=(type zadd zrange zscore zrangebyscore zremrangebyscore zcount rpush blpop)
	local c mode needed
	for c in "${lock[@]}" "${line[@]}" zcard pexpireat hget hset incr; do
		rcli_on acl -a 'admin secret' --no-auth-warning ACL SETUSER less reset on '>p' \
			'~jobs:*' '~{jobs:*' -@all "${LOCKER_COMMANDS[@]}" "-$c" >/dev/null
		for mode in "" -s "--limit 2" "--queue latest" -n; do
			needed=false
			[[ " ${lock[*]} " != *" $c "* ]] || needed=true
			[[ $mode == -n || " ${line[*]} " != *" $c "* ]] || needed=true
			[[ $mode != -s && $mode != --limit* ]] || [[ $c != zcard && $c != pexpireat ]] ||
				needed=true
			[[ $mode != "--queue latest" ]] || [[ $c != hget && $c != hset ]] || needed=true
			# shellcheck disable=SC2086 # (the mode's words)
			run --separate-stderr "$RR" -r "unix://less@$(redis_sock acl)" $mode jobs:p -- \
				echo ran
			echo "without $c, ${mode:-a lock}: $status $stderr" >&2
			if $needed; then
				assert_equal "$status" 69
				[[ $stderr == *"refused to take jobs:p: NOPERM"*"run the '$c' command"*"see LEAST PRIVILEGE"* ]]
			else
				assert_equal "$status" 0
				assert_output ran
			fi
			# Nothing left behind either way: no key, no place, no line (a fence, once a
			# run took the lock, and a --queue latest run's mark as the newest).
			run rcli_on acl -a 'admin secret' --no-auth-warning --scan --pattern '*jobs:p*'
			[[ -z $output || $output == "{jobs:p}:fence" ||
				($mode == "--queue latest" && $(sort <<<"$output" | tr '\n' ' ') == \
					"{jobs:p}:broken {jobs:p}:fence ") ]]
			rcli_on acl -a 'admin secret' --no-auth-warning del '{jobs:p}:broken' >/dev/null
		done
	done
}

@test "--list as a user allowed SCAN: its own locks, and a word about the keys it may not read" {
	rcli_on acl -a 'admin secret' --no-auth-warning ACL SETUSER lister on '>l1st' resetkeys \
		'~jobs:*' '~{jobs:*' resetchannels -@all "${LOCKER_COMMANDS[@]}" +scan >/dev/null
	local admin="unix://:admin%20secret@$(redis_sock acl)" lister="unix://lister:l1st@$(redis_sock acl)"
	"$RR" -r "$admin" other -c "touch $dir/other; until [ -e $dir/go ]; do sleep 0.05; done" &
	local other=$!
	REDLOCK_PASSWORD='l0cker pass' "$RR" jobs:mine \
		-c "touch $dir/mine; until [ -e $dir/go ]; do sleep 0.05; done" &
	local mine=$!
	wait_until 5 test -e "$dir/other" -a -e "$dir/mine"
	# (No GETRANGE: every string is asked about, the other lock's fence counter too.)
	"$RR" -r "$lister" --list >"$dir/list" 2>"$dir/list.err" || echo "$?" >"$dir/list.err"
	"$RR" -r "$lister" --list --json other >"$dir/json" 2>"$dir/json.err" ||
		echo "$?" >"$dir/json.err"
	touch "$dir/go"
	reap_ok "$other" "$mine"
	run cut -d ' ' -f 1 "$dir/list"
	assert_output $'KEY\njobs:mine'
	run cat "$dir/list.err"
	assert_output "redlock-run: passed over 2 keys that this Redis user may not read (NOPERM)"
	[ ! -s "$dir/json" ]
	run cat "$dir/json.err"
	assert_output "redlock-run: passed over 1 key that this Redis user may not read (NOPERM)"
	# A user that may read every key but not run the scripts cannot list: 69, not "none".
	rcli_on acl -a 'admin secret' --no-auth-warning ACL SETUSER noscript on '>n' resetkeys \
		'~*' -@all +scan +getrange >/dev/null
	"$RR" -r "$admin" jobs:x -c "touch $dir/x; until [ -e $dir/go.x ]; do sleep 0.05; done" &
	local x=$!
	wait_until 5 test -e "$dir/x"
	run --separate-stderr "$RR" -r "unix://noscript:n@$(redis_sock acl)" --list
	local listed=$status
	touch "$dir/go.x"
	reap_ok "$x"
	assert_equal "$listed" 69
	[[ $stderr == *"NOPERM"* ]]
	[[ $stderr != *"passed over"* ]]
}

@test "a server out of memory refuses the lock: 69, in the server's words, without the script's" {
	export REDLOCK_PASSWORD='l0cker pass'
	rcli_on acl -a 'admin secret' --no-auth-warning config set maxmemory 1 >/dev/null
	run --separate-stderr "$RR" jobs:oom -- echo never
	rcli_on acl -a 'admin secret' --no-auth-warning config set maxmemory 0 >/dev/null
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: $(redis_sock acl) refused to take jobs:oom: OOM command not allowed when used memory > 'maxmemory'"
}

@test "a server that may evict locks: one warning, from the first renewal; none with -q" {
	export REDLOCK_PASSWORD='l0cker pass'
	admin() { rcli_on acl -a 'admin secret' --no-auth-warning "$@" >/dev/null; }
	admin config set maxmemory 1gb
	admin config set maxmemory-policy allkeys-lru
	# (The locker may not run INFO: the run asks as the server's admin.)
	run --separate-stderr "$RR" -r "unix://:admin%20secret@$(redis_sock acl)" -t 300ms jobs:e -- sleep 0.5
	assert_success
	assert_equal "$stderr" "redlock-run: $(redis_sock acl) may evict locks under memory pressure (maxmemory-policy allkeys-lru): set it to noeviction"
	run --separate-stderr "$RR" -q -r "unix://:admin%20secret@$(redis_sock acl)" -t 300ms jobs:e -- sleep 0.5
	assert_equal "$stderr" ""
	# A run that ends before its first renewal asks nothing more: it warns of nothing.
	run --separate-stderr "$RR" -r "unix://:admin%20secret@$(redis_sock acl)" jobs:e -- true
	assert_equal "$stderr" ""
	admin config set maxmemory 0
	admin config set maxmemory-policy noeviction
}
