#!/usr/bin/env bats
# Sentinel and replicas (issue 10, DESIGN §3b): the master is found through the Sentinels and
# followed through a failover, the lock kept when the promoted replica has it and lost (76,
# saying why) when it does not, a waiter follows the master and goes on waiting, and
# --wait-replicas makes grants and renewals count only once a replica has them. Every test
# gets a fresh master, replica and three Sentinels on loopback ports.

bats_require_minimum_version 1.5.0
BATS_TEST_TIMEOUT=90
load helpers

setup() {
	sentinel_start
	dir=$BATS_TEST_TMPDIR
}
teardown() {
	deathwatch_stop
	sentinel_stop
	quorum_stop
	redis_stop solo # (a scenario's own server, whatever became of the scenario)
}

# on_master ARGS...: redis-cli on the master the Sentinels name now.
on_master() { redis-cli -p "$(master_port)" "$@"; }

@test "found through the Sentinels, the first of them down" {
	redis_stop s1
	run -0 "$RR" -v job -- sh -c 'echo ran; redis-cli -p "$1" exists job' sh "$(redis_port m1)"
	assert_line ran
	assert_line 1
	assert_output --partial "acquired job"
	[[ $(rcli_on m1 exists job) == 0 ]]
	run -0 "$RR" --status job
	assert_line "  on 127.0.0.1:$(redis_port m1), the master"
	rcli_on m1 set job 00000000-0000-4000-8000-000000000000:someone-else:42 px 60000 >/dev/null
	run -75 "$RR" --status --json job
	assert_output --partial '"held": true'
	assert_output --partial "\"address\": \"127.0.0.1:$(redis_port m1)\""
}

@test "a master no Sentinel knows: 69, naming it; no Sentinel up: 69" {
	run -69 "$RR" -r "${REDLOCK_URL%/*}/nosuch" -n job -- true
	assert_output --partial "no Sentinel knows a master named 'nosuch'"
	redis_stop s1
	redis_stop s2
	redis_stop s3
	run -69 "$RR" -n job -- true
	assert_output --partial "no Sentinel of master 'main' could be asked"
	assert_output --partial "connection refused"
}

@test "out of file descriptors to ask the Sentinels or reach the master: 71, never 69" {
	under_fd_limits job -- true
	cat "$dir/limits"
	grep -q "^[0-9]*: 71 redlock-run: no Sentinel of master .*too many open files" "$dir/limits"
	grep -q "^[0-9]*: 71 redlock-run: the Sentinels name .*too many open files" "$dir/limits"
}

