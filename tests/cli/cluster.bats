#!/usr/bin/env bats
# Redis Cluster (issue 11, DESIGN §3b): the lock lives on its slot's owner, found from any
# node through -MOVED (remembered) and -ASK (once), through seeds tried in turn, with the
# same promises as on one server. A cluster of three masters with a replica each, built by the
# tests; the failover scenarios come last, as they change who is master.

bats_require_minimum_version 1.5.0
BATS_TEST_TIMEOUT=90
load helpers

setup_file() { cluster_start 3 1; }
teardown_file() { cluster_stop; }

setup() {
	dir=$BATS_TEST_TMPDIR
	local m
	for m in $(cluster_masters); do
		rcli_on "$m" flushall >/dev/null
		rcli_on "$m" config resetstat >/dev/null
	done
}

teardown() {
	kill_jobs
	redis_stop p1
	redis_stop p2
	# The MONITOR clients a scenario started, whatever became of it.
	[ ! -s "$dir/monitors" ] || xargs kill <"$dir/monitors" 2>/dev/null || true
}

# key_on MASTER: a key whose slot MASTER owns.
key_on() {
	local i
	for ((i = 0; i < 200; i++)); do
		[[ $(owner_of "k$i") == "$1" ]] && echo "k$i" && return 0
	done
	return 1
}
# another_than MASTER: a master that is not MASTER.
another_than() { cluster_masters | grep -vx "$1" | head -1; }
# moved_on NAME: how many -MOVED answers server NAME gave since the test began.
moved_on() {
	rcli_on "$1" info errorstats | sed -n 's/^errorstat_MOVED:count=\([0-9]*\).*/\1/p' |
		grep . || echo 0
}

@test "a key on each master, through a seed that does not own it: taken, renewed, released, one redirect" {
	local m key seed moved
	for m in $(cluster_masters); do
		key=$(key_on "$m")
		seed=$(another_than "$m")
		moved=$(moved_on "$seed")
		run -0 "$RR" -r "redis://127.0.0.1:$(redis_port "$seed")" -t 300ms "$key" -- \
			sh -c 'sleep 1; redis-cli -s "$1" exists "$2"' sh "$(redis_sock "$m")" "$key"
		assert_output 1
		[[ $(rcli_on "$m" exists "$key") == 0 ]]
		# One -MOVED for the whole run: the watchdog and the release start at the owner.
		[[ $(moved_on "$seed") == $((moved + 1)) ]]
		# Renewed there: the command ran for three TTLs.
		(($(calls_on "$m" evalsha) >= 4))
		run -0 "$RR" -r "redis://127.0.0.1:$(redis_port "$seed")" --status "$key"
		assert_output --partial "is free"
	done
}

@test "a waiter killed at the front of the line holds the one behind it back a moment, not a lease" {
	local m key url holder killed behind
	m=$(cluster_masters | head -1)
	key=$(key_on "$m")
	url="redis://127.0.0.1:$(redis_port "$m")"
	"$RR" -r "$url" -t 1h "$key" -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	"$RR" -r "$url" "$key" -- touch "$dir/ran.killed" &
	killed=$!
	# (Asked on every poll: a "$(...)" in wait_until's arguments is asked once, before it.)
	waiting() { [[ $(rcli_on "$m" zcard "{$key}:waiting") == "$1" ]]; }
	wait_until 10 waiting 1
	# (Its -w only ends it, should the scenario fail: the wait_until below comes first.)
	"$RR" -r "$url" -w 45s "$key" -- touch "$dir/ran.behind" &
	behind=$!
	wait_until 10 waiting 2
	kill -KILL "$killed"
	reap "$killed"
	assert_equal "$status" 137
	# Its attempt does not wait behind its BLPOP on a cluster: the release asks whether the
	# wake-up was taken, not whether the lock was.
	touch "$dir/go"
	reap_ok "$holder"
	wait_until 30 test -e "$dir/ran.behind"
	reap_ok "$behind"
	[ ! -e "$dir/ran.killed" ]
}

