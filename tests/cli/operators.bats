#!/usr/bin/env bats
# For the people on call (issue 24): a KEY that is not a lock is said so at once, never waited
# on for ever; --prefix keeps a team's locks in a namespace of their own; --status tells the
# truth about a lock; --break ends one on purpose.

bats_require_minimum_version 1.5.0
load helpers

main_server_fixture

# The quorum's servers, which a scenario starts, are stopped whatever becomes of it.
teardown() {
	quorum_stop
}

# foreign TYPE: makes the key "app" hold something redlock-run did not write, of that kind, and
# prints what a refusal must say it holds.
foreign() {
	case $1 in
	string) rcli set app hello >/dev/null && echo 'holds the string "hello"' ;;
	token) rcli set app "12345678-1234-1234-1234-123456789abc:web-1:42" >/dev/null &&
		echo 'holds a token that never expires' ;;
	hash) rcli hset app field 1 >/dev/null && echo 'holds a hash' ;;
	list) rcli rpush app 1 >/dev/null && echo 'holds a list' ;;
	set) rcli sadd app 1 >/dev/null && echo 'holds a set' ;;
	zset) rcli zadd app 5 member >/dev/null &&
		echo 'holds a sorted set with no shared or limit:N member at -1' ;;
	tagged) rcli zadd app -1 limit:2 9999999999999 someone >/dev/null &&
		echo 'holds a sorted set that never expires' ;;
	stream) rcli xadd app '*' field 1 >/dev/null && echo 'holds a stream' ;;
	esac
}

@test "a KEY that is not a lock is a 69 at once, waiting or not, in every mode, and left as it was" {
	local kind what mode wait before modes
	for kind in string token hash list set zset tagged stream; do
		# (A sorted set tagged as a semaphore's is taken as one by semaphores and shared
		# holders, which give it an expiry; a lock refuses it.)
		modes=("" -s "-l 2")
		[[ $kind != tagged ]] || modes=("")
		for mode in "${modes[@]}"; do
			for wait in -n "-w 30" ""; do
				rcli del app >/dev/null
				what=$(foreign "$kind")
				before=$(rcli dump app | od -An -tx1)
				# (timeout(1) only so that a wait for ever fails the test instead of
				# hanging it.)
				# shellcheck disable=SC2086
				run -69 timeout 120 "$RR" $mode $wait app -- touch "$dir/ran"
				assert_output --partial "app is not a lock on"
				assert_output --partial "it $what, which redlock-run did not write"
				assert_equal "$(rcli dump app | od -An -tx1)" "$before"
				[ ! -e "$dir/ran" ]
			done
		done
		# --status says the same as a run, and --list passes it over.
		[[ $kind != tagged ]] || continue
		run -69 --separate-stderr "$RR" --status app
		assert_equal "$stderr" "redlock-run: app is not a lock on $(redis_sock main): it $what, which redlock-run did not write"
		run -0 "$RR" --list
		refute_output --partial app
	done
}

@test "a lock's own keys are never taken for foreign ones: a held lock, shared and --limit wait" {
	"$RR" -t 5s job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	run -75 "$RR" -n job -- true
	run -75 "$RR" -n -s job -- true
	run -69 "$RR" -n -l 2 job -- true
	assert_output --partial "refused to take job: job is held as a lock, not with --limit 2"
	touch "$dir/go"
	wait "$holder"
}

@test "--prefix and REDLOCK_PREFIX put a namespace in front of KEY, helper keys included" {
	"$RR" --prefix team: job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	assert_equal "$(rcli exists team:job)" 1
	assert_equal "$(rcli exists job)" 0
	REDLOCK_PREFIX=team: run -75 "$RR" -n job -- true
	REDLOCK_PREFIX=team: run -75 "$RR" --status job
	assert_output --partial "team:job is held by"
	run -75 "$RR" --prefix team: --status job
	run -0 "$RR" --status job
	# A waiter's line follows the name.
	"$RR" --prefix team: job -- true &
	local waiter=$!
	in_line() { [[ $(rcli zcard '{team:job}:waiting') == 1 ]]; }
	wait_until 5 in_line
	touch "$dir/go"
	wait "$holder"
	wait "$waiter"
	# The prefix counts in the rule for '}': the whole name needs its hash tag, and the
	# message says where the '}' came from.
	run -64 "$RR" --prefix 'a}' job -- true
	assert_output --partial "KEY 'a}job' (--prefix 'a}' and 'job') has a '}'"
	assert_output --partial "such as --prefix '{locks}a}'"
	REDLOCK_PREFIX='a}' run -64 "$RR" job -- true
	assert_output --partial "KEY 'a}job' (\$REDLOCK_PREFIX 'a}' and 'job') has a '}'"
	assert_output --partial "such as REDLOCK_PREFIX='{locks}a}'"
	# The command gets KEY as given and the prefix beside it: a redlock-run inside it names
	# the same lock with "$REDLOCK_KEY", and its own in the same namespace.
	run -0 "$RR" --prefix team: job -- sh -c 'echo "$REDLOCK_KEY $REDLOCK_PREFIX"; "$1" --status "$REDLOCK_KEY"; "$1" -n other -- sh -c "echo \$REDLOCK_PREFIX\$REDLOCK_KEY"' sh "$RR"
	assert_line --index 0 "job team:"
	assert_line --index 1 --regexp "^team:job is held by $(hostname):[0-9]+ "
	assert_line --index 2 "team:other"
	REDLOCK_PREFIX=team: run -0 "$RR" job -- sh -c '"$1" --status "$REDLOCK_KEY"; true' sh "$RR"
	assert_output --regexp "^team:job is held by "
	# An inherited prefix that this run did not use (an empty --prefix is none) is not passed on.
	REDLOCK_PREFIX=team: run -0 "$RR" --prefix '' job -- sh -c 'echo "[$REDLOCK_PREFIX]"; "$1" --status "$REDLOCK_KEY"; true' sh "$RR"
	assert_line --index 0 "[]"
	assert_line --index 1 --regexp "^job is held by "
	# An empty prefix is none.
	REDLOCK_PREFIX= run -0 "$RR" job -- true
	# --list takes the prefix as it is, a glob character in it included: its own namespace.
	local token="12345678-1234-1234-1234-123456789abc:web-1:42" name
	for name in 't[1]:z' 't1:w' 'a*:x' 'ab:y'; do
		rcli set "$name" "$token" px 60000 >/dev/null
	done
	run -0 "$RR" --prefix 't[1]:' --list
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 --regexp '^t\[1\]:z '
	run -0 "$RR" --prefix 'a*:' --list
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 --regexp '^a\*:x '
	run -0 "$RR" --prefix 'a*:' --list 'x*'
	assert_line --index 1 --regexp '^a\*:x '
	# None held: the literal prefix and the glob are named apart.
	run -0 "$RR" --prefix 'a*:' --list 'z*'
	assert_line --index 1 "(no locks held matching z* under the prefix a*:)"
	run -0 "$RR" --prefix 'zz*' --list
	assert_line --index 1 "(no locks held under the prefix zz*)"
}

