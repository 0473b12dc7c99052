#!/usr/bin/env bats
# More than a mutex (issue 12). --limit N: up to N holders, each with its own lease, renewed,
# lost and released on its own; a release wakes a waiter. --shared: any number of shared
# holders or one exclusive, which newcomers wait behind once it waits. --min-hold: a command
# that ends sooner leaves the lock taken until the minimum is over, exits at once with its own
# status, and the next holder gets the lock when it runs out, woken for it.

bats_require_minimum_version 1.5.0
load helpers

setup_file() { main_server_start; }
teardown_file() { main_server_stop; }
teardown() { deathwatch_stop; }
setup() { main_server_reset; }

@test "--min-hold 4s, a command of 0.5s: its status at once, 75 for -n until 4s, the lock after" {
	local t0 s us now expires
	t0=$(now_ms)
	run -3 "$RR" --min-hold 4s job -- sh -c 'sleep 0.5; exit 3'
	# Still taken, and nothing else left behind. On the server's clock: the run was over
	# before the 4s were; they count from the acquisition (after t0), never shorter, and not
	# from the release (the command's 0.5s already went by).
	{ read -r s && read -r us && read -r expires; } < <(printf 'TIME\nPEXPIRETIME job\n' | rcli)
	now=$((s * 1000 + us / 1000))
	echo "the run ended $((expires - now))ms before the lock expires" >&2
	((now < expires))
	((expires >= t0 + 4000))
	((expires <= now + 4000 - 500 + 1))
	[[ $(keys_but_fences) == job ]]
	run -75 "$RR" -n job -- echo never
	refute_output --partial never
	wait_until 10 free_on main job
	(($(now_ms) - t0 >= 4000))
	run -0 "$RR" -n job -- echo after
	assert_output after
}

@test "--max-hold and --min-hold of a waiter count from when it got the lock, not from its wait" {
	local t0 until
	"$RR" job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	# Both wait longer than their holds: their attempts were queued as the wait began.
	# In this order: the one that keeps the lock for a minute goes last.
	"$RR" --max-hold 2s job -- echo ran >"$dir/max.out" &
	local max=$!
	wait_until 10 eval '(($(rcli zcard "{job}:waiting") == 1))'
	"$RR" --min-hold 60s job -- true &
	local min=$!
	wait_until 10 eval '(($(rcli zcard "{job}:waiting") == 2))'
	until=$(($(now_ms) + 3000))
	past() { (($(now_ms) > until)); }
	wait_until 10 past
	# The server's clock as the holder is let go: both got the lock after it.
	local s us
	{ read -r s && read -r us; } < <(rcli time)
	touch "$dir/go"
	reap_ok "$holder" "$max" "$min"
	assert_equal "$(cat "$dir/max.out")" ran
	# Kept for the minute after the lock was its (its wait began 3s before).
	(($(rcli pexpiretime job) >= s * 1000 + us / 1000 + 60000))
}

@test "--min-hold: a waiter that blocked on the holder's whole lease gets the lock as it ends" {
	local t0
	t0=$(now_ms)
	"$RR" -t 30s --min-hold 2s job -- sh -c 'touch "$1/held"
		until [ -e "$1/go" ]; do sleep 0.02; done' sh "$dir" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	# It finds 30s left, and blocks for that long: the release must wake it.
	"$RR" -v job -- sh -c 'echo "$(($(date +%s%N) / 1000000))" >"$1/started"' sh "$dir" \
		2>"$dir/err" &
	local waiter=$!
	wait_until 5 line_length job 1
	touch "$dir/go"
	reap "$holder"
	[ "$status" -eq 0 ]
	wait_until 30 gone "$waiter"
	reap "$waiter"
	cat "$dir/err"
	[ "$status" -eq 0 ]
	local started
	started=$(cat "$dir/started")
	echo "the waiter started $((started - t0))ms after t0" >&2
	# Not before the 2s kept from the acquisition (after t0) were over...
	((started - t0 >= 2000))
	# ...and woken for them: the 30s lease it blocked on (taken after t0) had not ended.
	((started - t0 < 30000))
}

@test "--min-hold shorter than the command: released at once as usual" {
	run -0 "$RR" --min-hold 100ms job -- sleep 0.3
	[[ $(rcli exists job) == 0 ]]
}

