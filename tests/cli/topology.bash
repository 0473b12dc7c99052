# shellcheck shell=bash
# The servers of a scenario, or of the bench: one server on a Unix socket or a free loopback
# port, a master with replicas and Sentinels, a Redis Cluster; started from Debian's
# redis-server (or $REDLOCK_TEST_SERVER), waited for with bounded polls, and stopped, frozen
# or not. Each lives in $(redis_dir NAME), under $TOPOLOGY_DIR (bats: the file's own
# temporary folder). helpers.bash loads it for the scenarios; scripts/bench.sh for its rows.

# The server under test: redis-server, or valkey-server (meson's *-valkey scenarios set
# REDLOCK_TEST_SERVER); its Sentinel is the same binary with --sentinel.
SERVER=${REDLOCK_TEST_SERVER:-redis-server}

# A daemon keeps the file descriptors it was started with, and bats waits for its own fd 3
# to close: every server is started without it.

# redis_start NAME [redis-server args...]: starts a server on $(redis_dir NAME)/redis.sock
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

# port_to_try [ABOVE]: a random loopback port for a server (and, with ABOVE, port + ABOVE for
# its cluster bus), outside the range the kernel hands out to outgoing connections: stopped, a
# server's port could be taken by any connection of the suite, and that connection's TIME_WAIT
# would keep the server from starting again on it for a minute.
port_to_try() {
	local above=${1:-0} low high below over
	read -r low high </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768 high=60999
	# How many ports each side leaves (from 10000 up, and past the range), bus port included.
	below=$((low - 10000 - above)) over=$((65535 - high - above))
	if ((below >= over && below > 0)); then
		echo $((10000 + (RANDOM << 15 | RANDOM) % below))
	elif ((over > 0)); then
		echo $((high + 1 + (RANDOM << 15 | RANDOM) % over))
	else
		# No room outside the range: any port, as before (a restart may then find its own
		# taken for a minute).
		echo $((20000 + (RANDOM << 15 | RANDOM) % (45535 - above)))
	fi
}

# redis_start_tcp NAME [args...]: the same on a free loopback port, written to NAME/port; an
# argument {port} stands for that port (redis_start_tls passes --port 0 --tls-port {port}).
# CLUSTER_BUS=1 keeps port + 10000 free of the ephemeral range too.
redis_start_tcp() {
	local name=$1 dir port tries arg args check
	shift
	dir=$(redis_dir "$name")
	mkdir -p "$dir"
	for tries in 1 2 3 4 5 6 7 8 9 10; do
		port=$(port_to_try $((${CLUSTER_BUS:-0} * 10000)))
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
topology_dir() { echo "${TOPOLOGY_DIR:-$BATS_FILE_TMPDIR}"; }
redis_dir() { echo "$(topology_dir)/redis-$1"; }
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
# gone PID: the process has exited (a zombie waiting for its parent counts as gone).
gone() {
	! kill -0 "$1" 2>/dev/null || [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) == Z ]]
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
		port=$(port_to_try)
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
	for d in "$(topology_dir)"/redis-m*; do
		[[ $(cat "$d/port") == "$1" ]] && echo "${d##*/redis-}" && return 0
	done
	return 1
}
# failover_accepted [SENTINEL]: Sentinel s1 (or SENTINEL) starts a failover when told to (it
# refuses while it has no replica it deems fit: a caller polls it).
failover_accepted() { [[ $(scli "${1:-s1}" sentinel failover "$SENTINEL_MASTER") == OK ]]; }
# failover_done OLD_PORT: the Sentinels name another master, which says it is one.
failover_done() {
	local port
	port=$(master_port) && [[ $port != "$1" ]] &&
		redis-cli -p "$port" role 2>/dev/null | head -1 | grep -q master
}
sentinel_stop() {
	local d
	for d in "$(topology_dir)"/redis-s[0-9]* "$(topology_dir)"/redis-m[0-9]*; do
		[ -d "$d" ] && redis_stop "${d##*/redis-}"
	done
	return 0
}

# A Redis Cluster, for the cluster scenarios: cluster_start MASTERS [REPLICAS_EACH] starts
# servers c1..cN on free ports (each also listens on its port + 10000), joins
# them with redis-cli --cluster create, and waits until every node says the cluster is ok.
# cluster_stop stops them all.
cluster_start() {
	local masters=$1 replicas=${2:-0} i n addrs=()
	n=$((masters * (replicas + 1)))
	for ((i = 1; i <= n; i++)); do
		CLUSTER_BUS=1 redis_start_tcp "c$i" --cluster-enabled yes \
			--cluster-config-file "$(redis_dir "c$i")/nodes.conf" --cluster-node-timeout 2000 \
			--repl-diskless-sync-delay 0
		addrs+=("127.0.0.1:$(redis_port "c$i")")
	done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes \
		>"$(topology_dir)/cluster-create.log" 2>&1
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
	for d in "$(topology_dir)"/redis-c[0-9]*; do
		[ -d "$d" ] && redis_stop "${d##*/redis-}"
	done
	return 0
}
# owner_of KEY: the name (c1...) of the master that owns KEY's slot.
owner_of() {
	local d
	for d in "$(topology_dir)"/redis-c[0-9]*; do
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
	for d in "$(topology_dir)"/redis-c[0-9]*; do
		[[ $(redis-cli -s "$d/redis.sock" role | head -1) == master ]] && echo "${d##*/redis-}"
	done
	return 0
}
# replica_of MASTER: the name of a replica of MASTER.
replica_of() {
	local id d
	id=$(rcli_on "$1" cluster myid)
	for d in "$(topology_dir)"/redis-c[0-9]*; do
		redis-cli -s "$d/redis.sock" cluster nodes | grep -q "myself,slave $id" &&
			echo "${d##*/redis-}" && return 0
	done
	return 1
}
# replica_has NAME KEY: replica NAME has KEY (asked in READONLY mode, as replicas want).
replica_has() {
	[[ $(printf 'READONLY\nEXISTS %s\n' "$2" | redis-cli -s "$(redis_sock "$1")" | tail -1) == 1 ]]
}

