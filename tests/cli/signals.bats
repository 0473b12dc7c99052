#!/usr/bin/env bats
# Signals and processes (issue 3): signals passed on to the command's group, a killed
# redlock-run taking its command down with it, leftovers stopped before the release,
# dispositions and masks kept as they were on entry, and the terminal handed over.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	main_server_start
	make_entry
}

teardown_file() {
	main_server_stop
}

setup() {
	main_server_reset
	ENTRY=$BATS_FILE_TMPDIR/entry
}

teardown() {
	deathwatch_stop
	# An interactive shell that a failed scenario left: its end hangs up on its jobs.
	if [[ -n ${shell:-} ]] && kill -0 "$shell" 2>/dev/null; then
		pkill -KILL -P "$shell" || true
		kill -KILL "$shell" || true
	fi
	# A redlock-run that as_job started and a failed scenario left stopped: its guard takes
	# its command's group down.
	local rr
	if [[ -s ${dir:-}/rr ]] && rr=$(cat "$dir/rr") &&
		[[ $(cat "/proc/$rr/comm" 2>/dev/null) == redlock-run ]]; then
		kill -KILL "$rr" || true
	fi
}

# $ENTRY COMMAND...: runs COMMAND with SIGHUP ignored and SIGUSR1 blocked, as a nohup'ed job
# under a parent that blocks signals would start it. A program, not a function, so that
# `"$ENTRY" ... &` leaves COMMAND's own pid in $!.
make_entry() {
	cat >"$BATS_FILE_TMPDIR/entry" <<'EOT'
#!/usr/bin/env python3
import os, signal, sys
signal.signal(signal.SIGHUP, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
os.execvp(sys.argv[1], sys.argv[1:])
EOT
	chmod +x "$BATS_FILE_TMPDIR/entry"
}

@test "SIGTERM and SIGINT reach the command itself; the status is 128+N and the key is gone" {
	for sig in TERM INT; do
		rm -f "$dir/ready" "$dir/got"
		# a script's background job starts with SIGINT ignored: give it back its default
		env --default-signal=INT "$RR" job -c "trap 'echo $sig > $dir/got; trap - $sig; kill -$sig \$\$' $sig
			echo ready > $dir/ready; sleep 60 & wait" &
		p=$!
		wait_until 5 test -s "$dir/ready"
		kill -"$sig" "$p"
		reap "$p"
		assert_equal "$status" $((128 + $(kill -l "$sig")))
		run cat "$dir/got"
		assert_output "$sig"
		run rcli exists job
		assert_output 0
	done
}

@test "SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM are passed on too, and the key is gone" {
	for sig in HUP QUIT USR1 USR2 ALRM; do
		env --default-signal=QUIT "$RR" job -c "echo ready > $dir/ready.$sig; exec sleep 60" &
		p=$!
		wait_until 5 test -s "$dir/ready.$sig"
		kill -"$sig" "$p"
		reap "$p"
		assert_equal "$status" $((128 + $(kill -l "$sig")))
		run rcli exists job
		assert_output 0
	done
}

@test "SIGUSR1 that the command handles: it runs on, and so does redlock-run, with its status" {
	"$RR" job -c "trap 'echo rotated >> $dir/got' USR1; echo ready > $dir/ready
		until [ -e $dir/go ]; do sleep 0.05; done; exit 3" &
	p=$!
	wait_until 5 test -s "$dir/ready"
	kill -USR1 "$p"
	wait_until 5 test -s "$dir/got"
	run rcli exists job
	assert_output 1
	touch "$dir/go"
	reap "$p"
	assert_equal "$status" 3
}

@test "SIGTSTP to a waiter: it leaves the line, then stops; the next waiter is not held back; continued, it waits again" {
	"$RR" -t 30s job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$! a b expires
	wait_until 5 test -e "$dir/held"
	expires=$(rcli pexpiretime job)
	in_line() { [[ $(rcli zcard '{job}:waiting') == "$1" ]]; }
	# A job of its own with job control: in the orphaned group of a test runner's session, the
	# kernel would discard the stop (and redlock-run keeps its place there, see below).
	as_job "$dir/a.err" -t 30s job -c "echo \$REDLOCK_FENCE > $dir/a-fence"
	local script=$!
	wait_until 5 test -s "$dir/rr"
	a=$(cat "$dir/rr")
	wait_until 5 in_line 1
	"$RR" -t 30s job -c "echo \$REDLOCK_FENCE > $dir/b-fence" &
	b=$!
	wait_until 5 in_line 2
	kill -TSTP "$a"
	wait_until 5 stopped "$a"
	in_line 1
	touch "$dir/go"
	reap "$holder"
	reap "$b"
	assert_equal "$status" 0
	# At once, not a lease later (by the server's clock), and A has not run meanwhile.
	(($(cat "$dir/b-fence") / 1000 < expires))
	[ ! -e "$dir/a-fence" ]
	kill -CONT "$a"
	reap "$script"
	assert_equal "$status" 0
	(($(cat "$dir/a-fence") > $(cat "$dir/b-fence")))
}

@test "SIGTSTP to a waiter in an orphaned group (a service, a cron job): discarded, it keeps its place" {
	"$RR" -t 30s job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$! a b
	wait_until 5 test -e "$dir/held"
	in_line() { [[ $(rcli zcard '{job}:waiting') == "$1" ]]; }
	# A session of its own: its group has no parent in it, as under systemd or cron.
	setsid "$RR" job -c "echo a >> $dir/ran" 3>&- &
	wait_until 5 in_line 1
	a=$(pgrep -f -n "$RR job -c echo a")
	"$RR" job -c "echo b >> $dir/ran" &
	b=$!
	wait_until 5 in_line 2
	kill -TSTP "$a"
	touch "$dir/go"
	reap "$holder"
	reap "$b"
	# The stop was no reason to leave: a ran first, in arrival order.
	run cat "$dir/ran"
	assert_output $'a\nb'
}

@test "SIGUSR1 to a waiter: it leaves the line at once and dies of it, as flock(1) would" {
	"$RR" job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$!
	wait_until 5 test -e "$dir/held"
	"$RR" job -- echo never &
	p=$!
	in_line() { [[ $(rcli zcard '{job}:waiting') == "$1" ]]; }
	wait_until 5 in_line 1
	kill -USR1 "$p"
	reap "$p"
	assert_equal "$status" $((128 + $(kill -l USR1)))
	run rcli zcard '{job}:waiting'
	assert_output 0
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
}

@test "SIGKILL to redlock-run: the command and its grandchild are gone before its lease ends" {
	deathwatch_start
	"$RR" -t 2s job -c "echo \$\$ > $dir/child; sleep 300 & echo \$! > $dir/grandchild; wait" &
	p=$!
	wait_until 5 test -s "$dir/grandchild"
	watch_death "$(cat "$dir/child")"
	watch_death "$(cat "$dir/grandchild")"
	kill -KILL "$p"
	wait "$p" || true
	# Nothing renews the lock any more: it expires by itself, less than a TTL after the
	# kill (the server's clock)...
	{ read -r s && read -r us && read -r expires; } < <(printf 'TIME\nPEXPIRETIME job\n' | rcli)
	((expires > 0 && expires <= s * 1000 + us / 1000 + 2000))
	# ...and nothing of the command runs by then.
	wait_until 5 gone "$(cat "$dir/child")"
	wait_until 5 gone "$(cat "$dir/grandchild")"
	(($(died_at "$(cat "$dir/child")") < expires * 1000))
	(($(died_at "$(cat "$dir/grandchild")") < expires * 1000))
	# Not renewed since; the next contender goes ahead once it has expired.
	local now_expires
	now_expires=$(expiry_on main job)
	[[ $now_expires == "$expires" || $now_expires == -2 ]]
	run "$RR" -w 5 job -- sh -c 'echo $REDLOCK_FENCE'
	assert_success
	((output / 1000 >= expires))
}

@test "SIGKILL to redlock-run's whole process group (timeout -s KILL, a cancelled CI job): the grandchild goes too" {
	# redlock-run leads a group of its own (setsid), as under timeout(1) or a CI runner, and
	# the whole group is killed at once: the guard is not in it, and takes the command's
	# group down. (Without job control, bats starts "$RR" in its own group: setsid needs no
	# fork, and $! is redlock-run, the new group's leader.)
	setsid "$RR" -t 30s job -c "sleep 300 & echo \$! > $dir/grandchild; wait" &
	p=$!
	wait_until 5 test -s "$dir/grandchild"
	grandchild=$(cat "$dir/grandchild")
	kill -KILL -- "-$p"
	wait "$p" || true
	wait_until 5 gone "$grandchild"
	# Nothing of the command runs while the lock lingers (until its lease ends).
	run rcli exists job
	assert_output 1
}

@test "a command that leaves a background child: the child is stopped before the key is deleted" {
	run "$RR" job -c "sh -c 'trap \"redis-cli -s $(redis_sock main) exists job > $dir/key-at-term; exit 0\" TERM
			touch $dir/trapped; sleep 300 & wait' 2>/dev/null &
		echo \$! > $dir/bg
		while [ ! -e $dir/trapped ]; do sleep 0.01; done; echo started"
	assert_success
	assert_output started
	gone "$(cat "$dir/bg")"
	run cat "$dir/key-at-term"
	assert_output 1
	run rcli exists job
	assert_output 0
}

@test "--max-hold with a --grace longer than the lease: the whole grace, while renewals succeed" {
	# The lease (2s) is renewed through the stop: SIGKILL comes after the 4s of --grace, not
	# when the lease that stood at SIGTERM would have ended (2s at most).
	run --separate-stderr "$RR" -v -t 2s --max-hold 500ms --grace 4s job -c \
		"trap 'date +%s%3N > $dir/term' TERM; while :; do sleep 0.05; done"
	killed=$(now_ms)
	assert_equal "$status" 124
	echo "$stderr" >&2
	((killed - $(cat "$dir/term") >= 3500))
	[[ $stderr != *"ends before --grace"* ]]
	[[ $stderr == *"renewed job"* ]]
}

@test "the command starts with the signal mask and dispositions redlock-run had on entry" {
	# grep reads its own status: what it was started with, exactly
	"$ENTRY" grep -E '^Sig(Blk|Ign)' /proc/self/status >"$dir/expected"
	"$ENTRY" "$RR" job -- grep -E '^Sig(Blk|Ign)' /proc/self/status >"$dir/actual"
	# SIGUSR1 blocked, SIGHUP ignored, beside what the suite itself was started with (run in
	# the background, a shell ignores SIGINT and SIGQUIT)
	local blk ign
	blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$dir/expected")
	ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' "$dir/expected")
	((0x$blk & 1 << 9 && 0x$ign & 1))
	run diff "$dir/expected" "$dir/actual"
	assert_success
}

@test "SIGHUP ignored on entry (nohup): it stops neither redlock-run nor the command" {
	"$ENTRY" "$RR" job -c "echo ready > $dir/ready; sleep 1; echo survived > $dir/survived" &
	p=$!
	wait_until 5 test -s "$dir/ready"
	kill -HUP "$p"
	kill -HUP -- "-$(ps -o pgid= -p "$(pgrep -P "$p" -n)" | tr -d ' ')" 2>/dev/null || true
	wait "$p"
	run cat "$dir/survived"
	assert_output survived
}

@test "SIGTERM while waiting for a held lock: exit 143 at once, the holder's lock untouched" {
	"$RR" job -- sleep 30 &
	holder=$!
	wait_until 5 held_on main job
	token=$(rcli get job)
	"$RR" -v job -- echo never 2>"$dir/waiter.err" &
	waiter=$!
	wait_until 5 grep -q 'waiting for job' "$dir/waiter.err"
	kill -TERM "$waiter"
	sent=$(now_ms)
	reap "$waiter"
	assert_equal "$status" 143
	# at once: not when the holder's 30s lease would end, nor a third of that
	(($(now_ms) - sent < 10000))
	run rcli get job
	assert_output "$token"
	kill "$holder"
	wait "$holder" || true
}

@test "on a terminal: the command reads it, Ctrl-C interrupts it, and the status is 130" {
	mkfifo "$dir/keys"
	# a background job starts with SIGINT ignored, and so would the command: not here
	env --default-signal=INT script -qfec "$RR job -- sh -c '
		echo ready > $dir/ready; read line; echo \"got:\$line\" > $dir/got
		echo asleep > $dir/asleep; sleep 30'" /dev/null <"$dir/keys" >"$dir/screen" &
	p=$!
	exec 4>"$dir/keys"
	wait_until 5 test -s "$dir/ready"
	printf 'hello\n' >&4
	wait_until 5 test -s "$dir/asleep"
	run cat "$dir/got"
	assert_output "got:hello"
	printf '\003' >&4
	reap "$p"
	exec 4>&-
	assert_equal "$status" 130
	run rcli exists job
	assert_output 0
}

@test "after the command, redlock-run has the terminal back" {
	# the shell that ran it reads its next line from the terminal: it must be in the
	# foreground again (a background read would stop it with SIGTTIN)
	mkfifo "$dir/keys"
	script -qfec "sh -c 'REDLOCK_URL=unix://$(redis_sock main) $REDLOCK_RUN job -- true;
		echo ready > $dir/ready; read line; echo \"after:\$line\" > $dir/after'" /dev/null \
		<"$dir/keys" >/dev/null &
	p=$!
	exec 4>"$dir/keys"
	wait_until 5 test -s "$dir/ready"
	printf 'next\n' >&4
	wait_until 5 test -s "$dir/after"
	exec 4>&-
	wait "$p"
	run cat "$dir/after"
	assert_output "after:next"
}

# interactive_shell: an interactive bash on a pseudo-terminal, with job control; what is
# written to fd 4 is typed at it. Its pid is left in $shell.
interactive_shell() {
	mkfifo "$dir/keys"
	env --default-signal=INT,TSTP,TTIN,TTOU script -qfec "bash --norc --noprofile -i" /dev/null \
		<"$dir/keys" >"$dir/screen" &
	shell=$!
	exec 4>"$dir/keys"
}

# fg_then_interrupt PID: types fg, then Ctrl-C once PID runs again, and leaves the status
# the shell saw in $dir/status; the shell exits.
fg_then_interrupt() {
	printf 'fg\n' >&4
	wait_until 5 running "$1"
	printf '\003' >&4 # Ctrl-C
	printf 'echo $? > %s/status; exit\n' "$dir" >&4
	wait_until 5 test -s "$dir/status"
	exec 4>&-
}

@test "Ctrl-Z stops the command and redlock-run with it; fg continues both" {
	interactive_shell
	p=$shell
	printf '%q job -- sh -c %q\n' "$RR" "echo \$\$ > $dir/command; exec sleep 30" >&4
	wait_until 5 test -s "$dir/command"
	command=$(cat "$dir/command")
	printf '\032' >&4 # Ctrl-Z
	# the shell has its terminal back, and both processes are stopped
	printf 'echo back > %s/back\n' "$dir" >&4
	wait_until 5 test -s "$dir/back"
	assert_equal "$(state "$command")" T
	assert_equal "$(state "$(ps -o ppid= -p "$command" | tr -d ' ')")" T # redlock-run
	# fg: both run on, and the command has the terminal again (Ctrl-C reaches it)
	fg_then_interrupt "$command"
	reap "$p"
	run cat "$dir/status"
	assert_output 130
	run rcli exists job
	assert_output 0
}

@test "Ctrl-Z on redlock-run inside redlock-run stops all of it and gives the shell its terminal; fg continues" {
	interactive_shell
	p=$shell
	printf '%q outer -- %q inner -- sh -c %q\n' "$RR" "$RR" "echo \$\$ > $dir/command; exec sleep 30" >&4
	wait_until 5 test -s "$dir/command"
	command=$(cat "$dir/command")
	inner=$(ps -o ppid= -p "$command" | tr -d ' ')
	outer=$(ps -o ppid= -p "$inner" | tr -d ' ')
	printf '\032' >&4 # Ctrl-Z
	# the shell has its terminal back, and all three are stopped, by SIGTSTP
	printf 'echo back > %s/back\n' "$dir" >&4
	wait_until 5 test -s "$dir/back"
	assert_equal "$(state "$command")" T
	assert_equal "$(state "$inner")" T
	assert_equal "$(state "$outer")" T
	# fg: all run on, and the innermost command has the terminal again
	fg_then_interrupt "$command"
	reap "$p"
	run cat "$dir/status"
	assert_output 130
	run rcli exists outer
	assert_output 0
	run rcli exists inner
	assert_output 0
}

@test "after Ctrl-Z, bg leaves the terminal with the shell, also when the command ends" {
	interactive_shell
	printf '%q job -- sh -c %q\n' "$RR" "echo \$\$ > $dir/command; exec sleep 1.5" >&4
	wait_until 5 test -s "$dir/command"
	command=$(cat "$dir/command")
	printf '\032' >&4 # Ctrl-Z
	printf 'bg\n' >&4
	wait_until 5 running "$command"
	# the shell still reads its terminal: it was not left in the background...
	printf 'echo still-here > %s/here\n' "$dir" >&4
	wait_until 5 test -s "$dir/here"
	# ...nor when the job ends in the background
	wait_until 5 gone "$command"
	sleep 0.3
	printf 'echo after-the-job > %s/after\n' "$dir" >&4
	wait_until 5 test -s "$dir/after"
	printf 'exit\n' >&4
	exec 4>&-
	reap "$shell"
}

@test "Ctrl-Z stops every process of the command, also one that ignores SIGTSTP" {
	interactive_shell
	printf '%q job -- sh -c %q\n' "$RR" \
		"sh -c 'trap \"\" TSTP; echo \$\$ > $dir/worker; exec sleep 30' & wait" >&4
	wait_until 5 test -s "$dir/worker"
	printf '\032' >&4 # Ctrl-Z
	printf 'echo back > %s/back\n' "$dir" >&4
	wait_until 5 test -s "$dir/back"
	# redlock-run and its watchdog are stopped: nothing of the command may run on
	assert_equal "$(state "$(cat "$dir/worker")")" T
	printf 'kill %%1; exit\n' >&4
	exec 4>&-
	reap "$shell"
	wait_until 5 gone "$(cat "$dir/worker")"
}

# fg_reads PID: types fg, then a line once PID runs again, which the command that reads the
# terminal (see bg_reader) got whole.
fg_reads() {
	printf 'fg\n' >&4
	wait_until 5 running "$1"
	printf 'hello\n' >&4
	wait_until 5 test -s "$dir/got"
	assert_equal "$(cat "$dir/got")" got:hello
}

# shell_exit: the interactive shell exits, and is reaped.
shell_exit() {
	printf 'exit\n' >&4
	exec 4>&-
	reap "$shell"
}

# bg_reader: types at the interactive shell a redlock-run in the background (&) whose command
# reads the terminal, and waits until that command is stopped (SIGTTIN); its pid in $command,
# redlock-run's in $rr.
bg_reader() {
	printf '%q job -- sh -c %q &\n' "$RR" \
		"echo \$\$ > $dir/command; read -r line; echo \"got:\$line\" > $dir/got" >&4
	wait_until 5 test -s "$dir/command"
	command=$(cat "$dir/command")
	wait_until 5 stopped "$command"
	rr=$(ps -o ppid= -p "$command" | tr -d ' ')
}

@test "started in the background, a command that reads the terminal stops the job, as flock's; fg gives it the terminal" {
	interactive_shell
	bg_reader
	# The job is stopped, redlock-run with its command, as the shell says.
	wait_until 5 stopped "$rr"
	printf 'jobs > %s/jobs\n' "$dir" >&4
	wait_until 5 grep -q Stopped "$dir/jobs"
	fg_reads "$command"
	shell_exit
	wait_until 5 free_on main job
}

@test "started in the background and stopped reading the terminal: kill %1 ends it, and the lock goes" {
	interactive_shell
	bg_reader
	wait_until 5 stopped "$rr"
	# The shell's kill sends SIGTERM, then SIGCONT to a stopped job.
	printf 'kill %%1\n' >&4
	wait_until 5 gone "$rr"
	shell_exit
	[ ! -e "$dir/got" ]
	wait_until 5 free_on main job
}

@test "started in the background, brought to the foreground before it reads the terminal: it reads it" {
	interactive_shell
	printf '%q job -- sh -c %q &\n' "$RR" "echo \$\$ > $dir/command
		until [ -e $dir/go ]; do sleep 0.02; done; read -r line; echo \"got:\$line\" > $dir/got" >&4
	# Started in the background: the terminal was not its to hand on then.
	wait_until 5 test -s "$dir/command"
	rr=$(ps -o ppid= -p "$(cat "$dir/command")" | tr -d ' ')
	printf 'fg\n' >&4
	# In the foreground: the shell waits for the job, and no longer reads the terminal.
	foreground() { [[ $(ps -o tpgid= -p "$rr" | tr -d ' ') == "$rr" ]]; }
	wait_until 5 foreground
	printf 'echo shell-read-it > %s/shell\n' "$dir" >&4
	touch "$dir/go"
	wait_until 5 test -s "$dir/got"
	assert_equal "$(cat "$dir/got")" "got:echo shell-read-it > $dir/shell"
	shell_exit
	[ ! -e "$dir/shell" ]
	wait_until 5 free_on main job
}

@test "redlock-run inside redlock-run, in the background: the terminal's stop stops the whole job; fg reads" {
	interactive_shell
	printf '%q outer -- %q inner -- sh -c %q &\n' "$RR" "$RR" \
		"echo \$\$ > $dir/command; read -r line; echo \"got:\$line\" > $dir/got" >&4
	wait_until 5 test -s "$dir/command"
	command=$(cat "$dir/command")
	inner=$(ps -o ppid= -p "$command" | tr -d ' ')
	outer=$(ps -o ppid= -p "$inner" | tr -d ' ')
	wait_until 5 stopped "$outer"
	fg_reads "$command"
	shell_exit
	wait_until 5 free_on main outer
	wait_until 5 free_on main inner
}

@test "in an orphaned job, a command stopped at the terminal stays stopped, said once, and SIGTERM ends it" {
	interactive_shell
	# (...&): the subshell leaves at once, and redlock-run's group is orphaned, which no stop
	# can stop: the command's group is not, and its read of the terminal stops it. (It reads
	# once the subshell has gone, which a loaded machine may delay.)
	printf '(%q job -- sh -c %q 2>%q &)\n' "$RR" \
		"echo \$\$ > $dir/command; until [ -e $dir/go ]; do sleep 0.05; done
		read -r line </dev/tty; echo \"got:\$line\" > $dir/got" \
		"$dir/err" >&4
	wait_until 5 test -s "$dir/command"
	command=$(cat "$dir/command")
	rr=$(ps -o ppid= -p "$command" | tr -d ' ')
	local bash_pid
	bash_pid=$(pgrep -P "$shell" | head -1)
	orphaned() {
		local p
		p=$(ps -o ppid= -p "$rr" | tr -d ' ')
		[[ -n $p && $(ps -o ppid= -p "$p" | tr -d ' ') != "$bash_pid" ]]
	}
	wait_until 10 orphaned
	touch "$dir/go"
	wait_until 5 grep -q 'in a job that nothing can continue' "$dir/err"
	assert_equal "$(state "$command")" T
	assert_equal "$(grep -c 'nothing can continue' "$dir/err")" 1
	kill -TERM "$rr"
	wait_until 5 gone "$rr"
	shell_exit
	[ ! -e "$dir/got" ]
	wait_until 5 free_on main job
}

@test "SIGTERM to redlock-run reaches a command stopped with SIGSTOP: SIGCONT follows it, as timeout(1) sends" {
	# timeout(1) and systemd signal redlock-run's group, not the command's: the SIGCONT they
	# send after SIGTERM reaches redlock-run alone, which sends its own.
	"$RR" job -c "echo \$\$ > $dir/command; kill -STOP \$\$; echo resumed > $dir/resumed" &
	rr=$!
	wait_until 5 test -s "$dir/command"
	wait_until 5 stopped "$(cat "$dir/command")"
	kill -TERM "$rr"
	wait_until 10 gone "$rr" || { kill -KILL "$rr" "$(cat "$dir/command")"; false; }
	reap "$rr"
	assert_equal "$status" 143
	[ ! -e "$dir/resumed" ]
	run rcli exists job
	assert_output 0
}

@test "Ctrl-Z that catches a shell's vfork child before its exec: the job stops all the same; fg ends it" {
	[[ -n ${VFORK_STOP:-} ]] || skip "VFORK_STOP (meson test sets it) names the command"
	# The command cannot stop: it waits in the kernel on a child that stopped (as dash does
	# when Ctrl-Z lands between its vfork and the exec). flock(1), in the job's own group,
	# stops; redlock-run, in another, must see it and stop the job too.
	interactive_shell
	printf '%q job -c %q\n' "$RR" "echo \$\$ > $dir/command; exec $VFORK_STOP" >&4
	wait_until 5 test -s "$dir/command"
	printf 'echo back > %s/back\n' "$dir" >&4
	wait_until 5 test -s "$dir/back"
	printf 'fg; echo $? > %s/status; exit\n' "$dir" >&4
	wait_until 10 test -s "$dir/status"
	exec 4>&-
	reap "$shell"
	assert_equal "$(cat "$dir/status")" 0
	run rcli exists job
	assert_output 0
}

@test "SIGSTOP from outside to a command held in vfork: redlock-run runs on and renews, and ends with it" {
	[[ -n ${VFORK_STOP:-} ]] || skip "VFORK_STOP (meson test sets it) names the command"
	# Whoever stops a group with SIGSTOP continues it: that is no Ctrl-Z, and the job is not
	# stopped (a stopped redlock-run would renew nothing while the command ran on).
	interactive_shell
	printf '%q -v -t 1s job -c %q 2>%q\n' "$RR" "echo \$\$ > $dir/command; exec $VFORK_STOP STOP" \
		"$dir/err" >&4
	wait_until 5 test -s "$dir/command"
	local command
	command=$(cat "$dir/command")
	wait_until 5 eval '[[ $(state "$command") == D ]]'
	renewals() { grep -c "renewed job" "$dir/err" || true; }
	local want=$(($(renewals) + 3))
	wait_until 10 eval '(($(renewals) >= want))'
	kill -CONT -- "-$command"
	printf 'echo $? > %s/status; exit\n' "$dir" >&4
	wait_until 10 test -s "$dir/status"
	exec 4>&-
	reap "$shell"
	assert_equal "$(cat "$dir/status")" 0
}

@test "SIGTSTP sent to redlock-run itself stops the command's whole group with it; SIGCONT continues both" {
	# No terminal: a job of a script with job control, stopped with kill -TSTP. A stopped
	# redlock-run renews nothing; its command must not run on meanwhile.
	as_job "$dir/out" -t 30s job -c "echo \$\$ > $dir/command; sh -c 'trap \"\" TSTP; exec sleep 300' & echo \$! > $dir/worker; wait; true"
	local job=$!
	wait_until 5 test -s "$dir/worker"
	p=$(cat "$dir/rr")
	worker=$(cat "$dir/worker")
	runs_sleep() { [[ $(ps -o comm= -p "$1") == sleep ]]; }
	wait_until 5 runs_sleep "$worker"
	kill -TSTP "$p"
	wait_until 5 stopped "$p"
	wait_until 5 stopped "$worker"
	assert_equal "$(state "$(cat "$dir/command")")" T
	kill -CONT "$p"
	wait_until 5 running "$worker"
	running "$p"
	kill -TERM "$worker"
	reap "$job"
	assert_equal "$status" 0
	run rcli exists job
	assert_output 0
}

@test "SIGTSTP sent to redlock-run whose command cannot stop: both stop all the same; SIGCONT ends it" {
	[[ -n ${VFORK_STOP:-} ]] || skip "VFORK_STOP (meson test sets it) names the command"
	# No terminal: the command waits in the kernel on a child that stopped (see the Ctrl-Z
	# scenario above); the stop passed on to its group cannot stop it.
	as_job "$dir/out" -t 30s job -c "echo \$\$ > $dir/command; exec $VFORK_STOP"
	local job=$!
	wait_until 5 test -s "$dir/command"
	p=$(cat "$dir/rr")
	held() { [[ $(state "$(cat "$dir/command")") == D ]]; }
	wait_until 5 held
	kill -TSTP "$p"
	wait_until 5 stopped "$p"
	kill -CONT "$p"
	reap "$job"
	assert_equal "$status" 0
	run rcli exists job
	assert_output 0
}

@test "stopped with SIGTSTP past the end of its lease: 76 once continued, saying it was stopped" {
	as_job "$dir/err" -t 1s job -c "echo \$\$ > $dir/command; exec sleep 300"
	local job=$!
	wait_until 5 test -s "$dir/command"
	p=$(cat "$dir/rr")
	kill -TSTP "$p"
	wait_until 5 stopped "$p"
	# Nothing renews it meanwhile: the server lets it expire.
	expired() { [[ $(rcli exists job) == 0 ]]; }
	wait_until 10 expired
	kill -CONT "$p"
	reap "$job"
	assert_equal "$status" 76
	cat "$dir/err"
	grep -Eq "^redlock-run: lost the lock on job: the job was stopped for [0-9.]+m?s \(Ctrl-Z, SIGTSTP\), past the end of its lease; stopping the command$" "$dir/err"
}

@test "stopped with SIGTSTP past the end of its lease: once continued, SIGKILL alone, no SIGTERM to run on" {
	command -v strace >/dev/null || skip "strace is not installed"
	strace -e trace=kill -o "$dir/trace" true 2>/dev/null || skip "strace cannot trace here"
	export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer cannot work under ptrace
	# redlock-run's own kill(2) calls (its main thread's), the job's stop passed through.
	printf '#!/bin/sh\nexec strace -o %s -e trace=kill -e signal=none %s "$@"\n' \
		"$dir/trace" "$RR" >"$dir/traced"
	chmod +x "$dir/traced"
	RR=$dir/traced as_job "$dir/err" -t 1s job -c "echo \$\$ > $dir/command; exec sleep 300"
	local job=$!
	wait_until 5 test -s "$dir/command"
	p=$(pgrep -x -P "$(cat "$dir/rr")" redlock-run)
	kill -TSTP "$p"
	wait_until 5 eval '[[ $(state "$p") == [Tt] ]]'
	expired() { [[ $(rcli exists job) == 0 ]]; }
	wait_until 10 expired
	kill -CONT "$p"
	reap "$job"
	assert_equal "$status" 76
	cat "$dir/trace"
	# The group stopped (SIGTSTP), then killed: a SIGTERM and the SIGCONT it needs would let
	# the command run a moment beside the next holder.
	grep -q "SIGKILL" "$dir/trace"
	run grep -c "SIGTERM" "$dir/trace"
	assert_output 0
}

# Whether the lease of job, by the server's clock, is past the point where renewals that keep
# failing stop the command (a third of the lease before its end: -t 15s, 5s), and not near its
# end: a loaded machine has 4.5s to renew once continued.
lease_late() { (($(rcli pttl job) < 4500)); }
# Whether it was renewed since.
lease_renewed() { (($(rcli pttl job) > 10000)); }

@test "redlock-run alone stopped with SIGSTOP: its guard kills the command as the lease ends; 76 once continued" {
	"$RR" -t 1s job -c "echo \$\$ > $dir/command; while :; do sleep 0.1; done" 2>"$dir/err" &
	local rr=$! command
	echo "$rr" >"$dir/rr"
	wait_until 5 test -s "$dir/command"
	command=$(cat "$dir/command")
	kill -STOP "$rr"
	# Killed (a zombie: its parent is stopped) by the guard, not left running beside the next
	# holder; the next gets the lock once the lease is over.
	dead() { [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) == Z ]]; }
	wait_until 10 dead "$command"
	run -0 "$RR" -w 10s job -- echo second
	assert_output second
	kill -CONT "$rr"
	reap "$rr"
	assert_equal "$status" 76
	cat "$dir/err"
	grep -Eq "^redlock-run: lost the lock on job: redlock-run was stopped \(SIGSTOP\) until past the end of its lease; its guard killed the command as the lease ended$" "$dir/err"
}

