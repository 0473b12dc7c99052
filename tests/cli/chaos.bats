#!/usr/bin/env bats
# Chaos, one scenario per engine (DESIGN §6): four contenders loop on one KEY, each waiting for
# the lock, through a critical section that logs itself and increments a shared counter the
# unsafe way, while the engine's servers are killed, restarted empty, frozen, failed over and
# resharded at random, one fault at a time. Whatever happens: one section at a time, fences
# never repeat nor go back, no update is lost, no run exits 0 after its lock was lost, and
# every run either runs its section or says it lost the lock (76): none gives up. Short by
# default; REDLOCK_CHAOS_SECONDS=40 runs each longer. chaos.bash has the machinery.

bats_require_minimum_version 1.5.0
# The time limit is read before a test starts: set inside one, it would not count. Besides the
# faults' own time: the topology, the last fault's repair, the contenders' last runs.
BATS_TEST_TIMEOUT=$((${REDLOCK_CHAOS_SECONDS:-12} + 180))
load helpers
load chaos

teardown() {
	chaos_teardown
	quorum_stop
	sentinel_stop
	cluster_stop
}

# streams N REDIS-CLI-ARGS...: a write (in KEY's slot) on the master that redis-cli reaches with
# ARGS reaches N replicas. One that has just synced gets the writes that follow only from its
# first acknowledgement on, up to a second later, while it says its link is up all the same: a
# failover then loses acknowledged writes, which is not the fault under test.
streams() {
	local n=$1
	shift
	[[ $(printf 'SET {%s}:probe 1 PX 1000\nWAIT %s 500\n' "$CHAOS_KEY" "$n" |
		redis-cli "$@" | tail -1) == "$n" ]]
}

# Redlock: one node of three at a time, a minority, restarted empty or frozen.
redlock_restart_empty() {
	local i=$((RANDOM % 3 + 1))
	chaos_note "restart-empty q$i"
	redis_restart_empty "q$i"
	# Back means back in the quorum's memory too (DESIGN §3b promises no more than a minority
	# losing its data): the next acquisition raised the fence there, and its data is older
	# than a lease (until then it does not count towards a new quorum, and a fault on another
	# node would leave no quorum at all). Its uptime is in whole seconds: 2 is over 1s.
	wait_until 20 fence_on "q$i"
	wait_until 5 up_for 2 "q$i"
}
fence_on() { [[ -n $(rcli_on "$1" get "{$CHAOS_KEY}:fence") ]]; }
redlock_freeze() {
	local i=$((RANDOM % 3 + 1)) tenths=$((RANDOM % 13 + 3))
	chaos_note "freeze q$i for $((tenths * 100))ms"
	node_freeze "$i"
	sleep "$((tenths / 10)).$((tenths % 10))"
	node_thaw "$i"
	wait_until 5 redis_answers "q$i"
}

@test "Redlock, 3 servers, one at a time restarted empty or frozen: one holder, fences grow" {
	quorum_start 3
	chaos_run redlock_restart_empty redlock_freeze
	chaos_check "$CHAOS_SECONDS"
}

# Sentinel: a failover a Sentinel is told to make (the old master answers throughout, and stays
# a master until the Sentinels make it a replica), or the master killed, then started again
# empty on its port once a replica took over (the Sentinels make it a replica). Either is over
# when the master has both replicas in sync again and every Sentinel has seen each server's new
# role (one that has not would set it right later, racing with the next failover).
sentinel_forced_failover() {
	local old s=s$((RANDOM % 3 + 1))
	wait_until 10 streams 2 -p "$(master_port)" # (the last fault's resync)
	old=$(master_port)
	chaos_note "failover $(server_on "$old") through $s"
	# (A Sentinel refuses while it has no replica it deems fit: asked again.)
	wait_until 10 failover_accepted "$s"
	wait_until 30 failover_done "$old"
	wait_until 40 sentinel_settled 2
}
sentinel_kill_master() {
	local old name
	wait_until 10 streams 2 -p "$(master_port)" # (the last fault's resync)
	old=$(master_port)
	name=$(server_on "$old")
	chaos_note "kill-master $name"
	redis_stop "$name"
	# (The Sentinels wait twice their failover timeout after the last failover before another.)
	wait_until 40 failover_done "$old"
	redis_start_again "$name" --repl-diskless-sync-delay 0
	wait_until 40 sentinel_settled 2
}

