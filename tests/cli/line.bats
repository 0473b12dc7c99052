#!/usr/bin/env bats
# The waiting line at scale (issue 23): a waiter keeps its connection while a holder keeps the
# lock and looks again cheaply, a long line drains completely, and the line's bookkeeping stays
# right when waiters are killed, time out or are signalled in the middle of it.

bats_require_minimum_version 1.5.0
load helpers

main_server_fixture

# stats NAME...: how many times each command NAME ran since the last reset, scripts' own
# included, from one reading, in that order; "all" is every command but the tests' own.
stats() {
	rcli info commandstats | awk -F '[_:=,]' -v names="$*" '
		/^cmdstat_/ { n[$2] = $4; if ($2 !~ /^(info|config|client|zcard)$/) n["all"] += $4 }
		END { split(names, w, " "); for (i = 1; i in w; i++) printf "%d ", n[w[i]]; print "" }'
}

# blocked [ID]: connection ID alone is blocked in a BLPOP; with no ID, one connection is.
blocked() { local ids; ids=$(blocked_ids main); [[ $ids =~ ^[0-9]+$ && ( $# == 0 || $ids == "$1" ) ]]; }

# looked N: the waiter has looked again N times (each look ends a BLPOP) since the last reset.
looked() { (($(stats blpop) >= $1)); }

no_keys_but_fences() { [[ -z $(keys_but_fences) ]]; }

in_line() { [[ $(rcli zcard '{job}:waiting') == "$1" ]]; }

# What a scenario that failed left running goes with it.
teardown() {
	[ -z "${BATS_TEST_COMPLETED:-}" ] || return 0
	kill_jobs
}

@test "a waiter keeps its one connection through a long hold, and each look costs 8 commands" {
	"$RR" -t 1s job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	"$RR" job -- true &
	waiter=$!
	wait_until 10 blocked
	id=$(blocked_ids main)
	rcli config resetstat >/dev/null
	# The holder's lease is a second, renewed every third of it: the waiter looks again as
	# each lease it waited out would have ended, and blocks again.
	wait_until 60 looked 5
	read -r looks all renewals < <(stats blpop all get)
	# Still the one connection it had (a new one would have a new id).
	wait_until 10 blocked "$id"
	# The holder's renewals run EVALSHA, GET, PEXPIRE and PEXPIRE (its fence); the rest is
	# the waiter's: EVALSHA, SET, PTTL, TIME, ZADD, PEXPIRE (its place) and PEXPIRE (its turn)
	# per look, and its BLPOP. (The window may open or close in the middle of a look.)
	commands=$((all - 4 * renewals))
	echo "waiter: $commands commands in $looks looks" >&2
	((commands <= 8 * looks + 8))
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
	reap "$waiter"
	assert_equal "$status" 0
}

@test "a waiter behind the longest lease there is blocks until its wait ends, as behind any other" {
	"$RR" -t 106000d job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	rcli config resetstat >/dev/null
	run "$RR" -w 2s job -- true
	local waited=$status
	touch "$dir/go"
	reap_ok "$holder"
	assert_equal "$waited" 75
	# Blocked in one BLPOP for the wait (a margin added to such a lease once wrapped around
	# into the past: the waiter looked again every 10 ms, hundreds of times).
	read -r looks attempts < <(stats blpop evalsha)
	echo "$looks BLPOP, $attempts EVALSHA" >&2
	((looks <= 2 && attempts <= 5))
}

@test "a line of 300 drains completely: each waiter runs once, alone, and exits 0" {
	"$RR" job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	pids=()
	for i in $(seq 300); do
		"$RR" job -c "[ ! -e $dir/inside ] || echo overlap >> $dir/bad
			touch $dir/inside; echo $i >> $dir/ran; rm $dir/inside" &
		pids+=($!)
	done
	wait_until 120 in_line 300
	rcli config resetstat >/dev/null
	rcli monitor >"$dir/monitor" &
	monitor=$!
	wait_until 10 test -s "$dir/monitor"
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
	failed=0
	for pid in "${pids[@]}"; do
		wait "$pid" || failed=$((failed + 1))
	done
	assert_equal "$failed" 0
	assert_equal "$(sort -n "$dir/ran" | uniq | wc -l)" 300
	assert_equal "$(wc -l < "$dir/ran")" 300
	[ ! -e "$dir/bad" ]
	# Nothing is left of the line: the last release found nobody to wake.
	assert_equal "$(keys_but_fences)" ""
	kill "$monitor"
	reap "$monitor"
	# No script read the line whole: each look at it (the first in arrival order, of either
	# kind, and the one after) reads two members at most, a few looks per handoff, and the
	# release's follow-up (did the first come?) four.
	grep -E '"ZRANGE(BYSCORE)?" "\{job\}:(waiting|queue)' "$dir/monitor" >"$dir/reads" || true
	read -r zrange < <(stats zrange)
	((zrange >= 300 && zrange <= 7 * 300))
	# (A line of MONITOR, split at its quotes: 2 the command, 4 the key, 6 and 8 the range.)
	assert_equal "$(awk -F'"' '!($2 == "ZRANGE" && $6 ~ /^[0-9]+$/ && $8 ~ /^[0-9]+$/ &&
		$8 - $6 >= 0 && $8 - $6 <= 3)' "$dir/reads" | wc -l)" 0
}

@test "waiters killed, timed out and signalled in the middle of the line: the rest get through" {
	"$RR" -t 2s job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	for i in 1 2 3; do
		"$RR" job -- touch "$dir/ran.stays.$i" &
		stays[i]=$!
		"$RR" job -- touch "$dir/ran.killed.$i" &
		killed[i]=$!
		"$RR" job -- touch "$dir/ran.termed.$i" &
		termed[i]=$!
		"$RR" -s job -- touch "$dir/ran.shared.$i" &
		shared[i]=$!
	done
	wait_until 10 in_line 12
	run "$RR" -w 0.5 job -- touch "$dir/ran.timed-out"
	assert_equal "$status" 75
	kill -KILL "${killed[@]}"
	kill -TERM "${termed[@]}"
	for pid in "${killed[@]}"; do
		reap "$pid"
		assert_equal "$status" 137
	done
	for pid in "${termed[@]}"; do
		reap "$pid"
		assert_equal "$status" 143
	done
	# Those that timed out or were signalled left their places; the killed ones' end
	# shortly after the lease they waited out.
	wait_until 10 in_line 9
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
	for pid in "${stays[@]}" "${shared[@]}"; do
		reap "$pid"
		assert_equal "$status" 0
	done
	assert_equal "$(find "$dir" -name 'ran.stays.*' | wc -l)" 3
	assert_equal "$(find "$dir" -name 'ran.shared.*' | wc -l)" 3
	assert_equal "$(find "$dir" -name 'ran.killed.*' -o -name 'ran.termed.*' -o -name 'ran.timed-out' | wc -l)" 0
	# Nothing is left but the fence counter, and, when the last in line was a killed waiter
	# (the last release woke it, and it never came), its places: in the arrival order for
	# the hour such a queue lasts, among the places for as long as the longest did, and its
	# wake-up for a second.
	local dead=":(${killed[1]}|${killed[2]}|${killed[3]})\$"
	only_the_dead_left() {
		local key
		for key in $(keys_but_fences); do
			case $key in
			'{job}:queue' | '{job}:waiting') ! rcli zrange "$key" 0 -1 | grep -vE "$dead" ;;
			'{job}:wake:'*) [[ $key =~ $dead ]] ;;
			*) false ;;
			esac || return 1
		done
	}
	wait_until 10 only_the_dead_left
}

@test "waiters killed at the front of a semaphore's line hold its places back a moment, not for ever" {
	local i pid holders=() dead=() live=()
	for i in 1 2 3; do
		"$RR" -l 3 -t 3s job -c "echo ready > $dir/ready.$i; until [ -e $dir/go ]; do sleep 0.05; done" &
		holders+=($!)
		wait_until 5 test -s "$dir/ready.$i"
	done
	for i in 1 2; do
		"$RR" -l 3 -t 3s job -- true &
		dead+=($!)
		wait_until 5 in_line "$i"
	done
	# Behind them, sections of 0.4s each: one at a time, they take 4s, and the releases never
	# stop coming.
	for i in $(seq 10); do
		"$RR" -l 3 -t 3s job -c "echo start \$(date +%s%6N) >> $dir/log; sleep 0.4
			echo end \$(date +%s%6N) >> $dir/log" &
		live+=($!)
	done
	wait_until 10 in_line 12
	kill -KILL "${dead[@]}"
	touch "$dir/go"
	for pid in "${holders[@]}" "${live[@]}"; do
		reap "$pid"
		assert_equal "$status" 0
	done
	# Each release woke the dead ones again, but gave them no more than the first handoff's
	# time: the line soon ran more than one at a time again (up to 3).
	run awk '$1 == "start" { n++; if (n > most) most = n } $1 == "end" { n-- } END { print most }' \
		<(sort -n -k2 "$dir/log")
	echo "at most $output at once" >&2
	((output >= 2))
}

# killed_at_front N OPTION...: a holder with an hour's lease, N waiters killed outright at the
# front of the line, one behind them; the holder ends. The one behind gets its turn a handoff
# after the killed ones', not as the lease it waited out (an hour) would have ended. The
# holder also has the options in the array holder_opts, the killed ones those in killed_opts,
# the one behind those in behind_opts.
holder_opts=() killed_opts=() behind_opts=()
killed_at_front() {
	local i n=$1 killed=()
	shift
	"$RR" -t 1h "${holder_opts[@]}" "$@" job \
		-c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	for ((i = 1; i <= n; i++)); do
		"$RR" "${killed_opts[@]}" "$@" job -- touch "$dir/ran.killed" &
		killed+=($!)
		wait_until 10 in_line "$i"
	done
	"$RR" "${behind_opts[@]}" "$@" job -- touch "$dir/ran.behind" &
	behind=$!
	wait_until 10 in_line $((n + 1))
	kill -KILL "${killed[@]}"
	for i in "${killed[@]}"; do
		reap "$i"
		assert_equal "$status" 137
	done
	touch "$dir/go"
	reap_ok "$holder"
	wait_until 30 test -e "$dir/ran.behind"
	reap_ok "$behind"
	[ ! -e "$dir/ran.killed" ]
}

@test "a waiter killed at the front of the line holds the one behind it back a moment, not a lease" {
	killed_at_front 1
}

@test "so do two killed there together, as a CI job cancelled whole" {
	killed_at_front 2
}

@test "so behind a lock that --min-hold keeps after its command" {
	holder_opts=(--min-hold 8s)
	killed_at_front 1
}

@test "so for a shared waiter behind an exclusive one" {
	behind_opts=(-s)
	killed_at_front 1
}

@test "so for an exclusive waiter behind a killed shared one" {
	killed_opts=(-s)
	killed_at_front 1
}

@test "two shared waiters killed together at the front are passed over in one handoff, not one each" {
	"$RR" -t 1h job -c "echo ready > $dir/ready; until [ -e $dir/go ]; do sleep 0.05; done" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	local killed=() i
	for i in 1 2; do
		"$RR" -s job -- touch "$dir/ran.killed" &
		killed+=($!)
		wait_until 10 in_line "$i"
	done
	"$RR" job -- touch "$dir/ran.behind" &
	behind=$!
	wait_until 10 in_line 3
	kill -KILL "${killed[@]}"
	for i in "${killed[@]}"; do
		reap "$i"
	done
	# place_of PID: when the place of the waiter of that pid ends (ms), if it has one.
	place_of() {
		rcli zrange '{job}:waiting' 0 -1 withscores | paste - - |
			awk -v pid=":$1" 'substr($1, length($1) - length(pid) + 1) == pid {
				printf "%.0f\n", $2 < 0 ? -$2 : $2 }'
	}
	passed() { local s; s=$(place_of "$1"); [[ -z $s ]] || ((s <= $(server_ms main) + 1500)); }
	touch "$dir/go"
	reap_ok "$holder"
	# The one behind passes the first: the second, which would go with it, goes too.
	wait_until 10 passed "${killed[0]}"
	passed "${killed[1]}"
	wait_until 30 test -e "$dir/ran.behind"
	reap_ok "$behind"
	[ ! -e "$dir/ran.killed" ]
}

@test "so in a semaphore's line" {
	"$RR" -l 2 -t 1h job -c "until [ -e $dir/go.other ]; do sleep 0.05; done" &
	other=$!
	holders() { [[ $(rcli zcard job) == "$1" ]]; } # (asked on every poll)
	wait_until 5 holders 2
	killed_at_front 1 -l 2
	touch "$dir/go.other"
	reap_ok "$other"
}