@test "stopped, continued before the end of its lease (a job's SIGTSTP, SIGSTOP alone): it renews at once and runs on" {
	# The renewal that came due meanwhile is no failing one (the server is not to blame):
	# nothing is lost while the lease lasts, however far into it the stop went.
	local how job p
	for how in TSTP STOP; do
		rm -f "$dir/command" "$dir/go"
		if [[ $how == TSTP ]]; then
			as_job "$dir/err" -t 15s job -c "echo \$\$ > $dir/command; until [ -e $dir/go ]; do sleep 0.05; done"
			job=$!
			wait_until 5 test -s "$dir/rr"
			p=$(cat "$dir/rr")
		else
			"$RR" -t 15s job -c "echo \$\$ > $dir/command; until [ -e $dir/go ]; do sleep 0.05; done" 2>"$dir/err" &
			job=$!
			p=$job
			echo "$p" >"$dir/rr"
		fi
		wait_until 5 test -s "$dir/command"
		kill -"$how" "$p"
		wait_until 5 stopped "$p"
		wait_until 20 lease_late
		kill -CONT "$p"
		wait_until 10 lease_renewed
		touch "$dir/go"
		reap "$job"
		cat "$dir/err"
		assert_equal "$status" 0
		run cat "$dir/err"
		refute_output --partial "lost the lock"
	done
}