@test "--status after a --min-hold job finished: kept taken, its command finished, not stuck" {
	run -0 "$RR" --min-hold 10m job -- true
	run -75 "$RR" --status job
	assert_output --regexp "^job is kept taken by --min-hold for another [0-9.]+m?i?n?[0-9.]*s?: the command of $(hostname):[0-9]+ \(taken [0-9.]+m?s ago\) has finished \(fence [0-9]{16}\)$"
	run -75 "$RR" --status --json job
	echo "$output" | python3 -c 'import json, sys
o = json.load(sys.stdin)
assert o["held"] and o["kept"] and o["process"] is None, o
assert o["token"].endswith(":kept") and o["pid"] > 0 and 0 <= o["held_ms"] < 600000, o
assert 590000 < o["ttl_ms"] <= 600000, o'
	# Still a lock of redlock-run's: others wait for it, and are not told it is foreign.
	run -75 "$RR" -n job -- true
}

@test "--status and --list of a holder whose process is gone: say so, and how long ago it took the lock" {
	"$RR" -t 30s job -c "echo ready > $dir/ready; exec sleep 60" &
	local holder=$!
	wait_until 5 test -s "$dir/ready"
	run -75 "$RR" --status job
	assert_output --regexp "^job is held by $(hostname):$holder \(taken [0-9.]+m?s ago\) for another [0-9.]+s \(fence [0-9]{16}\)$"
	kill -KILL "$holder"
	wait "$holder" || true
	run -75 "$RR" --status job
	assert_output --partial "job is held by $(hostname):$holder (taken "
	assert_output --partial "; no such process runs on this host: it did not release, and the lease runs out by itself"
	run -75 "$RR" --status --json job
	assert_equal "$(echo "$output" | python3 -c 'import json, sys; print(json.load(sys.stdin)["process"])')" gone
	run -0 "$RR" --list
	assert_line --index 1 --regexp "^job +exclusive +$(hostname):$holder \(gone\) +[0-9.]+m?s +[0-9.]+s "
	# Broken, it has no command left that would run on until a renewal.
	run -0 "$RR" --break --yes job
	assert_line --index 0 --regexp "^broke job, held by $(hostname):$holder "
	assert_line --index 1 "its process is gone from this host: nothing of it runs on"
	assert_equal "${#lines[@]}" 2
}

@test "--status of a holder killed and not reaped yet (a zombie): gone too" {
	rcli del job >/dev/null
	# Its parent sleeps on without waiting for it: a zombie until the parent goes.
	python3 -c 'import os, signal, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "-t", "30s", "job", "-c", "echo ready > " + sys.argv[2] + "; exec sleep 60"])
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
open(sys.argv[3], "w").write(str(p.pid))
os.kill(p.pid, signal.SIGKILL)
time.sleep(60)' "$RR" "$dir/ready" "$dir/pid" 3>&- &
	local parent=$!
	zombie() { [[ -s $dir/pid && $(awk '{ print $3 }' "/proc/$(cat "$dir/pid")/stat") == Z ]]; }
	wait_until 10 zombie
	run -75 "$RR" --status job
	kill "$parent"
	wait "$parent" || true
	assert_output --partial "; no such process runs on this host: it did not release"
}

@test "--status and --list of a holder stopped with SIGSTOP, and of a stopped waiter: stopped, until continued" {
	"$RR" -t 30s job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -s "$dir/ready"
	"$RR" job -- true &
	local waiter=$!
	in_line() { [[ $(rcli zcard '{job}:waiting') == 1 ]]; }
	wait_until 5 in_line
	kill -STOP "$holder" "$waiter"
	is_stopped() { [[ $(awk '{ print $3 }' "/proc/$1/stat") == T ]]; }
	wait_until 5 is_stopped "$holder"
	wait_until 5 is_stopped "$waiter"
	local text json list
	text=$("$RR" --status job) || true
	json=$("$RR" --status --json job) || true
	list=$("$RR" --list) || true
	# (Continued before anything is asserted: a failure leaves nobody stopped.)
	kill -CONT "$holder" "$waiter"
	run echo "$list"
	assert_line --index 1 --regexp "^job +exclusive +$(hostname):$holder \(stopped\) +[0-9.]+m?s "
	run echo "$text"
	assert_line --index 0 --partial "; its process is stopped (Ctrl-Z or SIGSTOP): it renews nothing, and the lease runs out unless it is continued"
	assert_line --index 1 --regexp "^  1 waiting .*: $(hostname):$waiter \(stopped\) for "
	python3 -c 'import json, sys
o = json.loads(sys.argv[1])
assert o["process"] == "stopped" and o["holders"][0]["process"] == "stopped", o
assert o["waiters"][0]["process"] == "stopped", o' "$json"
	run -75 "$RR" --status --json job
	python3 -c 'import json, sys
o = json.loads(sys.argv[1])
assert o["process"] == "running" and o["waiters"][0]["process"] == "running", o' "$output"
	run -0 "$RR" --list
	assert_line --index 1 --regexp "^job +exclusive +$(hostname):$holder +[0-9.]+m?s "
	touch "$dir/go"
	reap_ok "$holder" "$waiter"
}