@test "a Sentinel URL with a db and credentials, alone and as a member of a quorum" {
	rcli_on m1 config set requirepass s3cret >/dev/null
	rcli_on m2 config set masterauth s3cret >/dev/null
	rcli_on m2 config set requirepass s3cret >/dev/null
	local url=${REDLOCK_URL/redis+sentinel:\/\//redis+sentinel://:s3cret@}/3
	run -0 "$RR" -r "$url" job -- redis-cli -p "$(redis_port m1)" -a s3cret --no-auth-warning -n 3 exists job
	assert_output 1
	run -69 "$RR" -r "${url/s3cret/wrong}" -n job -- true
	assert_output --partial "authentication refused"
	# Sentinels that need credentials of their own get them from the environment.
	local i
	for i in 1 2 3; do
		scli "s$i" acl setuser watcher on '>w4tch' '+@all' >/dev/null
		scli "s$i" acl setuser default off >/dev/null
	done
	run -69 "$RR" -r "$url" -n job -- true
	assert_output --partial "no Sentinel of master 'main' could be asked"
	REDLOCK_SENTINEL_USER=watcher REDLOCK_SENTINEL_PASSWORD=w4tch run -0 "$RR" -r "$url" job -- echo ran
	assert_output ran
	for i in 1 2 3; do
		redis-cli --user watcher --pass w4tch --no-auth-warning -p "$(redis_port "s$i")" \
			acl setuser default on >/dev/null
	done
	# One member of a quorum of three, beside two plain servers, one of them down: the
	# quorum needs the Sentinel's master.
	redis_start_tcp q1
	redis_start_tcp q2
	redis_stop q2
	# With q2 down, the others must have run for longer than the lease to count (see
	# "young" in acquire.c).
	m1_up_for_2s() {
		redis-cli -p "$(redis_port m1)" -a s3cret --no-auth-warning info server |
			grep -Eq '^uptime_in_seconds:([2-9]|[1-9][0-9]+)'
	}
	wait_until 5 up_for 2 q1
	wait_until 5 m1_up_for_2s
	run -0 --separate-stderr "$RR" -v -t 2s -r "$url" -r "redis://127.0.0.1:$(redis_port q1)" \
		-r "redis://127.0.0.1:$(redis_port q2)" job -- sh -c \
		'redis-cli -p "$1" -a s3cret --no-auth-warning -n 3 exists job; redis-cli -p "$2" exists job' \
		sh "$(redis_port m1)" "$(redis_port q1)"
	assert_output $'1\n1'
	[[ $stderr == *"granted by 2 of 3 nodes"* ]]
}

@test "a forced failover while the command runs: it runs on, and the lock is released on the new master" {
	local old
	old=$(master_port)
	"$RR" -v -t 6s job -- sh -c 'until [ -e "$1/go" ]; do sleep 0.05; done; exit 7' sh "$dir" \
		2>"$dir/err" &
	local pid=$!
	wait_until 5 held_on m1 job
	wait_until 5 held_on m2 job
	scli s1 sentinel failover "$SENTINEL_MASTER" >/dev/null
	wait_until 20 failover_done "$old"
	# The renewals (every 2s) go on on the new master.
	renewed_there() { on_master info commandstats | grep -Eq 'cmdstat_eval(sha)?:calls=[1-9]'; }
	wait_until 8 renewed_there || { cat "$dir/err"; on_master info commandstats; false; }
	# Said under -v, once.
	wait_until 5 grep -q "moved from 127.0.0.1:$old to 127.0.0.1:$(master_port) (a Sentinel failover); the new master has it" "$dir/err"
	touch "$dir/go"
	reap "$pid"
	cat "$dir/err"
	[ "$status" -eq 7 ]
	[[ $(grep -c "the new master has it" "$dir/err") == 1 ]]
	[[ $(on_master exists job) == 0 ]]
}

@test "every Sentinel frozen while the command runs: the master they named stays counted, renewals go on" {
	"$RR" -v -t 3s job -- sh -c 'until [ -e "$1/go" ]; do sleep 0.05; done; exit 7' sh "$dir" \
		2>"$dir/err" &
	local pid=$! i
	wait_until 5 held_on m1 job
	# Frozen before the first renewal: the watchdog's own connection to the master is yet to
	# be opened, and no Sentinel answers (they accept connections, and say nothing).
	for i in 1 2 3; do kill -STOP "$(redis_pid "s$i")"; done
	renewals() { grep -c "renewed job" "$dir/err" || true; }
	renewed_thrice() { (($(renewals) >= 3)); }
	wait_until 20 renewed_thrice || true
	for i in 1 2 3; do kill -CONT "$(redis_pid "s$i")"; done
	cat "$dir/err"
	renewed_thrice
	kill -0 "$pid"
	touch "$dir/go"
	reap "$pid"
	assert_equal "$status" 7
	[[ $(rcli_on m1 exists job) == 0 ]]
	# One Sentinel frozen, the one asked first, under a 1s lease (a renewal every 333ms): it
	# must not take the whole of a renewal's time, the others answer in the rest.
	rm -f "$dir/go" "$dir/err"
	"$RR" -v -t 1s job -- sh -c 'until [ -e "$1/go" ]; do sleep 0.05; done; exit 7' sh "$dir" \
		2>"$dir/err" &
	pid=$!
	wait_until 5 held_on m1 job
	kill -STOP "$(redis_pid s1)"
	renewed_eight() { (($(renewals) >= 8)); }
	wait_until 20 renewed_eight || true
	kill -CONT "$(redis_pid s1)"
	cat "$dir/err"
	renewed_eight
	kill -0 "$pid"
	touch "$dir/go"
	reap "$pid"
	assert_equal "$status" 7
}

@test "shared and --limit holders ride a forced failover and release on the new master" {
	local old pids=() i
	old=$(master_port)
	for i in 1 2; do
		"$RR" -v -s -t 6s shared -- sh -c 'until [ -e "$1/go" ]; do sleep 0.05; done' sh \
			"$dir" 2>>"$dir/err" &
		pids+=($!)
	done
	"$RR" -v -l 2 -t 6s sem -- sh -c 'until [ -e "$1/go" ]; do sleep 0.05; done' sh "$dir" \
		2>>"$dir/err" &
	pids+=($!)
	# Two holders and the tag that says the mode, on the replica too.
	replicated() { [[ $(rcli_on m2 zcard shared) == 3 && $(rcli_on m2 zcard sem) == 2 ]]; }
	wait_until 5 replicated
	scli s1 sentinel failover "$SENTINEL_MASTER" >/dev/null
	wait_until 20 failover_done "$old"
	run -75 "$RR" -n shared -- echo never
	run -0 "$RR" --status -s shared
	assert_line --index 0 --partial "shared is held shared by 2"
	# Every holder renews (every 2s) on the new master: its lease there ends more than a TTL
	# after now. Then it follows that master, and releases there. (Until then a holder may be
	# on the old one, which says it is a master for a while: its release would go there, and
	# its place would last out its lease on the new one.)
	local now time
	time=$(on_master time)
	now=$(($(sed -n 1p <<<"$time") * 1000 + $(sed -n 2p <<<"$time") / 1000))
	first_lease_end() { on_master zrangebyscore "$1" 0 +inf withscores limit 0 1 | sed -n 2p; }
	renewed_there() {
		(($(first_lease_end shared) > now + 6000 && $(first_lease_end sem) > now + 6000))
	}
	wait_until 8 renewed_there
	touch "$dir/go"
	for i in "${pids[@]}"; do wait "$i"; done
	[[ $(on_master exists shared sem) == 0 ]] || { cat "$dir/err"; false; }
}

# fail_over_without_key: job, held on m1 and copied to its replica m2, is lost there for sure
# (replication is asynchronous: the replica may miss the lock), then m1 dies and m2 is
# promoted; m1's port is left in $old.
fail_over_without_key() {
	old=$(redis_port m1)
	wait_until 5 held_on m2 job
	rcli_on m2 config set replica-read-only no >/dev/null
	rcli_on m2 del job >/dev/null
	redis_stop m1
	wait_until 30 failover_done "$old"
}

@test "a failover that loses the key: the command is stopped, 76, and says failover" {
	local old
	"$RR" -t 10s job -- sh -c 'touch "$1/started"; exec sleep 60' sh "$dir" 2>"$dir/err" &
	local pid=$!
	wait_until 5 test -e "$dir/started"
	fail_over_without_key
	wait_until 20 gone "$pid"
	reap "$pid"
	cat "$dir/err"
	[ "$status" -eq 76 ]
	grep -q "moved from 127.0.0.1:$old to 127.0.0.1:$(redis_port m2) (a Sentinel failover)" "$dir/err"
	grep -q "the new master does not have it" "$dir/err"
	run -0 "$RR" -n job -- echo second
	assert_output second
}

@test "a failover that loses the key, and the command ends before a renewal: 76, naming the failover" {
	local old
	"$RR" -t 120s job -- sh -c 'touch "$1/started"; until [ -e "$1/go" ]; do sleep 0.05; done' \
		sh "$dir" 2>"$dir/err" &
	local pid=$!
	wait_until 5 test -e "$dir/started"
	# The old master frozen, not killed: a closed connection would have the holder renew at
	# once. The next renewal is 40s away: the release is the first to find the key gone.
	old=$(redis_port m1)
	wait_until 5 held_on m2 job
	rcli_on m2 config set replica-read-only no >/dev/null
	rcli_on m2 del job >/dev/null
	kill -STOP "$(cat "$(redis_dir m1)/redis.pid")"
	wait_until 30 failover_done "$old"
	touch "$dir/go"
	reap "$pid"
	cat "$dir/err"
	assert_equal "$status" 76
	grep -q "lost the lock on job: it was gone when the command ended; the master of '$SENTINEL_MASTER' moved from 127.0.0.1:$old to 127.0.0.1:$(redis_port m2) (a Sentinel failover)" "$dir/err"
}

@test "a release sent just after the Sentinels moved to a master without the lock: 76, naming it" {
	local old
	old=$(redis_port m1)
	"$RR" -t 30s job -- sh -c 'touch "$1/job"; until [ -e "$1/go" ]; do sleep 0.01; done' sh \
		"$dir" 2>"$dir/job.err" &
	local job=$!
	"$RR" -t 30s -l 2 sem -- sh -c 'touch "$1/sem"; until [ -e "$1/go" ]; do sleep 0.01; done' \
		sh "$dir" 2>"$dir/sem.err" &
	local sem=$!
	wait_until 5 test -e "$dir/job" -a -e "$dir/sem"
	# The moment after a failover: m2, promoted without the last writes (replication is
	# asynchronous), is the master the Sentinels name, while m1 still takes writes (until
	# they demote it; here they no longer watch it). The releases go out within a second
	# of the grants, before the next look at the Sentinels that a request makes: to m1.
	# (Without sem's fence counter either, m2 is no server that lost its data.)
	rcli_on m2 config set replica-read-only no >/dev/null
	rcli_on m2 del job sem '{sem}:fence' >/dev/null
	rcli_on m2 replicaof no one >/dev/null
	local i
	for i in 1 2 3; do
		scli "s$i" sentinel remove "$SENTINEL_MASTER" >/dev/null
		scli "s$i" sentinel monitor "$SENTINEL_MASTER" 127.0.0.1 "$(redis_port m2)" 2 >/dev/null
	done
	touch "$dir/go"
	reap "$job"
	local job_status=$status
	reap "$sem"
	cat "$dir/job.err" "$dir/sem.err"
	assert_equal "$job_status $status" "76 76"
	local moved="the master of '$SENTINEL_MASTER' moved from 127.0.0.1:$old to 127.0.0.1:$(redis_port m2) (a Sentinel failover)"
	grep -qF "lost the lock on job: it was gone when the command ended; $moved" "$dir/job.err"
	grep -qF "lost the lock on sem: it was gone when the command ended; $moved" "$dir/sem.err"
}

@test "a failover that lost the fence's last increments: fences never repeat nor go back" {
	local old f1 f2 f3 f4
	old=$(redis_port m1)
	f1=$("$RR" job -c 'echo $REDLOCK_FENCE')
	fence_on_m2() { [[ $(rcli_on m2 get '{job}:fence') == "$1" ]]; }
	wait_until 5 fence_on_m2 "$f1"
	f2=$("$RR" job -c 'echo $REDLOCK_FENCE')
	f3=$("$RR" job -c 'echo $REDLOCK_FENCE')
	wait_until 5 fence_on_m2 "$f3"
	# Replication is asynchronous: the replica may miss the last grants. Here it has only
	# the first when it is promoted.
	rcli_on m2 config set replica-read-only no >/dev/null
	rcli_on m2 set '{job}:fence' "$f1" >/dev/null
	wait_until 10 failover_accepted
	wait_until 30 failover_done "$old"
	f4=$("$RR" job -c 'echo $REDLOCK_FENCE')
	echo "fences: $f1 $f2 $f3, then after the failover $f4" >&2
	((f1 < f2 && f2 < f3 && f3 < f4))
}

@test "the master killed as the command ends: the release reaches the promoted replica" {
	local old
	old=$(redis_port m1)
	"$RR" -t 20s job -- sh -c 'touch "$1/started"; until [ -e "$1/go" ]; do sleep 0.05; done' \
		sh "$dir" 2>"$dir/err" &
	local pid=$!
	wait_until 5 test -e "$dir/started"
	wait_until 5 held_on m2 job
	redis_stop m1
	touch "$dir/go"
	reap "$pid"
	cat "$dir/err"
	assert_equal "$status" 0
	! grep -q "cannot release" "$dir/err"
	# Released on the new master as soon as there was one, not left there for the 20s lease.
	failover_done "$old"
	free_on m2 job
}

@test "the master gone with no replica to promote: a waiter's -w still ends its wait" {
	redis_stop m2
	"$RR" -t 10s job -- sh -c 'touch "$1/started"; exec sleep 60' sh "$dir" &
	local holder=$!
	wait_until 5 test -e "$dir/started"
	"$RR" -v -w 3s job -- echo never >"$dir/out" 2>"$dir/err" &
	local waiter=$!
	wait_until 5 grep -q "waiting for job" "$dir/err"
	kill -KILL "$holder"
	redis_stop m1
	# Nothing to fail over to: the Sentinels go on naming the dead master.
	wait_until 15 gone "$waiter"
	reap "$waiter"
	cat "$dir/err"
	assert_equal "$status" 75
}

@test "a quorum whose Sentinel member loses its master: the other two renew, the command runs on" {
	redis_start_tcp q1
	redis_start_tcp q2
	wait_until 10 up_for 3 q1 q2
	"$RR" -v -t 3s -r "$REDLOCK_URL" -r "redis://127.0.0.1:$(redis_port q1)" \
		-r "redis://127.0.0.1:$(redis_port q2)" job -- sh -c \
		'touch "$1/started"; sleep 5' sh "$dir" 2>"$dir/err" &
	local holder=$!
	wait_until 5 test -e "$dir/started"
	redis_stop m1 # (and with it the replica's master: a failover follows, or not)
	reap "$holder"
	cat "$dir/err"
	assert_equal "$status" 0
}

@test "--status asked of a replica says so; a run or a break there says where to look" {
	local replica="127.0.0.1:$(redis_port m2)" advice
	advice="; it is a replica: give its master (redlock-run --status names it), or a redis+sentinel:// URL"
	run -69 "$RR" -r "redis://$replica" job -- echo never
	[[ $output == "redlock-run: $replica refused to take job: READONLY "*"$advice" ]]
	"$RR" -t 30s job -- sleep 60 &
	local holder=$!
	wait_until 5 replica_has m2 job
	run -69 "$RR" -r "redis://$replica" --break --yes job
	[[ $output == "redlock-run: $replica refused to break job: READONLY "*"$advice" ]]
	kill "$holder"
	reap "$holder"
	run -0 "$RR" --status -r "redis://127.0.0.1:$(redis_port m2)" job
	assert_line "note: 127.0.0.1:$(redis_port m2) is a replica of 127.0.0.1:$(redis_port m1): what it says may be behind its master; ask the master (or use a Sentinel URL)"
	run -0 "$RR" --status --json -r "redis://127.0.0.1:$(redis_port m2)" job
	assert_output --partial "\"replica_of\": \"127.0.0.1:$(redis_port m1)\""
}

@test "--list and --break through the Sentinels: the master's locks, and one ended there" {
	"$RR" -t 30s job -- sleep 60 2>"$dir/holder.err" &
	local holder=$!
	on_master_has() { [[ $(on_master exists "$1") == 1 ]]; }
	wait_until 10 on_master_has job
	run -0 "$RR" --list
	assert_line --index 1 --regexp "^job +exclusive +$(hostname):$holder "
	run -0 "$RR" --break --yes job
	assert_output --partial "broke job, held by $(hostname):$holder "
	reap "$holder"
	assert_equal "$status" 76
	grep -q "it was broken by $(hostname):" "$dir/holder.err"
	run -0 "$RR" --list
	assert_line --index 1 "(no locks held)"
}

@test "the master frozen until the replica is promoted: never two commands at once" {
	local old
	old=$(master_port)
	# Stopped, the first says when (SIGTERM comes first, at the end of the lease less grace).
	"$RR" -t 3s job -- sh -c 'trap "echo end \$(date +%s%N) >>$1/log; exit 143" TERM
		echo "start $(date +%s%N)" >>"$1/log"; sleep 8 & wait; echo "end $(date +%s%N)" >>"$1/log"' \
		sh "$dir" 2>"$dir/err1" &
	local first=$!
	wait_until 5 test -s "$dir/log"
	kill -STOP "$(redis_pid m1)"
	# A contender that keeps trying: it may only start once the first has stopped.
	"$RR" -w 30s job -- sh -c 'echo "start $(date +%s%N)" >>"$1/log"; echo "end $(date +%s%N)" >>"$1/log"' \
		sh "$dir" 2>"$dir/err2" &
	local second=$!
	wait_until 30 failover_done "$old"
	kill -CONT "$(redis_pid m1)"
	wait_until 30 gone "$first"
	wait_until 30 gone "$second"
	reap "$second"
	[ "$status" -eq 0 ]
	reap "$first"
	[[ $status == 0 || $status == 76 ]]
	cat "$dir/log"
	# Intervals, in order: start end start end.
	run awk '{ print $1 }' "$dir/log"
	assert_output "$(printf 'start\nend\nstart\nend')"
	awk 'NR == 2 { e = $2 } NR == 3 && $2 < e { exit 1 }' "$dir/log"
}

@test "a waiter blocked during a failover follows the master and acquires after the release" {
	local old
	old=$(master_port)
	"$RR" -t 30s job -- sh -c 'until [ -e "$1/go" ]; do sleep 0.05; done' sh "$dir" &
	local holder=$!
	wait_until 5 held_on m1 job
	"$RR" -v job -- sh -c 'echo "$(date +%s%N)" >"$1/woke"' sh "$dir" 2>"$dir/err" &
	local waiter=$!
	wait_until 5 grep -q "waiting for job" "$dir/err"
	wait_until 5 held_on m2 job
	scli s1 sentinel failover "$SENTINEL_MASTER" >/dev/null
	wait_until 20 failover_done "$old"
	# The waiter blocks again, on the new master.
	blocked_there() { on_master client list | grep -q 'cmd=blpop'; }
	wait_until 10 blocked_there
	local released
	released=$(date +%s%N)
	touch "$dir/go"
	reap "$holder"
	[ "$status" -eq 0 ]
	wait_until 15 gone "$waiter"
	reap "$waiter"
	cat "$dir/err"
	[ "$status" -eq 0 ]
	# Woken by the release, not by the holder's lease running out (30s, renewed every 10s: 20s
	# at least were left when the waiter last looked): half of that.
	(($(cat "$dir/woke") - released < 10000000000))
}

@test "--wait-replicas 1: WAIT rides with the script, once per grant and renewal" {
	run -0 "$RR" job -- true # the scripts are known to the server from now on
	on_master config resetstat >/dev/null
	run -0 "$RR" --wait-replicas 1 job -- true
	# One WAIT, for the grant; the release needs none. Nothing else was added.
	on_master info commandstats >"$dir/stats"
	grep -q 'cmdstat_wait:calls=1,' "$dir/stats"
	grep -q 'cmdstat_evalsha:calls=2,' "$dir/stats"
	run -0 "$RR" --wait-replicas 1,50ms -t 600ms job -- sleep 0.5
	on_master info commandstats | grep -q 'cmdstat_wait:calls=[3-9],'
	REDLOCK_WAIT_REPLICAS=1 run -0 "$RR" job -- true
}

@test "--wait-replicas 1 with the replica down: 69 within the timeout, nothing left on the master" {
	run -0 "$RR" job -- true # the scripts are known to the server from now on
	on_master config resetstat >/dev/null
	kill -STOP "$(redis_pid m2)"
	run -69 "$RR" --wait-replicas 1,300ms -n job -- echo ran
	kill -CONT "$(redis_pid m2)"
	refute_line ran
	assert_output --partial "only 0 of the 1 replicas asked for acknowledged the lock"
	refute_output --partial "connected)" # (a frozen replica is still connected)
	# Within the timeout: the replicas were asked once (one WAIT, which the server ends when
	# its 300ms are over), not again.
	on_master info commandstats | grep -q 'cmdstat_wait:calls=1,'
	wait_until 2 free_on m1 job
	# A WAIT longer than --connect-timeout, on a plain server's first answer of the run: the
	# replicas' count is waited for, not taken for a server that does not answer.
	kill -STOP "$(redis_pid m2)"
	run -69 "$RR" -v -r "redis://127.0.0.1:$(redis_port m1)" -t 9s --connect-timeout 1s \
		--wait-replicas 1,3s -n job -- echo ran
	kill -CONT "$(redis_pid m2)"
	assert_output --partial "only 0 of the 1 replicas asked for acknowledged the lock"
	refute_output --partial "no reply"
	wait_until 2 free_on m1 job
}

@test "--wait-replicas: a renewal waiting on a frozen replica as the command ends holds up no release" {
	run -0 "$RR" job -- true # the scripts are known to the server from now on
	# The renewal at 10s, whose WAIT the replica frozen just before makes last its whole 9s:
	# the command ends while it waits (as a slow replica may make any renewal wait).
	run -0 "$RR" -r "redis://127.0.0.1:$(redis_port m1)" -t 30s --wait-replicas 1,9s job \
		-c "sleep 9; kill -STOP $(redis_pid m2); sleep 2"
	kill -CONT "$(redis_pid m2)"
	# released, not left for the rest of its lease
	assert_equal "$(rcli_on m1 exists job)" 0
}

@test "--wait-replicas on a server without replicas: the refusal says it has none" {
	local port
	redis_start_tcp solo
	port=$(redis_port solo)
	run -69 "$RR" -r "redis://127.0.0.1:$port" --wait-replicas 1,300ms -n job -- echo ran
	refute_line ran
	assert_output "redlock-run: only 0 of the 1 replicas asked for acknowledged the lock on 127.0.0.1:$port within 300ms (it has 0 connected)"
	# Without -n it rides the replicas' absence out for a minute, as a failover's: not in
	# silence once it lasts.
	"$RR" -r "redis://127.0.0.1:$port" --wait-replicas 1,300ms job -- echo ran \
		>"$dir/out" 2>"$dir/err" &
	local pid=$!
	wait_until 30 grep -q "still trying, for up to a minute in all" "$dir/err"
	kill -TERM "$pid"
	reap "$pid"
	redis_stop solo
	assert_equal "$status" 143
	run cat "$dir/err"
	assert_output --partial "redlock-run: only 0 of the 1 replicas asked for acknowledged the lock on 127.0.0.1:$port within 300ms (it has 0 connected); still trying, for up to a minute in all"
	assert_equal "$(cat "$dir/out")" ""
}

@test "--wait-replicas: a signal while a grant waits for its replicas gives the lock back at once" {
	redis_start_tcp solo
	run -0 "$RR" -r "redis://127.0.0.1:$(redis_port solo)" job -- true # (the scripts known)
	# Granted at once, and WAIT holds the replicas' count back for 20s (there are none).
	"$RR" -r "redis://127.0.0.1:$(redis_port solo)" -t 60s --wait-replicas 1,20s job \
		-- echo ran >"$dir/out" 2>"$dir/err" &
	local pid=$!
	granted_and_waiting() {
		held_on solo job && rcli_on solo client list | grep -q 'flags=b .*cmd=wait'
	}
	wait_until 10 granted_and_waiting
	kill -TERM "$pid"
	reap "$pid"
	assert_equal "$status" 143
	# Given back before it exited, not left for the rest of its 60s lease.
	free_on solo job
	assert_equal "$(cat "$dir/out" "$dir/err")" ""
}

@test "--wait-replicas: renewals the replica does not acknowledge do not extend the lease" {
	# The grant itself waits TTL/10 for the replica's acknowledgement, which a loaded machine
	# does not always give in time (69, rightly): the holder is started again then, as this
	# scenario is about the renewals.
	local pid try
	started_or_refused() { test -s "$dir/started" || gone "$pid"; }
	for try in 1 2 3; do
		"$RR" --wait-replicas 1 -t 3s job -- sh -c 'echo $$ >"$1/started"; exec sleep 30' sh \
			"$dir" 2>"$dir/err" &
		pid=$!
		wait_until 5 started_or_refused
		test -s "$dir/started" && break
		cat "$dir/err"
	done
	test -s "$dir/started"
	deathwatch_start
	watch_death "$(cat "$dir/started")"
	# No renewal from now on (the master's writes wait); the replica has the last one, and
	# then stops acknowledging anything.
	local expires
	expires=$(last_expiry m1 job)
	replica_has_it() { [[ $(expiry_on m2 job) == "$expires" ]]; }
	wait_until 5 replica_has_it
	kill -STOP "$(redis_pid m2)"
	rcli_on m1 client unpause >/dev/null
	wait_until 5 gone "$pid"
	kill -CONT "$(redis_pid m2)"
	reap "$pid"
	cat "$dir/err"
	[ "$status" -eq 76 ]
	# Stopped before the lease the replica has could lapse there, for all the renewals the
	# master took meanwhile.
	(($(died_at "$(cat "$dir/started")") < expires * 1000))
	deathwatch_stop
	grep -q "only 0 of the 1 replicas asked for acknowledged the renewal" "$dir/err"
}

@test "--wait-replicas on a server that refuses WAIT: a clear 69, not a hang" {
	rcli_on m1 acl setuser nowait on '>pw' '~*' '&*' +@all -wait >/dev/null
	run -69 "$RR" -r "redis://nowait:pw@127.0.0.1:$(redis_port m1)" --wait-replicas 1 -n job -- true
	assert_output --partial "cannot wait for replicas (WAIT: NOPERM"
	[[ $(rcli_on m1 exists job) == 0 ]]
}

@test "--wait-replicas: bad values are usage errors" {
	run -64 "$RR" --wait-replicas x job -- true
	assert_output --partial "invalid --wait-replicas 'x'"
	run -64 "$RR" --wait-replicas 1,0 job -- true
	run -64 "$RR" -t 3s --wait-replicas 1,2s job -- true
	assert_output --partial "a third of the TTL"
	REDLOCK_WAIT_REPLICAS=-1 run -64 "$RR" job -- true
}

@test "deploy queues through the Sentinels: arrival order holds across a failover; latest supersedes and cancels" {
	local old i pids=()
	old=$(master_port)
	"$RR" -t 6s job -- sh -c 'until [ -e "$1/go" ]; do sleep 0.05; done' sh "$dir" &
	local holder=$!
	wait_until 5 held_on m1 job
	queued_on() { [[ $(rcli_on "$1" zcard '{job}:queue') == "$2" ]]; }
	for i in 1 2 3; do
		"$RR" job -- sh -c 'echo "$2" >>"$1/ran"' sh "$dir" "$i" &
		pids+=($!)
		wait_until 10 queued_on m1 "$i"
	done
	# The line's order is on the replica too when the master fails over.
	wait_until 10 queued_on m2 3
	scli s1 sentinel failover "$SENTINEL_MASTER" >/dev/null
	wait_until 20 failover_done "$old"
	touch "$dir/go"
	reap_ok "$holder" "${pids[@]}"
	assert_equal "$(tr '\n' ' ' <"$dir/ran")" "1 2 3 "
	# --queue latest --cancel-running on the new master.
	queued_on_master() { [[ $(on_master zcard '{deploy}:queue') == "$1" ]]; }
	latest_cancels deploy queued_on_master
}