@test "the guard killed: said at once; the command runs on, and the lock is released as usual" {
	"$RR" job -c "touch $dir/started; until [ -e $dir/go ]; do sleep 0.05; done" 2>"$dir/err" &
	local rr=$! guard
	wait_until 5 test -e "$dir/started"
	guard=$(pgrep -xf "redlock-guard of $rr")
	kill -KILL "$guard"
	wait_until 5 grep -q "guard" "$dir/err"
	touch "$dir/go"
	reap "$rr"
	assert_equal "$status" 0
	run cat "$dir/err"
	assert_output "redlock-run: the guard of the command's group (pid $guard) was killed: should redlock-run be killed or stopped now, what the command started outlives it"
	assert_equal "$(rcli exists job)" 0
}

@test "the guard killed, then the command killed (kill -9) after the lease it last knew: 137, not a loss" {
	"$RR" -v -t 1s job -c "echo \$\$ > $dir/command; exec sleep 30" 2>"$dir/err" &
	local rr=$! guard
	wait_until 5 test -s "$dir/command"
	guard=$(pgrep -xf "redlock-guard of $rr")
	kill -KILL "$guard"
	wait_until 5 grep -q "guard" "$dir/err"
	# Renewed four times since (every third of the lease): past the lease's end that the
	# guard was last told of.
	renewed_since() { (($(sed -n '/guard/,$p' "$dir/err" | grep -c 'renewed job') >= 4)); }
	wait_until 10 renewed_since
	kill -KILL "$(cat "$dir/command")"
	reap "$rr"
	assert_equal "$status" 137
	run grep -c "lost the lock" "$dir/err"
	assert_output 0
}

