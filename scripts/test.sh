#!/usr/bin/env bash
# Builds redlock-run and runs the whole test suite: one test program per module and the
# command-line scenarios (bats), all against private redis-server processes that the tests
# start and stop themselves. Extra arguments go to `meson test` (e.g. --suite unit).
#
#   BUILD_DIR          the build folder (default: build)
#   MESON_SETUP_ARGS   options for meson setup, e.g. "-Dwerror=true -Db_sanitize=address,undefined"
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_packages
dir=${BUILD_DIR:-build}
# shellcheck disable=SC2086 # word splitting of the options is intended
build "$dir" ${MESON_SETUP_ARGS:-}

status=0
# The scenarios spend most of their time waiting for servers and leases: one more than the
# cores keeps the machine busy without starving any of them (on two cores, the CPU is 60 % in
# use, 70 % under the sanitizers).
meson test -C "$dir" --print-errorlogs --num-processes "$(($(nproc) + 1))" "$@" || status=$?

# One closing line that any CI reads the same way.
log="$dir/meson-logs/testlog.json"
# meson prints a failed test's stderr only, and bats says what went wrong on stdout: each
# failed scenario's lines, again, so that a CI log that keeps only this output explains it.
((status == 0)) || python3 - "$log" <<'EOT' || true
import json, sys

for line in open(sys.argv[1]):
    test = json.loads(line)
    if test["result"] in ("OK", "SKIP", "EXPECTEDFAIL"):
        continue
    print(f"== {test['name']}: {test['result']}")
    failing = False
    for out in (test.get("stdout") or "").splitlines():
        if out.startswith(("ok ", "not ok ")):
            failing = out.startswith("not ok ")
        if failing or not out.startswith(("ok ", "# ", "1..")):
            print(out)
EOT
passed=$(grep -c '"result": "OK"' "$log" || true)
failed=$(grep -Ec '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
command -v valkey-server >/dev/null ||
	echo "valkey-server is not installed: the Valkey scenarios were skipped (Debian 12 has" \
		"valkey-server and valkey-sentinel in bookworm-backports; .ci/run installs them)"
echo "${passed} passed, ${failed} failed"
exit "$status"
