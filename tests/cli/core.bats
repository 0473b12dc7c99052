#!/usr/bin/env bats
# The core (issue 2): take the lock, run the command while renewing it, release it, and
# return its status; refuse bad input before Redis is touched.

bats_require_minimum_version 1.5.0
load helpers

main_server_fixture

teardown() {
	redis_stop locked
	redis_stop tcp
}

# A critical section that logs "<name> start|end <µs>" to $BATS_TEST_TMPDIR/log.
section() {
	echo "echo \"$1 start \$(date +%s%6N)\" >> $BATS_TEST_TMPDIR/log; sleep $2;" \
		"echo \"$1 end \$(date +%s%6N)\" >> $BATS_TEST_TMPDIR/log"
}

@test "two contenders: the second waits, then runs, and the runs never overlap" {
	"$RR" job -c "$(section A 0.6)" &
	first=$!
	wait_until 5 test -s "$BATS_TEST_TMPDIR/log"
	run "$RR" job -c "$(section B 0.1)"
	assert_success
	wait "$first"
	run cat "$BATS_TEST_TMPDIR/log"
	assert_line --index 0 --regexp '^A start '
	assert_line --index 1 --regexp '^A end '
	assert_line --index 2 --regexp '^B start '
	assert_line --index 3 --regexp '^B end '
	a_end=$(awk '$1 == "A" && $2 == "end" { print $3 }' "$BATS_TEST_TMPDIR/log")
	b_start=$(awk '$1 == "B" && $2 == "start" { print $3 }' "$BATS_TEST_TMPDIR/log")
	((b_start >= a_end))
}

@test "flock's -x, -e and --exclusive name the one kind of lock: excluded like any other" {
	"$RR" -x job -- sleep 5 &
	holder=$!
	wait_until 5 held_on main job
	run "$RR" -e -n job -- echo never
	assert_equal "$status" 75
	run "$RR" --exclusive --nb job -- echo never
	assert_equal "$status" 75
	kill "$holder"
	reap "$holder"
	run "$RR" --exclusive job -- echo ran
	assert_success
	assert_output ran
}

@test "-n against a held lock exits 75 at once and silently; -E 0 makes it 0" {
	"$RR" job -- sleep 30 &
	holder=$!
	wait_until 5 held_on main job
	waits=$(waits_on main)
	run --separate-stderr "$RR" -n job -- echo never
	assert_equal "$status" 75
	assert_equal "$output" ""
	assert_equal "$stderr" ""
	# At once: it never got in line nor blocked, however long it took to start and end.
	assert_equal "$(waits_on main)" "$waits"
	run "$RR" --nb -E 0 job -- echo never
	assert_success
	refute_output
	run "$RR" --nonblocking -E 3 job -- echo never
	assert_equal "$status" 3
	kill "$holder"
	wait "$holder" || true
}

@test "-w 0.5 against a held lock gives up once the 0.5 seconds are over, by its own clock" {
	"$RR" job -- sleep 30 &
	holder=$!
	wait_until 5 held_on main job
	start=$(now_ms)
	run --separate-stderr "$RR" -v -w 0.5 job -- echo never
	elapsed=$(($(now_ms) - start))
	assert_equal "$status" 75
	assert_equal "$output" ""
	# Not before the 0.5s, and then at once on its own clock: a second is twice the wait
	# (the holder, renewed, would have kept it waiting for ever).
	waited=$(sed -n 's/.*; giving up after \([0-9.]*m\?s\)$/\1/p' <<<"$stderr")
	echo "gave up after $waited, ${elapsed}ms from outside" >&2
	[[ $waited =~ ^[0-9]+ms$ ]]
	((elapsed >= 500 && ${waited%ms} >= 500 && ${waited%ms} < 1000))
	kill "$holder"
	wait "$holder" || true
}

