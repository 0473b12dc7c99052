#!/usr/bin/env bats
# Deploy queues (issue 25): the line keeps arrival order in every mode, also in the instant of a
# handoff; --queue latest lets only the newest wait; --queue latest --cancel-running also stops
# a running holder that agreed to it; every run on one KEY agrees on the discipline.

bats_require_minimum_version 1.5.0
load helpers

main_server_fixture

# queued N [KEY]: N waiters have taken their turn in KEY's line (default job), of either kind.
queued() {
	local key=${2:-job}
	(($(rcli zcard "{$key}:queue") + $(rcli zcard "{$key}:queue-shared") == $1))
}

# hold KEY [OPTIONS...]: a holder of KEY that runs until $dir/go.KEY exists; its pid in $holder.
hold() {
	local key=$1
	shift
	"$RR" "$@" "$key" -c "echo ready > $dir/ready.$key; until [ -e $dir/go.$key ]; do sleep 0.02; done" &
	holder=$!
	wait_until 10 test -s "$dir/ready.$key"
}

# holder_runs_on N: the holder ($holder, started with -v, its stderr in $dir/holder.err) renews
# N more times, and still runs.
holder_runs_on() {
	local want
	renewals() { grep -c "renewed job" "$dir/holder.err" || true; }
	want=$(($(renewals) + $1))
	wait_until 20 eval '(($(renewals) >= want))'
	kill -0 "$holder"
}

# ran: the names the commands wrote to $dir/ran, in the order they ran, on one line.
ran() { tr '\n' ' ' <"$dir/ran" | sed 's/ $//'; }

@test "fifo: 5 waiters run in the order they arrived, round after round" {
	for round in 1 2 3 4 5; do
		rm -f "$dir/ran"
		hold job
		for i in 1 2 3 4 5; do
			"$RR" job -c "echo $i >> $dir/ran" &
			pids[i]=$!
			# Arrived: its turn is taken before the next one starts.
			wait_until 10 queued "$i"
			sleep 0.05
		done
		touch "$dir/go.job"
		reap "$holder"
		assert_equal "$status" 0
		reap_ok "${pids[@]}"
		assert_equal "$(ran)" "1 2 3 4 5"
		rm -f "$dir/go.job" "$dir/ready.job"
	done
	# Nothing is left of the line.
	assert_equal "$(keys_but_fences)" ""
}

@test "fifo: 40 waiters arriving one by one while the line drains run in arrival order" {
	hold job
	# arrived I PID: waiter I has its turn in line, or has run already.
	arrived() { rcli zrange '{job}:queue' 0 -1 | grep -q ":$2\$" || grep -qx "$1" "$dir/ran"; }
	for i in $(seq 40); do
		"$RR" job -c "echo $i >> $dir/ran; sleep 0.01" &
		pids[i]=$!
		wait_until 10 arrived "$i" "${pids[i]}"
		# The line starts moving after the first ten arrived.
		((i != 10)) || touch "$dir/go.job"
	done
	reap_ok "$holder" "${pids[@]}"
	assert_equal "$(ran)" "$(seq 40 | tr '\n' ' ' | sed 's/ $//')"
}

@test "fifo: a waiter with a short place (behind what --min-hold keeps) does not end the others'" {
	# The front waiter, woken by a release that --min-hold keeps taken for 2s more, takes a
	# place that ends with that; the places of those behind it, waiting out the next 20s
	# lease, must outlive it, or the line wakes nobody and loses its order.
	hold job -t 20s --min-hold 2s
	"$RR" -t 20s job -c "echo 1 >> $dir/ran; touch $dir/one; until [ -e $dir/go.one ]; do sleep 0.02; done" &
	pids[1]=$!
	wait_until 10 queued 1
	for i in 2 3 4; do
		"$RR" -t 20s job -c "echo $i >> $dir/ran" &
		pids[i]=$!
		wait_until 10 queued "$i"
	done
	touch "$dir/go.job"
	reap "$holder"
	assert_equal "$status" 0
	wait_until 10 test -e "$dir/one"
	# 1 took the lock at the end of what was kept, a second or so after its short place
	# was set: the places of 2, 3 and 4 last for most of the lease still.
	local left
	left=$(rcli pttl '{job}:waiting')
	echo "the places' key has ${left}ms left" >&2
	((left > 5000))
	touch "$dir/go.one"
	reap_ok "${pids[@]}"
	assert_equal "$(ran)" "1 2 3 4"
}

