# Shared by the command-line scenarios. Each file gets private redis-servers on Unix sockets
# (or free loopback ports) in its own temporary folder; nothing is mocked, every wait is a
# bounded poll, and every test has a time limit.

bats_load_library bats-support
bats_load_library bats-assert

: "${REDLOCK_RUN:?meson test sets REDLOCK_RUN to the binary under test}"
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-60}

# The server under test: redis-server, or valkey-server (meson's *-valkey scenarios set
# REDLOCK_TEST_SERVER); its Sentinel is the same binary with --sentinel.
SERVER=${REDLOCK_TEST_SERVER:-redis-server}

# A daemon keeps the file descriptors it was started with, and bats waits for its own fd 3
# to close: every server is started without it.

# redis_start NAME [redis-server args...]: starts a server on $BATS_FILE_TMPDIR/NAME/redis.sock
# and waits until it answers.
redis_start() {
	local name=$1 dir
	shift
	dir=$(redis_dir "$name")
	mkdir -p "$dir"
	"$SERVER" --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 \
		--dir "$dir" --save '' --appendonly no --daemonize yes \
		--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "$@" 3>&-
	wait_until 5 test -s "$dir/redis.pid"
	wait_until 5 redis_answers "$name"
}

# redis_start_tcp NAME [args...]: the same on a free loopback port, written to NAME/port; an
# argument {port} stands for that port (redis_start_tls passes --port 0 --tls-port {port}).
redis_start_tcp() {
	local name=$1 dir port tries arg args check
	shift
	dir=$(redis_dir "$name")
	mkdir -p "$dir"
	for tries in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % ${PORT_SPAN:-40000}))
		echo "$port" >"$dir/port"
		rm -f "$dir/redis.pid"
		args=()
		for arg in --port {port} "$@"; do
			args+=("${arg//\{port\}/$port}")
		done
		check=(-h 127.0.0.1 -p "$port")
		[[ " $* " == *" --tls-port "* ]] &&
			check+=(--tls --insecure --cert "$certs/client.crt" --key "$certs/client.key")
		if "$SERVER" "${args[@]}" --bind 127.0.0.1 --unixsocket "$dir/redis.sock" \
			--dir "$dir" --save '' --appendonly no --daemonize yes \
			--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" 3>&- &&
			wait_until 5 redis_answers "$name" 2>/dev/null &&
			redis-cli "${check[@]}" ping 2>/dev/null | grep -Eq 'PONG|NOAUTH'; then
			return 0
		fi
		redis_stop "$name"
	done
	echo "no free port for redis-server" >&2
	return 1
}

# relay_start NAME: a relay (relay.py) in front of server NAME, on the Unix socket
# $(relay_sock NAME), misbehaving as the first line of $(relay_mode NAME) says (pass, delay MS,
# drop, drop-once, blackhole, refuse); its pid in $relay, stopped by relay_stop.
relay_start() {
	local d
	d=$(redis_dir "$1")
	rm -f "$d/relay.ready"
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

redis_dir() { echo "$BATS_FILE_TMPDIR/redis-$1"; }
redis_sock() { echo "$(redis_dir "$1")/redis.sock"; }
redis_port() { cat "$(redis_dir "$1")/port"; }
redis_pid() { cat "$(redis_dir "$1")/redis.pid"; }
redis_answers() { redis-cli -s "$(redis_sock "$1")" ping 2>/dev/null | grep -Eq 'PONG|NOAUTH'; }

redis_stop() {
	local pid
	pid=$(cat "$(redis_dir "$1")/redis.pid" 2>/dev/null) || return 0
	kill -CONT "$pid" 2>/dev/null || true
	kill -KILL "$pid" 2>/dev/null || true
	wait_until 5 gone "$pid"
	rm -f "$(redis_dir "$1")/redis.pid"
}

# held_on NAME KEY: KEY exists on server NAME (redis-cli itself succeeds either way); free_on:
# it does not.
held_on() { [[ $(rcli_on "$1" exists "$2") == 1 ]]; }
free_on() { [[ $(rcli_on "$1" exists "$2") == 0 ]]; }

# rcli [NAME] ARGS...: redis-cli on server NAME (default: main).
rcli() { redis-cli -s "$(redis_sock main)" "$@"; }
rcli_on() {
	local name=$1
	shift
	redis-cli -s "$(redis_sock "$name")" "$@"
}

# wait_until SECONDS COMMAND...: polls COMMAND every 20ms until it succeeds; fails after
# SECONDS.
wait_until() {
	local limit=$1 deadline
	shift
	deadline=$(($(now_ms) + limit * 1000))
	until "$@"; do
		if (($(now_ms) >= deadline)); then
			echo "timed out after ${limit}s waiting for: $*" >&2
			return 1
		fi
		sleep 0.02
	done
}

# Milliseconds and microseconds on the wall clock, without a fork.
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
now_us() { echo "${EPOCHREALTIME/./}"; }

# The binary under test, short. Scenarios export REDLOCK_URL and run it directly (never
# through a shell function), so that `"$RR" ... &` leaves redlock-run's own pid in $!.
RR=$REDLOCK_RUN

# Every key on the main server but fence counters (which never expire, by design).
keys_but_fences() { rcli --scan | grep -v ':fence$' | sort || true; }

# gone PID: the process has exited (a zombie waiting for its parent counts as gone).
gone() {
	! kill -0 "$1" 2>/dev/null || [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) == Z ]]
}