@test "--min-hold takes a duration; 0 is none" {
	run -64 "$RR" --min-hold soon job -- true
	assert_output --partial "invalid --min-hold 'soon'"
	run -0 "$RR" --min-hold 0 job -- true
	[[ $(rcli exists job) == 0 ]]
}

# The run intervals of $dir/log ("start|end MS" lines): the most inside at once, and the longest
# time a place freed by an end stayed empty before a start took it, in ms.
occupancy() {
	sort -k2,2n "$dir/log" | awk '
		BEGIN { head = 0; tail = 0 }
		$1 == "start" {
			if (++inside > most) most = inside
			if (head < tail && $2 - freed[head] > gap) gap = $2 - freed[head]
			if (head < tail) head++
		}
		$1 == "end" { inside--; freed[tail++] = $2 }
		END { printf "%d %d\n", most, gap }'
}

@test "--limit 3, 8 contenders x 10 runs: never more than 3 inside, a freed place refilled at once" {
	local i
	worker() {
		local n
		for ((n = 0; n < 10; n++)); do
			"$RR" -l 3 sem -- sh -c 'echo "start $(($(date +%s%N) / 1000000))" >>"$1/log"
				sleep 0.1; echo "end $(($(date +%s%N) / 1000000))" >>"$1/log"' sh "$dir" ||
				echo "exit $?" >>"$dir/failed"
		done
	}
	local pids=()
	for ((i = 0; i < 8; i++)); do
		worker &
		pids+=($!)
	done
	wait "${pids[@]}" # not a bare wait: bats keeps a timer of its own in the background
	[ ! -e "$dir/failed" ]
	[[ $(grep -c start "$dir/log") == 80 ]]
	read -r most gap < <(occupancy 3)
	echo "most inside: $most, longest empty place: ${gap}ms"
	((most == 3))
	# Woken by the release: a waiter nobody woke would wait for the first holder's lease to end
	# (30s); this is a third of it, whatever a busy machine adds to starting and ending runs.
	((gap < 10000)) || { sort -k2,2n "$dir/log"; false; }
	[[ $(keys_but_fences) == "" ]]
}

@test "--limit: REDLOCK_HOLDERS, a place freed by a SIGKILLed holder within its TTL, -n when full" {
	"$RR" -l 2 -t 1s sem -- sh -c 'echo "$REDLOCK_HOLDERS $REDLOCK_TOKEN" >"$1/a"; exec sleep 30' \
		sh "$dir" &
	local a=$!
	wait_until 5 test -s "$dir/a"
	"$RR" -l 2 -t 1s sem -- sh -c 'echo "$REDLOCK_HOLDERS" >"$1/b"; exec sleep 30' sh "$dir" &
	local b=$!
	wait_until 5 test -s "$dir/b"
	local token
	read -r holders token <"$dir/a"
	[[ $holders == 1 && $(cat "$dir/b") == 2 ]]
	run -75 "$RR" -l 2 -n sem -- echo never
	kill -KILL "$a"
	# The dead holder's place ends with its lease (the server's clock, ms); b's is renewed.
	local ends
	ends=$(rcli zscore sem "$token")
	# The third gets that place as it ends: not before, and not never (b keeps its own, so
	# only the dead holder's lease can let it in).
	run -0 timeout 10 "$RR" -l 2 sem -- sh -c 'echo "$REDLOCK_FENCE"'
	((output / 1000 >= ends))
	kill "$b"
	wait "$b" || true
}

@test "--limit: other limits, or a lock of the same name, are a clear 69; several servers 64" {
	"$RR" -l 3 sem -- sh -c 'touch "$1/held"; exec sleep 30' sh "$dir" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	run -69 "$RR" -l 2 -n sem -- echo never
	assert_output --partial "refused to take sem: sem is held with --limit 3, not with --limit 2"
	run -69 "$RR" -n sem -- echo never
	assert_output --partial "refused to take sem: sem is held with --limit 3, not as a lock"
	kill "$holder"
	wait "$holder" || true
	"$RR" lock -- sh -c 'touch "$1/locked"; exec sleep 30' sh "$dir" &
	holder=$!
	wait_until 5 test -e "$dir/locked"
	run -69 "$RR" -l 2 -n lock -- echo never
	assert_output --partial "refused to take lock: lock is held as a lock, not with --limit 2"
	kill "$holder"
	wait "$holder" || true
	run -64 "$RR" -l 2 -r "$REDLOCK_URL" -r redis://127.0.0.1:1 sem -- true
	assert_output --partial "a quorum of servers cannot keep the holders to 2"
	run -64 "$RR" -l 0 sem -- true
	run -0 "$RR" -l 1 sem -- echo "a lock"
}