@test "--status through a seed names the slot's owner" {
	local m key seed
	m=$(cluster_masters | head -1)
	key=$(key_on "$m")
	seed=$(another_than "$m")
	rcli_on "$m" set "$key" 00000000-0000-4000-8000-000000000000:someone:42 px 60000 >/dev/null
	run -75 "$RR" -r "redis://127.0.0.1:$(redis_port "$seed")" --status --json "$key"
	assert_output --partial "\"address\": \"127.0.0.1:$(redis_port "$m")\""
	run -75 "$RR" -r "redis://127.0.0.1:$(redis_port "$seed")" --status "$key"
	assert_line "  on 127.0.0.1:$(redis_port "$m"), the owner of its slot"
}

@test "redis+cluster://: the seeds are tried in turn when the first is down" {
	local m key
	m=$(cluster_masters | head -1)
	key=$(key_on "$(another_than "$m")")
	run -0 "$RR" -r "redis+cluster://127.0.0.1:1,127.0.0.1:$(redis_port "$m")" "$key" -- echo ran
	assert_output ran
	# A seed whose name does not resolve fails at once: the next one is tried all the same.
	run -0 "$RR" -r "redis+cluster://nosuch.invalid,127.0.0.1:$(redis_port "$m")" "$key" -- echo ran
	assert_output ran
	# None answering: 69, and no word of a lock that may have been taken.
	run -69 "$RR" -r "redis+cluster://nosuch.invalid,127.0.0.1:1" "$key" -- echo never
	assert_output "redlock-run: cannot connect to 127.0.0.1:1: connection refused"
}

@test "a cluster as one member of a quorum, beside two single servers (one of them down)" {
	local m key seed
	m=$(cluster_masters | head -1)
	key=$(key_on "$m")
	seed=$(another_than "$m")
	redis_start_tcp p1
	redis_start_tcp p2
	redis_stop p2 # so that the quorum needs the cluster
	# With p2 down, the others must have run for longer than the lease to count (see
	# "young" in acquire.c).
	wait_until 5 up_for 2 p1 "$m"
	run -0 "$RR" -t 2s -r "redis+cluster://127.0.0.1:$(redis_port "$seed")" \
		-r "redis://127.0.0.1:$(redis_port p1)" -r "redis://127.0.0.1:$(redis_port p2)" "$key" -- \
		sh -c 'redis-cli -s "$1" exists "$3"; redis-cli -s "$2" exists "$3"' sh \
		"$(redis_sock "$m")" "$(redis_sock p1)" "$key"
	assert_output "$(printf '1\n1')"
	[[ $(rcli_on "$m" exists "$key") == 0 ]]
}

@test "--limit, --shared and --min-hold through a seed that does not own the slot" {
	local m key seed url
	m=$(cluster_masters | head -1)
	key=$(key_on "$m")
	seed=$(another_than "$m")
	url="redis://127.0.0.1:$(redis_port "$seed")"
	"$RR" -r "$url" -l 2 "$key" -- sh -c 'touch "$1/held"; exec sleep 30' sh "$dir" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	run -0 "$RR" -r "$url" -l 2 "$key" -- sh -c 'echo "$REDLOCK_HOLDERS"'
	assert_output 2
	run -0 "$RR" -r "$url" --status "$key"
	assert_line --index 0 --partial "is held by 1 of 2 (a semaphore)"
	kill "$holder"
	wait "$holder" || true
	"$RR" -r "$url" -s "$key" -- sh -c 'touch "$1/shared"; exec sleep 30' sh "$dir" &
	holder=$!
	wait_until 5 test -e "$dir/shared"
	run -0 "$RR" -r "$url" -s "$key" -- sh -c 'echo "$REDLOCK_HOLDERS"'
	assert_output 2
	run -75 "$RR" -r "$url" -n "$key" -- echo never
	run -75 "$RR" -r "$url" --status "$key"
	assert_line --index 0 --partial "is held shared by 1"
	kill "$holder"
	wait "$holder" || true
	run -0 "$RR" -r "$url" --min-hold 1s "$key" -- true
	held_on "$m" "$key"
	run -75 "$RR" -r "$url" -n "$key" -- true
}

