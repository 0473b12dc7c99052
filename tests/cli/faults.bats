#!/usr/bin/env bats
# When things go wrong on the Redis side (issue 3): frozen, killed and restarted servers,
# keys deleted behind our back, a release that cannot be made. Every scenario runs against a
# server of its own that it freezes, kills or restarts on purpose.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	redis_start fault
	export REDLOCK_URL="unix://$(redis_sock fault)"
	dir=$BATS_TEST_TMPDIR
}

teardown() {
	# A run that a failed scenario left behind (a lease of an hour) must not keep bats waiting.
	# (Only while it is still our job: one reaped may have lent its pid to another process.)
	local run
	for run in ${p:-} ${p2:-}; do
		! jobs -p | grep -qx "$run" || kill -KILL "$run" 2>/dev/null || true
	done
	deathwatch_stop
	redis_stop fault
}

@test "a frozen server: the command is gone before the lease can lapse, then a waiter takes over" {
	deathwatch_start
	"$RR" -v -t 2s job -c "echo \$\$ > $dir/a.pid; echo A start \$(date +%s%6N) >> $dir/log;
		exec sleep 60" 2>"$dir/a.err" &
	a=$!
	wait_until 5 grep -q 'renewed job' "$dir/a.err"
	watch_death "$(cat "$dir/a.pid")"
	"$RR" job -c "echo B start \$(date +%s%6N) >> $dir/log" &
	b=$!
	# The lease as the last renewal left it on the server; then the server freezes.
	expires=$(last_expiry fault job)
	kill -STOP "$(redis_pid fault)"
	wait_until 5 gone "$(cat "$dir/a.pid")"
	died=$(died_at "$(cat "$dir/a.pid")")
	reap "$a"
	kill -CONT "$(redis_pid fault)"
	rcli_on fault client unpause >/dev/null
	assert_equal "$status" 76
	# gone before that lease could lapse on the server's clock
	echo "gone $((expires * 1000 - died))µs before the lease ended" >&2
	((died < expires * 1000))
	# Saying which server did not answer.
	run grep -c "lost the lock on job: no renewal for [0-9.]*m\?s (no answer yet from $(redis_sock fault)); stopping the command" "$dir/a.err"
	assert_output 1
	wait "$b"
	b_start=$(awk '$1 == "B" { print $3 }' "$dir/log")
	((b_start > died))
}

@test "the server restarts empty: loss detected, the command stopped, exit 76" {
	"$RR" -t 1s job -- sleep 30 2>"$dir/err" &
	p=$!
	wait_until 5 held_on fault job
	redis_stop fault
	redis_start fault
	reap "$p"
	assert_equal "$status" 76
	run cat "$dir/err"
	assert_output --partial "lost the lock on job: "
	assert_output --partial "stopping the command"
}

@test "the server restarts empty before the first renewal: the holder learns it from the closed connection" {
	# A lease of an hour: the first renewal is twenty minutes away. Before, the command ran on
	# until then, beside whoever took the lock from the empty server.
	"$RR" -v -t 1h job -c "touch $dir/held; exec sleep 3600" 2>"$dir/err" &
	p=$!
	wait_until 5 test -e "$dir/held"
	redis_stop fault
	redis_start fault
	wait_until 30 gone "$p"
	reap "$p"
	assert_equal "$status" 76
	run cat "$dir/err"
	assert_output --partial "$(redis_sock fault) closed the connection the lock on job was taken on: renewing it now"
	assert_output --partial "lost the lock on job: $(redis_sock fault) lost its data: "
}

@test "a connection the server closes before the first renewal (an idle timeout): renewed, kept" {
	"$RR" -v -t 1h job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" \
		2>"$dir/err" &
	p=$!
	wait_until 5 test -e "$dir/held"
	rcli_on fault client kill type normal >/dev/null
	wait_until 10 grep -q 'renewed job' "$dir/err"
	touch "$dir/go"
	reap_ok "$p"
	run grep -c "closed the connection the lock on job was taken on: renewing it now" "$dir/err"
	assert_output 1
}