@test "--limit and -s: a frozen server stops a holder before its lease can lapse, exit 76" {
	local mode holder expires died
	deathwatch_start
	for mode in "-l 2" "-s"; do
		# shellcheck disable=SC2086 # the mode is two words, or one
		"$RR" $mode -t 1s held -- sh -c 'echo $$ >"$1/held"; exec sleep 30' sh "$dir" \
			2>"$dir/err" &
		holder=$!
		wait_until 5 test -s "$dir/held"
		watch_death "$(cat "$dir/held")"
		# The lease as the last renewal left it on the server; then the server freezes.
		expires=$(last_expiry main held)
		kill -STOP "$(redis_pid main)"
		wait_until 5 gone "$holder"
		kill -CONT "$(redis_pid main)"
		rcli client unpause >/dev/null
		reap "$holder"
		cat "$dir/err"
		[ "$status" -eq 76 ]
		# The command was gone before that lease ended on the server's clock.
		died=$(died_at "$(cat "$dir/held")")
		echo "$mode: gone $((expires * 1000 - died))µs before the lease ended" >&2
		((died < expires * 1000))
		rm "$dir/held"
		main_server_reset
	done
	deathwatch_stop
}

@test "--status on a semaphore: every holder, the mode; 0 while a place is free, 75 when full" {
	"$RR" -l 2 sem -- sh -c 'touch "$1/held"; exec sleep 30' sh "$dir" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	run -0 "$RR" --status sem
	assert_output --regexp "^sem is held by 1 of 2 \(a semaphore\): .* for another [0-9.]+s \(fence [0-9]+\)$"
	run -75 "$RR" -l 2 sem -- "$RR" --status --json sem
	assert_output --partial '"held": true'
	assert_output --partial '"mode": "semaphore", "limit": 2, "holders": [{"host": '
	assert_output --regexp '"holders": \[\{[^]]*\}, \{[^]]*\}\]'
	kill "$holder"
	wait "$holder" || true
	run -0 "$RR" --status --json sem
	assert_output --partial '"mode": "exclusive", "limit": 1, "holders": []'
}

# A run that says when it starts and ends: "start|end MICROSECONDS KIND" in $dir/log.
logged_run() {
	local kind=$1
	shift
	"$RR" "$@" -- sh -c 'echo "start $(date +%s%6N) $2" >>"$1/log"; sleep 0.05
		echo "end $(date +%s%6N) $2" >>"$1/log"' sh "$dir" "$kind" ||
		echo "$kind exit $?" >>"$dir/failed"
}

# From $dir/log: the most shared runs inside at once, and how often an exclusive run shared
# its time with any other run (an end sorts before a start of the same microsecond).
overlaps() {
	sort -k2,2n -k1,1 "$dir/log" | awk '
		$1 == "start" && $3 == "x" { if (shared || excl) bad++; excl++ }
		$1 == "start" && $3 == "s" { if (excl) bad++; if (++shared > most) most = shared }
		$1 == "end" && $3 == "x" { excl-- }
		$1 == "end" && $3 == "s" { shared-- }
		END { printf "%d %d\n", most, bad }'
}

@test "-s: 5 shared holders are inside at once, each told how many hold it" {
	local i pids=()
	for ((i = 0; i < 5; i++)); do
		# Each stays until all 5 are in (or 5s pass, and fails).
		"$RR" -s shared -- sh -c 'echo "$REDLOCK_HOLDERS" >"$1/in.$$"; n=0
			while [ "$(ls "$1" | grep -c "^in\.")" -lt 5 ]; do
				n=$((n + 1)); [ "$n" -lt 100 ] || exit 1; sleep 0.05
			done' sh "$dir" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	[[ $(cat "$dir"/in.* | sort -n | tr '\n' ' ') == "1 2 3 4 5 " ]]
	[[ $(keys_but_fences) == "" ]]
}

