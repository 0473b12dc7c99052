#!/usr/bin/env bats
# A fleet upgrades one host at a time, so the keys in Redis are an interface (DESIGN §3):
# hosts of this release and of the one before it (NEWS names its commit) exclude each other
# on one KEY, as a lock, shared and with --limit, wait in one line, and hand out fences that
# grow whoever takes the lock. The previous release is built from the repository's history;
# in a tree without git (a release tarball) there is none to build, and the file says so.

bats_require_minimum_version 1.5.0
# The build of the previous release comes first.
BATS_TEST_TIMEOUT=300
load helpers

# Why the tests are skipped, if they are: bats 1.8 (Debian 12) cannot skip from setup_file.
setup_file() {
	local commit
	if ! git -C "$SOURCE_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		export UPGRADE_SKIP="no git history here (a release tarball): the previous release cannot be built"
		return 0
	fi
	commit=$(sed -n 's/^## [0-9.]* (.*, commit \([0-9a-f]*\))$/\1/p' "$SOURCE_ROOT/NEWS" | head -1)
	[ -n "$commit" ] || {
		echo "NEWS names no previous release's commit" >&2
		return 1
	}
	if ! git -C "$SOURCE_ROOT" cat-file -e "$commit^{commit}" 2>/dev/null; then
		export UPGRADE_SKIP="this clone's history does not reach the previous release ($commit): git fetch --unshallow"
		return 0
	fi
	OLD=$BATS_FILE_TMPDIR/old
	mkdir -p "$OLD/src"
	git -C "$SOURCE_ROOT" archive "$commit" | tar -x -C "$OLD/src"
	meson setup "$OLD/build" "$OLD/src" -Dtests=false -Dtls=disabled >"$OLD/setup.log" 2>&1 ||
		{ cat "$OLD/setup.log" >&2; return 1; }
	ninja -C "$OLD/build" redlock-run >"$OLD/build.log" 2>&1 || { cat "$OLD/build.log" >&2; return 1; }
	redis_start main
}

teardown_file() {
	redis_stop main
}

setup() {
	[ -z "${UPGRADE_SKIP:-}" ] || skip "$UPGRADE_SKIP"
	OLD_RR=$BATS_FILE_TMPDIR/old/build/redlock-run
	export REDLOCK_URL="unix://$(redis_sock main)"
	rcli flushall >/dev/null
	dir=$BATS_TEST_TMPDIR
}

# hold PROGRAM ARGS...: PROGRAM holds a lock with ARGS until $dir/go exists; its pid in $held.
hold() {
	local program=$1 ready
	shift
	ready=$dir/ready.$RANDOM
	"$program" "$@" -- sh -c 'touch "$1"; until [ -e "$2" ]; do sleep 0.05; done' sh "$ready" \
		"$dir/go" 3>&- &
	held=$!
	wait_until 5 test -e "$ready"
}

@test "the previous release is the one NEWS names, and this one is newer" {
	local version
	version=$(sed -n 's/^## \([0-9.]*\) (.*, commit [0-9a-f]*)$/\1/p' "$SOURCE_ROOT/NEWS" | head -1)
	run "$OLD_RR" --version
	assert_output --partial "redlock-run $version "
	run "$RR" --version
	refute_output --partial "redlock-run $version "
}

@test "a lock: the old release's holder keeps the new one out, and the other way round" {
	hold "$OLD_RR" job
	run -75 "$RR" -n job -- echo never
	touch "$dir/go"
	wait "$held"
	rm "$dir/go"
	hold "$RR" job
	run -75 "$OLD_RR" -n job -- echo never
	touch "$dir/go"
	wait "$held"
}

@test "a waiter of one release is woken by the other's release, both ways" {
	local holder waiter
	for holder in "$OLD_RR" "$RR"; do
		waiter=$([[ $holder == "$RR" ]] && echo "$OLD_RR" || echo "$RR")
		rm -f "$dir/go" "$dir/out" "$dir/err"
		hold "$holder" -t 30s job
		"$waiter" -v job -- echo woken >"$dir/out" 2>"$dir/err" &
		local pid=$!
		wait_until 5 grep -q "waiting for job" "$dir/err"
		touch "$dir/go"
		wait "$held"
		reap "$pid"
		assert_equal "$status" 0
		assert_equal "$(cat "$dir/out")" woken
		# Woken by the release, not by the end of the 30s lease: in well under half of it.
		grep -Eq "acquired job (on [^ ]+ )?after ([0-9]+ms|([0-9]|1[0-4])(\.[0-9])?s)," "$dir/err"
	done
}

@test "shared holders of both releases share; an exclusive one of either waits for them" {
	hold "$OLD_RR" -s shared
	local old=$held
	hold "$RR" -s shared
	local new=$held
	run -75 "$RR" -n shared -- echo never
	run -75 "$OLD_RR" -n shared -- echo never
	touch "$dir/go"
	wait "$old" "$new"
}

@test "--limit 2: one holder of each release fill it; a third of either waits" {
	hold "$OLD_RR" -l 2 sem
	local old=$held
	hold "$RR" -l 2 sem
	local new=$held
	run -75 "$RR" -n -l 2 sem -- echo never
	run -75 "$OLD_RR" -n -l 2 sem -- echo never
	touch "$dir/go"
	wait "$old" "$new"
}

@test "fences grow whichever release takes the lock" {
	local i fence last=0
	for i in 1 2 3 4; do
		fence=$("$OLD_RR" job -c 'echo $REDLOCK_FENCE')
		((fence > last))
		last=$fence
		fence=$("$RR" job -c 'echo $REDLOCK_FENCE')
		((fence > last))
		last=$fence
	done
}
