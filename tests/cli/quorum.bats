#!/usr/bin/env bats
# One lock over a quorum of independent servers (issue 9, DESIGN §3b): taken exactly when a
# majority grants it, nothing left behind when it does not, a minority down or frozen changes
# nothing, a majority lost stops the command before the lease can lapse on a quorum, and the
# fence grows strictly while single nodes restart empty. Five real redis-servers serve every
# scenario; those that stop, freeze or restart nodes bring them back in teardown.

bats_require_minimum_version 1.5.0
# The time limit is read before a test starts: set inside one, it would not count.
BATS_TEST_TIMEOUT=90
load helpers

setup_file() {
	quorum_start 5
	wait_until 5 nodes_old 1 1 2 3 4 5
}
teardown_file() { quorum_stop; }
teardown() {
	deathwatch_stop
	relay_stop
	[ -z "${relay1:-}" ] || { kill "$relay1" 2>/dev/null || true; relay1=; }
	# A password a scenario set goes, whatever became of it: the next one's setup needs none.
	if [[ -e $dir/requirepass ]]; then
		[[ ! -e $dir/full ]] || { kill "$(cat "$dir/full")" && wait "$(cat "$dir/full")"; } || true
		wait_until 5 eval "rcli_on $(cat "$dir/requirepass") -a s3cret --no-auth-warning \
			config set maxclients 10000 | grep -q OK"
		rcli_on "$(cat "$dir/requirepass")" -a s3cret --no-auth-warning \
			config set requirepass "" >/dev/null
	fi
}

setup() {
	local i
	for i in 1 2 3 4 5; do
		node_up "$i"
		rcli_on "q$i" flushall >/dev/null
		rcli_on "q$i" config set maxmemory 0 >/dev/null
	done
	quorum_use 1 2 3
	dir=$BATS_TEST_TMPDIR
}

# nodes_old SECONDS I...: nodes qI have run that long at least. Younger, a node that restarted
# may have lost a key a holder counts on: its grant counts only if no node is held by another,
# down or frozen (see "young" in acquire.c), and a new lease as long needs it older.
nodes_old() {
	local seconds=$1 i names=()
	shift
	for i in "$@"; do
		names+=("q$i")
	done
	up_for "$seconds" "${names[@]}"
}

# script_calls NAME: how many scripts server NAME ran since its statistics were reset.
script_calls() { calls_on "$1" eval evalsha; }

# Another holder's value, as redlock-run writes them (a value of another shape is not a lock).
OTHER=00000000-0000-4000-8000-000000000000:otherhost:4242

# Nothing of ours on node I but fence counters: no lock, no wake list, no waiters.
clean_on() {
	! rcli_on "q$1" --scan | grep -E '^(job|\{job\}:wake|\{job\}:waiting)$'
}

# matrix N: for every subset of the first N nodes pre-held by someone else, -n takes the lock
# exactly when the free nodes form a quorum, and a refused attempt leaves nothing behind.
matrix() {
	local n=$1 quorum=$(($1 / 2 + 1)) mask i free expected nodes=()
	for ((i = 1; i <= n; i++)); do
		nodes+=("$i")
	done
	quorum_use "${nodes[@]}"
	for ((mask = 0; mask < 1 << n; mask++)); do
		free=0
		for ((i = 1; i <= n; i++)); do
			rcli_on "q$i" flushall >/dev/null
			if ((mask >> (i - 1) & 1)); then
				rcli_on "q$i" set job "$OTHER" px 60000 >/dev/null
			else
				free=$((free + 1))
			fi
		done
		expected=75
		((free >= quorum)) && expected=0
		run "$RR" -n -t 1s job -- true
		[ "$status" = "$expected" ] || {
			echo "held on mask $mask: status $status, expected $expected" >&2
			return 1
		}
		for ((i = 1; i <= n; i++)); do
			if ((mask >> (i - 1) & 1)); then
				[[ $(rcli_on "q$i" get job) == "$OTHER" ]]
			else
				clean_on "$i"
			fi
		done
	done
}

@test "3 servers: every subset held by another; acquired exactly when the free ones are a quorum" {
	matrix 3
}

@test "5 servers: every subset held by another; acquired exactly when the free ones are a quorum" {
	matrix 5
}

@test "-r given three times is a quorum as REDLOCK_URL is; the same server twice is refused" {
	unset REDLOCK_URL
	rcli_on q1 set job "$OTHER" px 60000 >/dev/null
	rcli_on q2 set job "$OTHER" px 60000 >/dev/null
	run "$RR" -n -r "$(node_url 1)" -r "$(node_url 2)" -r "$(node_url 3)" job -- true
	assert_equal "$status" 75
	run "$RR" -n -r "$(node_url 3)" -r "$(node_url 4)" -r "$(node_url 5)" job -- true
	assert_success
	run "$RR" -n -r "$(node_url 3)" -r "$(node_url 3)" job -- true
	assert_equal "$status" 64
	assert_output --partial "the same Redis server twice"
	# One server under two names is one server all the same: its run id says so.
	run --separate-stderr "$RR" -n -r "$(node_url 3)" -r "redis://localhost:$(redis_port q3)" \
		-r "$(node_url 4)" job -- echo never
	assert_equal "$status" 69
	assert_output ""
	[[ $stderr == *"are the same Redis server (run id "*"): a quorum needs independent ones" ]]
	[[ $stderr == *"127.0.0.1:$(redis_port q3)"* && $stderr == *"localhost:$(redis_port q3)"* ]]
	clean_on 3
}