@test "-s and -x: shared runs overlap, an exclusive one never overlaps any other" {
	local i pids=()
	for ((i = 0; i < 6; i++)); do
		if ((i < 2)); then
			(for _ in 1 2 3 4 5 6; do logged_run x -x mixed; done) &
		else
			(for _ in 1 2 3 4 5 6; do logged_run s -s mixed; done) &
		fi
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	[ ! -e "$dir/failed" ]
	[[ $(grep -c start "$dir/log") == 36 ]]
	read -r most bad < <(overlaps)
	echo "most shared inside: $most, exclusive overlaps: $bad"
	((bad == 0)) || { sort -k2,2n -k1,1 "$dir/log"; false; }
	((most >= 2))
	[[ $(keys_but_fences) == "" ]]
}

@test "-s: a stream of shared newcomers does not starve an exclusive waiter" {
	# A new shared holder every 100ms, each for 2s: shared holders never all leave. Each
	# notes its fence (the server's clock, µs, when it got in).
	(for _ in $(seq 40); do
		"$RR" -s stream -- sh -c 'echo "$REDLOCK_FENCE" >>"$1/shared"; sleep 2' sh "$dir" ||
			echo "shared exit $?" >>"$dir/failed" &
		sleep 0.1
	done
	wait) &
	local stream=$! x queued
	flowing() { [[ $(wc -l 2>/dev/null <"$dir/shared") -ge 5 ]]; }
	wait_until 5 flowing
	"$RR" -w 20s stream -- sh -c 'echo "$REDLOCK_FENCE" >"$1/x"' sh "$dir" &
	x=$!
	exclusive_waits() { rcli zrange '{stream}:waiting' 0 -1 | grep -qv '^s:'; }
	wait_until 5 exclusive_waits
	queued=$(($(server_ms main) * 1000))
	reap "$x"
	[ "$status" -eq 0 ]
	wait "$stream"
	[ ! -e "$dir/failed" ]
	# Newcomers waited behind it: none got in between its place in line and its turn...
	run awk -v q="$queued" -v x="$(cat "$dir/x")" '$1 > q && $1 < x' "$dir/shared"
	assert_output ""
	# ...which came while the stream still flowed, not once it had dried up.
	(($(awk -v x="$(cat "$dir/x")" '$1 > x' "$dir/shared" | wc -l) > 0))
}

@test "-s: a release wakes all the shared waiters, and the last shared one an exclusive waiter" {
	local pids=() i t0
	"$RR" wake -- sh -c 'touch "$1/x"; while [ ! -e "$1/go" ]; do sleep 0.02; done' sh "$dir" &
	local x=$!
	wait_until 5 test -e "$dir/x"
	for ((i = 0; i < 3; i++)); do
		"$RR" -s wake -- sh -c 'touch "$1/s.$$"; while [ ! -e "$1/go2" ]; do sleep 0.02; done' \
			sh "$dir" &
		pids+=($!)
	done
	in_line() { [[ $(rcli zcard '{wake}:waiting') == "$1" ]]; }
	wait_until 5 in_line 3
	t0=$(now_ms)
	touch "$dir/go"
	wait "$x"
	all_in() { [[ $(find "$dir" -name 's.*' | wc -l) == 3 ]]; }
	wait_until 5 all_in
	echo "all shared in after $(($(now_ms) - t0))ms"
	# Woken by the release, not by the end of the 30s lease they blocked on: a third of it.
	(($(now_ms) - t0 < 10000))
	"$RR" wake -- touch "$dir/x2" &
	local x2=$!
	wait_until 5 in_line 1
	t0=$(now_ms)
	touch "$dir/go2"
	wait_until 5 test -e "$dir/x2"
	echo "exclusive in after $(($(now_ms) - t0))ms"
	(($(now_ms) - t0 < 10000))
	for i in "${pids[@]}" "$x2"; do wait "$i"; done
}

# line_length KEY N: N waiters are in KEY's line.
line_length() { [[ $(rcli zcard "{$1}:waiting") == "$2" ]]; }