@test "-w 0 is -n, and -n wins over -w" {
	"$RR" job -- sleep 30 &
	holder=$!
	wait_until 5 held_on main job
	waits=$(waits_on main)
	run "$RR" -w 0 job -- true
	assert_equal "$status" 75
	run "$RR" -w 5 -n job -- true
	assert_equal "$status" 75
	# Neither got in line nor blocked: -n, not a wait.
	assert_equal "$(waits_on main)" "$waits"
	kill "$holder"
	wait "$holder" || true
}

@test "the command's exit status passes through: 0, 1, 42, 255" {
	for code in 0 1 42 255; do
		run "$RR" job -- sh -c "exit $code"
		assert_equal "$status" "$code"
	done
}

@test "a command killed by SIGKILL gives 137, by SIGTERM 143" {
	run "$RR" job -- sh -c 'kill -KILL $$'
	assert_equal "$status" 137
	run "$RR" job -- sh -c 'kill -TERM $$'
	assert_equal "$status" 143
	run rcli exists job
	assert_output 0
}

@test "an option written after KEY is taken for COMMAND: 127, and the message says where options go" {
	run -127 --separate-stderr "$RR" job -n -- true
	assert_equal "$stderr" "redlock-run: cannot run -n: no such file or directory (options go before KEY)"
	run -127 --separate-stderr "$RR" job -- -- true
	assert_equal "$stderr" "redlock-run: cannot run --: no such file or directory (one '--' before COMMAND is enough)"
}

@test "a command that is not found gives 127, one that cannot be executed 126" {
	run -127 --separate-stderr "$RR" job -- no-such-command-here
	assert_equal "$status" 127
	assert_equal "$stderr" "redlock-run: cannot run no-such-command-here: no such file or directory"
	touch "$BATS_TEST_TMPDIR/plain"
	chmod 644 "$BATS_TEST_TMPDIR/plain"
	run -126 --separate-stderr "$RR" job -- "$BATS_TEST_TMPDIR/plain"
	assert_equal "$status" 126
	assert_equal "$stderr" "redlock-run: cannot run $BATS_TEST_TMPDIR/plain: permission denied"
	# As a shell says them: a directory, and an empty name.
	run -126 --separate-stderr "$RR" job -- "$BATS_TEST_TMPDIR"
	assert_equal "$stderr" "redlock-run: cannot run $BATS_TEST_TMPDIR: is a directory"
	run -127 --separate-stderr "$RR" job -- ''
	assert_equal "$stderr" "redlock-run: cannot run '': no such file or directory"
	# A script that is there, whose interpreter is not: named, by path or through $PATH.
	printf '#! /nonexistent/python -u\nprint(1)\n' >"$BATS_TEST_TMPDIR/py-job"
	chmod +x "$BATS_TEST_TMPDIR/py-job"
	run -127 --separate-stderr "$RR" job -- "$BATS_TEST_TMPDIR/py-job"
	assert_equal "$stderr" "redlock-run: cannot run $BATS_TEST_TMPDIR/py-job: its interpreter /nonexistent/python (#!) was not found"
	printf '#!/bin/sh\r\necho hi\r\n' >"$BATS_TEST_TMPDIR/crlf.sh"
	chmod +x "$BATS_TEST_TMPDIR/crlf.sh"
	run -127 --separate-stderr "$RR" job -- "$BATS_TEST_TMPDIR/crlf.sh"
	assert_equal "$stderr" "redlock-run: cannot run $BATS_TEST_TMPDIR/crlf.sh: its #! line ends in a carriage return (Windows line endings), so its interpreter is \"/bin/sh\\r\", which is not there"
	run -127 --separate-stderr env PATH="$BATS_TEST_TMPDIR:$PATH" "$RR" job -- py-job
	assert_equal "$stderr" "redlock-run: cannot run py-job: its interpreter /nonexistent/python (#!) was not found"
	run rcli exists job
	assert_output 0
}

@test "a redlock-run inside the command: REDLOCK_KEY is the lock's name, not a TLS key file" {
	run -75 "$RR" outer -- "$RR" --status outer # held: the conflict status
	assert_output --partial "outer is held by"
	run -0 "$RR" outer -- "$RR" -n inner -- sh -c 'echo "$REDLOCK_KEY"'
	assert_output inner
}