@test "the server restarted empty between two runs: the fence does not go back" {
	local before after
	before=$("$RR" job -c 'echo $REDLOCK_FENCE')
	redis_stop fault
	redis_start fault
	after=$("$RR" job -c 'echo $REDLOCK_FENCE')
	echo "fence $before, then $after" >&2
	((after > before))
}

@test "the key deleted behind our back: the next renewal sees it, command and grandchild stop" {
	deathwatch_start
	"$RR" -t 600ms job -c "echo \$\$ > $dir/child; sleep 300 & echo \$! > $dir/grandchild; wait" \
		2>"$dir/err" &
	p=$!
	wait_until 5 test -s "$dir/grandchild"
	watch_death "$(cat "$dir/child")"
	watch_death "$(cat "$dir/grandchild")"
	expires=$(delete_key fault job)
	reap "$p"
	assert_equal "$status" 76
	gone "$(cat "$dir/grandchild")"
	# Both gone before the lease the key had could have lapsed (the server's clock)...
	(($(died_at "$(cat "$dir/child")") < expires * 1000))
	(($(died_at "$(cat "$dir/grandchild")") < expires * 1000))
	# ...stopped because a renewal found the key gone, not because renewals failed.
	run cat "$dir/err"
	assert_output "redlock-run: lost the lock on job: it expired or was deleted; stopping the command"
}

@test "another holder took the key: the message names it" {
	"$RR" -t 600ms job -- sleep 30 2>"$dir/err" &
	p=$!
	wait_until 5 held_on fault job
	rcli_on fault set job "00000000-0000-4000-8000-000000000000:otherhost:4242" >/dev/null
	reap "$p"
	assert_equal "$status" 76
	run cat "$dir/err"
	assert_output "redlock-run: lost the lock on job: it is held by otherhost:4242 now; stopping the command"
}

@test "--on-lost kill: SIGKILL at once, even for a command that ignores SIGTERM" {
	deathwatch_start
	"$RR" -t 600ms --on-lost kill --grace 5s job -c "trap '' TERM; echo \$\$ > $dir/ready; sleep 30" \
		2>"$dir/err" &
	p=$!
	wait_until 5 test -s "$dir/ready"
	watch_death "$(cat "$dir/ready")"
	expires=$(delete_key fault job)
	reap "$p"
	assert_equal "$status" 76
	# Killed before the lease the key had could have lapsed, not after the 5s of --grace.
	(($(died_at "$(cat "$dir/ready")") < expires * 1000))
	run cat "$dir/err"
	assert_output --partial "it expired or was deleted; killing the command"
}

@test "a frozen server, a command that ignores SIGTERM: once the lock is lost, no word of retrying" {
	"$RR" -v -t 3s --grace 30s job -c "trap '' TERM; echo ready > $dir/ready
		until [ -e $dir/go ]; do sleep 0.05; done" 2>"$dir/err" &
	p=$!
	wait_until 5 grep -q 'renewed job' "$dir/err"
	kill -STOP "$(redis_pid fault)"
	# The renewal in flight times out as the lease ends, after the loss was declared.
	failed_after_loss() { sed -n '/lost the lock on job/,$p' "$dir/err" | grep -q 'cannot renew'; }
	wait_until 10 failed_after_loss
	kill -CONT "$(redis_pid fault)"
	touch "$dir/go"
	reap "$p"
	cat "$dir/err" >&2
	assert_equal "$status" 76
	run ! eval "sed -n '/lost the lock on job/,\$p' '$dir/err' | grep -q retrying"
}

@test "--on-lost term: a command that ignores SIGTERM gets SIGKILL after --grace" {
	"$RR" -t 600ms --grace 700ms job -c "trap '' TERM; echo ready > $dir/ready; sleep 30" 2>/dev/null &
	p=$!
	wait_until 5 test -s "$dir/ready"
	deleted=$(now_ms) # (before: SIGTERM comes after the deletion, and SIGKILL 700ms later)
	rcli_on fault del job >/dev/null
	reap "$p"
	elapsed=$(($(now_ms) - deleted))
	assert_equal "$status" 76
	# Not before the grace; and not never (the command would sleep 30s): a third of that.
	((elapsed >= 700 && elapsed < 10000))
}

