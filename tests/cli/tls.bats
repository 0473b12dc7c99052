#!/usr/bin/env bats
# rediss:// (issue 8): TLS to real redis-servers with a throwaway CA made by openssl: verified
# by name and by address, refused with a message that names the cause, mutual TLS, and the
# same deadlines and lease enforcement as plain connections.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	# A build without TLS skips every scenario here (core.bats checks its rediss://). Under
	# meson, the build says whether it has TLS: a binary that disagrees fails, never skips.
	if [[ ${REDLOCK_BUILD_TLS:-} == 1 ]]; then
		[[ $("$RR" --version) == *"(TLS: yes)"* ]] ||
			{ echo "built with TLS, but --version says: $("$RR" --version)" >&2; return 1; }
	fi
	[[ ${REDLOCK_BUILD_TLS:-} != 0 && $("$RR" --version) == *"(TLS: yes)"* ]] || return 0
	export certs=$BATS_FILE_TMPDIR/certs
	tls_certs "$certs"
	redis_start_tls tls server
}

teardown_file() {
	redis_stop tls
}

setup() {
	[ -n "${certs:-}" ] || skip "this build has no TLS"
	rcli_on tls flushall >/dev/null
	port=$(redis_port tls)
	export REDLOCK_URL="rediss://localhost:$port" REDLOCK_CACERT=$certs/ca.crt
	dir=$BATS_TEST_TMPDIR
}

teardown() {
	deathwatch_stop
	redis_stop other
	redis_stop sentinel
}

# sentinel_tls: a Sentinel whose only port is a TLS one (in sentinel/port), watching server
# tls over TLS as master 'main'.
sentinel_tls() {
	local d tries sport
	d=$(redis_dir sentinel)
	mkdir -p "$d"
	for tries in 1 2 3 4 5; do
		sport=$(port_to_try)
		echo "$sport" >"$d/port"
		cat >"$d/sentinel.conf" <<-EOF
			port 0
			tls-port $sport
			tls-cert-file $certs/server.crt
			tls-key-file $certs/server.key
			tls-ca-cert-file $certs/ca.crt
			tls-auth-clients no
			tls-replication yes
			bind 127.0.0.1
			daemonize yes
			pidfile $d/redis.pid
			logfile $d/redis.log
			dir $d
			sentinel monitor main 127.0.0.1 $port 1
		EOF
		"$SERVER" "$d/sentinel.conf" --sentinel 3>&- &&
			wait_until 5 sentinel_knows_tls "$sport" 2>/dev/null && return 0
		redis_stop sentinel
	done
	return 1
}
sentinel_knows_tls() {
	[[ $(redis-cli --tls --cacert "$certs/ca.crt" -p "$1" sentinel get-master-addr-by-name main |
		tail -1) == "$port" ]]
}

@test "rediss:// verified by name and by address: the lock is taken and given back" {
	run --separate-stderr "$RR" job -- echo by name
	assert_success
	assert_output "by name"
	assert_equal "$stderr" ""
	run --separate-stderr "$RR" -r "rediss://127.0.0.1:$port" job -- echo by address
	assert_success
	assert_output "by address"
	run rcli_on tls exists '{job}:fence'
	assert_output 1
	run rcli_on tls exists job
	assert_output 0
}

@test "over TLS, two contenders are serialized and the waiter is woken by the release" {
	"$RR" -t 30s job -c "echo A start \$(date +%s%6N) >> $dir/log
		until [ -e $dir/go ]; do sleep 0.02; done; echo A end \$(date +%s%6N) >> $dir/log" &
	first=$!
	wait_until 5 held_on tls job
	"$RR" -t 30s job -c "echo B start \$(date +%s%6N) >> $dir/log" &
	second=$!
	in_line() { [[ $(rcli_on tls zcard '{job}:waiting') == 1 ]]; }
	wait_until 5 in_line
	touch "$dir/go"
	reap "$second"
	assert_equal "$status" 0
	wait "$first"
	a_end=$(awk '$1 == "A" && $2 == "end" { print $3 }' "$dir/log")
	b_start=$(awk '$1 == "B" { print $3 }' "$dir/log")
	# woken, not a 30s lease later: a third of it
	((b_start >= a_end && b_start - a_end < 10000000))
}