@test "one server of 3 refusing from the start: taken, renewed and released on the other two" {
	redis_stop q3
	run "$RR" -t 300ms job -c 'sleep 0.5; echo $REDLOCK_FENCE'
	assert_success
	is_fence "$output"
	clean_on 1
	clean_on 2
}

@test "one server of 3 that refuses the run's password: taken on the others, the refusal said without -v" {
	# (Old enough that their grants count without the third: see nodes_old.)
	wait_until 5 nodes_old 2 1 2
	echo q3 >"$dir/requirepass"
	rcli_on q3 config set requirepass s3cret >/dev/null
	run -0 --separate-stderr "$RR" -t 1s -r "$(node_url 1)" -r "$(node_url 2)" \
		-r "redis://:wrong@127.0.0.1:$(redis_port q3)" job -- echo ran
	assert_output ran
	# One line, without -v (the server's own words differ between Redis and Valkey).
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "redlock-run: authentication refused by 127.0.0.1:$(redis_port q3): "*" (the lock is held on a quorum without it; it refuses every run until that is mended)" ]]
	# A server that is full says no for now, not for good: nothing said without -v. (Its
	# -ERR comes ahead of any answer, and is read as the answer to AUTH.)
	rcli_on q3 -a s3cret --no-auth-warning config set maxclients 1 >/dev/null
	# The one client it takes: a connection held open (its pid for teardown).
	python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(60)' "$(redis_port q3)" &
	echo $! >"$dir/full"
	full() { [[ $(rcli_on q3 -a s3cret --no-auth-warning ping 2>&1) == *"max number of clients"* ]]; }
	wait_until 5 full
	run -0 --separate-stderr "$RR" -t 1s -r "$(node_url 1)" -r "$(node_url 2)" \
		-r "redis://:s3cret@127.0.0.1:$(redis_port q3)" job -- echo ran
	assert_output ran
	assert_equal "$stderr" ""
}

@test "one server of 3 frozen from the start: no slower than one request deadline, and it works" {
	wait_until 5 nodes_old 1 1 2
	node_freeze 3
	start=$(now_ms)
	run "$RR" -t 1s job -- true
	elapsed=$(($(now_ms) - start))
	assert_success
	((elapsed < 5000))
	run "$RR" -t 300ms job -c 'sleep 0.5; echo ran'
	assert_success
	assert_output ran
	clean_on 1
	clean_on 2
}

@test "nodes split with another holder while one is frozen: tried again soon, not after its timeout" {
	wait_until 5 nodes_old 2 1 2 3
	# Another run holds q2 for 800ms more, q3 is frozen: a round gets q1 alone. Waiting for q3
	# until the request's timeout would outlast -w; cut short, the round is a split, tried
	# again after a random pause until q2 is free.
	rcli_on q2 set job "$OTHER" px 800 >/dev/null
	node_freeze 3
	run "$RR" -w 2.5s -t 2s job -- echo ran
	node_thaw 3
	assert_success
	assert_output ran
}

@test "a far server beside a stale key on another: split rounds wait longer for it; taken and released there" {
	wait_until 5 nodes_old 2 1 2 3
	relay_start q3
	relay_set q3 "delay 40"
	REDLOCK_URL="$(node_url 1) $(node_url 2) unix://$(relay_sock q3)"
	# A key another run left on q2 (its give-back lost): q1 and the far q3 make a quorum,
	# once a round waits long enough for q3 (a wait too short for it, every round, would
	# split them until -w ran out).
	rcli_on q2 set job "$OTHER" px 20000 >/dev/null
	run --separate-stderr "$RR" -w 5s -t 2s job -- echo ran
	relay_stop
	assert_success
	assert_output ran
	# Released there too: q1 and q2 answered first, but q2 never held it.
	assert_equal "$stderr" ""
}

@test "one server of 3 down, one slow, the lock held on the third: a waiter waits, never 69" {
	wait_until 5 nodes_old 2 1 2
	"$RR" -t 2s job -c "echo started > $dir/started; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -s "$dir/started"
	wait_until 5 held_on q3 job
	# The waiter hears "held" from q1 and "refused" from q3 before q2 answers: no quorum can
	# grant it now, and q3 never answered this run, but the lock is seen held (and q2 may
	# still answer): it waits in line for the holder's lease, then, once q2 is found silent
	# (--connect-timeout), rides that out.
	redis_stop q3
	node_freeze 2
	rcli_on q1 config resetstat >/dev/null
	"$RR" -v -t 2s job -- echo second >"$dir/out" 2>"$dir/err" &
	waiter=$!
	wait_until 10 grep -q "no quorum" "$dir/err"
	grep -q "waiting for job (held by" "$dir/err"
	# Meanwhile it looked again once a lease or so: never every few ms.
	local looks
	looks=$(calls_on q1 zadd)
	((looks <= 10))
	node_thaw 2
	touch "$dir/go"
	reap "$holder"
	reap "$waiter"
	cat "$dir/err" >&2
	assert_equal "$status" 0
	run cat "$dir/out"
	assert_output second
}