@test "the guard killed while the lock is awaited: the command never starts, the lock is given back" {
	"$RR" job -c "touch $dir/held; until [ -e $dir/go ]; do sleep 0.05; done" &
	local holder=$! rr guard
	wait_until 5 test -e "$dir/held"
	"$RR" job -c "touch $dir/ran" 2>"$dir/err" &
	rr=$!
	wait_until 5 eval '[[ $(rcli zcard "{job}:waiting") == 1 ]]'
	guard=$(pgrep -xf "redlock-guard of $rr")
	kill -KILL "$guard"
	touch "$dir/go"
	reap "$holder"
	assert_equal "$status" 0
	reap "$rr"
	assert_equal "$status" 71
	[ ! -e "$dir/ran" ]
	run cat "$dir/err"
	assert_line --index 0 "redlock-run: the guard of the command's group (pid $guard) was killed while the lock was awaited: the command does not start without it"
	assert_line --index 1 "redlock-run: cannot start the command: no such process"
	assert_equal "$(rcli exists job)" 0
}

@test "a signal that redlock-run passed on is not passed to the program that runs it" {
	cat >"$dir/runner.py" <<EOT
import os, signal, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "job", "--", "sh", "-c", "echo ready > $dir/ready; exec sleep 30"])
while not os.path.exists("$dir/ready"):
    time.sleep(0.01)