@test "the command sees REDLOCK_KEY, REDLOCK_TOKEN and a REDLOCK_FENCE that grows" {
	run "$RR" nightly -- sh -c 'echo "$REDLOCK_KEY|$REDLOCK_TOKEN|$REDLOCK_FENCE"'
	assert_success
	IFS='|' read -r key token fence <<<"$output"
	assert_equal "$key" nightly
	[[ $token =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}:.+:[0-9]+$ ]]
	is_fence "$fence"
	for _ in 2 3 4; do
		run "$RR" nightly -- sh -c 'echo $REDLOCK_FENCE'
		is_fence "$output"
		((output > fence))
		fence=$output
	done
}

@test "a run inside the command on the same KEY waits for its own parent: said, even without -v" {
	run --separate-stderr "$RR" nest -- sh -c '"$1" -w 1s "$REDLOCK_KEY" -- echo never; echo "inner $?"' sh "$RR"
	assert_success
	assert_output "inner 75"
	assert_equal "$stderr" "redlock-run: nest is held by the redlock-run whose command started this one (its REDLOCK_TOKEN): this waits until that command ends (for ever, if it waits for this one)"
	# Another KEY is no concern of it.
	run --separate-stderr "$RR" nest -- sh -c '"$1" -w 1s other -- echo ran' sh "$RR"
	assert_output ran
	assert_equal "$stderr" ""
}

@test "a fence counter that holds what no fence can be counts as lost: the next fence is the clock's" {
	local bad first second
	# (Written by something else: not a whole number below 2^53 - 1.)
	for bad in 1e300 abc -5 1.5 9007199254740991 99999999999999999999; do
		rcli set '{nightly}:fence' "$bad" >/dev/null
		first=$("$RR" nightly -c 'echo $REDLOCK_FENCE')
		second=$("$RR" nightly -c 'echo $REDLOCK_FENCE')
		is_fence "$first"
		is_fence "$second"
		((second > first)) || { echo "after $bad: $first then $second" >&2; false; }
	done
	# A key of another type there is left alone: the fences are the clock's.
	rcli del '{nightly}:fence' >/dev/null
	rcli hset '{nightly}:fence' field 1 >/dev/null
	first=$("$RR" nightly -c 'echo $REDLOCK_FENCE')
	second=$("$RR" nightly -c 'echo $REDLOCK_FENCE')
	is_fence "$first"
	((second > first))
	assert_equal "$(rcli type '{nightly}:fence')" hash
	# --status and --break read past it too, and leave it.
	run -0 "$RR" --status nightly
	assert_output "nightly is free (never taken)"
	"$RR" -t 3s nightly -c "touch $BATS_TEST_TMPDIR/held-hash; exec sleep 30" 2>/dev/null &
	local hash_holder=$!
	wait_until 5 test -e "$BATS_TEST_TMPDIR/held-hash"
	run -75 "$RR" --status nightly
	assert_output --regexp "^nightly is held by .* \(fence unknown\)$"
	run -0 "$RR" --break --yes nightly
	assert_line --index 0 --regexp ": fence now [0-9]{16}$"
	reap "$hash_holder"
	assert_equal "$status" 76
	assert_equal "$(rcli type '{nightly}:fence')" hash
	rcli del '{nightly}:fence' >/dev/null
	# --break moves such a counter on from the clock too, and says it had none before.
	"$RR" -t 3s nightly -c "touch $BATS_TEST_TMPDIR/held; exec sleep 30" 2>/dev/null &
	local holder=$!
	wait_until 5 test -e "$BATS_TEST_TMPDIR/held"
	rcli set '{nightly}:fence' 1e300 >/dev/null
	run -0 "$RR" --break --yes nightly
	assert_line --index 0 --regexp "^broke nightly, held by .*: fence now [0-9]{16}$"
	reap "$holder"
	assert_equal "$status" 76
}