@test "fifo: a waiter with a shorter wait does not shorten the line's order" {
	# The order is kept for an hour, or longer by a line waiting out a longer lease; such a
	# line is staged here by lengthening the order's key (a lease of hours takes too long to
	# wait for). A newcomer waiting out a 20s lease must leave it as long as it found it, or
	# the order ends before the waiters who need it.
	hold job -t 20s
	"$RR" -t 20s job -c "echo 1 >> $dir/ran" &
	pids[1]=$!
	wait_until 10 queued 1
	rcli pexpire '{job}:queue' 7200000 >/dev/null
	"$RR" -t 20s job -c "echo 2 >> $dir/ran" &
	pids[2]=$!
	wait_until 10 queued 2
	local left
	left=$(rcli pttl '{job}:queue')
	echo "the order's key has ${left}ms left" >&2
	((left > 3600000))
	touch "$dir/go.job"
	reap "$holder"
	reap_ok "${pids[@]}"
	assert_equal "$(ran)" "1 2"
}

@test "fifo: nobody overtakes a waiter whose turn it is, not -n, not a newcomer, while the lock is free" {
	# The instant of a handoff, held still: the lock free, a waiter of another host first in
	# line, its place lasting 30s more (as a release leaves it, for a second, to a waiter
	# it woke).
	local now fake=00000000-0000-4000-8000-000000000000:elsewhere:4242
	now=$(server_ms main)
	rcli zadd '{job}:waiting' $((now + 30000)) "$fake" >/dev/null
	rcli zadd '{job}:queue' "${now}000" "$fake" >/dev/null
	run --separate-stderr "$RR" -n -v job -- touch "$dir/overtook"
	assert_equal "$status" 75
	[[ $stderr == *"job is free, but elsewhere:4242 is in line for it first"* ]]
	# It woke that waiter, and left it a handoff's time to come, as a release does (a waiter
	# killed at the front is so passed over); the place is made long again for the next run.
	(($(rcli zscore '{job}:waiting' "$fake") - $(server_ms main) <= 1000))
	now=$(server_ms main)
	rcli zadd '{job}:waiting' $((now + 30000)) "$fake" >/dev/null
	run "$RR" -w 0.3 job -- touch "$dir/overtook"
	assert_equal "$status" 75
	# Its turn over, the newcomer's comes.
	rcli zrem '{job}:waiting' "$fake" >/dev/null
	run "$RR" -n job -- touch "$dir/ran"
	assert_equal "$status" 0
	[ ! -e "$dir/overtook" ] && [ -e "$dir/ran" ]
}

@test "fifo: a waiter killed at the front of the line holds the next one back no longer than a lease" {
	hold job -t 2s
	"$RR" job -c "echo killed >> $dir/ran" &
	local killed=$!
	wait_until 10 queued 1
	"$RR" job -c "echo next >> $dir/ran" &
	local next=$!
	wait_until 10 queued 2
	kill -KILL "$killed"
	reap "$killed"
	touch "$dir/go.job"
	reap "$holder"
	# The release woke the dead waiter, and left it a second to take its turn: the next one
	# takes it at its next look, by the end of the lease it waited out.
	wait_until 30 test -s "$dir/ran"
	reap "$next"
	assert_equal "$status" 0
	assert_equal "$(ran)" "next"
	# Nothing is left of the line (the dead waiter's wake-up lasts a second).
	assert_equal "$(rcli exists '{job}:waiting' '{job}:queue' job)" 0
}

@test "fifo: shared waiters keep their turn, before an exclusive waiter that came after them" {
	hold job
	"$RR" -s job -c "echo s1 >> $dir/ran; sleep 0.3; echo s1-done >> $dir/ran" &
	s1=$!
	wait_until 10 queued 1
	"$RR" job -c "echo x >> $dir/ran" &
	x=$!
	wait_until 10 queued 2
	"$RR" -s job -c "echo s2 >> $dir/ran" &
	s2=$!
	wait_until 10 queued 3
	touch "$dir/go.job"
	reap_ok "$holder" "$s1" "$x" "$s2"
	# s1 came first and runs first; x waits for it, and s2 for x.
	assert_equal "$(ran)" "s1 s1-done x s2"
}

