#!/usr/bin/env bash
# Started by scripts/bench.py (through scripts/bench.sh) once the rows that compare with
# flock(1) are measured, so that the Sentinels' and the cluster's own chatter does not weigh
# on them: builds a master with a replica behind three Sentinels, and a cluster of three
# masters, under TOPOLOGY_DIR, and prints three URLs, one per line: the Sentinels', the
# cluster node that owns the slot of the key `versus`, and one that does not. bench.sh
# stops the servers.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TOPOLOGY_DIR:?bench.sh sets TOPOLOGY_DIR}"
# shellcheck source=tests/cli/topology.bash
. tests/cli/topology.bash

sentinel_start 1 >/dev/null
echo "$REDLOCK_URL"
cluster_start 3 >/dev/null
owner=$(owner_of versus)
other=$(cluster_masters | grep -vx "$owner" | head -1)
echo "redis://127.0.0.1:$(redis_port "$owner")"
echo "redis://127.0.0.1:$(redis_port "$other")"