p.send_signal(signal.SIGINT)  # cancels this one job, as a supervisor would
code = p.wait()
time.sleep(0.5)  # a KeyboardInterrupt would land here
open("$dir/result", "w").write("survived %d" % code)
EOT
	# the program is the terminal's foreground process, redlock-run a member of its group
	env --default-signal=INT script -qfec "python3 $dir/runner.py $RR" /dev/null </dev/null >/dev/null
	run cat "$dir/result"
	assert_output "survived -2"
}

@test "in a script run from a terminal, Ctrl-C stops the script too, as with flock" {
	interactive_shell
	printf 'bash -c %q\n' \
		"$RR job -- sh -c 'echo \$\$ > $dir/command; exec sleep 30'; echo continued > $dir/continued" \
		>&4
	wait_until 5 test -s "$dir/command"
	printf '\003' >&4 # Ctrl-C
	printf 'echo $? > %s/status\n' "$dir" >&4
	wait_until 5 test -s "$dir/status"
	printf 'exit\n' >&4
	exec 4>&-
	reap "$shell"
	run cat "$dir/status"
	assert_output 130
	[ ! -e "$dir/continued" ]
}

@test "in a pipeline on a terminal, the other commands keep it, and Ctrl-C reaches them all, as with flock" {
	interactive_shell
	# The reader after the pipe reads the terminal, as less does; it would be stopped
	# (SIGTTIN) if the command's group took the terminal from the job.
	printf '%q job -- sh -c %q | sh -c %q\n' "$RR" "echo \$\$ > $dir/command; exec sleep 30" \
		"read -r line </dev/tty; echo \"got:\$line\" > $dir/got; exec sleep 30" >&4
	wait_until 5 test -s "$dir/command"
	printf 'typed\n' >&4
	wait_until 5 test -s "$dir/got"
	run cat "$dir/got"
	assert_output "got:typed"
	printf '\003' >&4 # Ctrl-C: to the whole job, redlock-run passes it on to the command
	printf 'echo "${PIPESTATUS[*]}" > %s/status; exit\n' "$dir" >&4
	wait_until 5 test -s "$dir/status"
	exec 4>&-
	reap "$shell"
	run cat "$dir/status"
	assert_output "130 130"
	run rcli exists job
	assert_output 0
}

