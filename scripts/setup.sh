#!/usr/bin/env bash
# The first command of the quick start: installs what is missing, builds redlock-run, and
# shows it doing its job: two jobs that want the same lock, started together, run one after
# the other through a throwaway redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_packages
build build
bin=$PWD/build/redlock-run

dir=$(mktemp -d /tmp/redlock-demo.XXXXXX)
cleanup() {
	[ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port 0 --unixsocket "$dir/redis.sock" --dir "$dir" --save '' --appendonly no \
	--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
for _ in $(seq 100); do
	redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1 && break
	sleep 0.05
done
export REDLOCK_URL="unix://$dir/redis.sock"

echo
echo "built $bin"
echo "a throwaway redis-server listens on $dir/redis.sock"
echo
echo "two jobs start at the same moment; both want the lock 'nightly-report':"
echo
job() {
	"$bin" nightly-report -c "
		echo \"\$(date +%T.%3N)  job $1 runs  (fence \$REDLOCK_FENCE), working for 2s\"
		sleep 2
		echo \"\$(date +%T.%3N)  job $1 done\""
}
job A &
a=$!
job B &
b=$!
wait "$a" "$b"
echo
echo "one ran after the other. Try it yourself, for example:"
echo "  REDLOCK_URL=redis://127.0.0.1:6379 $bin -n my-job -- ./my-job.sh"
echo "and run the whole test suite with: scripts/test.sh"