# The server's count of connections it took.
connections() {
	rcli_on tls info stats | sed -n 's/^total_connections_received:\([0-9]*\).*/\1/p'
}

@test "over TLS, a command running three TTLs keeps the lock through its renewals" {
	before=$(connections)
	run --separate-stderr "$RR" -v -t 300ms job -- sleep 1
	assert_success
	(($(grep -c 'renewed job' <<<"$stderr") >= 3))
	# all on the connection the lock was taken on: one handshake (one connection is ours)
	assert_equal $(($(connections) - before)) 2
	# A connection the server closed is opened again on the first one's session: no full
	# handshake.
	run --separate-stderr "$RR" -v -t 30s job -c \
		"redis-cli -s $(redis_sock tls) client kill type normal >/dev/null; sleep 1"
	assert_success
	assert_equal "$(grep -c '^redlock-run: renewed job (TLS session resumed)$' <<<"$stderr")" 1
}

@test "refused, 69, naming the cause: an untrusted CA, another name, an expired certificate" {
	run --separate-stderr env -u REDLOCK_CACERT "$RR" job -- echo never
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: TLS with localhost:$port refused: the certificate is not signed by a trusted CA (self-signed certificate in certificate chain; name the CA with --cacert)"
	# A CA was named, the wrong one: no advice to name one.
	run --separate-stderr "$RR" --cacert "$certs/rogue.crt" job -- echo never
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: TLS with localhost:$port refused: the certificate is not signed by a CA in $certs/rogue.crt (self-signed certificate in certificate chain; is that the CA that signed the server's?)"
	redis_start_tls other other
	run --separate-stderr "$RR" -r "rediss://localhost:$(redis_port other)" job -- echo never
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: TLS with localhost:$(redis_port other) refused: the certificate is for redis.example.net, not localhost"
	redis_stop other
	redis_start_tls other expired
	run --separate-stderr "$RR" -r "rediss://127.0.0.1:$(redis_port other)" job -- echo never
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock-run: TLS with 127.0.0.1:$(redis_port other) refused: the certificate expired on 2020-02-01 00:00 UTC"
}

@test "--insecure connects to a server no CA vouches for, and says so with -v" {
	redis_start_tls other untrusted
	run --separate-stderr "$RR" -r "rediss://localhost:$(redis_port other)" job -- echo never
	assert_equal "$status" 69
	run --separate-stderr "$RR" -v --insecure -r "rediss://localhost:$(redis_port other)" job -- \
		echo ran
	assert_success
	assert_output ran
	assert_equal "${stderr_lines[0]}" "redlock-run: --insecure: the server's certificate is not verified"
	# REDLOCK_INSECURE takes 1, yes, true or on; "false" never turns verification off, and a
	# value it cannot read is a usage error.
	local v
	for v in 1 yes true on; do
		run -0 env REDLOCK_INSECURE=$v "$RR" -r "rediss://localhost:$(redis_port other)" job -- \
			echo ran
	done
	for v in 0 no false off; do
		run -69 env REDLOCK_INSECURE=$v "$RR" -r "rediss://localhost:$(redis_port other)" job \
			-- echo never
	done
	run -64 --separate-stderr env REDLOCK_INSECURE=maybe "$RR" job -- echo never
	assert_equal "${stderr_lines[0]}" "redlock-run: REDLOCK_INSECURE 'maybe': give 1 (yes, true, on) to verify no certificate, or 0 (no, false, off)"
}

@test "the wrong kind of port: rediss:// to a plain one, redis:// to a TLS one" {
	redis_start_tcp other
	# The server answers the TLS hello as a broken inline command, or waits for the rest of it
	# (up to the 5s a request may take): either way the message says what to do.
	run --separate-stderr "$RR" -n -r "rediss://127.0.0.1:$(redis_port other)" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == "redlock-run: "*"127.0.0.1:$(redis_port other)"*"(a plain port? use redis://"* ]]
	run --separate-stderr "$RR" -n -r "redis://127.0.0.1:$port" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == *"(a TLS port? use rediss://; else the server went away)"* ]]
	# Waiting, too: a server that never answered is not an outage to ride out for a minute,
	# and took no lock to speak of.
	run --separate-stderr "$RR" -r "redis://127.0.0.1:$port" job -- echo never
	assert_equal "$status" 69
	[[ $stderr == *"(a TLS port? use rediss://; else the server went away)" ]]
	[[ $stderr != *"trying again"* && $stderr != *"if the lock was taken"* ]]
}