# sentinel_chaos_start: a master with two replicas and three Sentinels, whose timers are made
# short. A Sentinel turns a master that should be a replica into one once it has said so for four
# hello periods (8s), and asks replicas their role every 10s: a fault would take 10 to 20s to
# undo. Their timers a quarter and a tenth of that, it takes some 5s.
sentinel_chaos_start() {
	local i
	sentinel_start 2
	for i in 1 2 3; do
		scli "s$i" sentinel debug publish-period 500 info-period 1000 >/dev/null
	done
}

@test "Sentinel, 2 replicas, --wait-replicas 2, failovers, master killed: one holder, fences grow" {
	sentinel_chaos_start
	# WAIT for every replica closes the window in which the old master still grants; its
	# timeout is the longest allowed (a third of the TTL), as a loaded machine is slow to ack.
	CHAOS_OPTS=(--wait-replicas 2,300ms)
	chaos_run sentinel_forced_failover sentinel_kill_master
	# Until a fault is undone, the master lacks a replica that WAIT asks for: fewer sections.
	chaos_check $((CHAOS_SECONDS / 2))
}

@test "Sentinel, 2 replicas, no --wait-replicas, failovers, master killed: fences never repeat" {
	sentinel_chaos_start
	# Without WAIT a failover may lose a grant or a renewal, which the man page says: two
	# sections may then overlap. Fences still never repeat nor go back, and nobody gives up.
	chaos_run sentinel_forced_failover sentinel_kill_master
	chaos_check $((CHAOS_SECONDS / 2)) fences
}

# Cluster: faults on the master that owns KEY's slot (the helper keys {KEY}:... share it): a
# CLUSTER FAILOVER its replica is told to make; the owner killed, then started again on its port
# with its nodes.conf once its replica took over (it comes back as that one's replica); its slot
# migrated to another master by hand. Each is over when every node says the cluster is ok.
# A replica that won an election keeps its votes for twice the election's timeout (8s with a
# node timeout of 2s): asked to fail over again within that time, it claims the slots at once
# with its old epoch, and two masters serve them until the one with the newer epoch wins, which
# is Redis's fault, not the lock's. Such a replica is left alone: its shard's slot is migrated
# instead.
declare -gA elected=()
elected() { elected[$1]=$(now_ms); }
may_elect() { (($(now_ms) - ${elected[$1]:-0} > 10000)); }
cluster_manual_failover() {
	local owner replica
	owner=$(owner_of "$CHAOS_KEY")
	replica=$(replica_of "$owner")
	may_elect "$replica" || { cluster_migrate; return; }
	chaos_note "failover $owner to $replica"
	cluster_promote "$replica" "$CHAOS_KEY"
	elected "$replica"
	wait_until 30 cluster_settled
}
cluster_kill_owner() {
	local owner replica
	owner=$(owner_of "$CHAOS_KEY")
	replica=$(replica_of "$owner")
	may_elect "$replica" || { cluster_migrate; return; }
	wait_until 10 streams 1 -s "$(redis_sock "$owner")"
	chaos_note "kill-owner $owner (its replica $replica)"
	redis_stop "$owner"
	wait_until 30 cluster_owner_is "$CHAOS_KEY" "$replica"
	elected "$replica"
	redis_start_again "$owner" --cluster-enabled yes \
		--cluster-config-file "$(redis_dir "$owner")/nodes.conf" --cluster-node-timeout 2000 \
		--repl-diskless-sync-delay 0
	wait_until 30 cluster_settled
}
cluster_migrate() {
	local owner to slot
	owner=$(owner_of "$CHAOS_KEY")
	to=$(cluster_masters | grep -vx "$owner" | shuf -n 1)
	slot=$(rcli_on "$owner" cluster keyslot "$CHAOS_KEY")
	chaos_note "migrate slot $slot from $owner to $to"
	cluster_migrate_slot "$slot" "$owner" "$to"
	wait_until 30 cluster_owner_is "$CHAOS_KEY" "$to"
	wait_until 30 cluster_settled
}

@test "Cluster, 3 masters, 3 replicas, owner failed over, killed, moved: one holder, fences grow" {
	local i seeds=()
	cluster_start 3 1
	# Every node a seed: whichever is down, the others answer.
	for i in 1 2 3 4 5 6; do
		seeds+=("127.0.0.1:$(redis_port "c$i")")
	done
	REDLOCK_URL="redis+cluster://$(IFS=,; echo "${seeds[*]}")"
	export REDLOCK_URL
	chaos_run cluster_manual_failover cluster_kill_owner cluster_migrate
	chaos_check "$CHAOS_SECONDS"
}