@test "deploy queues through a seed that does not own the slot: arrival order, latest supersedes and cancels" {
	local m key seed url i pids=()
	m=$(cluster_masters | head -1)
	key=$(key_on "$m")
	seed=$(another_than "$m")
	url="redis://127.0.0.1:$(redis_port "$seed")"
	queued() { [[ $(rcli_on "$m" zcard "{$key}:queue") == "$1" ]]; }
	"$RR" -r "$url" "$key" -- sh -c 'touch "$1/held"; until [ -e "$1/go" ]; do sleep 0.05; done' \
		sh "$dir" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	for i in 1 2 3; do
		"$RR" -r "$url" "$key" -- sh -c 'echo "$2" >>"$1/ran"' sh "$dir" "$i" &
		pids+=($!)
		wait_until 10 queued "$i"
	done
	touch "$dir/go"
	reap_ok "$holder" "${pids[@]}"
	assert_equal "$(tr '\n' ' ' <"$dir/ran")" "1 2 3 "
	latest_cancels "$key" queued -r "$url"
}

@test "a db other than 0: 64 in a cluster URL, 69 from the server for a plain one" {
	run -64 "$RR" -r "redis+cluster://127.0.0.1:$(redis_port c1)/2" job -- true
	assert_output --partial "a cluster has db 0 only"
	run -69 "$RR" -r "redis://127.0.0.1:$(redis_port c1)/2" -n job -- true
	assert_output --partial "cannot select db 2"
}

@test "a KEY whose helper keys could not share its slot is refused with 64, saying how to write it" {
	run -64 "$RR" 'a}b' -- true
	assert_output --partial "give it a tag of its own, such as '{locks}a}b'"
	run -64 "$RR" '{}x' -- true
	# A key with a tag keeps it: its helpers share the slot.
	local m key
	m=$(cluster_masters | head -1)
	run -0 "$RR" -r "redis://127.0.0.1:$(redis_port "$m")" "{job}:deploy" -- echo tagged
	assert_output tagged
}