@test "--connect-timeout: a port that takes no connection (its backlog full) says how long it had" {
	# A listener that never accepts, its backlog filled until a connection no longer goes
	# through (the kernel drops the handshake: the connect times out).
	python3 -c 'import socket, sys, time
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(0)
kept = []
while True:
	s = socket.socket()
	s.settimeout(0.2)
	kept.append(s)
	try:
		s.connect(l.getsockname())
	except OSError:
		break
open(sys.argv[1], "w").write(str(l.getsockname()[1]))
time.sleep(300)' "$BATS_TEST_TMPDIR/port" 3>&- &
	local full=$!
	wait_until 10 test -s "$BATS_TEST_TMPDIR/port"
	run --separate-stderr "$RR" --connect-timeout 300ms -r "redis://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")" -n job -- echo never
	kill "$full"
	assert_equal "$status" 69
	# (What was left of the 300ms when the connect began.)
	[[ $stderr =~ ^"redlock-run: cannot connect to 127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port") within "(2[0-9][0-9]|300)"ms: connection timed out"$ ]]
}

@test "--connect-timeout: a server that accepts and never answers ends the run with 69 within it" {
	# A port that takes connections and says nothing (a service that is not Redis).
	python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
kept = []
while True:
	kept.append(s.accept()[0])' "$BATS_TEST_TMPDIR/port" 3>&- &
	local silent=$!
	wait_until 5 test -s "$BATS_TEST_TMPDIR/port"
	local url="redis://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")" t0
	t0=$(now_ms)
	run --separate-stderr "$RR" --connect-timeout 500ms -r "$url" job -- echo never
	local took=$(($(now_ms) - t0))
	assert_equal "$status" 69
	# (It cannot tell a silent service from a frozen Redis that may carry the request out.)
	assert_equal "$stderr" "redlock-run: no reply from 127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port") in time (--connect-timeout 500ms); if the lock was taken, it expires within 30s"
	# Not before it, nor anywhere near the 30s it took a waiter before (a request's 5s with -n).
	((took >= 500 && took < 4000))
	run --separate-stderr env REDLOCK_CONNECT_TIMEOUT=200ms "$RR" -n -r "$url" --status job
	assert_equal "$status" 69
	run -64 "$RR" --connect-timeout 0 job -- true
	kill "$silent"
}

@test "a server that asked for a client certificate and closes without a word: 69, saying why" {
	python3 "$SOURCE_ROOT/tests/cli/certless.py" "$certs/server.crt" "$certs/server.key" \
		"$certs/ca.crt" "$BATS_TEST_TMPDIR/port" 3>&- &
	local certless=$!
	wait_until 5 test -s "$BATS_TEST_TMPDIR/port"
	run --separate-stderr "$RR" -n -r "rediss://localhost:$(cat "$BATS_TEST_TMPDIR/port")" job \
		-- echo never
	kill "$certless"
	assert_equal "$status" 69
	assert_output ""
	assert_equal "$stderr" "redlock-run: lost the connection to localhost:$(cat "$BATS_TEST_TMPDIR/port"): the server asked for a client certificate and closed the connection without one (give one with --cert and --key)"
}

