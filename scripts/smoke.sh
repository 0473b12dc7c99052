#!/usr/bin/env bash
# A smoke test of an installed redlock-run (default: the one on PATH) against a throwaway
# redis-server on a Unix socket: a run, a contended -n, --status, and the files the package
# installs beside it (the man page, the completions).
set -euo pipefail
rr=${1:-redlock-run}
dir=$(mktemp -d)
redis-server --port 0 --unixsocket "$dir/redis.sock" --save '' --appendonly no \
	--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
trap 'kill "$(cat "$dir/redis.pid")" 2>/dev/null; rm -rf "$dir"' EXIT
export REDLOCK_URL="unix://$dir/redis.sock"
for _ in $(seq 50); do
	redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1 && break
	sleep 0.1
done

"$rr" --version
# The fence: the server's clock in µs at the grant (or one more than the last), 16 digits.
# shellcheck disable=SC2016 # expanded by the command's shell
read -r key fence < <("$rr" smoke -- sh -c 'echo "$REDLOCK_KEY $REDLOCK_FENCE"')
[[ $key == smoke && $fence =~ ^[1-9][0-9]{15}$ ]] ||
	{ echo "the command saw REDLOCK_KEY=$key REDLOCK_FENCE=$fence" >&2; exit 1; }
status=0
"$rr" smoke -- "$rr" -n smoke -- true || status=$?
((status == 75)) || { echo "a held lock gave $status, not 75" >&2; exit 1; }
last=$("$rr" --status smoke | sed -n 's/^smoke is free (last fence \([0-9]*\))$/\1/p')
((last > fence)) || { echo "--status says the last fence is '$last', after $fence" >&2; exit 1; }
status=0
"$rr" smoke -- sh -c 'exit 7' || status=$?
((status == 7)) || { echo "the command's status 7 came back as $status" >&2; exit 1; }

if [[ $rr == /usr/bin/redlock-run ]]; then
	man -w redlock-run >/dev/null
	test -f /usr/share/bash-completion/completions/redlock-run
	test -f /usr/share/zsh/vendor-completions/_redlock-run
	test -f /usr/share/fish/vendor_completions.d/redlock-run.fish
	test -d /usr/share/doc/redlock-run/examples
fi
echo "smoke test passed: $rr"
