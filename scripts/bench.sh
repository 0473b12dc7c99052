#!/usr/bin/env bash
# Measures redlock-run side by side with flock(1) on this machine, in one run, against a
# throwaway redis-server on 127.0.0.1, and prints markdown tables of the figures and
# their ratios. `--quick` makes a few runs only, to check that the bench works. `--profile`
# shows instead where an uncontended run's time goes, phase by phase, beside flock's (it
# needs strace).
#
#   REDLOCK_RUN, BENCH_CRITICAL   use these binaries instead of building
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

quick=() profile=false
for arg; do
	case $arg in
	--quick) quick=(--quick) ;;
	--profile) profile=true ;;
	*)
		echo "usage: scripts/bench.sh [--quick] [--profile]" >&2
		exit 64
		;;
	esac
done

if [ -z "${REDLOCK_RUN:-}" ] || [ -z "${BENCH_CRITICAL:-}" ]; then
	ensure_packages
	build build
	REDLOCK_RUN=$PWD/build/redlock-run
	BENCH_CRITICAL=$PWD/build/tests/bench-critical
fi

dir=$(mktemp -d /tmp/redlock-bench.XXXXXX)
# The Sentinel and Cluster topologies (scripts/bench-engines.sh) live here.
export TOPOLOGY_DIR=$dir/topology
mkdir "$TOPOLOGY_DIR"
cleanup() {
	local file pid pids=()
	for file in "$dir"/*.pid "$TOPOLOGY_DIR"/*/redis.pid; do
		[ -f "$file" ] && pids+=("$(cat "$file")")
	done
	((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true
	# A server on its way out still logs, opening its log file anew each time: removing the
	# directory under it may fail. So wait for them to be gone (5 s at most).
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
	done
	rm -rf "$dir"
}
trap cleanup EXIT
tls=()
if ! $profile && [[ $("$REDLOCK_RUN" --version) == *"(TLS: yes)"* ]]; then
	# The same server on a TLS port too, with a throwaway CA, for the rediss:// rows.
	scripts/certs.sh "$dir/certs"
	tls=(--tls-port 0 --tls-cert-file "$dir/certs/server.crt"
		--tls-key-file "$dir/certs/server.key" --tls-ca-cert-file "$dir/certs/ca.crt"
		--tls-auth-clients no)
fi

# A free loopback port: the figures are for a real TCP round trip, not a Unix socket.
for _ in $(seq 10); do
	port=$((20000 + RANDOM % 40000))
	((${#tls[@]} == 0)) || tls[1]=$((port + 1))
	redis-server --port "$port" "${tls[@]}" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize yes --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
		3>&- || continue
	for _ in $(seq 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break 2
		sleep 0.05
	done
done
redis-cli -p "$port" ping >/dev/null

if $profile; then
	python3 scripts/bench.py --redlock-run "$REDLOCK_RUN" --critical "$BENCH_CRITICAL" \
		--url "redis://127.0.0.1:$port" --profile "${quick[@]}"
	exit
fi

# Two more servers, for the rows of a quorum of three.
quorum="redis://127.0.0.1:$port"
for n in 2 3; do
	for _ in $(seq 10); do
		p=$((20000 + RANDOM % 40000))
		mkdir -p "$dir/q$n"
		redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
			--dir "$dir/q$n" --pidfile "$dir/q$n.pid" --logfile "$dir/q$n/redis.log" 3>&- ||
			continue
		for _ in $(seq 100); do
			redis-cli -p "$p" ping >/dev/null 2>&1 && break 2
			sleep 0.05
		done
	done
	redis-cli -p "$p" ping >/dev/null
	quorum+=" redis://127.0.0.1:$p"
done

tls_args=()
((${#tls[@]} == 0)) ||
	tls_args=(--tls-url "rediss://localhost:$((port + 1))" --cacert "$dir/certs/ca.crt")
python3 scripts/bench.py --redlock-run "$REDLOCK_RUN" --critical "$BENCH_CRITICAL" \
	--url "redis://127.0.0.1:$port" --quorum-urls "$quorum" "${tls_args[@]}" \
	--engines-command "$PWD/scripts/bench-engines.sh" "${quick[@]}"