@test "one server of 3 down and one out of memory: a wait without -w ends with 69 after a minute" {
	# The one that refuses answers at once, but no sooner for the waiting: nothing changes
	# until someone mends them, and the outage is given its minute only.
	rcli_on q2 config set maxmemory-policy noeviction >/dev/null
	rcli_on q2 config set maxmemory 1 >/dev/null
	redis_stop q3
	run --separate-stderr "$RR" job -- echo never
	assert_equal "$status" 69
	assert_output ""
	[[ $stderr == "redlock-run: gave up waiting after 1m"*" without an answer that counts: no quorum (it takes 2 of 3 servers): "*"OOM"* ]]
}

@test "one server of 3 down and the lock held: -n is busy (75), a waiter waits in line, never 69" {
	wait_until 5 nodes_old 2 1 2
	redis_stop q3
	"$RR" -v -t 2s job -c "echo started > $dir/started; until [ -e $dir/go ]; do sleep 0.05; done" \
		2>"$dir/holder.err" &
	holder=$!
	wait_until 5 test -s "$dir/started"
	# The servers that answered would make a quorum, but for the holder: busy, in one round
	# (the holder seen on one server, the other's answer is heard before it says so; or,
	# late, given back), not as a split tried again.
	rcli_on q1 config resetstat >/dev/null
	run -75 "$RR" -n job -- echo never
	(($(script_calls q1) <= 2))
	# So too when one of them is free (a holder seen on one, the other down, whose lock
	# may well be on both).
	rcli_on q2 set other "$OTHER" px 60000 >/dev/null
	run -75 "$RR" -n other -- echo never
	free_on q1 other # (what q1 granted, given back)
	"$RR" -v -t 2s job -- echo second >"$dir/out" 2>"$dir/err" &
	waiter=$!
	wait_until 10 grep -q "waiting for job" "$dir/err"
	# In line, it waits for the holder's lease: over two of the holder's renewals (a lease
	# of 2s, renewed every 0.67s), it looks again once or twice, never every few ms.
	rcli_on q1 config resetstat >/dev/null
	renewals() { grep -c "renewed job" "$dir/holder.err" || true; }
	local before
	before=$(renewals)
	renewed_twice() { (($(renewals) >= before + 2)); }
	wait_until 10 renewed_twice
	local looks
	looks=$(calls_on q1 zadd)
	((looks <= 3))
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
	reap "$waiter"
	cat "$dir/err" >&2
	assert_equal "$status" 0
	run ! grep -q "no quorum" "$dir/err"
	run cat "$dir/out"
	assert_output second
}

@test "one server of 3 down, two -n started together: never both busy while neither holds it" {
	wait_until 5 nodes_old 2 1 2
	redis_stop q3
	local round a b sa sb
	for round in $(seq 40); do
		"$RR" -v -t 2s -n "k$round" -- sleep 0.1 2>"$dir/a.err" &
		a=$!
		"$RR" -v -t 2s -n "k$round" -- sleep 0.1 2>"$dir/b.err" &
		b=$!
		sa=0 sb=0
		wait "$a" || sa=$?
		wait "$b" || sb=$?
		# Split between the two live servers, neither holds it: -n tries again, and one
		# of them gets it (or both do, one after the other, on a slow machine).
		[[ "$sa $sb" != "75 75" ]] || {
			echo "round $round: both busy" >&2
			cat "$dir/a.err" "$dir/b.err" >&2 # (what each saw, for the next to read)
			return 1
		}
	done
}

@test "-n: a grant that comes after another's key decided the round makes a split; a silent server, busy" {
	# The race of the scenario above, slowed down: through relays, q1 (held by another)
	# answers after 200ms and q2 (free: our grant) after 300ms, q3 is down. q1 and q3 decide
	# the round, and q2's grant, heard a moment longer, makes it a split: tried again.
	wait_until 5 nodes_old 2 1 2
	run -0 "$RR" -n job -- true # (the scripts known)
	rcli_on q1 set job "$OTHER" px 60000 >/dev/null
	redis_stop q3
	relay_start q1
	relay1=$relay
	relay_set q1 "delay 200"
	relay_start q2
	relay_set q2 "delay 300"
	rcli_on q1 config resetstat >/dev/null
	REDLOCK_URL="unix://$(relay_sock q1) unix://$(relay_sock q2) $(node_url 3)" \
		run -75 "$RR" -n -t 5s job -- echo never
	(($(script_calls q1) > 1))
	# A server that stays silent is not waited for: busy at once, as before.
	relay_set q2 blackhole
	rcli_on q1 config resetstat >/dev/null
	REDLOCK_URL="unix://$(relay_sock q1) unix://$(relay_sock q2) $(node_url 3)" \
		run -75 "$RR" -n -t 5s job -- echo never
	assert_equal "$(script_calls q1)" 1
}