@test "the token is the value stored at KEY while the command runs" {
	run "$RR" job -- sh -c 'redis-cli -s "$0" get job; echo "$REDLOCK_TOKEN"' "$(redis_sock main)"
	assert_success
	assert_equal "${lines[0]}" "${lines[1]}"
}

@test "no key is left after a run, only the fence counter, which expires within an hour" {
	run "$RR" job -- true
	assert_success
	run "$RR" job -c 'echo $REDLOCK_FENCE; exit 3'
	assert_equal "$status" 3
	fence=$output
	run keys_but_fences
	assert_output ""
	run rcli get '{job}:fence'
	assert_output "$fence"
	run rcli ttl '{job}:fence'
	((output > 3500 && output <= 3600))
}

@test "a command running three TTLs keeps the lock: every -n contender gets 75" {
	# The holder runs until told to stop: at least three TTLs and eight contenders, however
	# slow the machine (a sanitizer build) makes each of them.
	"$RR" -t 300ms job -c "until [ -e $BATS_TEST_TMPDIR/stop ]; do sleep 0.02; done" &
	holder=$!
	wait_until 5 held_on main job
	start=$(now_ms)
	tries=0
	while ((tries < 8 || $(now_ms) - start < 900)); do
		run "$RR" -n job -- true
		assert_equal "$status" 75
		tries=$((tries + 1))
		sleep 0.1
	done
	touch "$BATS_TEST_TMPDIR/stop"
	reap "$holder"
	assert_equal "$status" 0
}

@test "-c runs its string with \$SHELL -c, /bin/sh when SHELL is unset" {
	run env SHELL=/bin/bash REDLOCK_URL="unix://$(redis_sock main)" "$REDLOCK_RUN" job -c 'echo $BASH_VERSION'
	assert_success
	assert_output --regexp '^[0-9]+\.'
	run env -u SHELL REDLOCK_URL="unix://$(redis_sock main)" "$REDLOCK_RUN" job -c 'echo "$0"'
	assert_output /bin/sh
}

@test "COMMAND's own flags are never parsed" {
	run "$RR" job printf '%s,' -n -w --ttl x
	assert_success
	assert_output "-n,-w,--ttl,x,"
	run "$RR" job -- printf '%s,' -c x
	assert_output "-c,x,"
}

@test "a unix:// URL with ?db=2 and a redis:// URL with /2 select db 2" {
	run "$REDLOCK_RUN" -r "unix://$(redis_sock main)?db=2" job -- \
		redis-cli -s "$(redis_sock main)" -n 2 get job
	assert_success
	[[ $output =~ :[0-9]+$ ]]
	run rcli -n 2 exists '{job}:fence'
	assert_output 1
	run rcli -n 0 exists '{job}:fence'
	assert_output 0

	redis_start_tcp tcp
	port=$(redis_port tcp)
	run "$REDLOCK_RUN" -r "redis://127.0.0.1:$port/2" job -- \
		redis-cli -p "$port" -n 2 exists job
	assert_success
	assert_output 1
	run redis-cli -p "$port" -n 0 exists '{job}:fence'
	assert_output 0
}

@test "REDLOCK_URL is honoured and -r wins over it" {
	run env REDLOCK_URL="unix://$(redis_sock main)" "$REDLOCK_RUN" job -c 'echo $REDLOCK_FENCE'
	assert_success
	fence=$output
	run rcli get '{job}:fence'
	assert_output "$fence"
	run env REDLOCK_URL=unix:///nonexistent.sock "$REDLOCK_RUN" -r "unix://$(redis_sock main)" job -c 'echo $REDLOCK_FENCE'
	assert_success
	fence=$output
	run rcli get '{job}:fence'
	assert_output "$fence"
}

