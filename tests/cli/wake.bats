#!/usr/bin/env bats
# Waiting (issue 4): waiters are woken by the release, one at a time, never by polling and
# never later than the holder's lease; -v tells the story; --status says who holds a lock.

bats_require_minimum_version 1.5.0
load helpers

main_server_fixture

# in_line N: N waiters are in job's line on the main server.
in_line() { [[ $(rcli zcard '{job}:waiting') == "$1" ]]; }

@test "a waiter starts as the holder releases, not when a 60s lease would have ended" {
	"$RR" -t 60s job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.02; done
		date +%s%6N > $dir/released" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	"$RR" -t 60s job -c "date +%s%6N > $dir/started" &
	waiter=$!
	wait_until 5 in_line 1
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
	reap "$waiter"
	assert_equal "$status" 0
	started=$(cat "$dir/started")
	released=$(cat "$dir/released")
	echo "started $((started - released))µs after the holder's command ended" >&2
	# After the holder's end, and woken by its release: a third of the lease it waited on.
	((started > released && started - released < 20000000))
}

@test "a holder SIGKILLed while another waits: the waiter has the lock as its lease runs out" {
	"$RR" -t 2s job -c "echo ready > $dir/ready; exec sleep 60" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	# (Its own lease is longer, so that a busy machine has two seconds to hand it the
	# grant in: a third of that lease.)
	"$RR" -t 6s job -c "echo \$REDLOCK_FENCE > $dir/fence" &
	waiter=$!
	wait_until 5 in_line 1
	kill -KILL "$holder"
	# The dead holder's lease: nothing renews it now.
	expires=$(expiry_on main job)
	wait "$waiter"
	# Granted (its fence: the server's clock, µs) once that lease ran out, and less than
	# another lease after it: its own clock re-checked, no release woke it.
	granted=$(($(cat "$dir/fence") / 1000))
	echo "granted $((granted - expires))ms after the dead holder's lease ran out" >&2
	((expires > 0 && granted >= expires && granted - expires < 2000))
}

@test "a wait the server ends early (CLIENT UNBLOCK) grants a lease that counts from the request" {
	"$RR" -t 20s job -c "echo ready > $dir/ready; exec sleep 60" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	"$RR" -t 2s job -c "echo ready > $dir/granted; until [ -e $dir/go ]; do sleep 0.02; done" &
	waiter=$!
	wait_until 5 in_line 1
	blocked() { [[ -n $(blocked_ids main) ]]; } # (asked on every poll)
	wait_until 5 blocked
	# The holder gone and its key deleted by hand, the waiter's BLPOP is answered nil
	# long before the 20s it blocks for: its queued attempt takes the lock.
	kill -KILL "$holder"
	rcli del job >/dev/null
	rcli client unblock "$(blocked_ids main)" >/dev/null
	wait_until 10 test -s "$dir/granted"
	# Counted from when the BLPOP would have ended, the 2s lease would go unrenewed for 20s
	# and expire under the command: renewed, it lasts past its first end.
	first=$(expiry_on main job)
	((first > 0))
	wait_until 10 eval '(($(expiry_on main job) > first))'
	run "$RR" -n job -- true
	assert_equal "$status" 75
	touch "$dir/go"
	reap "$waiter"
	assert_equal "$status" 0
}

@test "8 waiters on one lock: each release wakes the next, all 8 finish, nothing is left" {
	"$RR" -t 60s job -c "echo ready > $dir/ready; sleep 0.3" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	pids=()
	for i in 1 2 3 4 5 6 7 8; do
		"$RR" -t 60s job -c "echo \"\$REDLOCK_FENCE start \$(date +%s%6N)\" >> $dir/log; sleep 0.1
			echo \"\$REDLOCK_FENCE end \$(date +%s%6N)\" >> $dir/log" &
		pids+=($!)
	done
	start=$(now_ms)
	wait "$holder"
	for p in "${pids[@]}"; do
		wait "$p"
	done
	# 0.3s for the holder and 8 x 0.1s: a waiter woken by a lease running out would take 60s,
	# a third of which is plenty for the 8 runs on a busy machine
	(($(now_ms) - start < 20000))
	run grep -c start "$dir/log"
	assert_output 8
	# one at a time, in fence order
	sort -n -k3 "$dir/log" | awk '
		$2 == "start" { if (inside) bad = 1; inside = 1; if ($1 <= last) bad = 1; last = $1 }
		$2 == "end" { inside = 0 }
		END { exit bad }'
	run keys_but_fences
	assert_output ""
}