@test "two servers of 3 refusing: 69 at once, naming both" {
	redis_stop q2
	redis_stop q3
	start=$(now_ms)
	run --separate-stderr "$RR" job -- echo never
	elapsed=$(($(now_ms) - start))
	assert_equal "$status" 69
	assert_output ""
	# not the minute an outage is ridden out: a sixth of it
	((elapsed < 10000))
	[[ $stderr == *"no quorum (it takes 2 of 3 servers)"*"127.0.0.1:$(redis_port q2)"*"127.0.0.1:$(redis_port q3)"* ]]
	clean_on 1
}

@test "one server of 3 frozen while the command runs: it runs on" {
	"$RR" -v -t 600ms job -c "echo started > $dir/started; sleep 1.5; echo done" \
		>"$dir/out" 2>"$dir/err" &
	holder=$!
	wait_until 5 test -s "$dir/started"
	# A node whose grant came after the quorum's may get the key only from a renewal.
	all_hold() { [[ $(on_nodes job 1 2 3) == 3 ]]; }
	wait_until 5 all_hold
	node_freeze 3
	reap "$holder"
	node_thaw 3
	cat "$dir/err"
	assert_equal "$status" 0
	run cat "$dir/out"
	assert_output done
	grep -q "renewing job: no reply from 127.0.0.1:$(redis_port q3) in time" "$dir/err"
}

@test "a release one holding server does not answer, while another never held it: no 76" {
	wait_until 5 nodes_old 2 1 2 3
	# A leftover of another holder's on q3: the lock is granted by q1 and q2 only.
	rcli_on q3 set job "$OTHER" px 60000 >/dev/null
	# q1 freezes as the command ends: the release hears "released" from q2 and "not ours"
	# from q3, which never held it, and nothing from q1, which still holds it.
	run --separate-stderr "$RR" -t 3s job -c "kill -STOP $(redis_pid q1)"
	node_thaw 1
	assert_equal "$status" 0
	# (After a line on the wait for servers younger than the lease, if they still were.)
	[[ ${stderr_lines[-1]} =~ ^"redlock-run: cannot release job: no quorum (it takes 2 of 3 servers): no reply from 127.0.0.1:$(redis_port q1) in time; 127.0.0.1:$(redis_port q3) did not hold it; it expires at the end of its lease, in about "[0-9.]+m?s$ ]]
	free_on q2 job
}

@test "two servers of 3 stop taking renewals: the command dies before the lease lapses on a quorum" {
	deathwatch_start
	"$RR" -v -t 1s job -c "echo \$\$ > $dir/pid; exec sleep 10" 2>"$dir/err" &
	holder=$!
	wait_until 5 grep -q 'renewed job' "$dir/err"
	watch_death "$(cat "$dir/pid")"
	# Renewals (writes) stop on q2 and q3, while their keys' expiry can still be read.
	rcli_on q2 client pause 10000 write >/dev/null
	rcli_on q3 client pause 10000 write >/dev/null
	e2=$(rcli_on q2 pexpiretime job)
	e3=$(rcli_on q3 pexpiretime job)
	wait_until 5 gone "$(cat "$dir/pid")"
	died=$(($(died_at "$(cat "$dir/pid")") / 1000))
	reap "$holder"
	rcli_on q2 client unpause >/dev/null
	rcli_on q3 client unpause >/dev/null
	assert_equal "$status" 76
	# the lease on the quorum ended when the later of the two stalled keys expired
	end=$((e2 > e3 ? e2 : e3))
	echo "died at $died, the quorum's lease ended at $end" >&2
	((died < end))
	grep -q 'lost the lock on job' "$dir/err"
}

@test "one server of 3 restarted empty while the command runs: it runs on and holds the key there again" {
	"$RR" -v -t 600ms job -c "echo started > $dir/started; sleep 2; echo done" \
		>"$dir/out" 2>"$dir/err" &
	holder=$!
	wait_until 5 test -s "$dir/started"
	wait_until 5 held_on q3 job
	redis_restart_empty q3
	wait_until 5 held_on q3 job
	reap "$holder"
	assert_equal "$status" 0
	run cat "$dir/out"
	assert_output done
	grep -q "127.0.0.1:$(redis_port q3) no longer has job; taking it there again" "$dir/err"
	clean_on 3
}

