# shellcheck shell=bash
# The chaos scenarios' machinery (chaos.bats, DESIGN §6): contenders loop on one KEY through a
# critical section that logs itself and increments a shared counter the unsafe way (read, pause,
# write), while a fault loop breaks the engine's servers, one fault at a time, each undone
# before the next. Then one checker reads what the sections, the runs and the faults left in
# $dir, whatever the engine.

# How long faults are injected: short by default, as CI runs the whole suite several times.
CHAOS_SECONDS=${REDLOCK_CHAOS_SECONDS:-12}
CHAOS_CONTENDERS=4
CHAOS_KEY=chaos
CHAOS_TTL=1s
# Extra options for every run (the Sentinel scenario's --wait-replicas).
CHAOS_OPTS=()
# How long the contenders get to finish the runs they are in once the faults have stopped: a
# waiter in line behind the others, or riding out the end of an outage.
CHAOS_FINISH_SECONDS=30

# The critical section: "$dir/section DIR RUN CONTENDER". It logs "<fence> <µs> start|end <pid>
# <run>" to DIR/log ("end-term" when it was stopped with SIGTERM, as redlock-run stops a command
# whose lock is lost), and its fence to DIR/fence.CONTENDER for the contender's status line.
# On entry it checks that the previous holder's process is gone (a zombie counts as gone; its
# start time tells a reused pid from it): that catches an overlap with a section killed before
# it could log its end. Between its start and its end it adds one to DIR/counter the unsafe
# way, so that overlapping sections lose updates; DIR/increments gets one line per write.
chaos_write_section() {
	cat >"$dir/section" <<'EOT'
#!/bin/bash
dir=$1 run=$2
log() { echo "$REDLOCK_FENCE ${EPOCHREALTIME/./} $1 $$ $run" >>"$dir/log"; }
trap 'log end-term; exit 143' TERM
echo "$REDLOCK_FENCE" >"$dir/fence.$3"
if read -r prev prev_start prev_run 2>/dev/null <"$dir/holder" &&
	read -r -a st 2>/dev/null <"/proc/$prev/stat" &&
	[[ ${st[2]} != Z && ${st[21]} == "$prev_start" ]]; then
	echo "$run $prev_run $prev" >>"$dir/violations"
fi
read -r -a st <"/proc/$$/stat"
echo "$$ ${st[21]} $run" >"$dir/holder"
log start
pause=$((RANDOM % 301))
sleep "0.$(printf %03d $((pause / 2)))"
read -r n <"$dir/counter"
sleep 0.01
# The write and its record go together: a SIGTERM in between would make the count of writes
# wrong (it waits for them; SIGKILL comes only at the lease's end).
trap 'stopped=1' TERM
echo $((n + 1)) >"$dir/counter"
echo "$run" >>"$dir/increments"
trap 'log end-term; exit 143' TERM
[ -z "${stopped:-}" ] || { log end-term; exit 143; }
sleep "0.$(printf %03d $((pause - pause / 2)))"
log end
EOT
	chmod +x "$dir/section"
}

# chaos_contender W: runs the section through redlock-run on CHAOS_KEY until DIR/stop exists,
# waiting for the lock each time (no -n, no -w). Each run is named W.N; its exit status and
# fence go to DIR/statuses ("W.N STATUS FENCE", - when no section ran), its stderr to
# DIR/stderr, each line prefixed with its name. The pid of the run under way is in DIR/pid.W,
# for the teardown.
chaos_contender() {
	local w=$1 n=0 status
	while [ ! -e "$dir/stop" ]; do
		n=$((n + 1))
		rm -f "$dir/fence.$w"
		"$RR" -t "$CHAOS_TTL" "${CHAOS_OPTS[@]}" "$CHAOS_KEY" -- "$dir/section" "$dir" "$w.$n" "$w" \
			2>"$dir/stderr.$w" &
		echo $! >"$dir/pid.$w"
		status=0
		wait $! || status=$?
		echo "$w.$n $status $(cat "$dir/fence.$w" 2>/dev/null || echo -)" >>"$dir/statuses"
		sed "s/^/$w.$n /" "$dir/stderr.$w" >>"$dir/stderr"
		# A run that gave up did so at once, most likely: four contenders starting runs
		# again without a pause would load the machine enough to make the servers and
		# Sentinels miss their own deadlines, which is not the fault under test.
		[[ $status == 0 || $status == 76 ]] || sleep 0.1
	done
}