@test "mutual TLS: --cert and --key are presented; none when the server demands one is 69" {
	redis_start_tls other server --tls-auth-clients yes
	url="rediss://localhost:$(redis_port other)"
	run --separate-stderr "$RR" -n -r "$url" job -- echo never
	assert_equal "$status" 69
	# (Its alert, or a bare close when the alert loses the race: either is explained.)
	[[ $stderr == *"client certificate"*"give one with --cert and --key)" ]]
	# Either is the same refusal, also where a wait would ride an outage out (the close
	# was found by a write, a third of the time, and taken for one).
	local try
	for try in 1 2 3 4 5 6 7 8; do
		run --separate-stderr "$RR" -w 5s -r "$url" job -- echo never
		assert_equal "$status" 69
		[[ $stderr != *"trying again"* ]]
	done
	# A certificate it does not accept: refused after our side of the handshake (TLS 1.3),
	# with an alert that a reset may beat; each run says it was the certificate all the same.
	for cert in untrusted untrusted untrusted expired expired expired; do
		run --separate-stderr "$RR" -n -r "$url" --cert "$certs/$cert.crt" \
			--key "$certs/$cert.key" job -- echo never
		assert_equal "$status" 69
		[[ $stderr == *"client certificate"* ]]
	done
	run --separate-stderr "$RR" -r "$url" --cert "$certs/client.crt" --key "$certs/client.key" \
		job -- echo ran
	assert_success
	assert_output ran
	run --separate-stderr env REDLOCK_CERT="$certs/client.crt" REDLOCK_CERT_KEY="$certs/client.key" \
		"$RR" -r "$url" job -- echo ran from the environment
	assert_output "ran from the environment"
}

@test "a key that does not match its certificate, or a file that cannot be read: 64" {
	run --separate-stderr "$RR" --cert "$certs/client.crt" --key "$certs/server.key" job -- true
	assert_equal "$status" 64
	assert_equal "$stderr" "redlock-run: the key in $certs/server.key does not match the certificate in $certs/client.crt"
	run --separate-stderr "$RR" --cacert /nonexistent.crt job -- true
	assert_equal "$status" 64
	[[ $stderr == "redlock-run: --cacert '/nonexistent.crt': not readable: no such file or directory"* ]]
	# a directory of CA certificates given for a file of them: the other option named
	run -64 --separate-stderr "$RR" --cacert "$certs" job -- true
	[[ $stderr == "redlock-run: --cacert '$certs': a directory, not a file (a directory of CA certificates goes to --cacertdir)"* ]]
	run -64 --separate-stderr env REDLOCK_CACERT="$certs" "$RR" job -- true
	[[ $stderr == *"(a directory of CA certificates goes to REDLOCK_CACERTDIR)"* ]]
	# and a file given for a directory of them
	run -64 --separate-stderr "$RR" --cacertdir "$certs/ca.crt" job -- true
	[[ $stderr == "redlock-run: --cacertdir '$certs/ca.crt': not a directory (a file of CA certificates goes to --cacert)"* ]]
	run --separate-stderr env REDLOCK_CERT=/nonexistent.crt "$RR" job -- true
	assert_equal "$status" 64
	run --separate-stderr "$RR" --cert "$certs/client.crt" job -- true
	assert_equal "$status" 64
	assert_equal "$stderr" "redlock-run: --cert needs --key too (in the environment: REDLOCK_CERT and REDLOCK_CERT_KEY; REDLOCK_KEY is the lock's name)"
	# an encrypted key is refused at once: no passphrase prompt on the terminal
	openssl pkey -in "$certs/client.key" -aes256 -passout pass:s3cret -out "$dir/encrypted.key"
	run --separate-stderr timeout 5 script -qfec "$RR --cert $certs/client.crt \
		--key $dir/encrypted.key job -- true" /dev/null </dev/null
	assert_equal "$status" 64
	[[ $output == *"an encrypted key is not supported"* ]]
	[[ $output != *s3cret* ]]
	# so is one after the certificate in a file that holds both
	cat "$certs/client.crt" "$dir/encrypted.key" >"$dir/both.pem"
	run -64 --separate-stderr "$RR" --cert "$dir/both.pem" --key "$dir/both.pem" job -- true
	[[ $stderr == *"an encrypted key is not supported"* ]]
	# a key that is no key at all is not called encrypted
	echo garbage >"$dir/garbage.key"
	run -64 --separate-stderr "$RR" --cert "$certs/client.crt" --key "$dir/garbage.key" job -- true
	[[ $stderr == "redlock-run: cannot use the private key in $dir/garbage.key: "* ]]
	[[ $stderr != *encrypted* ]]
}