@test "a bare quorum's server restarted empty joins no second quorum while the holder's lease runs" {
	# q3 still holds an earlier holder's key: the holder gets q1 and q2 only (old enough to
	# count with another holder about).
	wait_until 5 nodes_old 3 1 2
	rcli_on q3 set job "$OTHER" px 60000 >/dev/null
	"$RR" -t 3s job -c "echo started > $dir/started; exec sleep 30" 2>"$dir/err" &
	holder=$!
	wait_until 5 test -s "$dir/started"
	# While the holder is paused (its watchdog cannot take anything back), q2 restarts
	# empty and the earlier key on q3 goes: q2 and q3 would be a quorum without the holder.
	kill -STOP "$holder"
	redis_restart_empty q2
	rcli_on q3 del job >/dev/null
	run --separate-stderr "$RR" -n -v job -- echo second
	kill -CONT "$holder"
	echo "$stderr" >&2
	assert_equal "$status" 75
	assert_output ""
	[[ $stderr == *"job is held by $(hostname):$holder; giving up"* ]]
	# Paused, the holder lets nobody else in; resumed, it takes q2 and q3 back.
	all_hold() { [[ $(on_nodes job 1 2 3) == 3 ]]; }
	wait_until 10 all_hold
	kill "$holder"
	reap "$holder"
}

@test "servers that came up empty and young let a new lock be taken when nobody else holds any" {
	redis_restart_empty q1
	redis_restart_empty q2
	redis_restart_empty q3
	run "$RR" -n -t 10s job -- echo taken
	assert_success
	assert_output taken
}

@test "a server restarted empty under the command is given the lock back well before the next renewal" {
	"$RR" -v -t 60s job -c "echo started > $dir/started; exec sleep 60" 2>"$dir/err" &
	holder=$!
	wait_until 5 test -s "$dir/started"
	wait_until 5 held_on q2 job
	redis_restart_empty q2
	# The first renewal is due 20s after the lock was taken; the holder notices the lost
	# connection, and asks q2 again every tenth of the lease until it answers.
	wait_until 15 held_on q2 job
	! grep -q 'renewed job' "$dir/err"
	kill "$holder"
	reap "$holder"
	grep -q "127.0.0.1:$(redis_port q2) no longer has job; taking it there again" "$dir/err"
}