@test "in a pipeline on a terminal, a command that reads the terminal gets it when it asks" {
	interactive_shell
	# A prompt in a piped deploy script: the command reads the terminal from the background
	# group, is stopped by SIGTTIN, and is handed the terminal then.
	printf '%q job -- sh -c %q | cat > %s/out\n' "$RR" \
		"echo ready > $dir/ready; read -r line; echo \"got:\$line\"" "$dir" >&4
	wait_until 5 test -s "$dir/ready"
	printf 'typed\n' >&4
	printf 'echo "${PIPESTATUS[*]}" > %s/status; exit\n' "$dir" >&4
	wait_until 5 test -s "$dir/status"
	exec 4>&-
	reap "$shell"
	run cat "$dir/out"
	assert_output "got:typed"
	run cat "$dir/status"
	assert_output "0 0"
}

@test "in a script run from a terminal, with a background job of its own: the command reads the terminal" {
	interactive_shell
	# The script's background job shares its group; it is no pipeline: the command's group
	# takes the terminal all the same.
	printf 'bash -c %q\n' \
		"sleep 30 & $RR job -- sh -c 'echo ready > $dir/ready; read -r line; echo \"got:\$line\" > $dir/got'; kill \$!" \
		>&4
	wait_until 5 test -s "$dir/ready"
	printf 'typed\n' >&4
	wait_until 5 test -s "$dir/got"
	printf 'exit\n' >&4
	exec 4>&-
	reap "$shell"
	run cat "$dir/got"
	assert_output "got:typed"
}

@test "in a script run from a terminal, Ctrl-Z stops the whole job and fg continues it" {
	interactive_shell
	# two commands, so that bash forks: redlock-run is a member of the job, not its leader
	printf 'bash -c %q\n' \
		"$RR job -- sh -c 'echo \$\$ > $dir/command; exec sleep 30'; echo continued > $dir/continued" \
		>&4
	wait_until 5 test -s "$dir/command"
	command=$(cat "$dir/command")
	printf '\032' >&4 # Ctrl-Z
	printf 'echo back > %s/back\n' "$dir" >&4
	wait_until 5 test -s "$dir/back"
	assert_equal "$(state "$command")" T
	fg_then_interrupt "$command"
	reap "$shell"
	run cat "$dir/status"
	assert_output 130
	[ ! -e "$dir/continued" ]
}
