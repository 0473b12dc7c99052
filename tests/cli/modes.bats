#!/usr/bin/env bats
# More than a mutex (issue 12). --min-hold: a command that ends sooner leaves the lock taken
# until the minimum is over, exits at once with its own status, and the next holder gets the
# lock when it runs out, woken for it.

bats_require_minimum_version 1.5.0
load helpers

setup_file() { main_server_start; }
teardown_file() { main_server_stop; }
setup() { main_server_reset; }

@test "--min-hold 2s, a command of 100ms: its status at once, 75 for -n until 2s, the lock after" {
	local t0 took
	t0=$(now_ms)
	run -3 "$RR" --min-hold 2s job -- sh -c 'sleep 0.1; exit 3'
	took=$(($(now_ms) - t0))
	((took < 1000))
	# Still taken, with what is left of the 2s, and nothing else left behind.
	held_on main job
	(($(rcli pttl job) > 2000 - took - 200))
	run -75 "$RR" -n job -- echo never
	refute_output --partial never
	wait_until 5 free_on main job
	(($(now_ms) - t0 >= 2000))
	run -0 "$RR" -n job -- echo after
	assert_output after
}

@test "--min-hold: a waiter that blocked on the holder's whole lease gets the lock as it ends" {
	local t0
	t0=$(now_ms)
	"$RR" -t 30s --min-hold 2s job -- sh -c 'touch "$1/held"; sleep 0.3' sh "$dir" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	# It finds 30s left, and blocks for that long: the release must wake it.
	"$RR" -v job -- sh -c 'echo "$(($(date +%s%N) / 1000000))" >"$1/started"' sh "$dir" \
		2>"$dir/err" &
	local waiter=$!
	reap "$holder"
	[ "$status" -eq 0 ]
	wait_until 10 gone "$waiter"
	reap "$waiter"
	cat "$dir/err"
	[ "$status" -eq 0 ]
	local started
	started=$(cat "$dir/started")
	((started - t0 >= 2000))
	# Within a handoff of the end: 2s after the holder acquired it (which was after t0).
	((started - t0 < 2000 + 600))
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
