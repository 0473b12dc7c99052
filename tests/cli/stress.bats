#!/usr/bin/env bats
# No overlap, ever (issue 3): 8 contenders x 25 runs through one lock, with a lease shorter
# than some critical sections and holders SIGKILLed at random.

bats_require_minimum_version 1.5.0
# The time limit is read before a test starts: set inside one, it would not count.
BATS_TEST_TIMEOUT=120
load helpers

setup() {
	redis_start stress
	export REDLOCK_URL="unix://$(redis_sock stress)"
	dir=$BATS_TEST_TMPDIR
}

teardown() {
	redis_stop stress
}

# The critical section. On entry it checks that the previous holder's process is gone (a
# zombie counts as gone): that catches an overlap even with a section that was killed
# before it could log its end. It logs "<fence> <µs> start|end <pid>" to $dir/log.
write_section() {
	cat >"$dir/section" <<'EOT'
#!/bin/bash
dir=$1
if read -r prev <"$dir/holder" 2>/dev/null && read -r _ _ state _ <"/proc/$prev/stat" 2>/dev/null &&
	[[ $state != Z ]]; then
	echo "fence $REDLOCK_FENCE started while $prev was still running" >>"$dir/violations"
fi
echo $$ >"$dir/holder"
echo "$REDLOCK_FENCE ${EPOCHREALTIME/./} start $$" >>"$dir/log"
sleep "$2"
echo "$REDLOCK_FENCE ${EPOCHREALTIME/./} end $$" >>"$dir/log"
EOT
	chmod +x "$dir/section"
}

@test "no overlap, ever: 8 contenders x 25 runs, leases shorter than some sections, random SIGKILLs" {
	write_section
	: >"$dir/violations"
	start=$(now_ms)
	workers=()
	for w in 1 2 3 4 5 6 7 8; do
		(
			for i in $(seq 25); do
				# one section in seven outlasts the 300ms lease: renewal must carry it
				if ((RANDOM % 7 == 0)); then t=0.45; else t=0.0$((RANDOM % 4 + 1)); fi
				"$RR" -t 300ms stress -- "$dir/section" "$dir" "$t" 2>>"$dir/errors" || true
			done
		) 3>&- &
		workers+=($!)
	done
	# Kill a holder (the redlock-run whose section runs) now and then.
	kills=0
	while sleep 0.$((RANDOM % 5 + 5)); kill -0 "${workers[@]}" 2>/dev/null && ((kills < 8)); do
		holder=$(cat "$dir/holder" 2>/dev/null) || continue
		parent=$(ps -o ppid= -p "$holder" 2>/dev/null | tr -d ' ')
		if [[ -n $parent ]] && [[ $(ps -o comm= -p "$parent") == redlock-run ]]; then
			kill -KILL "$parent" 2>/dev/null && kills=$((kills + 1))
		fi
	done
	for w in "${workers[@]}"; do
		wait "$w"
	done
	elapsed=$(($(now_ms) - start))
	echo "# $(grep -c start "$dir/log") sections, $kills holders killed, ${elapsed}ms" >&3

	# Nobody started while another was inside.
	run cat "$dir/violations"
	assert_output ""
	# Fences strictly increase in the order the sections started, and a section that
	# logged its end ended before the next one started. (A killed section logs no end:
	# the check on entry above covers it.)
	sort -n -k2 "$dir/log" | awk '
		$3 == "start" {
			if (NR > 1 && $1 <= fence) { print "fence " $1 " after " fence; bad = 1 }
			fence = $1
		}
		$3 == "end" && $1 != fence { print "fence " $1 " ended inside " fence; bad = 1 }
		END { exit bad }'
	(($(grep -c start "$dir/log") >= 150))
	((kills >= 3))
	((elapsed < 60000))
}