@test "a server frozen during the handshake: given up within the request's deadline" {
	redis_start_tls other server
	kill -STOP "$(redis_pid other)"
	"$RR" -n -r "rediss://localhost:$(redis_port other)" job -- echo never 2>"$dir/err" &
	p=$!
	# It ends by itself while the server stays frozen (the bound only keeps a hang from
	# hanging the suite: the run's own is 5s).
	wait_until 60 gone "$p"
	reap "$p"
	kill -CONT "$(redis_pid other)"
	assert_equal "$status" 69
	assert_equal "$(cat "$dir/err")" "redlock-run: no TLS handshake with localhost:$(redis_port other) in time (a plain port? use redis://; else the server is frozen or overloaded)"
}

@test "a server frozen while a TLS holder runs: the command is stopped before the lease lapses" {
	redis_start_tls other server
	deathwatch_start
	"$RR" -v -t 1s -r "rediss://localhost:$(redis_port other)" job \
		-c "echo \$\$ > $dir/pid; exec sleep 60" 2>"$dir/err" &
	p=$!
	wait_until 5 grep -q 'renewed job' "$dir/err"
	watch_death "$(cat "$dir/pid")"
	# The lease as the last renewal left it on the server; then the server freezes.
	expires=$(last_expiry other job)
	kill -STOP "$(redis_pid other)"
	wait_until 5 gone "$(cat "$dir/pid")"
	reap "$p"
	kill -CONT "$(redis_pid other)"
	rcli_on other client unpause >/dev/null
	assert_equal "$status" 76
	# gone before that lease could lapse on the server's clock
	(($(died_at "$(cat "$dir/pid")") < expires * 1000))
}

@test "no libssl at run time: rediss:// exits 69 and says so (a plain run does not care)" {
	lib=$(ldconfig -p | awk '$1 == "libssl.so.3" { print $NF; exit }')
	[ -n "$lib" ] && unshare -m true 2>/dev/null || skip "needs root and unshare to hide libssl"
	run --separate-stderr unshare -m sh -c "mount --bind /dev/null $lib &&
		exec $RR -r rediss://localhost:$port job -- echo never"
	assert_equal "$status" 69
	[[ $stderr == "redlock-run: cannot load OpenSSL: "* ]]
	run unshare -m sh -c "mount --bind /dev/null $lib &&
		exec $RR -r unix://$(redis_sock tls) job -- echo plain"
	assert_success
	assert_output plain
}

@test "rediss+sentinel://: TLS to the Sentinels and to the master they name, both verified" {
	sentinel_tls
	local url="rediss+sentinel://127.0.0.1:$(redis_port sentinel)/main"
	run -0 "$RR" -r "$url" job -- sh -c 'echo ran; redis-cli -s "$1" exists job' sh "$(redis_sock tls)"
	assert_output "$(printf 'ran\n1')"
	REDLOCK_CACERT=$certs/rogue.crt run -69 "$RR" -r "$url" -n job -- echo never
	refute_output --partial never
	assert_output --partial "no Sentinel of master 'main' could be asked: TLS with 127.0.0.1:"
	assert_output --partial "not signed by a CA in $certs/rogue.crt"
}