@test "--on-lost ignore: the command completes, a warning is printed, the status is 76" {
	"$RR" -t 600ms --on-lost ignore job -c "echo ready > $dir/ready; sleep 1.5; echo completed > $dir/done; exit 0" \
		2>"$dir/err" &
	p=$!
	wait_until 5 test -s "$dir/ready"
	rcli_on fault del job >/dev/null
	reap "$p"
	assert_equal "$status" 76
	run cat "$dir/done"
	assert_output completed
	run cat "$dir/err"
	assert_output --partial "lost the lock on job: it expired or was deleted; the command runs on without it (--on-lost ignore)"
}

@test "--max-hold 1s on sleep 30: exit 124 within grace + 1s" {
	deathwatch_start
	start=$(now_ms)
	"$RR" --max-hold 1s --grace 2s job -- sh -c \
		'echo "$$ $REDLOCK_FENCE" >"$1/command"; exec sleep 30' sh "$dir" 2>"$dir/err" &
	p=$!
	wait_until 5 test -s "$dir/command"
	read -r pid fence <"$dir/command"
	watch_death "$pid"
	reap "$p"
	assert_equal "$status" 124
	# Held for 1s, not less (it was taken after start); stopped within the 2s of grace after
	# that, counted from its grant (its fence: the server's clock, µs), however slow this
	# machine is to start and end runs.
	died=$(died_at "$pid")
	echo "the command ended $(((died - fence) / 1000))ms after its grant" >&2
	((died / 1000 >= start + 1000 && died - fence < (1000 + 2000) * 1000))
	run cat "$dir/err"
	assert_output "redlock-run: job held for --max-hold 1s; stopping the command"
	run rcli_on fault exists job
	assert_output 0
}