@test "--status after a server restarted empty was given the lock back: the holder's fence, and when it took the lock" {
	"$RR" -v -t 60s job -c "echo \$REDLOCK_FENCE > $dir/fence; exec sleep 60" 2>"$dir/err" &
	holder=$!
	wait_until 5 test -s "$dir/fence"
	local started
	started=$(now_ms)
	wait_until 5 held_on q1 job
	redis_restart_empty q1
	wait_until 15 held_on q1 job
	# q1, the first URL, has the lock again, and a fence of its own clock, which the holder
	# never had.
	[[ $(rcli_on q1 get '{job}:fence') != "$(cat "$dir/fence")" ]]
	local since=$(($(now_ms) - started))
	run "$RR" --status --json job
	assert_equal "$status" 75
	fields=$(echo "$output" | python3 -c 'import json, sys
o = json.load(sys.stdin)
print(o["held"], o["fence"], o["held_ms"] >= int(sys.argv[1]))' "$since")
	assert_equal "$fields" "True $(cat "$dir/fence") True"
	run "$RR" --list
	assert_line --index 1 --regexp " $(cat "$dir/fence") +0$"
	kill "$holder"
	reap "$holder"
}

@test "a majority restarted empty under the command: 76, saying so; nobody takes it meanwhile" {
	"$RR" -t 30s job -c "date +%s%3N > $dir/started; exec sleep 60" 2>"$dir/err" &
	holder=$!
	wait_until 5 test -s "$dir/started"
	wait_until 5 held_on q3 job
	# Over two seconds later: an uptime then tells the restart came after. (It is whole
	# seconds from a start time in whole seconds: off by up to a second either way, which
	# redlock-run allows one of; a restart a second and a half after it was acquired, as this
	# test had it, said "expired or was deleted" now and then.)
	until (($(now_ms) - $(cat "$dir/started") > 2500)); do sleep 0.1; done
	kill -STOP "$holder"
	redis_restart_empty q1
	redis_restart_empty q2
	# q3 still has the holder's key: young q1 and q2 alone do not make a quorum.
	run -75 "$RR" -n job -- echo second
	kill -CONT "$holder"
	reap "$holder"
	cat "$dir/err" >&2
	assert_equal "$status" 76
	grep -Eq "lost the lock on job: 127.0.0.1:[0-9]+ lost its data: it restarted ([0-9.]+m?s|less than 1s) ago, while the command ran \(restarted empty or flushed\)" "$dir/err"
}

@test "two servers of 3 restarted a moment apart under the command: each given it back, nobody else meanwhile" {
	"$RR" -v -t 10s job -c "echo started > $dir/started
		until [ -e $dir/go ]; do sleep 0.05; done; echo done" >"$dir/out" 2>"$dir/err" &
	holder=$!
	wait_until 5 test -s "$dir/started"
	wait_until 5 held_on q2 job
	# q2 goes down, and q1 comes back empty before it: q1 is given the lock back while q2 is
	# still down.
	redis_stop q2
	redis_restart_empty q1
	wait_until 5 held_on q1 job
	# Only q3 kept the key all along, but q1 is young and q2 down: nobody else has a quorum.
	run -75 "$RR" -n -t 10s job -- echo second
	assert_output ""
	redis_restart_empty q2
	wait_until 10 held_on q2 job
	touch "$dir/go"
	reap "$holder"
	cat "$dir/err" >&2
	assert_equal "$status" 0
	run cat "$dir/out"
	assert_output done
	local q
	for q in q1 q2; do
		grep -q "127.0.0.1:$(redis_port $q) no longer has job; taking it there again" "$dir/err"
	done
}

@test "a waiter one of whose servers restarted takes the lock at the release, young servers or not" {
	# q1 is young through the holder's lease; q3 restarts under the waiter, whose connection
	# to it then owes it an answer it no longer wants (an outside trial: the release found
	# q3 gone there, so young q1 could not count, and the waiter waited out q1's youth).
	wait_until 5 nodes_old 2 2 3
	redis_restart_empty q1
	"$RR" -t 10s job -c "echo started > $dir/started
		until [ -e $dir/go ]; do sleep 0.05; done" 2>"$dir/h.err" &
	holder=$!
	wait_until 5 test -s "$dir/started"
	# Its command says how long q1 has run by then.
	"$RR" -v -t 10s job -c "redis-cli -s $(redis_sock q1) info server |
		sed -n 's/^uptime_in_seconds:\([0-9]*\).*/\1/p'" >"$dir/out" 2>"$dir/w.err" &
	local waiter=$!
	in_line() { [[ $(rcli_on q2 zcard '{job}:waiting') == 1 ]]; }
	wait_until 5 in_line
	redis_restart_empty q3
	wait_until 5 held_on q3 job
	touch "$dir/go"
	reap "$waiter"
	cat "$dir/w.err" >&2
	assert_equal "$status" 0
	# Nobody else holds it anywhere once the holder let go: the young servers count, and q1
	# is not waited for until it is a lease old.
	echo "q1 had run $(cat "$dir/out")s" >&2
	(($(cat "$dir/out") < 10))
	reap "$holder"
}

@test "a young server, an old one and one down: the wait for the young one is no busy loop" {
	wait_until 5 nodes_old 3 2
	redis_restart_empty q1 # young for the 3s lease below
	redis_stop q3
	rcli_on q2 config resetstat >/dev/null
	run -75 --separate-stderr "$RR" -w 1500ms -t 3s job -- echo never
	# Said once, without -v: a wait of a lease that nothing else would explain.
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock-run: 127.0.0.1:$(redis_port q1) restarted .* ago, less than a lease ago: it counts towards a quorum in .*; waiting for that$"
	calls=$(script_calls q2)
	echo "q2 ran $calls scripts in 1.5s" >&2
	((calls < 20))
	# -n: busy (nobody may hold it), and said once too, or a cron job skips in silence.
	run -75 --separate-stderr "$RR" -n -t 30s job -- echo never
	assert_equal "${#stderr_lines[@]}" 1
	# (Under a 30s lease, q2 is young too: either may be named.)
	assert_regex "$stderr" "^redlock-run: 127.0.0.1:[0-9]+ restarted .* ago, less than a lease ago: it counts towards a quorum in .*; not waiting for that \(-n\)$"
}

@test "a waiter on 3 servers is woken by the release, not by the end of the lease; -w ends a wait" {
	"$RR" -t 30s job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.02; done
		date +%s%6N > $dir/a-end" &
	a=$!
	wait_until 5 test -s "$dir/ready"
	run "$RR" -w 200ms job -- true
	assert_equal "$status" 75
	"$RR" job -c "date +%s%6N > $dir/b-start" &
	b=$!
	in_line() { [[ $(rcli_on q1 zcard '{job}:waiting') == 1 && $(rcli_on q2 zcard '{job}:waiting') == 1 ]]; }
	wait_until 5 in_line
	touch "$dir/go"
	reap "$b"
	assert_equal "$status" 0
	wait "$a"
	gap=$(($(cat "$dir/b-start") - $(cat "$dir/a-end")))
	echo "handoff took ${gap}us" >&2
	# Woken by the release, not by the end of the 30s lease it waited on: a third of it.
	((gap > 0 && gap < 10000000))
	# (A wake-up that a release pushed as the next holder was leaving the line there lasts
	# its second.)
	for i in 1 2 3; do wait_until 3 clean_on "$i"; done
}

@test "REDLOCK_FENCE grows strictly over 100 acquisitions while single servers restart empty" {
	for i in $(seq 100); do
		((i % 10 == 5)) && redis_restart_empty "q$((RANDOM % 3 + 1))"
		"$RR" -t 1s job -c "echo \$REDLOCK_FENCE >> $dir/fences"
	done
	run awk 'NR > 1 && $1 <= last { print "not growing at line " NR ": " last " then " $1 }
		{ last = $1 } END { print NR " fences" }' "$dir/fences"
	assert_output "100 fences"
}

@test "8 contenders x 25 runs on 3 servers, holders killed, a server frozen: no overlap, every run ends" {
	contender() {
		local r s
		for r in $(seq 25); do
			s=0
			"$RR" -t 1s job -c "echo \$PPID > $dir/holder; echo start \$\$ \$(date +%s%6N) >> $dir/log;
				sleep 0.01; echo end \$\$ \$(date +%s%6N) >> $dir/log" || s=$?
			echo "$s" >>"$dir/statuses"
		done
	}
	for c in $(seq 8); do
		contender &
		pids+=("$!")
	done
	# Three holders die with SIGKILL along the way; a server freezes for a second.
	for k in 1 2 3; do
		wait_until 10 test -s "$dir/holder"
		sleep 0.3
		kill -KILL "$(cat "$dir/holder")" 2>/dev/null || true
		((k == 2)) && { node_freeze $((RANDOM % 3 + 1)); sleep 1; for i in 1 2 3; do node_thaw "$i"; done; }
	done
	for p in "${pids[@]}"; do
		wait "$p"
	done
	run wc -l <"$dir/statuses"
	assert_output 200
	run grep -Evc '^(0|137)$' "$dir/statuses"
	assert_output 0
	# No two sections overlap: each start comes after the previous section's end; one that
	# was killed (no end) is given 50ms, five times what it would have taken.
	run awk '$1 == "start" { if (open && $3 < until) print "overlap: " $0; open = 1; pid = $2;
			until = $3 + 50000 }
		$1 == "end" && $2 == pid { open = 0; until = $3 }
		END { print "checked" }' "$dir/log"
	assert_output checked
}

