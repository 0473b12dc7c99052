# Shared by the command-line scenarios. Each file gets private redis-servers on Unix sockets
# (or free loopback ports) in its own temporary folder; nothing is mocked, every wait is a
# bounded poll, and every test has a time limit.

bats_load_library bats-support
bats_load_library bats-assert
# shellcheck source=tests/cli/topology.bash
. "${BATS_TEST_DIRNAME}/topology.bash"

: "${REDLOCK_RUN:?meson test sets REDLOCK_RUN to the binary under test}"
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-60}
# -c runs its string with $SHELL, which CI may leave unset (then /bin/sh, dash on Debian) and a
# developer's login sets to bash: the same /bin/sh everywhere, so that a bash-only word in a
# scenario's command fails on every machine, not on CI's alone.
export SHELL=/bin/sh

# relay_start NAME: a relay (relay.py) in front of server NAME, on the Unix socket
# $(relay_sock NAME), misbehaving as the first line of $(relay_mode NAME) says (pass, delay MS,
# drop, drop-once, blackhole, refuse, one-reply, hold); its pid in $relay, stopped by
# relay_stop. It starts in pass, with an empty log, whatever an earlier test left.
relay_start() {
	local d
	d=$(redis_dir "$1")
	rm -f "$d/relay.ready" "$d/relay.mode" "$d/relay.log"
	python3 "$SOURCE_ROOT/tests/cli/relay.py" --listen "$d/relay.sock" \
		--target "$(redis_sock "$1")" --control "$d/relay.mode" --ready "$d/relay.ready" \
		--log "$d/relay.log" 3>&- &
	relay=$!
	wait_until 5 test -s "$d/relay.ready"
}
relay_sock() { echo "$(redis_dir "$1")/relay.sock"; }
relay_mode() { echo "$(redis_dir "$1")/relay.mode"; }
# relay_set NAME MODE: switches the relay's behaviour at once (atomically, by rename).
relay_set() {
	echo "$2" >"$(relay_mode "$1").tmp"
	mv "$(relay_mode "$1").tmp" "$(relay_mode "$1")"
}
relay_stop() {
	[ -n "${relay:-}" ] || return 0
	kill "$relay" 2>/dev/null || true
	wait_until 5 gone "$relay"
	relay=
}

# tls_certs DIR: the throwaway CA and certificates of scripts/certs.sh.
tls_certs() {
	"$SOURCE_ROOT/scripts/certs.sh" "$1"
}

# redis_start_tls NAME CERT [args...]: a server whose only port is a TLS one (free, on
# 127.0.0.1, in NAME/port), presenting $certs/CERT; the tests' own redis-cli uses its Unix
# socket.
redis_start_tls() {
	local name=$1 cert=$2
	shift 2
	redis_start_tcp "$name" --port 0 --tls-port {port} --tls-cert-file "$certs/$cert.crt" \
		--tls-key-file "$certs/$cert.key" --tls-ca-cert-file "$certs/ca.crt" \
		--tls-auth-clients no "$@"
}


# held_on NAME KEY: KEY exists on server NAME (redis-cli itself succeeds either way); free_on:
# it does not.
held_on() { [[ $(rcli_on "$1" exists "$2") == 1 ]]; }
free_on() { [[ $(rcli_on "$1" exists "$2") == 0 ]]; }

# blocked_ids NAME: the ids of the connections blocked in a command (a BLPOP) on server NAME,
# one per line. (A connection's id is new with every connection.)
blocked_ids() {
	rcli_on "$1" client list | sed -n 's/^id=\([0-9]*\) .* flags=[A-Za-z]*b[A-Za-z]* .*/\1/p' | sort -n
}

# rcli [NAME] ARGS...: redis-cli on server NAME (default: main).
rcli() { redis-cli -s "$(redis_sock main)" "$@"; }
# calls_on NAME COMMAND...: how many times server NAME ran these commands together (named as
# INFO commandstats names them: evalsha, zadd), since its statistics were last reset.
calls_on() {
	local name=$1
	shift
	rcli_on "$name" info commandstats | awk -F '[:=,]' -v commands=" $* " '
		/^cmdstat_/ && index(commands, " " substr($1, 9) " ") { n += $3 }
		END { print n + 0 }'
}