@test "Redis gone at release: the command's status, and a warning that the lock expires" {
	pid=$(redis_pid fault)
	run --separate-stderr "$RR" -t 5s job -c "kill -9 $pid; exit 7"
	assert_equal "$status" 7
	# the server may go while the release is in flight, or before it is sent
	local n=${#stderr_lines[@]} line
	[[ ${stderr_lines[n - 1]} =~ ^"redlock-run: cannot release job: ".*"$(redis_sock fault)".*"; it expires at the end of its lease, in about "[0-9.]+m?s$ ]]
	# and when its closed connection was read before the command's exit, the renewal made at
	# once for it failed first
	for line in "${stderr_lines[@]:0:n-1}"; do
		[[ $line == "redlock-run: cannot renew job: "* ]]
	done
}

@test "renewals refused from some point on: said when the command stops, 76, and when the lock expires" {
	# The server stops taking the scripts (a permission taken away) while the command runs.
	run --separate-stderr "$RR" -t 9s --grace 3s job -c \
		"redis-cli -s $(redis_sock fault) acl setuser default -evalsha -eval >/dev/null
		exec sleep 30"
	rcli_on fault acl setuser default +@all >/dev/null
	assert_equal "$status" 76
	# renewed at 3s: refused; the command is stopped 3s (--grace) before the lease ends
	[[ ${stderr_lines[0]} =~ ^"redlock-run: cannot renew job: ".*"; retrying, and stopping the command in "[0-9.]+m?s" unless a renewal goes through"$ ]]
	# its release refused too: the key is left to its lease, whose end is ahead
	local n=${#stderr_lines[@]}
	[[ ${stderr_lines[n - 1]} =~ ^"redlock-run: cannot release job: ".*"; it expires at the end of its lease, in about "[0-9.]+m?s$ ]]
}

@test "the release finds our value gone: exit 76, the lock was not held throughout" {
	run --separate-stderr "$RR" job -c "redis-cli -s $(redis_sock fault) del job >/dev/null; exit 0"
	assert_equal "$status" 76
	assert_equal "$stderr" "redlock-run: lost the lock on job: it was gone when the command ended"
}

@test "connections killed under the watchdog: it reconnects and the command keeps the lock" {
	"$RR" -v -t 600ms job -c "echo ready > $dir/ready; sleep 1.5" 2>"$dir/err" &
	p=$!
	wait_until 5 test -s "$dir/ready"
	for _ in 1 2 3; do
		rcli_on fault client kill type normal >/dev/null
		sleep 0.25
	done
	wait "$p"
	run grep -c 'renewed job' "$dir/err"
	((output >= 3))
}

@test "SIGTERM with an acquire in flight: the lock it took is given back" {
	"$RR" warm-up -- true # the server knows the scripts: the request takes the lock at once
	kill -STOP "$(redis_pid fault)"
	"$RR" job -- echo never &
	p=$!
	# connected (a frozen server still accepts), so the request is on its way
	wait_until 5 sh -c "ls -l /proc/$p/fd | grep -q socket"
	kill -TERM "$p"
	sleep 0.3
	kill -CONT "$(redis_pid fault)"
	reap "$p"
	assert_equal "$status" 143
	run rcli_on fault exists '{job}:fence'
	assert_output 1 # the request did take the lock...
	run rcli_on fault exists job
	assert_output 0 # ...and it was released
}

@test "stderr that nobody reads never holds up stopping the command" {
	deathwatch_start
	mkfifo "$dir/stderr"
	exec 5<>"$dir/stderr"       # a pipe nobody drains...
	head -c 65536 /dev/zero >&5 # ...and full
	"$RR" -t 600ms job -c "echo \$\$ > $dir/ready; exec sleep 30" 2>&5 &
	p=$!
	wait_until 5 test -s "$dir/ready"
	watch_death "$(cat "$dir/ready")"
	expires=$(delete_key fault job)
	reap "$p"
	exec 5>&-
	assert_equal "$status" 76
	# Stopped before the lease the key had could have lapsed (the server's clock): the message
	# that says so, which nobody reads, did not hold it up.
	(($(died_at "$(cat "$dir/ready")") < expires * 1000))
}

@test "stderr that nobody reads, which cannot be opened again (no /proc): -v never waits on it" {
	unshare -m sh -c 'umount -l /proc' 2>/dev/null || skip "cannot unmount /proc in a namespace here"
	# (AddressSanitizer reads /proc as a program starts, and reports on stderr when it cannot.)
	! ldd "$RR" 2>/dev/null | grep -q libasan || skip "a sanitizer build needs /proc"
	mkfifo "$dir/stderr"
	exec 5<>"$dir/stderr"       # a pipe nobody drains...
	head -c 65536 /dev/zero >&5 # ...and full
	# Without /proc, the description of its own that never blocks cannot be had: each
	# message looks first, and is dropped rather than held up (the lock with it).
	unshare -m sh -c 'umount -l /proc && exec "$@"' _ "$RR" -v job -- sh -c 'exit 3' 2>&5 &
	p=$!
	wait_until 10 gone "$p" || { kill -KILL "$p"; exec 5>&-; false; }
	exec 5>&-
	reap "$p"
	assert_equal "$status" 3
	run rcli_on fault exists job
	assert_output 0
}

@test "what the command leaves behind is stopped within the lease, not after --grace" {
	deathwatch_start
	"$RR" -t 1s --grace 10s job -c "echo \$\$ > $dir/command
		sh -c 'trap \"\" TERM; echo \$\$ > $dir/leftover; exec sleep 30' &
		while [ ! -s $dir/leftover ]; do sleep 0.01; done" 2>"$dir/err" &
	p=$!
	wait_until 5 test -s "$dir/leftover"
	watch_death "$(cat "$dir/leftover")"
	wait_until 5 gone "$(cat "$dir/command")" # the command has exited; its leftover ignores SIGTERM
	# The lease as the last renewal left it on the server; then the server freezes.
	expires=$(last_expiry fault job)
	kill -STOP "$(redis_pid fault)"
	wait_until 5 gone "$(cat "$dir/leftover")"
	# killed before the lease (1s from the last renewal) ran out, not 10s later
	(($(died_at "$(cat "$dir/leftover")") < expires * 1000))
	reap "$p"
	kill -CONT "$(redis_pid fault)"
	rcli_on fault client unpause >/dev/null
	assert_equal "$status" 76
	run cat "$dir/err"
	assert_output --partial "lost the lock on job: no renewal for"
}

@test "--on-lost kill during a --max-hold stop: SIGKILL at once" {
	deathwatch_start
	"$RR" -t 3s --max-hold 500ms --grace 10s --on-lost kill job -c \
		"trap 'touch $dir/term' TERM; echo \$\$ > $dir/ready; sleep 30 & wait; sleep 30" \
		2>"$dir/err" &
	p=$!
	wait_until 5 test -s "$dir/ready"
	watch_death "$(cat "$dir/ready")"
	wait_until 5 test -e "$dir/term" # --max-hold has sent SIGTERM, which the command outlives
	expires=$(delete_key fault job)
	reap "$p"
	assert_equal "$status" 76
	# The next renewal (every second) finds the key gone: SIGKILL then, a second at least
	# before the lease's end (3s after the renewal before it), not at that end nor after the
	# grace (10s).
	died=$(died_at "$(cat "$dir/ready")")
	echo "killed $(((expires * 1000 - died) / 1000))ms before the lease's end" >&2
	((died < (expires - 1000) * 1000))
	grep -q "it expired or was deleted; killing the command" "$dir/err"
}

# not_redis [ANSWER]: something on a loopback port ($dir/port) that reads each request, answers
# ANSWER (nothing: hangs up) and closes; $dir/count says how many it took. Its pid in $server.
not_redis() {
	python3 - "$dir" "${1:-}" <<'PY' 3>&- &
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
open(sys.argv[1] + "/port", "w").write(str(s.getsockname()[1]))
n = 0
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(sys.argv[2].encode())
    c.close()
    n += 1
    # Whole or not at all: the test may read it at any moment.
    open(sys.argv[1] + "/count.tmp", "w").write(str(n))
    os.replace(sys.argv[1] + "/count.tmp", sys.argv[1] + "/count")
PY
	server=$!
	wait_until 5 test -s "$dir/port"
}

@test "something that hangs up on every request, and never answered: 69 at once, not hammered" {
	not_redis
	run --separate-stderr "$RR" -r "redis://127.0.0.1:$(cat "$dir/port")" -t 1s job -- echo never
	wait_until 5 test -s "$dir/count"
	kill "$server"
	assert_equal "$status" 69
	# Nothing that never answered took a lock: no word of one, and no asking again.
	[[ $stderr == *"closed the connection" ]]
	[[ $stderr != *"if the lock was taken"* ]]
	assert_equal "$(cat "$dir/count")" 1
}

@test "something that is not Redis (an HTTP server on a wrong port): 69 at once, with -w too" {
	not_redis $'HTTP/1.0 400 Bad Request\r\n\r\n'
	# (Were it ridden out as an outage, it would say it tries again, and end with the wait.)
	run --separate-stderr "$RR" -r "redis://127.0.0.1:$(cat "$dir/port")" -w 20s job -- echo never
	kill "$server"
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: protocol error from 127.0.0.1:$(cat "$dir/port"): Protocol error, got \"H\" as reply type byte (is it a Redis server?)"
}

@test "a server with as many clients as it takes: a wait rides it out, -n says so at once" {
	rcli_on fault config set maxclients 1 >/dev/null
	# The one client it takes: a connection held open.
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
time.sleep(60)' "$(redis_sock fault)" 3>&- &
	blocker=$!
	full() { [[ $(rcli_on fault ping 2>&1) == *"max number of clients"* ]]; }
	wait_until 5 full
	# Its -ERR comes ahead of any answer: read as the script's (no AUTH or SELECT to send), as
	# the answer to SELECT, or after the server hung up on what we sent.
	run --separate-stderr "$RR" -n job -- echo never
	assert_equal "$status" 69
	[[ $stderr =~ ^"redlock-run: $(redis_sock fault) cannot take "(job|a client)" now: ERR max number of clients reached"$ ]]
	run --separate-stderr "$RR" -n -r "unix://$(redis_sock fault)?db=1" job -- echo never
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: $(redis_sock fault) cannot take a client now: ERR max number of clients reached"
	# Waiting runs ask again until there is a place, as for a server that is down.
	"$RR" -v -w 1h job -- echo ran >"$dir/out1" 2>"$dir/err1" &
	p=$!
	"$RR" -v -w 1h -r "unix://$(redis_sock fault)?db=1" job -- echo ran >"$dir/out2" 2>"$dir/err2" &
	p2=$!
	wait_until 10 grep -q "now: ERR max number of clients reached; trying again until the wait ends" "$dir/err1"
	wait_until 10 grep -q "now: ERR max number of clients reached; trying again until the wait ends" "$dir/err2"
	kill "$blocker"
	reap "$p"
	assert_equal "$status" 0
	reap "$p2"
	assert_equal "$status" 0
	assert_equal "$(cat "$dir/out1" "$dir/out2")" $'ran\nran'
}

@test "a holder renews on its own connection: a server full of clients, a password changed, change nothing" {
	sock=$(redis_sock fault)
	# Renewals at 200ms, 400ms...: on the connection the lock was taken on, which the server
	# took before it was full.
	run --separate-stderr "$RR" -v -t 600ms job -c \
		"redis-cli -s $sock config set maxclients 1 >/dev/null; sleep 1"
	assert_success
	(($(grep -c '^redlock-run: renewed job$' <<<"$stderr") >= 2))
	assert_equal "$(rcli_on fault exists job)" 0
	rcli_on fault config set maxclients 10000 >/dev/null
	# A password set (rotated) while the run holds the lock: its connection stays
	# authenticated, and the release goes out on it.
	run --separate-stderr "$RR" -v -t 600ms job -c \
		"redis-cli -s $sock config set requirepass s3cret >/dev/null; sleep 1"
	assert_success
	(($(grep -c '^redlock-run: renewed job$' <<<"$stderr") >= 2))
	assert_equal "$(rcli_on fault -a s3cret --no-auth-warning exists job)" 0
}

@test "a release that finds the server busy with a long script asks again: the lock is not left to expire" {
	# A server answers BUSY once a script has run this long (the default is 5s).
	rcli_on fault config set lua-time-limit 100 >/dev/null
	# The command ends while another client's script keeps the server busy for 1.5s more.
	busy="local t = redis.call('time'); local stop = t[1] * 1000000 + t[2] + 1500000
while true do t = redis.call('time'); if t[1] * 1000000 + t[2] >= stop then break end end"
	run --separate-stderr "$RR" -t 60s job -c \
		"redis-cli -s $(redis_sock fault) eval \"$busy\" 0 >/dev/null & sleep 0.5"
	assert_success
	assert_equal "$stderr" ""
	# released, not left for the rest of its 60s lease
	assert_equal "$(rcli_on fault exists job)" 0
}

@test "a zombie that a parent gone from the group left behind does not keep the lock" {
	"$RR" -t 3s job -c "python3 -c '
import os, time
if os.fork() == 0:
    os._exit(0)  # a child that stays a zombie in the group...
os.setpgid(0, 0)  # ...of a parent that moves out and never reaps it
open(\"$dir/parent\", \"w\").write(str(os.getpid()))
time.sleep(30)' 3>&- &
		while [ ! -s $dir/parent ]; do sleep 0.01; done" &
	p=$!
	wait_until 5 test -s "$dir/parent"
	start=$(now_ms)
	reap "$p"
	kill "$(cat "$dir/parent")"
	assert_equal "$status" 0
	# SIGTERM, SIGKILL after the grace period (1s), then one more second of looking: not
	# until the zombie's parent ends (30s), half of which is plenty.
	(($(now_ms) - start < 15000))
}

@test "stderr that is a full socket (the journal) never holds up stopping the command" {
	run timeout 20 python3 - "$RR" <<'PY'
import socket, subprocess, sys, time
ours, theirs = socket.socketpair()
ours.setblocking(False)
try:
    while True:
        ours.send(b"x" * 65536)
except BlockingIOError:
    pass
ours.setblocking(True)  # the description the command shares blocks again
start = time.monotonic()
p = subprocess.run([sys.argv[1], "--max-hold", "300ms", "--grace", "200ms", "job", "--",
                    "sh", "-c", "trap '' TERM; sleep 30"], stderr=ours)
print(p.returncode, int((time.monotonic() - start) * 1000))
PY
	assert_success
	read -r code ms <<<"$output"
	assert_equal "$code" 124
	# --max-hold and --grace (500ms), not held up by the socket for as long as nobody reads
	# it (here, until timeout(1) gives up): half of that.
	((ms < 10000))
}

@test "-w bounds a wait even when the server freezes during it: 75, the lock was seen held" {
	"$RR" -t 30s job -c "echo ready > $dir/ready; sleep 30" &
	holder=$!
	wait_until 5 test -s "$dir/ready"
	start=$(now_ms)
	"$RR" -v -w 1 job -- true 2>"$dir/err" &
	waiter=$!
	wait_until 5 grep -q 'waiting for job' "$dir/err"
	kill -STOP "$(redis_pid fault)"
	reap "$waiter"
	elapsed=$(($(now_ms) - start))
	kill -CONT "$(redis_pid fault)"
	kill "$holder"
	cat "$dir/err" >&2
	assert_equal "$status" 75
	# the wait, and at most 250ms for the last attempt's answer (its own clock), not the 5s
	# a request may take otherwise
	grep -Eq 'giving up after 1\.[0-3]s$' "$dir/err"
	((elapsed < 5000))
}

# supervise_poll ARGS...: sets $first to the number of supervise's first poll(2) among the
# main thread's (the one with its 4 descriptors, after those of the connection), counted under
# strace in a run of redlock-run with ARGS, the second one (the scripts known then); skips the
# test where strace cannot trace, or poll(2) is not a system call of its own.
supervise_poll() {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -e trace=poll -o "$dir/trace" true 2>/dev/null || skip "strace cannot trace here"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot work under ptrace
	for _ in 1 2; do
		strace -e trace=poll -o "$dir/trace" "$RR" "$@" || true
	done
	grep -q '^poll(' "$dir/trace" || skip "no poll(2) system call here (glibc's poll is ppoll)"
	first=$(grep -n -m 1 '^poll(\[.*\], 5, ' "$dir/trace" | cut -d: -f1)
	[[ -n $first ]] || fail "supervise's poll(2) not found in a run: $(cat "$dir/trace")"
}

@test "a poll that fails (out of kernel memory) never ends the run before the command does" {
	# supervise's poll(2) fails with ENOMEM three times: it looks again a tick later, and
	# goes by the command's exit, not by a status it never had.
	local first
	supervise_poll job -c "sleep 0.3; exit 3"
	run strace -e trace=poll -e "inject=poll:error=ENOMEM:when=$first..$((first + 2))" \
		-o "$dir/trace" "$RR" job -c "sleep 0.3; echo done; exit 3"
	cat "$dir/trace"
	assert_equal "$status" 3
	assert_output "done"
	[[ $(grep -c '^poll(\[.*\], 5, .*INJECTED' "$dir/trace") == 3 ]]
	run rcli_on fault exists job
	assert_output 0
}

@test "a command its guard killed while redlock-run was held up past the lease: 76, not 128+9" {
	# Traced without -f, the main thread alone: supervise's poll after the one that starts
	# the watchdog returns 3s late. The watchdog renews meanwhile, but supervise reads those
	# renewals only after the guard, which knows the lease as supervise last did, killed
	# the command at its end.
	local first
	supervise_poll -t 600ms job -- sleep 0.5
	run --separate-stderr strace -e trace=poll -o "$dir/trace" \
		-e "inject=poll:delay_exit=3000000:when=$((first + 1))" "$RR" -t 600ms job -- sleep 30
	echo "$stderr"
	# The command did not run to its end holding the lock: 76, as for any loss, not the
	# signal it died of (which says that someone outside killed it).
	assert_equal "$status" 76
	[[ $stderr == *"lost the lock on job"* ]]
	wait_until 5 free_on fault job
}