@test "a password from REDLOCK_PASSWORD or the URL; a wrong one gives 69 and is never shown" {
	redis_start locked --requirepass 'right horse'
	url="unix://$(redis_sock locked)"
	run env REDLOCK_PASSWORD='right horse' "$REDLOCK_RUN" -r "$url" job -- echo ran
	assert_success
	assert_output ran
	run "$REDLOCK_RUN" -r "unix://:right%20horse@$(redis_sock locked)" job -- echo ran
	assert_output ran
	# A Kubernetes Secret made from a file ends with a line feed, which is no part of it.
	run env REDLOCK_PASSWORD=$'right horse\n' "$REDLOCK_RUN" -r "$url" job -- echo ran
	assert_output ran
	run --separate-stderr env REDLOCK_PASSWORD='battery staple' "$REDLOCK_RUN" -r "$url" job -- echo never
	assert_equal "$status" 69
	assert_equal "$output" ""
	[[ $stderr == "redlock-run: authentication refused by $(redis_sock locked): WRONGPASS"*"; the password came from \$REDLOCK_PASSWORD" ]]
	[[ $stderr != *".;"* ]] # (the server's full stop left out before more is said)
	[[ $stderr != *battery* ]]
	echo 'battery staple' >"$BATS_TEST_TMPDIR/secret"
	run --separate-stderr "$REDLOCK_RUN" --password-file "$BATS_TEST_TMPDIR/secret" -r "$url" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == *"; the password came from --password-file $BATS_TEST_TMPDIR/secret" ]]
	# The URL's own goes first, and a refusal says so.
	echo 'right horse' >"$BATS_TEST_TMPDIR/secret"
	run --separate-stderr "$REDLOCK_RUN" --password-file "$BATS_TEST_TMPDIR/secret" \
		-r "unix://:battery@$(redis_sock locked)" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == *"; the password came from the URL, which goes before --password-file $BATS_TEST_TMPDIR/secret" ]]
	run --separate-stderr "$REDLOCK_RUN" -r "unix://$(redis_sock locked)" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == *NOAUTH*"; give its password with --password-file, \$REDLOCK_PASSWORD or in the URL" ]]
	# An empty one is none, as unset: said, as a secret a CI job did not get leaves it.
	REDLOCK_PASSWORD= run --separate-stderr "$REDLOCK_RUN" -r "unix://$(redis_sock locked)" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == *NOAUTH*"; give its password with --password-file, \$REDLOCK_PASSWORD (set, but empty) or in the URL" ]]
	# --status, --list and --break too: each request within the ten arguments after which
	# Redis says "Protocol error" to a client that has not authenticated, instead of NOAUTH.
	local op
	for op in --status --list "--break --yes"; do
		# shellcheck disable=SC2086 # (the operation is words)
		run --separate-stderr "$REDLOCK_RUN" -r "unix://$(redis_sock locked)" $op job
		assert_equal "$status" 69
		[[ $stderr == *NOAUTH*"; give its password with --password-file, \$REDLOCK_PASSWORD or in the URL"* ]]
		[[ $stderr != *".;"* ]]
	done
	run rcli_on locked -a 'right horse' --no-auth-warning exists job
	assert_output 0
}

@test "an ACL user with its password" {
	redis_start locked --requirepass 'admin'
	rcli_on locked -a admin --no-auth-warning acl setuser deployer on '>d3ploy' '~*' '+@all' >/dev/null
	run env REDLOCK_PASSWORD=d3ploy "$REDLOCK_RUN" -r "unix://deployer@$(redis_sock locked)" job -- \
		echo ran
	assert_success
	run --separate-stderr env REDLOCK_PASSWORD=wrong "$REDLOCK_RUN" \
		-r "unix://deployer@$(redis_sock locked)" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == "redlock-run: authentication as 'deployer' refused by "* ]]
	# A user with no password at all: said, without the name, which redis-cli would take for
	# a password alone.
	run --separate-stderr "$REDLOCK_RUN" -r "unix://d3ploy@$(redis_sock locked)" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == "redlock-run: authentication as the URL's user, with no password, refused by "*"; a password goes after the user (redis://USER:PASSWORD@HOST, or --password-file), or alone: redis://:PASSWORD@HOST" ]]
	[[ $stderr != *d3ploy* ]]
}