# The binary under test, short. Scenarios export REDLOCK_URL and run it directly (never
# through a shell function), so that `"$RR" ... &` leaves redlock-run's own pid in $!.
RR=$REDLOCK_RUN

# Every key on the main server but fence counters (which outlive a lock by an hour).
keys_but_fences() { rcli --scan | grep -v ':fence$' | sort || true; }

# up_for SECONDS NAME...: servers NAME have run that long at least.
up_for() {
	local seconds=$1 name up
	shift
	for name in "$@"; do
		up=$(rcli_on "$name" info server | sed -n 's/^uptime_in_seconds:\([0-9]*\).*/\1/p')
		((up >= seconds)) || return 1
	done
}

# is_fence VALUE: VALUE is a fence as redlock-run hands them out, the server's clock in µs or
# just above it (this one from 2026 on), below 2^53.
is_fence() { [[ $1 =~ ^[0-9]{16}$ ]] && (($1 > 1767225600000000 && $1 < 9007199254740992)); }


# kill_jobs: kills what a scenario left running in the background (a holder of -t 1h, say), so
# that bats does not wait for it. Not bats's own timeout watchdog, a subshell of bats-exec-test
# that sleeps for BATS_TEST_TIMEOUT: killed outright, it leaves that sleep holding the test's
# output open, and bats and meson waiting, until the timeout runs out.
kill_jobs() {
	local pid
	for pid in $(jobs -p); do
		grep -q bats-exec-test "/proc/$pid/cmdline" 2>/dev/null &&
			pgrep -P "$pid" -fx "sleep ${BATS_TEST_TIMEOUT:-}" >/dev/null ||
			kill -KILL "$pid" 2>/dev/null || true
	done
}

# state PID: the process's state letter (S, T, Z...).
state() {
	local s
	read -r _ _ s _ <"/proc/$1/stat" && echo "$s"
}

# running PID: the process is not stopped; stopped PID: it is.
running() { [[ $(state "$1") != T ]]; }
stopped() { [[ $(state "$1") == T ]]; }

# as_job OUT ARGS...: redlock-run ARGS in a job of its own of a script with job control (set -m),
# its output and errors in OUT, its pid in $dir/rr; the script's in $!. The job control keeps
# redlock-run's group from being orphaned, as it is under a test runner that starts a session
# of its own: there the kernel discards every stop signal.
as_job() {
	local out=$1
	shift
	(
		set -m
		"$RR" "$@" >"$out" 2>&1 3>&- &
		echo $! >"$dir/rr"
		wait $!
	) 3>&- &
}

# under_fd_limits ARGS...: redlock-run ARGS under each descriptor limit from 4 to 24, so that
# some limit leaves it none for what it opens next, whatever else it opened; each run that says
# it ran out of them must exit 71. Every run's "LIMIT: STATUS MESSAGE", one per line, in
# $dir/limits. (Not with run: the lowest limits fail in the dynamic loader, 127, which run
# would warn about.)
under_fd_limits() {
	local n status err
	# LeakSanitizer reads /proc as a sanitizer build exits, which the limit denies it.
	export ASAN_OPTIONS=detect_leaks=0
	: >"$dir/limits"
	for n in $(seq 4 24); do
		status=0
		bash -c 'ulimit -n "$1" && shift && exec "$@"' _ "$n" "$RR" "$@" 2>"$dir/err" ||
			status=$?
		err=$(tr '\n' ' ' <"$dir/err")
		echo "$n: $status $err" >>"$dir/limits"
		[[ $err != "redlock-run: "*"too many open files"* ]] || assert_equal "$status" 71
	done
}

# reap PID: waits for a background job and leaves its exit status in $status, as `run` does.
reap() {
	status=0
	wait "$1" || status=$?
}
# reap_ok PID...: each of them exits 0.
reap_ok() {
	local pid
	for pid; do
		reap "$pid"
		assert_equal "$status" 0
	done
}