@test "--break of a holder stopped with SIGSTOP: its guard ends it as the lease ends, unless it is continued first" {
	"$RR" -t 30s job -c "echo ready > $dir/ready; exec sleep 60" &
	local holder=$!
	wait_until 5 test -s "$dir/ready"
	kill -STOP "$holder"
	is_stopped() { [[ $(awk '{ print $3 }' "/proc/$1/stat") == T ]]; }
	wait_until 5 is_stopped "$holder"
	run "$RR" --break --yes job
	kill -CONT "$holder"
	assert_success
	# (Stopped, it renews nothing: no renewal will find the break.)
	assert_line --index 1 --regexp "^its process is stopped: continued, it stops its command \(76\); stopped alone \(SIGSTOP\), its guard kills the command as the lease ends, within [0-9.]+m?s$"
	reap "$holder"
	assert_equal "$status" 76
}

@test "--break of a holder stopped until past its lease: its 76 names the break, not only the stop" {
	"$RR" -t 2s job -c "echo \$\$ > $dir/pid; exec sleep 60" 2>"$dir/err" &
	local holder=$!
	wait_until 5 test -s "$dir/pid"
	kill -STOP "$holder"
	is_stopped() { [[ $(awk '{ print $3 }' "/proc/$1/stat") == T ]]; }
	wait_until 5 is_stopped "$holder"
	# The lease's end as the server has it, now that nothing renews it: a renewal that went
	# out just before the stop may have moved it past what the guard was told.
	local pttl ends
	pttl=$(rcli pttl job)
	ends=$(($(now_ms) + pttl))
	run -0 "$RR" --break --yes job
	# its guard kills the command as the lease ends; it is continued once the lease is over
	wait_until 10 gone "$(cat "$dir/pid")"
	lease_over() { (($(now_ms) > ends)); }
	wait_until 10 lease_over
	kill -CONT "$holder"
	reap "$holder"
	assert_equal "$status" 76
	# Said so whichever comes first once it is continued: its clock, or the renewal that
	# finds the break.
	run cat "$dir/err"
	assert_line --partial "lost the lock on job: redlock-run was stopped (SIGSTOP) until past the end of its lease"
	assert_line --regexp "^redlock-run: the lock on job had been broken by $(hostname):[0-9]* \\(redlock-run --break\\) meanwhile$"
}