# stamp FILE: copies standard input to FILE, each line prefixed with the time it arrived (µs).
stamp() {
	local line
	while IFS= read -r line; do
		echo "$(now_us) $line"
	done >"$1"
}

# reap PID: waits for a background job and leaves its exit status in $status, as `run` does.
reap() {
	status=0
	wait "$1" || status=$?
}

# The commands a Redis user needs, as the man page's LEAST PRIVILEGE section lists them
# (docs.bats checks that it does).
LOCKER_COMMANDS=(+evalsha +eval +blpop +get +set +pexpire +pttl +del +exists +incr +time +zadd
	+zrem +zremrangebyscore +rpush +type +zscore +zcard +zcount +zrange +zrangebyscore +pexpireat)

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
main_server_reset() {
	export REDLOCK_URL="unix://$(redis_sock main)"
	[ -z "${REDLOCK_TEST_AS_LOCKER:-}" ] || REDLOCK_URL="unix://locker:l0cker@$(redis_sock main)"
	rcli flushall >/dev/null
	dir=$BATS_TEST_TMPDIR
}

# redis_restart_empty NAME: stops server NAME (started by redis_start_tcp) and starts it again
# on the same port, without its data: a restart without persistence.
redis_restart_empty() {
	local name=$1 dir port
	dir=$(redis_dir "$name")
	port=$(redis_port "$name")
	redis_stop "$name"
	"$SERVER" --port "$port" --bind 127.0.0.1 --unixsocket "$dir/redis.sock" \
		--dir "$dir" --save '' --appendonly no --daemonize yes \
		--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" 3>&-
	wait_until 5 redis_answers "$name"
}

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

# A master with replicas and three Sentinels, for the Sentinel scenarios.
# sentinel_start [REPLICAS]: master m1 and replicas m2.. (default one) on free loopback ports, and
# Sentinels s1..s3 watching them as master 'main' (quorum 2, down after 1s), each on a free
# port; REDLOCK_URL names them all. sentinel_stop stops everything, frozen or not.
SENTINEL_MASTER=main
sentinel_start() {
	local replicas=${1:-1} i
	# A replica's first sync starts at once, not after the default 5s of waiting for others.
	redis_start_tcp m1 --repl-diskless-sync-delay 0
	for ((i = 2; i <= replicas + 1; i++)); do
		redis_start_tcp "m$i" --replicaof 127.0.0.1 "$(redis_port m1)" \
			--replica-priority $((100 + i)) --repl-diskless-sync-delay 0
		wait_until 10 replica_synced "m$i"
	done
	for i in 1 2 3; do
		sentinel_run "s$i"
	done
	wait_until 10 sentinels_agree "$(redis_port m1)"
	sentinel_use 1 2 3
}
# sentinel_run NAME: one Sentinel on a free port, watching master m1 (where it is now).
sentinel_run() {
	local name=$1 dir tries port
	dir=$(redis_dir "$name")
	mkdir -p "$dir"
	for tries in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % 40000))
		echo "$port" >"$dir/port"
		cat >"$dir/sentinel.conf" <<-EOF
			port $port
			bind 127.0.0.1
			daemonize yes
			pidfile $dir/redis.pid
			logfile $dir/redis.log
			dir $dir
			sentinel monitor $SENTINEL_MASTER 127.0.0.1 $(redis_port m1) 2
			sentinel down-after-milliseconds $SENTINEL_MASTER 1000
			sentinel failover-timeout $SENTINEL_MASTER 5000
			sentinel parallel-syncs $SENTINEL_MASTER 1
		EOF
		rm -f "$dir/redis.pid"
		if "$SERVER" "$dir/sentinel.conf" --sentinel 3>&- &&
			wait_until 5 sentinel_answers "$name" 2>/dev/null; then
			return 0
		fi
		redis_stop "$name"
	done
	echo "no free port for a Sentinel" >&2
	return 1
}
sentinel_answers() { redis-cli -p "$(redis_port "$1")" ping 2>/dev/null | grep -q PONG; }
# scli NAME ARGS...: redis-cli on Sentinel (or server) NAME, over TCP.
scli() {
	local name=$1
	shift
	redis-cli -p "$(redis_port "$name")" "$@"
}
replica_synced() { rcli_on "$1" info replication | grep -q 'master_link_status:up'; }
# sentinels_agree PORT: every Sentinel names the master on PORT, and knows its replicas.
sentinels_agree() {
	local i
	for i in 1 2 3; do
		[[ -s "$(redis_dir "s$i")/redis.pid" ]] || continue
		[[ $(scli "s$i" sentinel get-master-addr-by-name "$SENTINEL_MASTER" | tail -1) == "$1" ]] ||
			return 1
	done
}
# sentinel_url I...: redis+sentinel:// through these Sentinels.
sentinel_url() {
	local i hosts=()
	for i in "$@"; do
		hosts+=("127.0.0.1:$(redis_port "s$i")")
	done
	local IFS=,
	echo "redis+sentinel://${hosts[*]}/$SENTINEL_MASTER"
}
sentinel_use() { REDLOCK_URL=$(sentinel_url "$@"); export REDLOCK_URL; }
# master_port: the port of the master the Sentinels name now.
master_port() { scli s1 sentinel get-master-addr-by-name "$SENTINEL_MASTER" | tail -1; }
# server_on PORT: the name (m1, m2...) of the server on PORT.
server_on() {
	local d
	for d in "$BATS_FILE_TMPDIR"/redis-m*; do
		[[ $(cat "$d/port") == "$1" ]] && echo "${d##*/redis-}" && return 0
	done
	return 1
}
# failover_done OLD_PORT: the Sentinels name another master, which says it is one.
failover_done() {
	local port
	port=$(master_port) && [[ $port != "$1" ]] &&
		redis-cli -p "$port" role 2>/dev/null | head -1 | grep -q master
}
sentinel_stop() {
	local d
	for d in "$BATS_FILE_TMPDIR"/redis-s[0-9]* "$BATS_FILE_TMPDIR"/redis-m[0-9]*; do
		[ -d "$d" ] && redis_stop "${d##*/redis-}"
	done
	return 0
}