@test "a server that redirects forever: 69 naming the loop, not a hang" {
	python3 - "$dir" <<'PY' 3>&- &
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
port = s.getsockname()[1]
open(sys.argv[1] + "/port.tmp", "w").write(str(port))
os.replace(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")
while True:
    c, _ = s.accept()
    while c.recv(65536):
        c.sendall(b"-MOVED 1234 :%d\r\n" % port)
    c.close()
PY
	local server=$!
	wait_until 5 test -s "$dir/port"
	# (timeout(1) would end a hang with 124: a run that ends at all followed 8 redirects.)
	run -69 timeout 10 "$RR" -r "redis://127.0.0.1:$(cat "$dir/port")" -n job -- echo never
	kill "$server"
	refute_output --partial never
	assert_output --partial "redirected one request 8 times"
}

# interval_log: a command that writes when it starts and ends into $dir/log.
RUN_LOGGED='echo "start $(date +%s%N)" >>"$1/log"; until [ -e "$1/go" ] || [ "$2" = once ]; do sleep 0.05; done; echo "end $(date +%s%N)" >>"$1/log"'

# holder_and_waiter URL TTL: a holder of $key through URL, with a lease of TTL, that runs until
# $dir/go exists, and a waiter behind it (-v, its stderr in $dir/err), once it waits; their pids
# in $holder and $waiter.
holder_and_waiter() {
	"$RR" -r "$1" -t "$2" "$key" -- sh -c "$RUN_LOGGED" sh "$dir" 2>"$dir/holder.err" &
	holder=$!
	wait_until 5 test -s "$dir/log"
	"$RR" -v -r "$1" "$key" -- sh -c "$RUN_LOGGED" sh "$dir" once 2>"$dir/err" &
	waiter=$!
	wait_until 5 grep -q "waiting for" "$dir/err"
}

# no_overlap: the intervals in $dir/log never overlap (start end start end ...).
no_overlap() {
	awk '($1 == "start") != (NR % 2 == 1) { exit 1 } NR % 2 == 1 && $2 < last { exit 1 }
		{ last = $2 }' "$dir/log"
}


@test "a slot migrated by hand while a command holds a lock in it: renewals follow, a contender waits" {
	local src dst key slot
	src=$(cluster_masters | head -1)
	dst=$(another_than "$src")
	key=$(key_on "$src")
	slot=$(rcli_on "$src" cluster keyslot "$key")
	# (A lease of 3s: a renewal follows the keys through -ASK to a new connection, which a
	# busy machine may hold up for longer than a lease of a fraction of a second has left.)
	"$RR" -r "redis://127.0.0.1:$(redis_port "$src")" -t 3s "$key" -- sh -c "$RUN_LOGGED" \
		sh "$dir" 2>"$dir/err1" &
	local holder=$!
	wait_until 5 test -s "$dir/log"
	# A contender arrives through the new owner while the keys have moved and the slot has
	# not: it is sent to the old owner, which says -ASK (and, as long as some of the lock's
	# keys are not there, the new one says -TRYAGAIN).
	contend() {
		"$RR" -v -r "redis://127.0.0.1:$(redis_port "$dst")" -t 600ms "$key" -- \
			sh -c "$RUN_LOGGED" sh "$dir" once 2>"$dir/err2" &
		contender=$!
		asked() { rcli_on "$src" info errorstats | grep -q '^errorstat_ASK:count=[1-9]'; }
		wait_until 10 asked
	}
	MIGRATE_HOOK=contend cluster_migrate_slot "$slot" "$src" "$dst"
	wait_until 10 grep -q "waiting for" "$dir/err2" || { cat "$dir/err2" "$dir/err1"; false; }
	# The renewals go on, on the new owner.
	renewed_on_dst() {
		(($(calls_on "$dst" evalsha) >= 3))
	}
	wait_until 10 renewed_on_dst
	touch "$dir/go"
	reap "$holder"
	cat "$dir/err1"
	[ "$status" -eq 0 ]
	wait_until 10 gone "$contender"
	reap "$contender"
	cat "$dir/err2"
	[ "$status" -eq 0 ]
	cat "$dir/log"
	[[ $(wc -l <"$dir/log") == 4 ]]
	no_overlap
}

@test "a waiter blocked while its slot moves follows it and acquires after the release" {
	local src dst key slot t0
	src=$(cluster_masters | head -1)
	dst=$(another_than "$src")
	key=$(key_on "$src")
	slot=$(rcli_on "$src" cluster keyslot "$key")
	local holder waiter m
	# Every command the two masters run, to see the waiter's BLPOP on each.
	for m in "$src" "$dst"; do
		redis-cli -p "$(redis_port "$m")" monitor >"$dir/$m.monitor" 3>&- &
		echo $! >>"$dir/monitors"
	done
	wait_until 5 test -s "$dir/$src.monitor" -a -s "$dir/$dst.monitor" # (its "OK")
	holder_and_waiter "redis://127.0.0.1:$(redis_port "$src")" 30s
	blocked_on() { grep -q '"BLPOP"' "$dir/$1.monitor"; }
	wait_until 5 blocked_on "$src"
	cluster_migrate_slot "$slot" "$src" "$dst"
	wait_until 10 blocked_on "$dst"
	# Sent again to the new owner, the BLPOP waits for what was left of its time, not the
	# whole of it again (which would wait out a crashed holder's lease that much late).
	timeout_on() { grep -m1 '"BLPOP"' "$dir/$1.monitor" | sed 's/.* "\([0-9.]*\)"$/\1/'; }
	python3 -c 'import sys; a, b = map(float, sys.argv[1:]); assert 0 < b < a, (a, b)' \
		"$(timeout_on "$src")" "$(timeout_on "$dst")"
	t0=$(now_ms)
	touch "$dir/go"
	reap "$holder"
	[ "$status" -eq 0 ]
	wait_until 15 gone "$waiter"
	reap "$waiter"
	cat "$dir/err"
	[ "$status" -eq 0 ]
	# Woken by the release on the new owner, not by the end of the holder's lease (30s,
	# renewed every 10s: 20s at least were left when the waiter last looked): half of that.
	(($(now_ms) - t0 < 10000))
	no_overlap
}

@test "contention: 8 contenders x 25 runs through different seeds during a slot migration" {
	local src dst key slot i m seeds=()
	src=$(cluster_masters | head -1)
	dst=$(another_than "$src")
	key=$(key_on "$src")
	slot=$(rcli_on "$src" cluster keyslot "$key")
	for m in $(cluster_masters); do
		seeds+=("redis://127.0.0.1:$(redis_port "$m")")
	done
	worker() {
		local n
		for ((n = 0; n < 25; n++)); do
			"$RR" -r "$1" -t 1s "$key" -- sh -c "$RUN_LOGGED" sh "$dir" once 2>>"$dir/err" ||
				echo "exit $?" >>"$dir/failed"
		done
	}
	local pids=()
	for ((i = 0; i < 8; i++)); do
		worker "${seeds[i % ${#seeds[@]}]}" &
		pids+=($!)
	done
	wait_until 10 test -s "$dir/log"
	cluster_migrate_slot "$slot" "$src" "$dst"
	for i in "${pids[@]}"; do
		wait "$i"
	done
	cat "$dir/err" >&2 || true
	[ ! -e "$dir/failed" ]
	[[ $(grep -c start "$dir/log") == 200 ]]
	no_overlap
}

@test "--list finds the locks on every master through one seed; --break ends one on its owner" {
	local m keys=() pids=() seed
	for m in $(cluster_masters); do
		key=$(key_on "$m")
		keys+=("$key")
		"$RR" -r "redis://127.0.0.1:$(redis_port "$m")" -t 30s "$key" -- sleep 60 \
			2>"$dir/$key.err" &
		pids+=($!)
	done
	held_everywhere() {
		local k
		for k in "${keys[@]}"; do [[ $(rcli_on "$(owner_of "$k")" exists "$k") == 1 ]] || return 1; done
	}
	wait_until 10 held_everywhere
	seed=$(cluster_masters | head -1)
	run -0 "$RR" -r "redis+cluster://127.0.0.1:$(redis_port "$seed")" --list
	assert_equal "${#lines[@]}" 4
	for key in "${keys[@]}"; do
		assert_output --regexp "(^|"$'\n'")$key +exclusive +$(hostname):[0-9]+ "
	done
	# Broken through a seed that does not own its slot: its holder stops, 76.
	run -0 "$RR" -r "redis://127.0.0.1:$(redis_port "$seed")" --break --yes "${keys[1]}"
	assert_output --partial "broke ${keys[1]}, held by $(hostname):${pids[1]} "
	reap "${pids[1]}"
	assert_equal "$status" 76
	grep -q "it was broken by $(hostname):" "$dir/${keys[1]}.err"
	kill "${pids[0]}" "${pids[2]}"
	wait "${pids[0]}" "${pids[2]}" || true
}

@test "--list as a user not allowed CLUSTER SLOTS: 69 and why, never the seed's locks alone" {
	local m seed
	for m in $(cluster_masters); do
		rcli_on "$m" acl setuser lister on '>pw' '~*' +@all -cluster >/dev/null
	done
	seed=$(cluster_masters | head -1)
	run --separate-stderr "$RR" -r "redis+cluster://lister:pw@127.0.0.1:$(redis_port "$seed")" --list
	local cluster_url=$status cluster_url_stderr=$stderr
	# Through a plain URL to a node too: the node says it is one (INFO).
	run --separate-stderr "$RR" -r "redis://lister:pw@127.0.0.1:$(redis_port "$seed")" --list
	for m in $(cluster_masters); do rcli_on "$m" acl deluser lister >/dev/null; done
	assert_equal "$cluster_url" 69
	assert_regex "$cluster_url_stderr" "^redlock-run: cannot list the locks: 127\.0\.0\.1:[0-9]+ refused CLUSTER: NOPERM"
	assert_equal "$status" 69
	assert_equal "$output" ""
	assert_regex "$stderr" "^redlock-run: cannot list the locks: 127\.0\.0\.1:[0-9]+ refused CLUSTER: NOPERM"
}

@test "CLUSTER FAILOVER while a command holds the lock: it runs on and releases on the new master" {
	local m key replica
	m=$(cluster_masters | head -1)
	key=$(key_on "$m")
	"$RR" -r "redis://127.0.0.1:$(redis_port "$m")" -t 2s "$key" -- sh -c "$RUN_LOGGED; exit 3" \
		sh "$dir" 2>"$dir/err" &
	local holder=$!
	wait_until 5 test -s "$dir/log"
	replica=$(replica_of "$m")
	wait_until 5 replica_has "$replica" "$key"
	cluster_promote "$replica" "$key"
	sleep_renewals() {
		(($(calls_on "$replica" evalsha) >= 2))
	}
	wait_until 10 sleep_renewals
	touch "$dir/go"
	reap "$holder"
	cat "$dir/err"
	[ "$status" -eq 3 ]
	[[ $(rcli_on "$replica" exists "$key") == 0 ]]
}

@test "CLUSTER FAILOVER with a waiter blocked: it follows its slot, and acquires after the release" {
	local m key replica
	m=$(cluster_masters | head -1)
	key=$(key_on "$m")
	replica=$(replica_of "$m")
	# (A manual failover that does not go through pauses the master's writes for up to 5s:
	# the lease outlasts that.)
	local holder waiter
	holder_and_waiter "redis://127.0.0.1:$(redis_port "$m")" 10s
	wait_until 5 replica_has "$replica" "$key"
	# The old master answers the blocked waiter -UNBLOCKED as it turns replica.
	cluster_promote "$replica" "$key"
	touch "$dir/go"
	reap "$holder"
	cat "$dir/holder.err"
	[ "$status" -eq 0 ]
	wait_until 10 gone "$waiter"
	reap "$waiter"
	cat "$dir/err"
	[ "$status" -eq 0 ]
	no_overlap
}

# first_owner: the first master ($m), a key in its slot ($key), its replica ($replica), and a
# URL with every node as a seed ($url).
first_owner() {
	local i seeds=()
	m=$(cluster_masters | head -1)
	key=$(key_on "$m")
	replica=$(replica_of "$m")
	for i in 1 2 3 4 5 6; do
		seeds+=("127.0.0.1:$(redis_port "c$i")")
	done
	url="redis+cluster://$(IFS=,; echo "${seeds[*]}")"
}

@test "the slot's owner killed: the release reaches the promoted replica, and the waiter follows" {
	local m key replica url
	first_owner
	# A lease far longer than the failover takes (the cluster's node timeout is 2s): the
	# release must not leave the key there until it expires.
	local holder waiter
	holder_and_waiter "$url" 20s
	wait_until 5 replica_has "$replica" "$key"
	kill -KILL "$(redis_pid "$m")"
	touch "$dir/go" # the release goes out while the owner is dead
	reap "$holder"
	cat "$dir/holder.err"
	[ "$status" -eq 0 ]
	! grep -q "cannot release" "$dir/holder.err"
	# Woken by that release on the promoted replica, not by the end of the 20s lease.
	wait_until 15 gone "$waiter"
	reap "$waiter"
	cat "$dir/err"
	[ "$status" -eq 0 ]
	no_overlap
	# The killed node comes back as a replica, for the scenarios that follow.
	redis_start_again "$m" --cluster-enabled yes \
		--cluster-config-file "$(redis_dir "$m")/nodes.conf" --cluster-node-timeout 2000
	wait_until 30 cluster_settled
}

# freeze_owner_under_a_line: the first owner (see first_owner) frozen under a holder of $key
# (-t 1s, logging in $dir/h until $dir/h/go exists) and a waiter (-v, its stderr in $dir/err,
# logging in $dir once): their pids in $holder and $waiter, the owner's in $pid.
freeze_owner_under_a_line() {
	first_owner
	mkdir "$dir/h"
	"$RR" -r "$url" -t 1s "$key" -- sh -c "$RUN_LOGGED" sh "$dir/h" 2>"$dir/holder.err" &
	holder=$!
	wait_until 5 test -s "$dir/h/log"
	"$RR" -v -r "$url" -t 1s "$key" -- sh -c "$RUN_LOGGED" sh "$dir" once 2>"$dir/err" &
	waiter=$!
	wait_until 5 grep -q "waiting for" "$dir/err"
	pid=$(redis_pid "$m")
	kill -STOP "$pid"
}

@test "the slot's owner frozen past a failover: it grants the waiter it held nothing as it resumes" {
	local m key replica url pid holder waiter
	freeze_owner_under_a_line
	# The replica takes over (the node timeout is 2s); the holder loses the lock there as it
	# cannot renew it; another run takes it on the new owner.
	promoted() { [[ $(rcli_on "$replica" role | head -1) == master ]]; }
	if ! wait_until 30 promoted; then
		kill -CONT "$pid"
		return 1
	fi
	"$RR" -r "redis+cluster://127.0.0.1:$(redis_port "$replica")" -t 1s -w 30s "$key" -- \
		sh -c "$RUN_LOGGED" sh "$dir" 2>"$dir/new.err" &
	local new=$!
	wait_until 15 test -s "$dir/log"
	# The old owner resumes: until it learns that it lost its slots, it would take writes.
	kill -CONT "$pid"
	demoted() { [[ $(rcli_on "$m" role | head -1) == slave ]]; }
	wait_until 30 demoted
	reap "$holder"
	assert_equal "$status" 76
	# The waiter waits for the new holder still, and runs after it, never beside it.
	run wc -l <"$dir/log"
	assert_output 1
	touch "$dir/go"
	reap_ok "$new" "$waiter"
	cat "$dir/err"
	no_overlap
	run wc -l <"$dir/log"
	assert_output 4
	wait_until 30 cluster_settled
}

@test "the slot's owner frozen for good: a waiter blocked on it and a run that names it first move on" {
	local m key replica url pid holder waiter
	freeze_owner_under_a_line
	promoted() { [[ $(rcli_on "$replica" role | head -1) == master ]]; }
	# A server that takes requests and never answers is no place to wait, nor a seed to
	# ask: both go to the next place, which names the new owner. (Before, the waiter stayed
	# with the frozen owner, and a run that named it first never got past it.)
	if wait_until 30 promoted && wait_until 30 gone "$waiter"; then
		"$RR" -r "redis+cluster://127.0.0.1:$(redis_port "$m"),127.0.0.1:$(redis_port "$replica")" \
			-w 30s "$key" -- true 2>"$dir/seed.err"
		echo "$?" >"$dir/seed.status"
	fi
	kill -CONT "$pid"
	reap "$waiter"
	cat "$dir/err"
	assert_equal "$status" 0
	assert_equal "$(cat "$dir/seed.status")" 0
	touch "$dir/h/go"
	reap "$holder"
	assert_equal "$status" 76
	demoted() { [[ $(rcli_on "$m" role | head -1) == slave ]]; }
	wait_until 30 demoted
	wait_until 30 cluster_settled
}

@test "the slot's owner down and no replica taking over: the error names the owner, not the last seed asked" {
	local m key replica url rpid seed
	first_owner
	seed=$(another_than "$m")
	# Its replica frozen: nothing takes the slot over while the run asks.
	rpid=$(redis_pid "$replica")
	kill -STOP "$rpid"
	kill -KILL "$(redis_pid "$m")"
	run -69 --separate-stderr "$RR" -r "redis+cluster://127.0.0.1:$(redis_port "$seed")" \
		--connect-timeout 1s --status "$key"
	kill -CONT "$rpid"
	echo "$stderr"
	# The replica takes over once it runs again; the killed node comes back as its replica.
	promoted() { [[ $(rcli_on "$replica" role | head -1) == master ]]; }
	wait_until 30 promoted
	redis_start_again "$m" --cluster-enabled yes \
		--cluster-config-file "$(redis_dir "$m")/nodes.conf" --cluster-node-timeout 2000
	wait_until 30 cluster_settled
	[[ $stderr == *"127.0.0.1:$(redis_port "$m"): "*"; asking the cluster where its slot is now: "* ]]
}

@test "CLUSTER FAILOVER TAKEOVER on a replica that missed the key: the command is stopped, 76" {
	local m key replica
	m=$(cluster_masters | head -1)
	key=$(key_on "$m")
	replica=$(replica_of "$m")
	# Replication is asynchronous: here the replica misses the lock for sure, as it cannot
	# authenticate to its master any more when the lock is taken; then it takes over.
	auth() {
		local name=$1
		shift
		redis-cli -s "$(redis_sock "$name")" -a s3cret --no-auth-warning "$@"
	}
	rcli_on "$replica" config set masterauth wrong >/dev/null
	rcli_on "$replica" config set requirepass s3cret >/dev/null
	rcli_on "$m" config set requirepass s3cret >/dev/null
	auth "$m" client kill type replica >/dev/null
	link_down() { auth "$replica" info replication | grep -q 'master_link_status:down'; }
	wait_until 5 link_down
	"$RR" -r "redis://:s3cret@127.0.0.1:$(redis_port "$m")" -t 3s "$key" -- \
		sh -c "$RUN_LOGGED" sh "$dir" 2>"$dir/err" &
	local holder=$!
	wait_until 5 test -s "$dir/log"
	auth "$replica" cluster failover takeover >/dev/null
	wait_until 20 gone "$holder"
	reap "$holder"
	cat "$dir/err"
	[ "$status" -eq 76 ]
	grep -q "lost the lock on $key" "$dir/err"
	run -0 "$RR" -r "redis://:s3cret@127.0.0.1:$(redis_port "$m")" -n "$key" -- echo second
	assert_output second
}