@test "--status of a semaphore or shared lock whose holder's process is gone: marked, in text and JSON" {
	local mode key pid status
	for mode in -s "-l 2"; do
		key=k${mode// /}
		# shellcheck disable=SC2086 # (the mode is words)
		"$RR" $mode -t 30s "$key" -c "echo ready > $dir/$key; exec sleep 60" &
		pid=$!
		wait_until 5 test -s "$dir/$key"
		kill -KILL "$pid"
		wait "$pid" || true
		# (A semaphore with a place left counts as free, a lock held shared as held.)
		status=0
		[[ $mode != -s ]] || status=75
		run -"$status" "$RR" --status "$key"
		assert_output --regexp "^$key is held (by 1 of 2 \(a semaphore\)|shared by 1): $(hostname):$pid \(gone\) for another [0-9.]+s "
		run -"$status" "$RR" --status --json "$key"
		echo "$output" | python3 -c 'import json, sys
o = json.load(sys.stdin)
assert o["holders"][0]["process"] == "gone", o'
	done
	# Full (its second place kept), the top-level fields tell of its first holder, the one
	# whose lease ends first: its process too.
	run -0 "$RR" -l 2 -t 40s --min-hold 40s -n k-l2 -- true
	run -75 "$RR" --status --json k-l2
	echo "$output" | python3 -c 'import json, sys
o = json.load(sys.stdin)
first = o["holders"][0]
assert first["pid"] == int(sys.argv[1]) and o["token"] == first["token"], o
assert o["held"] and o["process"] == "gone" and not o["kept"], o' "$pid"
}

@test "--status lists who waits, exclusive and shared, and how many" {
	"$RR" -t 30s job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -s "$dir/ready"
	in_line() { [[ $(rcli zcard '{job}:waiting') == "$1" ]]; }
	"$RR" job -- true &
	local exclusive=$!
	wait_until 10 in_line 1
	"$RR" -s job -- true &
	local shared=$!
	wait_until 10 in_line 2
	run -75 "$RR" --status job
	[[ ${lines[1]} =~ ^"  2 waiting (--queue fifo), in arrival order: $(hostname):$exclusive for "[0-9.ms]+", $(hostname):$shared (shared) for "[0-9.ms]+$ ]]
	run -75 "$RR" --status --json job
	echo "$output" | python3 -c 'import json, sys
o = json.load(sys.stdin)
assert o["waiting"] == 2 and o["in_order"] and o["queue"] == "fifo", o
w = o["waiters"]
assert [x["mode"] for x in w] == ["exclusive", "shared"], w
assert [x["pid"] for x in w] == [int(sys.argv[1]), int(sys.argv[2])], w
assert all(0 <= x["waited_ms"] <= 31000 for x in w), w
assert [x["process"] for x in w] == ["running", "running"], w' "$exclusive" "$shared"
	# A waiter killed outright keeps its place until the lease it waits out ends (it could
	# not leave): on this host, --status says that its process is gone.
	kill -KILL "$exclusive"
	reap "$exclusive"
	run -75 "$RR" --status job
	[[ ${lines[1]} =~ ^"  2 waiting (--queue fifo), in arrival order: $(hostname):$exclusive (gone) for "[0-9.ms]+", $(hostname):$shared (shared) for "[0-9.ms]+$ ]]
	run -75 "$RR" --status --json job
	echo "$output" | python3 -c 'import json, sys
w = json.load(sys.stdin)["waiters"]
assert [x["process"] for x in w] == ["gone", "running"], w'
	# (The gone waiter, at the front, would hold the shared one back for the lease it waits
	# out: nothing this scenario is about.)
	kill "$shared"
	reap "$shared"
	touch "$dir/go"
	wait "$holder"
}

@test "--break: the holder stops at its next renewal with 76, naming the breaker; the next waiter gets it at once" {
	"$RR" -t 10s job -c "echo \$REDLOCK_FENCE > $dir/holder-fence; exec sleep 60" 2>"$dir/holder.err" &
	local holder=$!
	wait_until 5 test -s "$dir/holder-fence"
	"$RR" job -c "echo \$REDLOCK_FENCE > $dir/waiter-fence" &
	local waiter=$!
	in_line() { [[ $(rcli zcard '{job}:waiting') == 1 ]]; }
	wait_until 5 in_line
	local expires
	expires=$(rcli pexpiretime job)
	# --yes after KEY, as an on-call hand adds it to the line it typed
	run -0 "$RR" --break job --yes
	assert_line --index 0 --regexp "^broke job, held by $(hostname):$holder \(taken [0-9.]+m?s ago, [0-9.]+s of its lease left\): fence $(cat "$dir/holder-fence"), now [0-9]{16}$"
	# What it does not stop at once, said too.
	assert_line --index 1 --regexp "^its command runs on until its next renewal finds the break, within [0-9.]+m?s \([0-9.]+s if its renewals fail\), then is stopped \(76\)$"
	assert_equal "${#lines[@]}" 2
	local broken=${lines[0]##* }
	reap "$waiter"
	assert_equal "$status" 0
	# Woken by the break, long before the broken lease would have run out; its fence past
	# the one the break moved on to.
	local waited=$(cat "$dir/waiter-fence")
	((waited > broken && waited / 1000 < expires))
	reap "$holder"
	assert_equal "$status" 76
	# Said once, not again at the release
	run cat "$dir/holder.err"
	assert_output --regexp "^redlock-run: lost the lock on job: it was broken by $(hostname):[0-9]+ \(redlock-run --break\); stopping the command$"
}

@test "--break, then the holder's release answered after its lease ran out (a frozen server): 76, naming who broke it" {
	"$RR" -t 2s --connect-timeout 60s job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.01; done" \
		2>"$dir/holder.err" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	run -0 "$RR" --break --yes job
	# The mark outlives the broken lease (2s at most) by a minute.
	(($(rcli pttl '{job}:broken') > 60000))
	# The server freezes, most likely before the holder's next renewal finds the break
	# (it may find it first: the holder then stops at once), and the release waits there
	# until the broken lease is long over.
	local until=$(($(now_ms) + 3000))
	kill -STOP "$(redis_pid main)"
	touch "$dir/go"
	past() { (($(now_ms) > until)); }
	wait_until 10 past
	kill -CONT "$(redis_pid main)"
	reap "$holder"
	assert_equal "$status" 76
	run cat "$dir/holder.err"
	assert_output --regexp "lost the lock on job: it was broken by $(hostname):[0-9]+ \(redlock-run --break\)(;| before the command ended)"
}

# join_line N ARGS...: a waiter of job that runs ARGS (after job; options before it in the
# array line_opts), the Nth in line once this returns; its pid in $waiter.
line_opts=()
join_line() {
	local n=$1
	shift
	"$RR" "${line_opts[@]}" job "$@" &
	waiter=$!
	in_line() { [[ $(rcli zcard '{job}:waiting') == "$n" ]]; }
	wait_until 5 in_line
}

# hold_with_line N: a holder of job with a 30s lease that runs until $dir/go exists ($holder;
# its lease's end in $expires, by the server's clock), and N waiters behind it that run true
# (${line[@]}, in order).
hold_with_line() {
	local i
	rm -f "$dir/held"
	"$RR" -t 30s job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -e "$dir/held"
	expires=$(rcli pexpiretime job)
	line=()
	for ((i = 1; i <= $1; i++)); do
		join_line "$i" -- true
		line+=("$waiter")
	done
}

@test "waiters killed at the front: --status says who is next and not woken; --break wakes past them" {
	local mode a b fence
	for mode in release break stalled-break terminal; do
		rm -f "$dir/go" "$dir/b-fence" "$dir/held"
		# Four: the release's follow-up wakes the three behind the first it woke.
		hold_with_line 4
		join_line 5 -c "echo \$REDLOCK_FENCE > $dir/b-fence"
		b=$waiter
		kill -KILL "${line[@]}"
		for a in "${line[@]}"; do reap "$a"; done
		if [[ $mode != break ]]; then
			# The release wakes the first killed waiter, and a round trip later the three
			# behind it, which never come: once the handoff's time given to them is over,
			# the lock is free and the next has not been woken.
			touch "$dir/go"
			reap "$holder"
			stalled() {
				run -0 "$RR" --status job
				[[ $output == *"next: $(hostname):$b, not woken "* ]]
			}
			wait_until 10 stalled
			assert_output --partial "; it takes the lock when it looks again, within "
			# JSON says so too: within how long the next looks again.
			run -0 "$RR" --status --json job
			python3 -c 'import json, sys
o = json.loads(sys.argv[1])
assert not o["held"] and o["waiting"] == 1, o
assert 1000 < o["stalled_ms"] <= 31000, o' "$output"
			# --list shows the free lock with its line held back, as --status does.
			run -0 "$RR" --list 'j*'
			assert_line --index 1 --regexp "^job +- +\(free, next not woken\) +- +- +[0-9]{16} +1$"
			run -0 "$RR" --list --json
			[[ $output == *'"key": "job", "held": false,'*'"waiting": 1,'* ]]
			if [[ $mode == release ]]; then
				# Another run asking for it wakes it (and waits behind it); -v
				# says that it is free, but not its turn.
				# (On a loaded machine the checks above may outlast its "within":
				# then it looked again by itself, and holds it.)
				# (Woken by this run's own pass, B may have run and exited by the time
				# this run speaks, which then takes it for gone: the words between
				# "first" and "giving up" are not asserted.)
				run -75 --separate-stderr "$RR" -v -n job -- echo never
				[[ $stderr == *"job is free, but $(hostname):$b is in line for it first"*"; giving up after "* ||
					$stderr == *"job is held by $(hostname):$b; giving up after "* ]] ||
					{ echo "b is $b; the -n run said: $stderr" >&2; false; }
			elif [[ $mode == terminal ]]; then
				# On a terminal too, where it asks nothing of a free lock.
				run -0 on_terminal y "$RR" --break job
				assert_output --partial "next: $(hostname):$b, not woken"
				assert_output --partial "job was free: nothing to break"
				refute_output --partial "[y/N]"
			else
				# --break wakes the line of a free lock too.
				run -0 "$RR" --break --yes job
				assert_output "job was free: nothing to break"
			fi
		else
			run -0 "$RR" --break --yes job
			touch "$dir/go"
			reap "$holder"
		fi
		reap "$b"
		assert_equal "$status" 0
		# Either way long before the 30s lease it waited out (by the server's clock).
		fence=$(cat "$dir/b-fence")
		((fence / 1000 < expires))
	done
}

@test "--break on a terminal breaks the holder it showed, not one that took the lock while the user answered" {
	"$RR" -t 30s job -c "touch $dir/first; until [ -e $dir/go.first ]; do sleep 0.05; done" &
	local first=$!
	wait_until 5 test -e "$dir/first"
	"$RR" -t 30s job -c "touch $dir/second; until [ -e $dir/go.second ]; do sleep 0.05; done" &
	local second=$!
	wait_until 5 eval '(($(rcli zcard "{job}:queue") == 1))'
	# While the question waits, the holder shown finishes and the waiter takes the lock.
	before_answer="touch $dir/go.first; for _ in \$(seq 400); do [ -e $dir/second ] && break; sleep 0.05; done" \
		run -1 on_terminal y "$RR" --break job
	assert_output --partial "job is held by $(hostname):$first (taken "
	assert_output --partial "job changed hands after it was shown: now held by $(hostname):$second; not broken"
	assert_output --partial "job: not broken: its holder changed while you answered"
	run -75 "$RR" --status job
	touch "$dir/go.second"
	reap_ok "$first" "$second"
	# One that finished and is kept by --min-hold is the holder shown all the same.
	"$RR" -t 30s --min-hold 30s job -c "touch $dir/kept; until [ -e $dir/go.kept ]; do sleep 0.05; done" &
	local kept=$!
	wait_until 5 test -e "$dir/kept"
	before_answer="touch $dir/go.kept; for _ in \$(seq 400); do redis-cli -s $(redis_sock main) get job | grep -q ':kept\$' && break; sleep 0.05; done" \
		run -0 on_terminal y "$RR" --break job
	assert_output --partial "broke job, held by $(hostname):$kept "
	run -0 "$RR" -n job -- true
	reap_ok "$kept"
}

@test "-n behind a waiter killed in line: -v says it is gone, passed over; the next run gets the lock" {
	"$RR" -t 1h job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -e "$dir/held"
	join_line 1 -- true
	local dead=$waiter
	kill -KILL "$dead"
	reap "$dead"
	# Deleted by hand: the lock is free, and a killed waiter is first in line for an hour.
	rcli del job >/dev/null
	run -75 --separate-stderr "$RR" -v -n job -- echo never
	local said=$stderr
	run -0 "$RR" -w 30s job -- echo ran
	assert_output ran
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 76
	[[ $said == *"job is free, but $(hostname):$dead is in line for it first (gone: if killed outright, it could not leave the line, and loses its turn within a second; else it has had its turn since); giving up after "* ]]
}

@test "five waiters killed at the front: --status names the next one alive; a run asking gets the line past them" {
	local a b fence
	hold_with_line 5
	join_line 6 -c "echo \$REDLOCK_FENCE > $dir/b-fence"
	b=$waiter
	kill -KILL "${line[@]}"
	for a in "${line[@]}"; do reap "$a"; done
	# The release wakes the first, and its follow-up the three behind it, which never come;
	# the fifth was never woken.
	touch "$dir/go"
	reap "$holder"
	stalled() {
		run -0 "$RR" --status job
		[[ $output == *"next: $(hostname):$b, not woken, behind 1 gone; it takes the lock when it looks again, within "*" and a second for each gone waiter before it"* ]]
	}
	wait_until 10 stalled
	run -0 "$RR" --status --json job
	python3 -c 'import json, sys
o = json.loads(sys.argv[1])
assert not o["held"] and o["stalled_ms"] > 1000, o' "$output"
	# A run that asks wakes the first in line and passes it when it does not come; then
	# the next: all long before the 30s lease they waited out (by the server's clock).
	"$RR" job -- true &
	local newcomer=$!
	reap_ok "$b" "$newcomer"
	fence=$(cat "$dir/b-fence")
	((fence / 1000 < expires))
}

@test "waiters killed at the front of a semaphore's line: --status says the next is not woken; a run that asks passes them over" {
	local i a b newcomer fence
	for i in 1 2; do
		"$RR" -t 30s --limit 2 job -c "touch $dir/held$i; until [ -e $dir/go$i ]; do sleep 0.05; done" &
		eval "local h$i=\$!"
		wait_until 5 test -e "$dir/held$i"
	done
	expires=$(rcli pexpiretime job)
	line_opts=(--limit 2)
	line=()
	for i in 1 2 3 4; do
		join_line "$i" -- true
		line+=("$waiter")
	done
	join_line 5 -c "echo \$REDLOCK_FENCE > $dir/b-fence"
	b=$waiter
	kill -KILL "${line[@]}"
	for a in "${line[@]}"; do reap "$a"; done
	# A place frees: the release wakes the first, and its follow-up the three behind it, which
	# never come; the fifth was never woken. --status says so, though a holder remains.
	touch "$dir/go1"
	reap_ok "$h1"
	stalled() {
		run -0 "$RR" --status job
		[[ $output == *"next: $(hostname):$b, not woken, behind 4 gone; it takes the lock when it looks again, within "* ]]
	}
	wait_until 10 stalled
	run -0 "$RR" --status --json job
	python3 -c 'import json, sys
o = json.loads(sys.argv[1])
assert not o["held"] and o["stalled_ms"] > 1000, o' "$output"
	# A run that asks wakes those before it and passes them when they do not come: the live
	# waiter gets the free place long before the 30s lease it waited out.
	"$RR" --limit 2 job -- true &
	newcomer=$!
	reap_ok "$b" "$newcomer"
	fence=$(cat "$dir/b-fence")
	((fence / 1000 < expires))
	touch "$dir/go2"
	reap_ok "$h2"
}

@test "exclusive waiters killed at the front: a shared run that asks passes them over" {
	local a1 a2 s newcomer fence
	hold_with_line 2
	a1=${line[0]} a2=${line[1]}
	line_opts=(-s)
	join_line 3 -c "echo \$REDLOCK_FENCE > $dir/s-fence"
	s=$waiter
	kill -KILL "$a1" "$a2"
	reap "$a1"
	reap "$a2"
	touch "$dir/go"
	reap_ok "$holder"
	"$RR" -s job -- true &
	newcomer=$!
	reap_ok "$newcomer" "$s"
	fence=$(cat "$dir/s-fence")
	((fence / 1000 < expires))
}

@test "an exclusive waiter killed between shared holders and a shared waiter: --status says it is not woken" {
	local x s
	"$RR" -s -t 30s job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -e "$dir/held"
	join_line 1 -- true
	x=$waiter
	line_opts=(-s)
	join_line 2 -- true
	s=$waiter
	kill -KILL "$x"
	reap "$x"
	# The shared waiter could share the lock now, but no release came to wake it.
	run -75 "$RR" --status job
	assert_output --partial "next: $(hostname):$s, not woken, behind 1 gone; it takes the lock when it looks again, within "
	touch "$dir/go"
	reap_ok "$holder" "$s"
}

@test "--break of a server that is not Redis: 69, the reason, and no warning that it may still land" {
	# Something else on the socket, answering each request with an HTTP error.
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen()
while True:
    c = s.accept()[0]
    c.recv(65536)
    c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
    c.close()' "$dir/http.sock" 3>&- &
	local http=$!
	wait_until 5 test -S "$dir/http.sock"
	run -69 --separate-stderr "$RR" -r "unix://$dir/http.sock" --break --yes job
	kill "$http"
	assert_equal "$stderr" "redlock-run: protocol error from $dir/http.sock: Protocol error, got \"H\" as reply type byte (is it a Redis server?)"
}

@test "--break asks first: off a terminal without --yes it is refused, and nothing is broken" {
	"$RR" job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	run -64 "$RR" --break job </dev/null
	assert_output --partial "--break job: nobody to ask here (not a terminal); add --yes to break it"
	run -75 "$RR" --status job
	run -64 "$RR" --yes job -- true
	run -64 "$RR" --break --status job
	run -64 "$RR" --break --yes job -- true
	touch "$dir/go"
	wait "$holder"
}

@test "--break: every holder of a semaphore, a kept lock at once, nothing of a free one, 69 for a foreign key" {
	"$RR" -t 3s -l 2 sem -- sleep 60 2>"$dir/a.err" &
	local a=$!
	"$RR" -t 3s -l 2 sem -- sleep 60 2>"$dir/b.err" &
	local b=$!
	full() { [[ $(rcli zcard sem) == 3 ]]; }
	wait_until 5 full
	run -0 "$RR" --break --yes sem
	assert_output --partial "broke sem, held by $(hostname):"
	# (Not "taken ... ago": the last fence is the newer holder's, and says nothing of both.)
	assert_line --index 0 --regexp " and 1 more \(up to [0-9.]+s of their leases left\): fence "
	assert_line --index 1 --regexp "^their commands run on until their next renewals find the break, within [0-9.]+m?s \([0-9.]+s if their renewals fail\), then are stopped \(76\)$"
	reap "$a"
	assert_equal "$status" 76
	reap "$b"
	assert_equal "$status" 76
	grep -q "it was broken by $(hostname):" "$dir/a.err"
	# The one holder left of a shared lock, after another came and went: no "taken ... ago"
	# either, as the last fence is the one that went.
	"$RR" -t 3s -s shy -c "touch $dir/shy; exec sleep 60" &
	local s=$!
	wait_until 5 test -e "$dir/shy"
	run -0 "$RR" -s shy -- true
	run -0 "$RR" --break --yes shy
	assert_line --index 0 --regexp "^broke shy, held by $(hostname):$s \([0-9.]+s of its lease left\): fence [0-9]+, now [0-9]+$"
	reap "$s"
	assert_equal "$status" 76
	# A lock --min-hold keeps is free again, for anyone.
	run -0 "$RR" --min-hold 10m kept -- true
	run -0 "$RR" --break --yes kept
	assert_output --partial "broke kept, held by $(hostname):"
	run -0 "$RR" -n kept -- true
	run -0 "$RR" --break --yes free
	assert_output "free was free: nothing to break"
	rcli set app hello >/dev/null
	run -69 "$RR" --break --yes app
	assert_output --partial 'app is not a lock on'
	assert_equal "$(rcli get app)" hello
}

@test "--break over a quorum breaks the lock on every server" {
	quorum_start 3
	"$RR" -t 10s job -- sleep 60 2>"$dir/holder.err" &
	local holder=$!
	on_all() { local i; for i in 1 2 3; do held_on "q$i" job || return 1; done; }
	wait_until 10 on_all
	run -0 "$RR" --break --yes job
	assert_equal "$(grep -c "^on 127.0.0.1:[0-9]*: broke job, held by $(hostname):$holder " <<<"$output")" 3
	for i in 1 2 3; do free_on "q$i" job; done
	reap "$holder"
	assert_equal "$status" 76
	run -0 "$RR" -n job -- true
}

@test "--break on a terminal of a lock shown free that one server of three holds: nothing asked, 0" {
	local stale=00000000-0000-4000-8000-000000000000:someone-else:42
	quorum_start 3
	rcli_on q2 set job "$stale" px 60000 >/dev/null
	# Free on the quorum: nothing to ask about, and what the minority holds is not broken.
	run -0 on_terminal y "$RR" --break job
	refute_output --partial "[y/N]"
	assert_output --partial "on 127.0.0.1:$(redis_port q2): job is held by someone-else:42: not broken (it was shown free)"
	refute_output --partial "changed while you answered"
	assert_equal "$(rcli_on q2 get job)" "$stale"
}

@test "--list: every lock, of every kind, with its holder, lease and line; other keys are skipped" {
	run -0 "$RR" --list
	assert_output "KEY                      MODE       HOLDER                      TAKEN     LEFT            FENCE WAITING
(no locks held)"
	"$RR" -t 30s job -c "touch $dir/job; until [ -e $dir/go ]; do sleep 0.05; done" &
	local job=$!
	"$RR" -t 30s -l 3 sem -c "touch $dir/sem; until [ -e $dir/go ]; do sleep 0.05; done" &
	local sem=$!
	"$RR" -t 30s -s readers -c "touch $dir/readers; until [ -e $dir/go ]; do sleep 0.05; done" &
	local readers=$!
	run -0 "$RR" --min-hold 10m nightly -- true
	wait_until 5 test -e "$dir/job" -a -e "$dir/sem" -a -e "$dir/readers"
	"$RR" job -- true &
	local waiter=$!
	in_line() { [[ $(rcli zcard '{job}:waiting') == 1 ]]; }
	wait_until 5 in_line
	# Keys that are not locks, and the helpers of those that are, are not listed.
	rcli set plain hello >/dev/null
	rcli hset a-hash f 1 >/dev/null
	rcli set token-for-ever "12345678-1234-1234-1234-123456789abc:web-1:42" >/dev/null
	run -0 "$RR" --list
	assert_line --index 0 --regexp "^KEY +MODE +HOLDER +TAKEN +LEFT +FENCE +WAITING$"
	assert_line --index 1 --regexp "^job +exclusive +$(hostname):$job +[0-9.]+m?s +[0-9.]+s +[0-9]{16} +1$"
	assert_line --index 2 --regexp "^nightly +exclusive +$(hostname):[0-9]+ \(kept\) +[0-9.]+m?s +[0-9]+m([0-9]+s)? +[0-9]{16} +0$"
	assert_line --index 3 --regexp "^readers +shared +$(hostname):$readers +- +[0-9.]+s +[0-9]{16} +0$"
	assert_line --index 4 --regexp "^sem +limit 3 +$(hostname):$sem +- +[0-9.]+s +[0-9]{16} +0$"
	assert_equal "${#lines[@]}" 5
	# A pattern, and one JSON object a line, each as --status --json gives it.
	run -0 "$RR" --list --json 'j*'
	assert_equal "${#lines[@]}" 1
	echo "$output" | python3 -c 'import json, sys
o = json.loads(sys.stdin.readline())
assert o["key"] == "job" and o["held"] and o["pid"] == int(sys.argv[1]) and o["waiting"] == 1, o' "$job"
	# --prefix lists its namespace.
	run -0 "$RR" --prefix s --list
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 --regexp "^sem "
	touch "$dir/go"
	wait "$job" "$sem" "$readers" "$waiter"
}

@test "--list: a free lock whose line waits is listed, whatever the length of its name" {
	local long ends
	long=$(head -c 1500 /dev/zero | tr '\0' k)
	ends=$(($(server_ms main) + 60000))
	# A place in line that nobody holds the lock for (its waiter gone, say), as the scripts
	# write them.
	rcli zadd "{$long}:waiting" "$ends" "12345678-1234-4234-8234-123456789abc:web-1:42" >/dev/null
	rcli zadd "{short}:waiting" "$ends" "12345678-1234-4234-8234-123456789abc:web-1:43" >/dev/null
	run -0 "$RR" --list
	assert_equal "${#lines[@]}" 3
	assert_line --index 1 --regexp "^k{1500} +- +\(free\) "
	assert_line --index 2 --regexp "^short +- +\(free\) "
}

@test "a KEY with a newline or an escape in it: messages, --status and --break show it on one line" {
	local key=$'two\nlines\e[2J'
	"$RR" "$key" -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	run -75 "$RR" --status "$key"
	assert_equal "${#lines[@]}" 1
	assert_output --regexp '^two\?lines\?\[2J is held by '
	# --break too, whose answer is on standard output
	run -0 "$RR" --break --yes "$key"
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp '^broke two\?lines\?\[2J, held by '
	reap "$holder"
	"$RR" "$key" -c "touch $dir/held2; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -e "$dir/held2"
	run -75 --separate-stderr "$RR" -n -v "$key" -- true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock-run: two\?lines\?\[2J is held by $(hostname):$holder; giving up after "
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
}

@test "--list: a name with a newline or an escape in it stays on its row; UTF-8 keeps the columns" {
	rcli eval "redis.call('SET', ARGV[1], ARGV[2], 'PX', 60000)" 0 $'two\nlines\e[2J' \
		"12345678-1234-1234-1234-123456789abc:web-1:42" >/dev/null
	rcli set "café-déploiement" "12345678-1234-1234-1234-123456789abc:hôte-é:43" px 60000 >/dev/null
	# Wide characters take two columns, a combining mark none: under any locale of the user's.
	rcli set "夜間バックアップ" "12345678-1234-1234-1234-123456789abc:web-2:44" px 60000 >/dev/null
	rcli set $'de\xcc\x81ploy' "12345678-1234-1234-1234-123456789abc:web-3:45" px 60000 >/dev/null
	LC_ALL=C run -0 "$RR" --list
	assert_equal "${#lines[@]}" 5
	assert_line --index 1 --regexp '^café-déploiement +exclusive +hôte-é:43 '
	assert_line --index 2 --regexp $'^de\xcc\x81ploy +exclusive +web-3:45 '
	assert_line --index 3 --regexp '^two\?lines\?\[2J +exclusive +web-1:42 '
	assert_line --index 4 --regexp '^夜間バックアップ +exclusive +web-2:44 '
	# Every column stands under its header, counted in a terminal's columns.
	python3 - "$output" <<-'EOF'
		import sys, unicodedata
		def cells(line):  # a wide character fills two cells, a combining mark none
		    out = []
		    for c in line:
		        if unicodedata.combining(c):
		            continue
		        out += [c, ""] if unicodedata.east_asian_width(c) in "WF" else [c]
		    return out
		head, *rows = sys.argv[1].split("\n")
		for row in map(cells, rows):
		    for name in ("MODE", "HOLDER"):  # left-aligned: starts under its header
		        at = head.index(name)
		        assert row[at - 1] == " " and row[at] != " ", (name, row)
		    end = head.index("LEFT") + len("LEFT")  # right-aligned: ends under it
		    assert row[end - 1] != " " and row[end] == " ", row
	EOF
}

@test "--list passes over a cache's strings without running a script for each; its JSON says what --status's does" {
	"$RR" -t 30s job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	# A cache beside the lock: many strings, one of them large and starting as a token does,
	# and one that is a token all the way but too long to be one.
	rcli eval "for i = 1, 3000 do redis.call('SET', 'cache:' .. i, 'v' .. i) end" 0 >/dev/null
	rcli eval "redis.call('SET', 'large', ARGV[1] .. string.rep('y', 100000), 'PX', 60000)" 0 \
		"12345678-1234-1234-1234-123456789abc:web-1:42" >/dev/null
	rcli eval "redis.call('SET', 'long', ARGV[1] .. string.rep('h', 400) .. ':42', 'PX', 60000)" 0 \
		"12345678-1234-1234-1234-123456789abc:" >/dev/null
	rcli config resetstat >/dev/null
	run -0 "$RR" --list
	assert_line --index 1 --regexp "^job +exclusive +$(hostname):$holder "
	assert_equal "${#lines[@]}" 2
	# A script ran for the lock, not for the cache, nor for values longer than a token.
	local scripts
	scripts=$(rcli info commandstats |
		awk -F '[:=,]' '/^cmdstat_eval(sha)?:/ { n += $3 } END { print n + 0 }')
	((scripts >= 1 && scripts <= 2)) # (EVAL after a NOSCRIPT, the first time)
	# Each object of --list --json says what the servers may evict, as --status --json does.
	run -0 "$RR" --list --json
	local listed
	listed=$(echo "$output" | python3 -c 'import json, sys
o = json.loads(sys.stdin.readline())
print(o["maxmemory_policy"], o["evictable"], o["nodes"][0]["maxmemory_policy"])')
	run -75 "$RR" --status --json job
	assert_equal "$listed" "$(echo "$output" | python3 -c 'import json, sys
o = json.loads(sys.stdin.readline())
print(o["maxmemory_policy"], o["evictable"], o["nodes"][0]["maxmemory_policy"])')"
	[[ $listed == "noeviction False noeviction" ]]
	touch "$dir/go"
	wait "$holder"
}

@test "--list over a quorum: the quorum's view of each lock" {
	quorum_start 3
	"$RR" -t 30s job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 10 test -e "$dir/held"
	# A key on one server only is no lock of the quorum's.
	rcli_on q1 set lone "12345678-1234-1234-1234-123456789abc:web-1:42" px 60000 >/dev/null
	run -0 "$RR" --list
	assert_line --index 1 --regexp "^job +exclusive +$(hostname):$holder "
	assert_equal "${#lines[@]}" 2
	touch "$dir/go"
	wait "$holder"
	# No server to list: no line that could pass for "no locks held", in text or JSON, and 69.
	quorum_stop
	run -69 --separate-stderr "$RR" --list
	assert_output ""
	[[ $stderr == "redlock-run: cannot list the locks: "*"127.0.0.1:"* ]]
	run -69 --separate-stderr "$RR" --list --json
	assert_output ""
}

# on_terminal ANSWER ARGS...: redlock-run ARGS on a terminal of its own, ANSWER typed
# once it asks (after running the shell command $before_answer, if set); prints what the
# terminal showed, and exits with its status.
on_terminal() {
	python3 - "$@" <<'PY'
import os, pty, select, signal, subprocess, sys, time
answer, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
seen, end = b"", time.monotonic() + 60  # a bound: a question that never comes fails
while b"[y/N]" not in seen:
    if not select.select([fd], [], [], max(end - time.monotonic(), 0))[0]:
        os.kill(pid, signal.SIGKILL)
        break
    try:
        chunk = os.read(fd, 1024)
    except OSError:  # (the other side is gone)
        break
    if not chunk:
        break
    seen += chunk
if os.environ.get("before_answer"):
    subprocess.run(["bash", "-c", os.environ["before_answer"]], check=True)
os.write(fd, answer.encode() + b"\n")
while True:
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
sys.stdout.write(seen.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
PY
}

@test "--break on a terminal says what it would break and asks: no keeps the lock (1), yes breaks it" {
	"$RR" -t 30s job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	run -1 on_terminal n "$RR" --break job
	assert_output --partial "job is held by $(hostname):$holder (taken "
	assert_output --partial "break job? [y/N]"
	assert_output --partial "job: not broken"
	run -75 "$RR" --status job
	run -0 on_terminal y "$RR" --break job
	assert_output --partial "broke job, held by $(hostname):$holder "
	run -0 "$RR" -n job -- true
	reap "$holder"
	assert_equal "$status" 76
	# A semaphore with a place still free has a holder all the same: it is asked about too.
	"$RR" -t 30s -l 4 sem -c "touch $dir/sem; until [ -e $dir/go ]; do sleep 0.05; done" &
	local sem=$!
	wait_until 5 test -e "$dir/sem"
	run -1 on_terminal n "$RR" --break sem
	assert_output --partial "break sem? [y/N]"
	touch "$dir/go"
	wait "$sem"
}