@test "-s: an exclusive waiter that is stopped leaves the line; the shared ones behind it get in" {
	"$RR" -s line -- sh -c 'touch "$1/s"; exec sleep 30' sh "$dir" &
	local s=$!
	wait_until 5 test -e "$dir/s"
	"$RR" line -- echo never &
	local x=$!
	wait_until 5 line_length line 1
	run -75 "$RR" -s -n line -- echo "not while it waits"
	"$RR" -s line -- sh -c 'echo "$REDLOCK_HOLDERS" >"$1/behind"' sh "$dir" &
	local behind=$! t0
	wait_until 5 line_length line 2
	t0=$(now_ms)
	kill -TERM "$x"
	reap "$x"
	[ "$status" -eq 143 ]
	# Woken as the exclusive waiter left, not when its place in line would have ended (31s):
	# a third of that.
	wait_until 15 test -s "$dir/behind"
	(($(now_ms) - t0 < 10000))
	[[ $(cat "$dir/behind") == 2 ]]
	wait "$behind"
	[[ $(rcli exists '{line}:waiting') == 0 ]]
	run -0 "$RR" -s -n line -- sh -c 'echo "$REDLOCK_HOLDERS"'
	assert_output 2
	kill "$s"
	wait "$s" || true
}

@test "-s: an exclusive waiter whose -w runs out leaves the line, even mid-attempt" {
	"$RR" -s out -- sh -c 'touch "$1/s"; exec sleep 30' sh "$dir" &
	local s=$! behind t0 n
	wait_until 5 test -e "$dir/s"
	"$RR" -w 1s out -- echo never &
	local x=$!
	wait_until 5 line_length out 1
	"$RR" -s out -- touch "$dir/behind" &
	behind=$!
	wait_until 5 line_length out 2
	reap "$x"
	[ "$status" -eq 75 ]
	# Woken as it left, not when its place in line would have ended (31s): a third of that.
	t0=$(now_ms)
	wait_until 15 test -e "$dir/behind"
	(($(now_ms) - t0 < 10000))
	wait "$behind"
	# A wait that runs out while its attempt is on its way (the attempt put it in line):
	# the line is left all the same, and shared newcomers are not kept out.
	for n in 1 2 3 4 5; do
		run -75 "$RR" -w 1ms out -- echo never
		[[ $(rcli exists '{out}:waiting') == 0 ]]
		run -0 "$RR" -s -n out -- true
	done
	kill "$s"
	wait "$s" || true
}

@test "--min-hold keeps a semaphore's or shared place as kept, and --status and --list say so" {
	run -0 "$RR" -l 2 --min-hold 30s sem -- true
	local pid
	pid=$(rcli zrange sem 0 -1 | sed -n 's/^.*:\([0-9]*\):kept$/\1/p')
	[[ -n $pid ]]
	run -0 "$RR" --status sem
	assert_output --regexp "^sem is held by 1 of 2 \(a semaphore\): $(hostname):$pid \(kept\) for another [0-9.]+s "
	run -0 "$RR" --status --json sem
	echo "$output" | python3 -c 'import json, sys
o = json.load(sys.stdin)
h = o["holders"]
assert len(h) == 1 and h[0]["kept"] is True and h[0]["process"] is None, h
assert not o["held"] and not o["kept"] and o["token"] is None, o'
	# (--list needs SCAN, which the least-privilege user of the -acl runs may not use.)
	if [ -z "${REDLOCK_TEST_AS_LOCKER:-}" ]; then
		run -0 "$RR" --list
		assert_line --index 1 --regexp "^sem +limit 2 +$(hostname):$pid \(kept\) "
	fi
	# The kept place counts: one is left, then none.
	run -0 "$RR" -l 2 --min-hold 30s -n sem -- true
	run -75 "$RR" -l 2 -n sem -- echo never
	# Full: the top-level fields tell of its first holder, kept as well.
	run -75 "$RR" --status --json sem
	echo "$output" | python3 -c 'import json, sys
o = json.load(sys.stdin)
assert o["held"] and o["kept"] and o["token"] == o["holders"][0]["token"], o'
	if [ -z "${REDLOCK_TEST_AS_LOCKER:-}" ]; then
		run -0 "$RR" --list
		assert_line --index 1 --regexp "^sem +limit 2 +$(hostname):[0-9]+ \(kept\) \+1 "
	fi
	run -0 "$RR" -s --min-hold 30s readers -- true
	run -75 "$RR" --status readers
	assert_output --regexp "^readers is held shared by 1: $(hostname):[0-9]+ \(kept\) for another "
	run -75 "$RR" -n readers -- echo never
}