@test "a waiter whose wait runs out leaves no registration behind" {
	"$RR" -t 60s job -c "echo ready > $dir/ready; sleep 30" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	run "$RR" -w 0.3 job -- true
	assert_equal "$status" 75
	run rcli zcard '{job}:waiting'
	assert_output 0
	kill "$holder"
	wait "$holder" || true
}

@test "-v names the holder and says how long it has left, then tells the rest" {
	"$RR" -t 30s job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.02; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	"$RR" -v job -- true 2>"$dir/err" &
	waiter=$!
	wait_until 5 in_line 1
	touch "$dir/go"
	reap "$waiter"
	assert_equal "$status" 0
	run cat "$dir/err"
	[[ ${lines[0]} =~ ^"redlock-run: waiting for job (held by $(hostname):$holder, "[0-9.]+s" left)"$ ]]
	[[ $output =~ "redlock-run: acquired job on "[^\ ]+" after "[0-9.]+m?s", fence "[0-9]{16} ]]
	[[ $output == *"redlock-run: released job"* ]]
	wait "$holder"
}

# waited_on_terminal N [SETUP]: a holder of job lets go once a waiter with -v on a
# pseudo-terminal (where SETUP, stty say, ran first) has drawn its waiting line N times; what
# the waiter's terminal showed is in $dir/screen.
waited_on_terminal() {
	local times=$1 setup=${2:-true} holder waiter
	"$RR" -t 30s job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.02; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	script -qfec "$setup; $RR -v job -- true" /dev/null >"$dir/screen" &
	waiter=$!
	redrawn() { (($(grep -o $'\r\e\\[K' "$dir/screen" | wc -l) >= times)); }
	wait_until 10 redrawn
	touch "$dir/go"
	reap "$waiter"
	assert_equal "$status" 0
	wait "$holder"
}

@test "-v on a terminal: one status line, redrawn in place while waiting" {
	# redrawn at least twice (every second): the holder lets go only then
	waited_on_terminal 3
	# with no line feed in between
	run grep -c 'waiting for job' "$dir/screen"
	assert_output 1
}

@test "-v on a narrow terminal: the status line is cut to its width, so that it is redrawn in place" {
	waited_on_terminal 2 "stty cols 30"
	# Each drawing of the line (after its "\r\e[K", but the last, the whole message that ends
	# it): fewer than 30 characters.
	python3 -c 'import sys
drawn = open(sys.argv[1], encoding="utf-8", newline="").read().split("\r\x1b[K")[1:-1]
lines = [d.split("\r")[0].split("\n")[0] for d in drawn]
assert lines and all(0 < len(l) < 30 for l in lines), lines
assert lines[0].startswith("redlock-run: waiting for job"), lines' "$dir/screen"
}

@test "-v on a terminal that cannot clear a line (TERM=dumb): the waiting line is written as to a log" {
	"$RR" -t 30s job -c "echo ready > $dir/ready; sleep 30" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	TERM=dumb script -qfec "$RR -v -w 1.5 job -- true" /dev/null >"$dir/screen" || true
	kill "$holder"
	wait "$holder" || true
	grep -q 'waiting for job' "$dir/screen"
	run grep -c $'\e\\[K' "$dir/screen"
	assert_output 0
}

@test "--status on a free, a held and an unreachable lock" {
	run --separate-stderr "$RR" --status job
	assert_success
	assert_output "job is free (never taken)"
	"$RR" -t 30s job -c "echo ready > $dir/ready; sleep 30" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	run "$RR" --status job
	assert_equal "$status" 75
	[[ $output =~ ^"job is held by $(hostname):$holder (taken "[0-9.]+m?s" ago) for another "[0-9.]+s" (fence "([0-9]{16})")"$ ]]
	fence=${BASH_REMATCH[1]}
	run "$RR" --status -E 3 job
	assert_equal "$status" 3
	kill "$holder"
	wait "$holder" || true
	run "$RR" --status job
	assert_success
	assert_output "job is free (last fence $fence)"
	run --separate-stderr "$RR" --status -r unix:///nonexistent/redis.sock job
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: cannot connect to /nonexistent/redis.sock: no such file or directory"
	# A reader of the JSON gets an object all the same.
	run --separate-stderr "$RR" --status --json -r unix:///nonexistent/redis.sock job
	assert_equal "$status" 69
	assert_output '{"key": "job", "held": null, "error": "cannot connect to /nonexistent/redis.sock: no such file or directory"}'
}