@test "--status waiting for a frozen server: a holder that released meanwhile is not called gone" {
	wait_until 5 nodes_old 2 1 2
	node_freeze 3
	"$RR" -t 2s job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 10 test -s "$dir/ready"
	# (TYPE: the query script asks it, the holder's renewals do not.)
	queries() {
		rcli_on "q$1" info commandstats |
			awk -F '[:=,]' '/^cmdstat_type:/ { n += $3 } END { print n + 0 }'
	}
	local before1 before2
	before1=$(queries 1)
	before2=$(queries 2)
	"$RR" --connect-timeout 5s --status job >"$dir/status" 2>&1 &
	local status_run=$!
	# q1 and q2 answered (the lock held by the holder, running); q3 is waited for while the
	# holder finishes and releases.
	answered() { (($(queries 1) > before1 && $(queries 2) > before2)); }
	wait_until 10 answered
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
	reap "$status_run"
	node_thaw 3
	run cat "$dir/status"
	assert_line --index 0 --regexp "^job is held by $(hostname):$holder "
	refute_output --partial "no such process"
}

@test "--status and --json with a server down: each node's view and the quorum's" {
	redis_stop q3
	run "$RR" --status job
	assert_success
	assert_line --index 0 "job is free (never taken)"
	assert_line --index 3 --regexp "^  on 127.0.0.1:$(redis_port q3): no answer \(cannot connect to 127.0.0.1:[0-9]+: connection refused\)$"
	wait_until 5 nodes_old 3 1 2
	"$RR" -t 3s job -c "echo ready > $dir/ready; sleep 5" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	run "$RR" --status --json job
	assert_equal "$status" 75
	fields=$(echo "$output" | python3 -c 'import json, sys
o = json.load(sys.stdin)
print(o["held"], o["pid"], o["quorum"], len(o["nodes"]),
      [n["reachable"] for n in o["nodes"]], [n["held"] for n in o["nodes"][:2]],
      "connection refused" in o["nodes"][2]["error"])')
	assert_equal "$fields" "True $holder 2 3 [True, True, False] [True, True] True"
	kill "$holder"
	wait "$holder" || true
}

@test "--list with a lock it cannot tell (a server frozen): said, 69, never a list without it" {
	# Held by another host on q1 and q2, not on q3 (as after a restart), and q2 frozen: one
	# holding server answers, one free one, and one that may hold it does not.
	rcli_on q1 set job "$OTHER" px 60000 >/dev/null
	rcli_on q2 set job "$OTHER" px 60000 >/dev/null
	node_freeze 2
	run --separate-stderr "$RR" --connect-timeout 500ms --list
	assert_equal "$status" 69
	[[ $stderr == *"cannot tell whether job is held: it is on 1 of the 2 nodes that answered, and 1 did not"* ]]
	refute_output --partial "no locks held"
	run --separate-stderr "$RR" --connect-timeout 500ms --list --json
	assert_equal "$status" 69
	# Its object has every field all the same, null where the quorum cannot tell.
	undecided='import json, sys
o = json.loads(sys.stdin.readline())
assert o["key"] == "job" and o["held"] is None, o
assert o["mode"] is None and o["limit"] is None and o["holders"] is None, o'
	echo "$output" | python3 -c "$undecided"
	run -69 --separate-stderr "$RR" --connect-timeout 500ms --status --json job
	echo "$output" | python3 -c "$undecided"
	node_thaw 2
}

@test "--list with a server down lists from the others, and says why that one is not in it" {
	rcli_on q1 set job "$OTHER" px 60000 >/dev/null
	rcli_on q2 set job "$OTHER" px 60000 >/dev/null
	redis_stop q3
	run --separate-stderr "$RR" --list
	assert_success
	assert_line --index 1 --regexp "^job "
	assert_equal "$stderr" "redlock-run: cannot connect to 127.0.0.1:$(redis_port q3): connection refused (the locks are listed from the other servers)"
	run -0 --separate-stderr "$RR" --list --json
	echo "$output" | python3 -c 'import json, sys
o = json.loads(sys.stdin.readline())
assert o["held"] is True, o
assert o["nodes"][2]["error"] == "cannot connect to 127.0.0.1:'"$(redis_port q3)"': connection refused", o'
}

@test "--list with a server frozen waits for it once, not once a lock" {
	local k i
	for k in a b c d; do
		for i in 1 2 3; do
			rcli_on "q$i" set "job-$k" "$OTHER" px 60000 >/dev/null
		done
	done
	rcli_on q2 config resetstat >/dev/null
	node_freeze 2
	run --separate-stderr "$RR" --connect-timeout 500ms --list
	assert_success
	assert_equal "${#lines[@]}" 5
	[[ $stderr == "redlock-run: no reply from 127.0.0.1:$(redis_port q2) in time (the locks are listed from the other servers)" ]]
	# What went to q2 waits there: once it has thawed and served it all, it ran the SCAN
	# that found it silent, and no query of a lock.
	node_thaw 2
	served() { [[ $(rcli_on q2 info clients | sed -n 's/^connected_clients:\([0-9]*\).*/\1/p') == 1 ]]; }
	wait_until 10 served
	assert_equal "$(rcli_on q2 info commandstats |
		awk -F '[:=,]' '/^cmdstat_eval(sha)?:/ { n += $3 + $9 } END { print n + 0 }')" 0
	assert_equal "$(rcli_on q2 info commandstats | grep -c '^cmdstat_scan:calls=1,')" 1
}