# chaos_note TEXT: what the fault under way does, in DIR/faults with the time (µs).
chaos_note() { echo "$(now_us) $*" >>"$dir/faults"; }

# chaos_run FAULT...: starts the contenders; until CHAOS_SECONDS have passed, pauses at random
# (0.1 to 0.6s: short enough that a fault often finds a holder that lived through the one
# before) and calls one of the FAULT functions at random, each of which breaks something and
# brings the topology back before it returns (so faults never pile up); then lets the
# contenders finish their runs.
chaos_run() {
	local faults=("$@") deadline fault w
	dir=$BATS_TEST_TMPDIR
	chaos_write_section
	echo 0 >"$dir/counter"
	: >"$dir/log"
	: >"$dir/violations"
	: >"$dir/increments"
	: >"$dir/statuses"
	: >"$dir/stderr"
	: >"$dir/faults"
	chaos_pids=()
	for ((w = 1; w <= CHAOS_CONTENDERS; w++)); do
		# (Its own stderr would only say that the teardown killed its run.)
		chaos_contender "$w" 3>&- 2>>"$dir/contenders.err" &
		chaos_pids+=($!)
	done
	chaos_started=$(now_ms)
	deadline=$((chaos_started + CHAOS_SECONDS * 1000))
	while sleep "0.$((RANDOM % 6 + 1))" && (($(now_ms) < deadline)); do
		fault=${faults[RANDOM % ${#faults[@]}]}
		"$fault"
		chaos_note "done"
	done
	chaos_finish
}

chaos_contenders_gone() {
	local p
	for p in "${chaos_pids[@]}"; do
		gone "$p" || return 1
	done
}

# chaos_finish: no new runs; the runs under way get CHAOS_FINISH_SECONDS to end. One that does
# not is named in DIR/stuck (the teardown stops it).
chaos_finish() {
	local w p
	touch "$dir/stop"
	if ! wait_until "$CHAOS_FINISH_SECONDS" chaos_contenders_gone 2>/dev/null; then
		for ((w = 1; w <= CHAOS_CONTENDERS; w++)); do
			gone "${chaos_pids[w - 1]}" || echo "contender $w: its run $(cat "$dir/pid.$w")" \
				"did not end in ${CHAOS_FINISH_SECONDS}s" >>"$dir/stuck"
		done
		return 0
	fi
	for p in "${chaos_pids[@]}"; do
		wait "$p" || true
	done
	chaos_pids=()
}

# chaos_teardown: stops whatever chaos_run left running (after a failure or a time limit): the
# run each contender is waiting for (its guard takes the section with it), then the contender.
chaos_teardown() {
	local w p run
	[ -n "${dir:-}" ] && [ -d "$dir" ] || return 0
	touch "$dir/stop"
	for ((w = 1; w <= ${#chaos_pids[@]}; w++)); do
		p=${chaos_pids[w - 1]}
		run=$(cat "$dir/pid.$w" 2>/dev/null) || run=
		# Only while it is that contender's child: a pid may have been reused since.
		if [[ -n $run && $(ps -o ppid= -p "$run" 2>/dev/null | tr -d ' ') == "$p" ]]; then
			kill -KILL "$run" 2>/dev/null || true
		fi
		wait_until 5 gone "$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	chaos_pids=()
}

# chaos_check MIN_SECTIONS [fences]: reads DIR and counts what must never happen, writes the
# details (with examples) to the test's output and a one-line summary to the TAP stream, then
# fails unless every count is zero, at least MIN_SECTIONS sections ran and at least one fault
# was injected. With `fences`, only fences and give-ups must be none: overlaps, lost updates and
# silent losses are counted and shown (an engine that promises no more under the faults).
#  1. overlaps: pairs of sections where one started while the other had not logged its end,
#     plus those the check on entry saw (the earlier one killed before it could log it);
#  2. fences given to two sections, and sections (in start order) with a fence lower than an
#     earlier section's;
#  3. lost updates: writes to the counter (DIR/increments) that it does not show;
#  4. silent losses: a run that exited 0 although another section started inside its own (it
#     never said it had lost the lock), and pairs of overlapping runs that both exited 0;
#  5. give-ups: runs whose status is neither the section's own 0 nor 76 (the lock lost), each
#     listed with its stderr; and runs that had not ended CHAOS_FINISH_SECONDS after the last
#     fault.
chaos_check() {
	local min=$1 only=${2:-} counts
	counts=$(python3 - "$dir" <<'PY'
import collections, os, re, sys

d = sys.argv[1]
def rows(name):
    path = os.path.join(d, name)
    return [l.split() for l in open(path)] if os.path.exists(path) else []
out = open(os.path.join(d, "report"), "w")
def say(*a):
    print(*a, file=out)

starts, ends = {}, {}  # run -> (µs, fence); run -> µs
for fence, us, kind, _pid, run in rows("log"):
    if kind == "start":
        starts[run] = (int(us), int(fence))
    else:
        ends[run] = int(us)
status = {r[0]: int(r[1]) for r in rows("statuses")}
faults = [(int(r[0]), " ".join(r[1:])) for r in rows("faults")]
def fault_at(us):
    """The fault under way (or the last one) at µs."""
    last = "before any fault"
    for t, what in faults:
        if t > us:
            break
        last = what if what != "done" else "after " + last
    return last
def show(run):
    us, fence = starts[run]
    end = ends.get(run)
    return "%s (fence %d, status %s, %s)" % (run, fence, status.get(run, "?"),
        "ran %.1fms" % ((end - us) / 1000) if end else "no end logged")

order = sorted(starts, key=lambda r: starts[r][0])
# 1. Overlaps: (earlier, later) pairs.
pairs = set()
for i, b in enumerate(order):
    for a in order[:i]:
        if a in ends and ends[a] > starts[b][0]:
            pairs.add((a, b))
for run, prev, _pid in rows("violations"):
    if run in starts and prev in starts:
        pairs.add((prev, run))
for a, b in sorted(pairs, key=lambda p: starts[p[1]][0])[:5]:
    say("overlap: %s started %.1fms into %s, during: %s" % (show(b),
        (starts[b][0] - starts[a][0]) / 1000, show(a), fault_at(starts[b][0])))
# 2. Fences.
dup = sum(n - 1 for n in collections.Counter(f for _, f in starts.values()).values())
back, top = 0, None
for run in order:
    fence = starts[run][1]
    if top is not None and fence < top[1]:
        back += 1
        if back <= 5:
            say("fence back: %s after %s, during: %s" % (show(run), show(top[0]),
                fault_at(starts[run][0])))
    if top is None or fence > top[1]:
        top = (run, fence)
seen = {}
shown = 0
for run in order:
    fence = starts[run][1]
    if fence in seen and shown < 5:
        shown += 1
        say("duplicate fence: %s and %s, during: %s" % (show(seen[fence]), show(run),
            fault_at(starts[run][0])))
    seen.setdefault(fence, run)
# 3. Lost updates.
increments = len(rows("increments"))
counter = int((rows("counter") or [["0"]])[0][0])
lost = increments - counter
if lost:
    say("lost updates: %d writes, the counter says %d" % (increments, counter))
# 4. Silent losses.
silent = {a for a, b in pairs if status.get(a) == 0}
both = [p for p in pairs if status.get(p[0]) == 0 and status.get(p[1]) == 0]
for a in sorted(silent)[:5]:
    say("silent loss: %s exited 0 while another section ran inside it" % show(a))
# 5. Give-ups, with what they said.
stderr = collections.defaultdict(list)
for r in rows("stderr"):
    stderr[r[0]].append(" ".join(r[1:]))
gave_up = [run for run, s in status.items() if s not in (0, 76)]
why = collections.defaultdict(list)  # the same words (but for numbers) are said once
for run in gave_up:
    said = stderr[run][-1] if stderr[run] else "(nothing on stderr)"
    why[(status[run], re.sub(r"[0-9]+", "N", said))].append((run, said))
def some(runs):
    return " ".join(runs[:4]) + (" ..." if len(runs) > 4 else "")
for (s, _), runs in sorted(why.items(), key=lambda w: -len(w[1])):
    say("gave up: %d run(s) exited %d (%s), saying e.g.: %s" % (len(runs), s,
        some([r for r, _ in runs]), runs[0][1]))
    # A sanitizer's report (the ASan build of CI): where, in our sources, so that a rare one
    # can be found from the log alone.
    report = stderr[runs[0][0]]
    if any("Sanitizer" in l for l in report):
        for l in [l for l in report if "leak of" in l or " in " in l and "/src/" in l][:16]:
            say("  " + l)
# Not counted against the run (its status stays the command's, DESIGN §3), but worth seeing:
# releases that could not be made, which leave the lock to expire.
unreleased = sorted(run for run in stderr if any("cannot release" in l for l in stderr[run]))
if unreleased:
    say("release not made: %d run(s) (%s), saying e.g.: %s" % (len(unreleased), some(unreleased),
        next(l for l in stderr[unreleased[0]] if "cannot release" in l)))
stuck = len(rows("stuck"))
for r in rows("stuck"):
    say("stuck: " + " ".join(r))
statuses = collections.Counter(status.values())
kinds = collections.Counter(w[1].split()[0] for w in faults if w[1] != "done")
print("sections=%d runs=%d overlaps=%d dup=%d back=%d lost=%d silent=%d both=%d gaveup=%d stuck=%d"
      " faults=%d unreleased=%d" % (len(starts), len(status), len(pairs), dup, back, lost,
      len(silent), len(both), len(gave_up), stuck, sum(kinds.values()), len(unreleased)))
print("statuses='%s' kinds='%s'" % (" ".join("%s:%d" % s for s in sorted(statuses.items())),
                                    " ".join("%s:%d" % k for k in sorted(kinds.items()))))
PY
	) || { echo "the checker itself failed"; return 1; }
	local sections runs overlaps dup back lost silent both gaveup stuck faults unreleased
	local statuses kinds
	eval "$counts"
	echo "# ${BATS_TEST_DESCRIPTION%%:*}: $sections sections in $runs runs ($statuses)," \
		"$faults faults ($kinds); overlaps $overlaps, fences duplicate $dup back $back," \
		"lost updates $lost, silent losses $silent (both 0: $both), gave up $gaveup," \
		"stuck $stuck; releases not made $unreleased" >&3
	cat "$dir/report"
	local bad=0
	if [[ $only == fences ]]; then
		overlaps=0 lost=0 silent=0 both=0
	fi
	((overlaps == 0)) || { echo "overlapping sections: $overlaps"; bad=1; }
	((dup == 0 && back == 0)) || { echo "fences: $dup duplicate, $back going back"; bad=1; }
	((lost == 0)) || { echo "lost updates: $lost"; bad=1; }
	((silent == 0 && both == 0)) || { echo "silent losses: $silent (pairs both 0: $both)"; bad=1; }
	((gaveup == 0 && stuck == 0)) || { echo "runs that gave up: $gaveup, stuck: $stuck"; bad=1; }
	((sections >= min)) || { echo "only $sections sections (at least $min expected)"; bad=1; }
	((faults >= 1)) || { echo "no fault was injected"; bad=1; }
	return "$bad"
}