@test "-s with --min-hold: an exclusive waiter gets the lock when the kept place ends" {
	"$RR" -s kept -- sh -c 'touch "$1/s"; until [ -e "$1/go" ]; do sleep 0.02; done' sh "$dir" &
	local s=$! t0
	wait_until 5 test -e "$dir/s"
	t0=$(now_ms)
	run -0 "$RR" -s --min-hold 2s kept -- true
	"$RR" -w 40s kept -- sh -c 'echo $(($(date +%s%N) / 1000000)) >"$1/x"' sh "$dir" &
	local x=$!
	wait_until 5 line_length kept 1
	touch "$dir/go"
	wait "$s"
	# The last holder is gone; the place kept by --min-hold ends 2s after it was taken (after
	# t0): the waiter blocks until then, not for the first holder's whole lease (30s, taken
	# just before t0): half of it.
	wait_until 20 test -s "$dir/x"
	local started
	started=$(cat "$dir/x")
	echo "the exclusive waiter started $((started - t0))ms after t0" >&2
	((started - t0 >= 2000 && started - t0 < 15000))
	wait "$x"
}

@test "-s: mixed with --limit is a clear 69; with --limit N or several servers 64; -x undoes it" {
	"$RR" -s mix -- sh -c 'touch "$1/s"; exec sleep 30' sh "$dir" &
	local s=$!
	wait_until 5 test -e "$dir/s"
	run -69 "$RR" -l 2 -n mix -- echo never
	assert_output --partial "refused to take mix: mix is held shared, not with --limit 2"
	run -75 "$RR" -n mix -- echo never
	run -75 "$RR" -s -x -n mix -- echo never
	kill "$s"
	wait "$s" || true
	"$RR" -l 2 mix -- sh -c 'touch "$1/l"; exec sleep 30' sh "$dir" &
	s=$!
	wait_until 5 test -e "$dir/l"
	run -69 "$RR" -s -n mix -- echo never
	assert_output --partial "refused to take mix: mix is held with --limit 2, not shared"
	kill "$s"
	wait "$s" || true
	run -64 "$RR" -s -l 2 mix -- true
	assert_output --partial "--shared and --limit 2"
	run -64 "$RR" -s -r "$REDLOCK_URL" -r redis://127.0.0.1:1 mix -- true
	assert_output --partial "--shared with 2 servers is not supported yet"
	run -0 "$RR" -s -l 1 mix -- echo "shared, of one"
}

@test "--status on a shared lock: every holder, the mode; 75, or 0 asked with -s unless one waits to hold it alone" {
	local pids=() i
	for i in 1 2; do
		"$RR" -s shared -- sh -c 'touch "$1/held.$$"; exec sleep 30' sh "$dir" &
		pids+=($!)
	done
	both() { [[ $(find "$dir" -name 'held.*' | wc -l) == 2 ]]; }
	wait_until 5 both
	run -75 "$RR" --status shared
	assert_output --regexp "^shared is held shared by 2: .* for another [0-9.]+s, .* for another [0-9.]+s \(fence [0-9]{16}\)$"
	run -0 "$RR" --status -s shared
	run -75 "$RR" --status --json shared
	assert_output --partial '"held": true'
	assert_output --partial '"mode": "shared", "limit": null, "holders": [{"host": '
	assert_output --regexp '"holders": \[\{[^]]*\}, \{[^]]*\}\]'
	# An exclusive waiter in line: shared newcomers wait behind it, and -s says so.
	"$RR" shared -- true &
	local exclusive=$!
	wait_until 5 line_length shared 1
	run -75 "$RR" -s -n shared -- echo never
	run -75 "$RR" --status -s shared
	kill "$exclusive"
	reap "$exclusive"
	kill "${pids[@]}"
	for i in "${pids[@]}"; do wait "$i" || true; done
}