# The JSON fields --status gives about eviction: the server's (noeviction) where INFO is
# allowed, null as the user of the *-acl scenarios, who may not run it.
eviction_fields() {
	if [ -n "${REDLOCK_TEST_AS_LOCKER:-}" ]; then
		echo '"maxmemory_policy": null, "evictable": null'
	else
		echo '"maxmemory_policy": "noeviction", "evictable": false'
	fi
}

@test "--status --json: one object with stable fields, that python3 -m json.tool parses" {
	run "$RR" --status --json job
	assert_success
	free='"held": false, "host": null, "pid": null, "token": null, "ttl_ms": null, "fence": null, "held_ms": null, "kept": false, "process": null, "cancelled_by": null, "queue": "fifo", "waiting": 0, "in_order": false, "waiters": [], "stalled_ms": null, "mode": "exclusive", "limit": 1, "holders": []'
	assert_output "{\"key\": \"job\", $free, $(eviction_fields), \"quorum\": 1, \"nodes\": [{\"address\": \"$(redis_sock main)\", \"reachable\": true, $free, $(eviction_fields), \"replica_of\": null}]}"
	"$RR" -t 30s job -c "echo ready > $dir/ready; sleep 30" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	run "$RR" --status --json job
	assert_equal "$status" 75
	echo "$output" | python3 -m json.tool >/dev/null
	fields=$(echo "$output" | python3 -c 'import json, sys
o = json.load(sys.stdin)
print(o["key"], o["held"], o["host"], o["pid"], 15000 < o["ttl_ms"] <= 30000, o["fence"] == int(sys.argv[1]),
      o["token"].endswith(":%d" % o["pid"]))' "$(rcli get '{job}:fence')")
	assert_equal "$fields" "job True $(hostname) $holder True True True"
	kill "$holder"
	wait "$holder" || true
	# a key whose holder's name (another client's) has quotes, a control character and bad
	# UTF-8 (a value that is not a lock's is not shown: see operators.bats)
	rcli set 'we"ird' $'12345678-1234-1234-1234-123456789abc:by\thand"\xff:42' px 60000 >/dev/null
	run -75 "$RR" --status --json 'we"ird'
	echo "$output" | python3 -m json.tool >/dev/null
	assert_output --partial "{\"key\": \"we\\\"ird\", \"held\": true, \"host\": \"by\\u0009hand\\\"\\ufffd\", \"pid\": 42, \"token\": \"12345678-1234-1234-1234-123456789abc:by\\u0009hand\\\"\\ufffd:42\", \"ttl_ms\": "
}

@test "--status refuses a COMMAND, and --json needs --status" {
	run "$RR" --status job -- true
	assert_equal "$status" 64
	run "$RR" --json job -- true
	assert_equal "$status" 64
}

@test "--status says plainly when the server may evict locks, and keeps quiet when INFO is refused" {
	rcli config set maxmemory 100mb >/dev/null
	rcli config set maxmemory-policy volatile-lru >/dev/null
	run --separate-stderr "$RR" -r "unix://$(redis_sock main)" --status job
	rcli config set maxmemory 0 >/dev/null
	rcli config set maxmemory-policy noeviction >/dev/null
	assert_success
	assert_line --index 0 "job is free (never taken)"
	assert_line --index 1 "warning: this server may evict locks under memory pressure (maxmemory-policy volatile-lru): set it to noeviction"
	# an ACL user that may not run INFO: the answer all the same, without the policy
	rcli acl setuser viewer on '>v' '~*' -@all +evalsha +eval +type +get +pttl +time +zcount \
		+zrangebyscore +zrange +zscore >/dev/null
	run --separate-stderr "$RR" -r "unix://viewer:v@$(redis_sock main)" --status --json job
	rcli acl deluser viewer >/dev/null
	assert_success
	assert_output --partial '"maxmemory_policy": null, "evictable": null, "replica_of": null}'
}