@test "fifo: a semaphore's free places go to its waiters in arrival order" {
	for h in a b; do
		"$RR" -l 2 job -c "echo ready > $dir/ready.$h; until [ -e $dir/go.$h ]; do sleep 0.02; done" &
		holders[${#holders[@]}]=$!
		wait_until 10 test -s "$dir/ready.$h"
	done
	for i in 1 2 3; do
		"$RR" -l 2 job -c "echo $i >> $dir/ran; until [ -e $dir/go.$i ]; do sleep 0.02; done" &
		pids[i]=$!
		wait_until 10 queued "$i"
	done
	touch "$dir/go.a"
	wait_until 10 test -s "$dir/ran"
	assert_equal "$(ran)" "1"
	touch "$dir/go.b"
	wait_until 10 grep -q 2 "$dir/ran"
	assert_equal "$(ran)" "1 2"
	touch "$dir/go.1"
	wait_until 10 grep -q 3 "$dir/ran"
	assert_equal "$(ran)" "1 2 3"
	touch "$dir/go.2" "$dir/go.3"
	reap_ok "${holders[@]}" "${pids[@]}"
}

@test "--queue latest: the newest takes the older waiter's place, which exits with the conflict status" {
	hold job --queue latest
	"$RR" --queue latest job -c "echo older >> $dir/ran" 2>"$dir/older.err" &
	older=$!
	wait_until 10 queued 1
	"$RR" --queue latest -v -E 3 job -c "echo oldest-but-one >> $dir/ran" 2>"$dir/second.err" &
	second=$!
	# The second supersedes the first at once; then a third supersedes the second.
	reap "$older"
	assert_equal "$status" 75
	run cat "$dir/older.err"
	assert_output "redlock-run: job: superseded by $(hostname):$second (a newer run with --queue latest)"
	"$RR" --queue latest job -c "echo newest >> $dir/ran" &
	newest=$!
	reap "$second"
	assert_equal "$status" 3
	grep -q "superseded by $(hostname):$newest" "$dir/second.err"
	# With -v, how long it waited, and the status it exits with.
	grep -q "job: gave up its place in line after waiting [0-9.ms]*; exit status 3" "$dir/second.err"
	# The holder was never touched: it still holds, and runs on.
	assert_equal "$(rcli get job)" "$(rcli get job)"
	[[ $(rcli get job) == *":$holder:latest" ]]
	queued 1
	touch "$dir/go.job"
	reap "$holder"
	assert_equal "$status" 0
	reap "$newest"
	assert_equal "$status" 0
	assert_equal "$(ran)" "newest"
}

# stopped_in_line [OPTIONS...]: a --queue latest waiter for job (writing "a" to $dir/ran), in a
# job of its own (as_job: its output in $dir/a.out), which took its place in line and was then
# stopped with SIGTSTP: its pid in $a, its job's in $script.
stopped_in_line() {
	rm -f "$dir/rr"
	as_job "$dir/a.out" --queue latest "$@" job -c "echo a >> $dir/ran"
	script=$!
	wait_until 10 test -s "$dir/rr"
	a=$(cat "$dir/rr")
	wait_until 10 queued 1
	kill -TSTP "$a"
	wait_until 10 stopped "$a"
}

# continued_runs: $a (its job's pid in $script), continued, takes its place in line again and
# runs once the holder is done.
continued_runs() {
	kill -CONT "$a"
	wait_until 10 queued 1
	touch "$dir/go.job"
	reap "$holder"
	reap "$script"
	assert_equal "$status" 0
	assert_equal "$(ran)" "a"
}

@test "--queue latest: a waiter stopped (SIGTSTP) is superseded by a newer run that came meanwhile, though it ran already" {
	local b
	# Continued while the newer run holds the lock: it cancels nothing, and is superseded.
	hold job --queue latest --cancel-running
	stopped_in_line --cancel-running
	queued 0
	"$RR" --queue latest --cancel-running job -c "echo b >> $dir/ran; touch $dir/b-runs; until [ -e $dir/go.b ]; do sleep 0.02; done" &
	b=$!
	wait_until 10 test -e "$dir/b-runs"
	reap "$holder"
	assert_equal "$status" 77
	kill -CONT "$a"
	reap "$script"
	assert_equal "$status" 75
	grep -q "superseded by $(hostname):$b (a newer run" "$dir/a.out"
	touch "$dir/go.b"
	reap "$b"
	assert_equal "$status" 0
	# Continued once the newer run is done and the lock is free: superseded all the same.
	rm -f "$dir/ready.job"
	hold job --queue latest
	stopped_in_line
	"$RR" --queue latest job -c "echo c >> $dir/ran" &
	b=$!
	wait_until 10 queued 1
	touch "$dir/go.job"
	reap_ok "$holder" "$b"
	kill -CONT "$a"
	reap "$script"
	assert_equal "$status" 75
	grep -q "superseded by $(hostname):$b (a newer run" "$dir/a.out"
	assert_equal "$(ran)" "b c"
}

@test "--queue latest: a run stopped before its first attempt ran comes back new, not superseded by an older one" {
	hold job --queue latest
	# Its attempt waits in the server (a pause of writes) while it is stopped: it never took a
	# place, and the older holder is the newest on record.
	rcli client pause 20000 WRITE >/dev/null
	rm -f "$dir/rr"
	as_job "$dir/a.out" --queue latest job -c "echo a >> $dir/ran"
	local script=$! a
	wait_until 10 test -s "$dir/rr"
	a=$(cat "$dir/rr")
	wait_until 10 eval '[[ $(rcli client list) == *" flags=b"* ]]'
	kill -TSTP "$a"
	wait_until 10 stopped "$a"
	rcli client unpause >/dev/null
	continued_runs
}

@test "--queue latest: a waiter whose arrival a failover lost is not superseded by an older one's" {
	hold job --queue latest
	"$RR" --queue latest job -c "echo b >> $dir/ran" &
	local b=$!
	wait_until 10 queued 1
	# What a new master may have: the record of an older run, the waiter's own lost.
	rcli hset '{job}:broken' :newest \
		"1767225600000000 00000000-0000-4000-8000-000000000000:otherhost:4242:latest" >/dev/null
	touch "$dir/go.job"
	reap_ok "$holder" "$b"
	assert_equal "$(ran)" "b"
	# And it wrote its own again.
	[[ $(rcli hget '{job}:broken' :newest) == *":$(hostname):$b:latest" ]]
}

@test "--queue latest: a waiter stopped (SIGTSTP) and continued with nobody newer meanwhile runs" {
	hold job --queue latest
	stopped_in_line
	continued_runs
}

@test "--queue latest with -q: a superseded waiter exits with the conflict status, saying nothing" {
	hold job --queue latest
	"$RR" -q --queue latest job -c "echo older >> $dir/ran" 2>"$dir/older.err" &
	older=$!
	wait_until 10 queued 1
	"$RR" --queue latest job -c "echo newer >> $dir/ran" &
	newer=$!
	reap "$older"
	assert_equal "$status" 75
	run cat "$dir/older.err"
	assert_output ""
	touch "$dir/go.job"
	reap_ok "$holder" "$newer"
	assert_equal "$(ran)" "newer"
}

@test "--queue latest: a superseded waiter paused past its place still learns it, and never runs" {
	hold job --queue latest -t 1s
	"$RR" --queue latest job -c "echo older >> $dir/ran" 2>"$dir/older.err" &
	older=$!
	wait_until 10 queued 1
	local token ends
	token=$(rcli zrange '{job}:queue' 0 0)
	kill -STOP "$older"
	# Its BLPOP times out on the server, and the attempt queued behind it runs (it keeps its
	# place): stopped, it sends no other.
	wait_until 10 eval '[[ -z $(blocked_ids main) ]]'
	"$RR" --queue latest job -c "echo newer >> $dir/ran" &
	newer=$!
	wait_until 10 eval '[[ $(rcli zrange "{job}:queue" 0 -1) != *"$token"* ]] && queued 1'
	# The older one's place would have ended by now (the lease it waited out, 2% and a second).
	ends=$(($(server_ms main) + 2100))
	wait_until 10 eval '(($(server_ms main) > ends))'
	kill -CONT "$older"
	reap "$older"
	assert_equal "$status" 75
	grep -q "superseded by $(hostname):$newer" "$dir/older.err"
	touch "$dir/go.job"
	reap "$holder"
	reap "$newer"
	assert_equal "$status" 0
	assert_equal "$(ran)" "newer"
}

@test "--cancel-running: a canceller that leaves the line takes its cancel back" {
	"$RR" -v -t 30s --queue latest --cancel-running job \
		-c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.02; done" 2>"$dir/holder.err" &
	holder=$!
	wait_until 10 test -s "$dir/ready"
	# One gives up at the end of its -w, one is stopped by a signal.
	run "$RR" -w 0.2 --queue latest --cancel-running job -- touch "$dir/ran"
	assert_equal "$status" 75
	"$RR" --queue latest --cancel-running job -- touch "$dir/ran" &
	termed=$!
	wait_until 10 queued 1
	kill -TERM "$termed"
	reap "$termed"
	assert_equal "$status" 143
	# Two of the holder's renewals later (once a second), it still runs.
	holder_runs_on 2
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
	! grep -q cancelled "$dir/holder.err"
	[ ! -e "$dir/ran" ]
}

@test "--queue latest: waiters killed and signalled in the middle of the line leave it right" {
	hold job --queue latest -t 2s
	"$RR" --queue latest job -c "echo killed >> $dir/ran" &
	killed=$!
	wait_until 10 queued 1
	kill -KILL "$killed"
	reap "$killed"
	# A newcomer takes the dead waiter's place (nobody is told), and one signalled leaves.
	"$RR" --queue latest job -c "echo termed >> $dir/ran" &
	termed=$!
	wait_until 10 queued 1
	kill -TERM "$termed"
	reap "$termed"
	assert_equal "$status" 143
	wait_until 10 queued 0
	"$RR" --queue latest job -c "echo last >> $dir/ran" &
	last=$!
	wait_until 10 queued 1
	touch "$dir/go.job"
	reap "$holder"
	reap "$last"
	assert_equal "$status" 0
	assert_equal "$(ran)" "last"
	assert_equal "$(rcli zcard '{job}:waiting')" 0
	assert_equal "$(rcli zcard '{job}:queue')" 0
}

@test "--cancel-running: the newest stops a holder that agreed, even one that ignores SIGTERM, and runs next" {
	"$RR" -t 1.5s --grace 0.5s --queue latest --cancel-running job \
		-c "trap '' TERM; echo ready > $dir/ready; while :; do sleep 0.05; done" 2>"$dir/holder.err" &
	holder=$!
	wait_until 10 test -s "$dir/ready"
	run --separate-stderr "$RR" --queue latest --cancel-running job -c "echo newcomer >> $dir/ran"
	assert_equal "$status" 0
	newcomer_ran_after=$(ran)
	assert_equal "$newcomer_ran_after" "newcomer"
	reap "$holder"
	assert_equal "$status" 77
	grep -q "redlock-run: job: cancelled by $(hostname):[0-9]* (a newer run with --cancel-running); stopping the command" "$dir/holder.err"
	assert_equal "$(keys_but_fences | grep -v ':broken$')" ""
}

@test "--cancel-running: while the holder stops, --status and --list say who cancelled it" {
	"$RR" -t 30s --grace 30s --queue latest --cancel-running job \
		-c "trap 'echo > $dir/term' TERM; echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" 2>/dev/null &
	holder=$!
	wait_until 10 test -s "$dir/ready"
	"$RR" --queue latest --cancel-running job -c "echo newcomer >> $dir/ran" &
	newcomer=$!
	wait_until 15 test -e "$dir/term"
	run -75 "$RR" --status job
	assert_line --index 0 --regexp "; cancelled by $(hostname):$newcomer \(--cancel-running\): its command is being stopped, or will be at its next renewal$"
	run -75 "$RR" --status --json job
	python3 -c 'import json, sys
o = json.loads(sys.argv[1])
assert o["cancelled_by"] == sys.argv[2] and o["nodes"][0]["cancelled_by"] == sys.argv[2], o' \
		"$output" "$(hostname):$newcomer"
	run -0 "$RR" --list
	assert_line --index 1 --regexp "^job +latest +$(hostname):$holder \(cancelled\) "
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 77
	reap "$newcomer"
	assert_equal "$status" 0
	# Free, or held by a run nobody cancelled: null.
	run -0 "$RR" --status --json job
	python3 -c 'import json, sys; o = json.loads(sys.argv[1]); assert o["cancelled_by"] is None, o' "$output"
}

@test "--cancel-running: a holder with a long lease learns it within a second or so, not a third of its TTL" {
	"$RR" -t 60s --queue latest --cancel-running job \
		-c "echo ready > $dir/ready; while :; do sleep 0.05; done" 2>"$dir/holder.err" &
	holder=$!
	wait_until 10 test -s "$dir/ready"
	"$RR" --queue latest --cancel-running job -c "echo newcomer >> $dir/ran" &
	newcomer=$!
	# Its renewals come every 20s; a run that may be cancelled looks once a second.
	wait_until 15 gone "$holder"
	reap "$holder"
	assert_equal "$status" 77
	reap "$newcomer"
	assert_equal "$status" 0
	assert_equal "$(ran)" "newcomer"
}

@test "--cancel-running stops only a run that agreed to it" {
	"$RR" -v -t 1s --queue latest job \
		-c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.02; done" 2>"$dir/holder.err" &
	holder=$!
	wait_until 10 test -s "$dir/ready"
	"$RR" --queue latest --cancel-running job -c "echo newcomer >> $dir/ran" &
	newcomer=$!
	wait_until 10 queued 1
	# Three of the holder's renewals after the newcomer came, it still runs.
	holder_runs_on 3
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
	reap "$newcomer"
	assert_equal "$status" 0
	! grep -q cancelled "$dir/holder.err"
}

@test "every run on one KEY agrees on the discipline: a mismatch is 69, naming both" {
	hold job --queue latest
	run --separate-stderr "$RR" job -- touch "$dir/ran"
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: job is used with --queue latest by $(hostname):$holder, and this run has --queue fifo (the default): every run on one KEY must use the same discipline"
	run --separate-stderr "$RR" -s job -- touch "$dir/ran"
	assert_equal "$status" 69
	# Options written after KEY are COMMAND's: the refusal says so.
	run --separate-stderr "$RR" job --queue latest -- touch "$dir/ran"
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: job is used with --queue latest by $(hostname):$holder, and this run has --queue fifo (the default): every run on one KEY must use the same discipline (options go before KEY: '--queue' was taken for COMMAND)"
	# Not where something else stands in the way.
	run --separate-stderr env REDLOCK_URL="unix://$dir/none.sock" "$RR" job --queue latest -- true
	assert_equal "$status" 69
	[[ $stderr == *"cannot connect to"* && $stderr != *"options go before"* ]]
	touch "$dir/go.job"
	reap "$holder"
	hold other
	run --separate-stderr "$RR" -n --queue latest other -- touch "$dir/ran"
	assert_equal "$status" 69
	[[ $stderr == *"other is used with --queue fifo by $(hostname):$holder, and this run has --queue latest"* ]]
	touch "$dir/go.other"
	reap "$holder"
	[ ! -e "$dir/ran" ]
}

@test "the disciplines' usage errors touch nothing" {
	for args in "--queue lifo" "--cancel-running" "--queue fifo --cancel-running" \
		"--queue latest -s" "--queue latest -l 2" \
		"-r redis://127.0.0.1:1 -r redis://127.0.0.1:2 -r redis://127.0.0.1:3 --queue fifo"; do
		# shellcheck disable=SC2086 # the options, word by word
		run --separate-stderr "$RR" $args job -- touch "$dir/ran"
		assert_equal "$status" 64
	done
	[ ! -e "$dir/ran" ]
	assert_equal "$(rcli dbsize)" 0
}

@test "--status and --list show the discipline and the line in arrival order, with how long each waited" {
	hold job
	"$RR" job -- true &
	w1=$!
	wait_until 10 queued 1
	"$RR" -s job -- true &
	w2=$!
	wait_until 10 queued 2
	"$RR" job -- true &
	w3=$!
	wait_until 10 queued 3
	run --separate-stderr "$RR" --status job
	assert_equal "$status" 75
	h=$(hostname)
	[[ ${lines[1]} =~ ^"  3 waiting (--queue fifo), in arrival order: $h:$w1 for "[0-9.ms]+", $h:$w2 (shared) for "[0-9.ms]+", $h:$w3 for "[0-9.ms]+$ ]]
	run --separate-stderr "$RR" --list --json 'jo*'
	assert_success
	python3 -c '
import json, sys
lock = json.loads(sys.argv[1])
assert lock["queue"] == "fifo" and lock["in_order"] and lock["waiting"] == 3, lock
pids = [w["pid"] for w in lock["waiters"]]
assert pids == [int(p) for p in sys.argv[2:]], pids
waited = [w["waited_ms"] for w in lock["waiters"]]
assert waited == sorted(waited, reverse=True) and waited[-1] >= 0, waited
' "$output" "$w1" "$w2" "$w3"
	touch "$dir/go.job"
	reap_ok "$holder" "$w1" "$w2" "$w3"
	hold deploy --queue latest
	"$RR" --queue latest deploy -- true &
	w=$!
	wait_until 10 queued 1 deploy
	run --separate-stderr "$RR" --status deploy
	[[ ${lines[1]} == "  1 waiting (--queue latest), in arrival order: $h:$w for "* ]]
	run --separate-stderr "$RR" --list 'dep*'
	assert_success
	[[ ${lines[1]} =~ ^deploy\ +latest\ +$h:$holder\  ]]
	touch "$dir/go.deploy"
	reap "$holder"
	reap "$w"
	assert_equal "$status" 0
}