# The commands a Redis user needs, as the man page's LEAST PRIVILEGE section lists them
# (docs.bats checks that it does).
LOCKER_COMMANDS=(+evalsha +eval +blpop +get +set +pexpire +pttl +del +exists +incr +time +zadd
	+zrem +zremrangebyscore +rpush +type +zscore +zcard +zcount +zrange +zrangebyscore +pexpireat
	+hget +hset)

# latest_cancels KEY QUEUED [OPTIONS...]: --queue latest on KEY, each run given OPTIONS: a
# holder that agreed to be cancelled, a waiter, and the newest, which supersedes the waiter
# (75), cancels the holder (77) and runs; `QUEUED N` says whether N wait in KEY's line. Uses
# $dir/held, $dir/older and $dir/newest.
latest_cancels() {
	local key=$1 queued=$2 holder older
	shift 2
	rm -f "$dir/held"
	"$RR" "$@" -t 1.5s --queue latest --cancel-running "$key" -- \
		sh -c 'touch "$1/held"; exec sleep 60' sh "$dir" &
	holder=$!
	wait_until 5 test -e "$dir/held"
	"$RR" "$@" --queue latest "$key" -- touch "$dir/older" &
	older=$!
	wait_until 10 "$queued" 1
	run -0 "$RR" "$@" --queue latest --cancel-running "$key" -- touch "$dir/newest"
	reap "$older"
	assert_equal "$status" 75
	reap "$holder"
	assert_equal "$status" 77
	[ -e "$dir/newest" ] && [ ! -e "$dir/older" ]
}

# The fixture most files share: one server per file, empty before each test, REDLOCK_URL
# pointing at it, and $dir for the test's own files. With REDLOCK_TEST_AS_LOCKER set (meson's
# *-acl scenarios), redlock-run connects as a user allowed LOCKER_COMMANDS only; the tests'
# own redis-cli stays the default user.
main_server_start() {
	redis_start main
	[ -z "${REDLOCK_TEST_AS_LOCKER:-}" ] ||
		rcli ACL SETUSER locker on '>l0cker' resetkeys '~*' resetchannels -@all \
			"${LOCKER_COMMANDS[@]}" >/dev/null
}
main_server_stop() { redis_stop main; }
# main_server_fixture: setup_file, teardown_file and setup for a file that wants just that
# fixture (its file's own definitions, if any, come after and win).
main_server_fixture() {
	setup_file() { main_server_start; }
	teardown_file() { main_server_stop; }
	setup() { main_server_reset; }
}
main_server_reset() {
	export REDLOCK_URL="unix://$(redis_sock main)"
	[ -z "${REDLOCK_TEST_AS_LOCKER:-}" ] || REDLOCK_URL="unix://locker:l0cker@$(redis_sock main)"
	rcli flushall >/dev/null
	dir=$BATS_TEST_TMPDIR
}

# redis_restart_empty NAME: stops server NAME (started by redis_start_tcp) and starts it again
# on the same port, without its data: a restart without persistence.
redis_restart_empty() { redis_start_again "$1"; }