@test "Redis unreachable or a db that does not exist: 69, naming the address" {
	run --separate-stderr "$REDLOCK_RUN" -r unix:///nonexistent/redis.sock job -- echo never
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: cannot connect to /nonexistent/redis.sock: no such file or directory"
	run --separate-stderr "$REDLOCK_RUN" -r redis://127.0.0.1:1 job -- echo never
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: cannot connect to 127.0.0.1:1: connection refused"
	run --separate-stderr "$REDLOCK_RUN" -r "unix://$(redis_sock main)?db=4000" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == "redlock-run: cannot select db 4000 on $(redis_sock main): ERR"* ]]
	run rcli dbsize
	assert_output 0
}

@test "bad input: one message, status 64, and nothing in Redis" {
	export REDLOCK_URL="unix://$(redis_sock main)"
	while IFS= read -r args; do
		eval "set -- $args"
		run --separate-stderr "$REDLOCK_RUN" "$@"
		if [[ $status != 64 ]]; then
			echo "status $status for: $args" >&2
			return 1
		fi
		assert_equal "${#stderr_lines[@]}" 2
		[[ ${stderr_lines[0]} == "redlock-run: "* ]]
		assert_equal "${stderr_lines[1]}" "Try 'redlock-run --help' for more information."
		assert_equal "$output" ""
	done <<'EOF_CASES'
--bogus job true
-y job true

job
job --
'' true
job -c 'echo' extra
-c 'echo' job extra
-t 0 job true
-t -1 job true
-t 50ms job true
-t abc job true
-t 99999999999999999999 job true
-w abc job true
-w -1 job true
-E 256 job true
-E -1 job true
-E x job true
-r http://localhost job true
-r redis://localhost:0 job true
-r redis://localhost:65536 job true
-r redis://localhost:6379/0garbage job true
-r redis://localhost:6379x job true
--on-lost later job true
--max-hold 0 job true
EOF_CASES
	run rcli dbsize
	assert_output 0
}

@test "bad REDLOCK_URL is a usage error that names the variable" {
	run --separate-stderr env REDLOCK_URL=redis://host:0 "$REDLOCK_RUN" job -- true
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "redlock-run: invalid Redis URL in REDLOCK_URL: the port must be a number from 1 to 65535, not '0'"
	# Of several, which one (the URL itself is not shown: it may hold a password).
	run --separate-stderr env REDLOCK_URL="redis://a redis://:pw@:6379 redis://c" "$REDLOCK_RUN" job -- true
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "redlock-run: invalid Redis URL (the 2nd of 3) in REDLOCK_URL: missing host"
	run --separate-stderr "$REDLOCK_RUN" -r redis://a -r redis://b -r redis://c -r redis:// job -- true
	assert_equal "${stderr_lines[0]}" "redlock-run: invalid Redis URL (the 4th of 4): missing host"
}

@test "REDLOCK_URL set but empty (a CI secret that is missing) is a usage error, not this host's Redis" {
	local empty
	for empty in "" "  " $'\t'; do
		run --separate-stderr env REDLOCK_URL="$empty" "$REDLOCK_RUN" job -- true
		assert_equal "$status" 64
		assert_equal "${stderr_lines[0]}" "redlock-run: REDLOCK_URL is set but names no server (a missing secret?); unset it for the default, redis://127.0.0.1:6379"
		run --separate-stderr env REDLOCK_URL="$empty" "$REDLOCK_RUN" --status job
		assert_equal "$status" 64
	done
	# -r needs none.
	run env REDLOCK_URL= "$REDLOCK_RUN" -r "unix://$(redis_sock main)" job -- true
	assert_success
}

@test "--help goes to stdout with status 0; --version too" {
	run --separate-stderr "$REDLOCK_RUN" --help
	assert_success
	assert_equal "$stderr" ""
	assert_line --index 0 "Usage:"
	assert_output --partial "--conflict-exit-code"
	run --separate-stderr "$REDLOCK_RUN" -V
	assert_success
	assert_line --index 0 --regexp '^redlock-run [0-9]+\.[0-9]+\.[0-9]+(~[a-z0-9]+)? \(TLS: (yes|no)\)$'
	assert_line --index 1 --regexp '^hiredis [0-9]+\.[0-9]+\.[0-9]+$'
	if [[ ${lines[0]} == *"(TLS: yes)" ]]; then
		assert_line --index 2 --regexp '^OpenSSL 3\.[0-9.]+.* \(loaded only when a connection uses TLS\)$'
	else
		assert_line --index 2 "OpenSSL: not in this build"
	fi
}