# A Redis Cluster, for the cluster scenarios: cluster_start MASTERS [REPLICAS_EACH] starts
# servers c1..cN on free ports (below 50000: each also listens on its port + 10000), joins
# them with redis-cli --cluster create, and waits until every node says the cluster is ok.
# cluster_stop stops them all.
cluster_start() {
	local masters=$1 replicas=${2:-0} i n addrs=()
	n=$((masters * (replicas + 1)))
	for ((i = 1; i <= n; i++)); do
		PORT_SPAN=30000 redis_start_tcp "c$i" --cluster-enabled yes \
			--cluster-config-file "$(redis_dir "c$i")/nodes.conf" --cluster-node-timeout 2000 \
			--repl-diskless-sync-delay 0
		addrs+=("127.0.0.1:$(redis_port "c$i")")
	done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes \
		>"$BATS_FILE_TMPDIR/cluster-create.log" 2>&1
	for ((i = 1; i <= n; i++)); do
		wait_until 20 cluster_ok "c$i"
	done
	for ((i = 1; i <= n; i++)); do
		[[ $(rcli_on "c$i" role | head -1) == slave ]] && wait_until 20 replica_synced "c$i"
	done
	return 0
}
cluster_ok() { rcli_on "$1" cluster info | grep -q 'cluster_state:ok'; }
cluster_stop() {
	local d
	for d in "$BATS_FILE_TMPDIR"/redis-c[0-9]*; do
		[ -d "$d" ] && redis_stop "${d##*/redis-}"
	done
	return 0
}
# owner_of KEY: the name (c1...) of the master that owns KEY's slot.
owner_of() {
	local d
	for d in "$BATS_FILE_TMPDIR"/redis-c[0-9]*; do
		[[ $(redis-cli -s "$d/redis.sock" role | head -1) == master ]] || continue
		redis-cli -s "$d/redis.sock" get "$1" 2>&1 | grep -q '^MOVED\|^ASK' && continue
		echo "${d##*/redis-}"
		return 0
	done
	return 1
}
# cluster_masters: the names of the masters, one per line.
cluster_masters() {
	local d
	for d in "$BATS_FILE_TMPDIR"/redis-c[0-9]*; do
		[[ $(redis-cli -s "$d/redis.sock" role | head -1) == master ]] && echo "${d##*/redis-}"
	done
	return 0
}
# replica_of MASTER: the name of a replica of MASTER.
replica_of() {
	local id d
	id=$(rcli_on "$1" cluster myid)
	for d in "$BATS_FILE_TMPDIR"/redis-c[0-9]*; do
		redis-cli -s "$d/redis.sock" cluster nodes | grep -q "myself,slave $id" &&
			echo "${d##*/redis-}" && return 0
	done
	return 1
}
# replica_has NAME KEY: replica NAME has KEY (asked in READONLY mode, as replicas want).
replica_has() {
	[[ $(printf 'READONLY\nEXISTS %s\n' "$2" | redis-cli -s "$(redis_sock "$1")" | tail -1) == 1 ]]
}