@test "--break with 2 servers of 3 frozen: 69, and a warning that it may still land there" {
	wait_until 5 nodes_old 2 1 2 3
	"$RR" -t 30s job -c "echo ready > $dir/ready; exec sleep 60" 2>"$dir/holder.err" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	wait_until 5 held_on q3 job
	# (The servers have never run a break: what they find queued is the script itself, not
	# an EVALSHA they would refuse with NOSCRIPT.)
	rcli_on q2 script flush >/dev/null
	rcli_on q3 script flush >/dev/null
	node_freeze 2
	node_freeze 3
	run --separate-stderr "$RR" --connect-timeout 500ms --break --yes job
	assert_equal "$status" 69
	assert_line --index 0 --regexp "^on 127.0.0.1:$(redis_port q1): broke job, held by $(hostname):$holder "
	assert_line --index 1 "on 127.0.0.1:$(redis_port q2): cannot break job: no reply from 127.0.0.1:$(redis_port q2) in time (the break went out: it may still be carried out there)"
	[[ $stderr == *"no quorum (it takes 2 of 3 servers)"* ]]
	[[ $stderr == *"see --status job before breaking it again, which would end the next holder's lock"* ]]
	# And so it does, once they thaw: breaking again would have ended someone else's lock.
	node_thaw 2
	node_thaw 3
	wait_until 10 free_on q2 job
	wait_until 10 free_on q3 job
	reap "$holder"
	assert_equal "$status" 76
}

@test "a node whose grant came too late to count is raised to the fence all the same" {
	fence() { "$RR" -t 1s job -c "echo \$REDLOCK_FENCE >> $dir/fences"; }
	# Counters far ahead of the servers' clocks: fences grow from them alone, not from the
	# clock, which a server that lost its counter starts again from.
	for i in 1 2 3; do
		rcli_on "q$i" set '{job}:fence' 8000000000000000 >/dev/null
	done
	wait_until 5 nodes_old 1 1 2
	fence
	fence
	# q3 loses its data, then grants the next acquisition only after q1 and q2 decided it.
	redis_restart_empty q3
	node_freeze 3
	fence
	node_thaw 3
	# (What was sent there runs as q3 goes on. Unraised, q3 would count from its clock.)
	raised() { (($(rcli_on q3 get '{job}:fence') > 8000000000000000)); }
	wait_until 5 raised
	# Now q1 is away and q2 loses its data: q3 is the quorum's memory of the fence.
	redis_stop q1
	redis_restart_empty q2
	fence
	run awk 'NR > 1 && $1 <= last { print "not growing at line " NR ": " last " then " $1 }
		{ last = $1 } END { print NR " fences" }' "$dir/fences"
	assert_output "4 fences"
}