@test "out of file descriptors for its connection: 71 (redlock-run's own failure), never 69" {
	# Some limit leaves it none for the socket alone.
	under_fd_limits job -- true
	grep -q "^[0-9]*: 71 redlock-run: cannot connect to .*too many open files" "$dir/limits"
	run "$RR" job -- true
	assert_success
	# A name to resolve: the resolver, short of a descriptor for /etc/hosts, says the name is
	# not known; the run says what it was short of.
	redis_start_tcp tcp
	under_fd_limits -r "redis://localhost:$(redis_port tcp)" job -- true
	cat "$dir/limits"
	! grep -q "not known" "$dir/limits"
	grep -q "^[0-9]*: 71 redlock-run: cannot resolve localhost: too many open files" "$dir/limits"
}

@test "output that cannot all be written (a full disk): 71, saying so, as flock says 'write error'" {
	local what holder
	"$RR" job -c "echo ready > $dir/ready; exec sleep 30" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	local whats=(--help --version "--status job" "--status --json job")
	# (--list needs SCAN, which the user of the *-acl scenarios may not run.)
	[ -n "${REDLOCK_TEST_AS_LOCKER:-}" ] || whats+=(--list "--list --json")
	for what in "${whats[@]}"; do
		# shellcheck disable=SC2086 # the words of $what are options
		run --separate-stderr "$RR" $what
		[[ -n $output ]]
		# shellcheck disable=SC2086
		run --separate-stderr bash -c '"$@" >/dev/full' _ "$RR" $what
		assert_equal "$status" 71
		assert_equal "$stderr" "redlock-run: cannot write the output: no space left on device"
	done
	# A break is done all the same: its status stays (a 71 might be retried, and break the
	# next holder's lock).
	run --separate-stderr bash -c '"$1" --break --yes job >/dev/full' _ "$RR"
	assert_equal "$status" 0
	assert_equal "$stderr" "redlock-run: cannot write the output: no space left on device"
	reap "$holder"
	assert_equal "$status" 76
}

@test "a build without TLS: rediss:// exits 69 saying so (tls.bats covers a build with it)" {
	[[ $("$RR" --version) == *"(TLS: no)"* ]] || skip "this build has TLS"
	run --separate-stderr "$RR" -r rediss://127.0.0.1:6380 job -- echo never
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: cannot connect to 127.0.0.1:6380: this build has no TLS support"
}

@test "durations of centuries mean a very long time, not an overflow" {
	"$RR" job -c "echo ready > $BATS_TEST_TMPDIR/ready
		until [ -e $BATS_TEST_TMPDIR/go ]; do sleep 0.02; done" &
	holder=$!
	wait_until 5 test -s "$BATS_TEST_TMPDIR/ready"
	start=$(now_ms)
	run timeout 1 "$RR" -w 2562047h job -- echo never
	assert_equal "$status" 124 # still waiting when timeout(1) ended it
	(($(now_ms) - start >= 900))
	touch "$BATS_TEST_TMPDIR/go"
	reap "$holder"
	run "$RR" --max-hold 2562047h -t 2562047h job -- echo ran
	assert_success
	assert_output ran
}

@test "stderr to a file: the command's lines and redlock-run's all end up in it" {
	"$RR" -v job -- sh -c 'echo from-the-command >&2; sleep 0.2; echo from-the-command-again >&2' \
		2>"$BATS_TEST_TMPDIR/log"
	run cat "$BATS_TEST_TMPDIR/log"
	assert_line --regexp '^redlock-run: acquired job on [^ ]+ after '
	assert_line from-the-command
	assert_line from-the-command-again
	assert_line "redlock-run: released job"
}