# redis_start_again NAME [args...]: starts server NAME (started by redis_start_tcp, and since
# stopped or killed) again on the port it had, empty, as a restart without persistence does;
# ARGS are those of its first start that it needs again (a cluster node's config file, which
# keeps its identity). Running, it is stopped first.
redis_start_again() {
	local name=$1 dir port
	shift
	dir=$(redis_dir "$name")
	port=$(redis_port "$name")
	redis_stop "$name"
	"$SERVER" --port "$port" "$@" --bind 127.0.0.1 --unixsocket "$dir/redis.sock" \
		--dir "$dir" --save '' --appendonly no --daemonize yes \
		--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" 3>&-
	wait_until 5 test -s "$dir/redis.pid"
	wait_until 5 redis_answers "$name"
}

# sentinel_settled REPLICAS: the master the Sentinels name (asked each time: another failover may
# have followed) has REPLICAS replicas online, each of them says so, and every Sentinel names
# that master and has seen, from each server itself, the role it has now (a Sentinel that has
# not would set it right later, racing with the next failover).
sentinel_settled() {
	local replicas=$1 port d i
	port=$(master_port) && sentinels_agree "$port" || return 1
	[[ $(redis-cli -p "$port" info replication | grep -c '^slave[0-9]*:.*state=online') == \
		"$replicas" ]] || return 1
	for d in "$(topology_dir)"/redis-m[0-9]*; do
		[[ $(cat "$d/port") == "$port" ]] && continue
		[[ $(redis-cli -s "$d/redis.sock" role 2>/dev/null | sed -n 3,4p | tr '\n' ' ') == \
			"$port connected " ]] || return 1
	done
	for i in 1 2 3; do
		scli "s$i" sentinel master "$SENTINEL_MASTER" | grep -A1 -x role-reported | grep -qx master ||
			return 1
		[[ $(scli "s$i" sentinel replicas "$SENTINEL_MASTER" | paste - - | awk -v port="$port" '
			$1 == "name" { n++ } { f[n, $1] = $2 }
			END {
				for (r = 1; r <= n; r++)
					ok += f[r, "flags"] == "slave" && f[r, "role-reported"] == "slave" &&
						f[r, "master-port"] == port && f[r, "master-link-status"] == "ok"
				print ok + 0
			}') == "$replicas" ]] || return 1
	done
}

# cluster_settled: every node of the cluster answers, says the cluster is ok and sees no node
# failing; every master serves slots and every replica is in sync with its master.
cluster_settled() {
	local d
	for d in "$(topology_dir)"/redis-c[0-9]*; do
		redis-cli -s "$d/redis.sock" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || return 1
		! redis-cli -s "$d/redis.sock" cluster nodes | grep -q fail || return 1
		case $(redis-cli -s "$d/redis.sock" role | head -1) in
		master) redis-cli -s "$d/redis.sock" cluster nodes | awk '/myself/ { exit NF > 8 ? 0 : 1 }' ;;
		slave) redis-cli -s "$d/redis.sock" info replication | grep -q 'master_link_status:up' ;;
		*) false ;;
		esac || return 1
	done
}

# cluster_migrate_slot SLOT FROM TO: moves SLOT with its keys from master FROM to master TO by
# hand, as redis-cli --cluster reshard does: TO importing, FROM migrating, the keys moved in
# batches (a bounded number of rounds: keys that will not move fail it), then every master told
# that TO owns the slot, TO and FROM first. The function named by MIGRATE_HOOK, if any, runs
# once the keys have moved and the slot has not (FROM answers -ASK then).
cluster_migrate_slot() {
	local slot=$1 from=$2 to=$3 from_id to_id keys m out round
	from_id=$(rcli_on "$from" cluster myid)
	to_id=$(rcli_on "$to" cluster myid)
	rcli_on "$to" cluster setslot "$slot" importing "$from_id" >/dev/null
	rcli_on "$from" cluster setslot "$slot" migrating "$to_id" >/dev/null
	for ((round = 0; ; round++)); do
		keys=$(rcli_on "$from" cluster getkeysinslot "$slot" 100)
		[ -n "$keys" ] || break
		if ((round == 20)); then
			echo "slot $slot: keys still on $from: $keys ($out)" >&2
			return 1
		fi
		# shellcheck disable=SC2086 # one argument per key
		out=$(rcli_on "$from" migrate 127.0.0.1 "$(redis_port "$to")" "" 0 5000 keys $keys)
	done
	[ -z "${MIGRATE_HOOK:-}" ] || "$MIGRATE_HOOK"
	for m in "$to" "$from" $(cluster_masters | grep -vx -e "$to" -e "$from"); do
		rcli_on "$m" cluster setslot "$slot" node "$to_id" >/dev/null
	done
}

# cluster_promote REPLICA KEY: REPLICA takes KEY's slot over by a CLUSTER FAILOVER, asked again
# when one does not go through (a replica that has only just synced may not start it, and the
# master gives up a manual failover after 5s).
cluster_promote() {
	local try
	for try in 1 2 3 4; do
		rcli_on "$1" cluster failover >/dev/null
		wait_until 10 cluster_owner_is "$2" "$1" 2>/dev/null && return 0
	done
	echo "$1 did not take over the slot of $2, asked $try times" >&2
	return 1
}
cluster_owner_is() { [[ $(owner_of "$1" 2>/dev/null) == "$2" ]]; }