# A Redlock quorum of independent masters, for the scenarios of several servers.
# quorum_start N: servers q1..qN on free loopback ports (node_url I is qI's URL), and
# REDLOCK_URL naming them all, separated by spaces. quorum_stop stops them, frozen or not.
quorum_start() {
	local i nodes=()
	for ((i = 1; i <= $1; i++)); do
		redis_start_tcp "q$i"
		nodes+=("$i")
	done
	quorum_use "${nodes[@]}"
}
node_url() { echo "redis://127.0.0.1:$(redis_port "q$1")"; }
quorum_stop() {
	local d
	for d in "$BATS_FILE_TMPDIR"/redis-q*; do
		[ -d "$d" ] && redis_stop "${d##*/redis-}"
	done
	return 0
}
# quorum_use I...: REDLOCK_URL names these nodes only.
quorum_use() {
	local i urls=()
	for i in "$@"; do
		urls+=("$(node_url "$i")")
	done
	export REDLOCK_URL="${urls[*]}"
}
node_freeze() { kill -STOP "$(redis_pid "q$1")"; }
node_thaw() { kill -CONT "$(redis_pid "q$1")"; }
# node_up I: qI answers, started again (empty) if it was stopped.
node_up() {
	[ -s "$(redis_dir "q$1")/redis.pid" ] && node_thaw "$1" && redis_answers "q$1" && return 0
	redis_restart_empty "q$1"
}
# on_nodes KEY I...: how many of these nodes hold KEY.
on_nodes() {
	local key=$1 n=0 i
	shift
	for i in "$@"; do
		held_on "q$i" "$key" && n=$((n + 1))
	done
	echo "$n"
}

# Facts from a server's own clock (ms since the epoch, the clock date(1) reads), which a busy
# machine cannot shift: what a scenario compares its events with instead of a guessed bound.
# server_ms NAME: server NAME's time now.
server_ms() { rcli_on "$1" time | { read -r s && read -r us && echo $((s * 1000 + us / 1000)); }; }
# expiry_on NAME KEY: when KEY expires on server NAME (-2: it is gone).
expiry_on() { rcli_on "$1" pexpiretime "$2"; }
# last_expiry NAME KEY: stops writes on server NAME (a renewal, which is a script, waits from
# now on; reads do not) and says when KEY expires there, as the last renewal left it: final
# until `rcli_on NAME client unpause` (or 20s).
last_expiry() { printf 'CLIENT PAUSE 20000 WRITE\nPEXPIRETIME %s\n' "$2" | rcli_on "$1" | tail -n 1; }
# delete_key NAME KEY: deletes KEY on server NAME behind its holder's back, and says when it
# would have expired.
delete_key() {
	printf 'MULTI\nPEXPIRETIME %s\nDEL %s\nEXEC\n' "$2" "$2" | rcli_on "$1" | sed -n 4p
}
# waits_on NAME: how many times anyone got in line or blocked on server NAME so far (ZADD, in
# the scripts, and BLPOP): unchanged across a run, that run did not wait.
waits_on() {
	rcli_on "$1" info commandstats |
		awk -F '[:=,]' '$1 == "cmdstat_zadd" || $1 == "cmdstat_blpop" { n += $3 } END { print n + 0 }'
}

# When processes exit, as the kernel saw it (µs since the epoch): deathwatch.py, one for the
# test, so that "the command was gone before the key expired" does not depend on how soon this
# shell looks. deathwatch_start starts it; watch_death PID watches PID (still running) from
# then on; died_at PID says when it exited, once it has; deathwatch_stop (teardown) ends it.
deathwatch_start() {
	mkfifo "$BATS_TEST_TMPDIR/deathwatch.pids"
	python3 "$SOURCE_ROOT/tests/cli/deathwatch.py" <"$BATS_TEST_TMPDIR/deathwatch.pids" \
		>"$BATS_TEST_TMPDIR/deaths" 3>&- &
	deathwatch=$!
	exec {deathwatch_fd}>"$BATS_TEST_TMPDIR/deathwatch.pids"
}
watch_death() {
	echo "$1" >&"$deathwatch_fd"
	wait_until 5 grep -Eq "^(watching|gone) $1\$" "$BATS_TEST_TMPDIR/deaths"
	grep -q "^watching $1\$" "$BATS_TEST_TMPDIR/deaths"
}
died_at() {
	wait_until 5 grep -q "^exited $1 " "$BATS_TEST_TMPDIR/deaths"
	awk -v p="$1" '$1 == "exited" && $2 == p { print $3 }' "$BATS_TEST_TMPDIR/deaths"
}
deathwatch_stop() {
	[ -n "${deathwatch:-}" ] || return 0
	exec {deathwatch_fd}>&-
	kill "$deathwatch" 2>/dev/null || true
	deathwatch=
}
