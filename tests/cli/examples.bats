#!/usr/bin/env bats
# The examples in examples/ stay correct: the shell in them passes shellcheck, the systemd
# units pass systemd-analyze verify, the YAML parses and says what the comments say it
# does, the cron file is a cron.d file, and every redlock-run command line in any of them
# (and in examples/README.md, and in the top README's shell, crontab, YAML and unit blocks)
# runs, options unchanged, against a real redis-server. The cron wrapper is run for each of
# the outcomes it maps.
#
# Debian packages beyond the suite's own (bats, bats-assert, bats-support, redis-server,
# redis-tools): shellcheck, python3-yaml, systemd (systemd-analyze). A test whose tool is
# missing skips, naming the package.

bats_require_minimum_version 1.5.0
load helpers

: "${SOURCE_ROOT:?meson test sets SOURCE_ROOT}"

EX=$SOURCE_ROOT/examples
# The server asks for a password, so that the examples' way of giving one is tried too.
PASSWORD=examples-s3cret

setup_file() {
	redis_start main --requirepass "$PASSWORD"
}

teardown_file() {
	redis_stop main
}

setup() {
	REDLOCK_URL="unix://$(redis_sock main)"
	export REDLOCK_URL
	# As the cron file does: the password from a file named in the environment.
	echo "$PASSWORD" >"$BATS_TEST_TMPDIR/password"
	export REDLOCK_PASSWORD_FILE=$BATS_TEST_TMPDIR/password
	unset REDLOCK_PASSWORD
	flush
}

# flush: an empty server (the test's redis-cli authenticates; helpers' rcli does not).
flush() {
	redis-cli -s "$(redis_sock main)" --no-auth-warning -a "$PASSWORD" flushall >/dev/null
}

# need TOOL PACKAGE: skips the test when TOOL is missing.
need() {
	command -v "$1" >/dev/null || skip "$1 is missing: install the Debian package $2"
}

# need_yaml: sets $py to a Python that has the yaml module (Debian's python3-yaml is in
# /usr/bin/python3, which need not be the first python3 on PATH), or skips.
need_yaml() {
	for py in python3 /usr/bin/python3; do
		"$py" -c 'import yaml' 2>/dev/null && return 0
	done
	skip "python3 has no yaml module: install the Debian package python3-yaml"
}

# extract MODE [DIR]: reads the examples with Python.
#   commands        one line per redlock-run invocation: "WHERE<tab>TOOL<tab>ARGS", ARGS
#                   the words after the program name, quoted for the shell (TOOL is
#                   redlock-run, or with-lock.sh, which takes the same arguments);
#   snippets DIR    writes each piece of shell (cron commands, workflow steps, CI scripts)
#                   to a file in DIR; one line per file: "PATH<tab>DIALECT".
extract() {
	"$py" - "$EX" "$@" <<'EOF'
import pathlib, re, shlex, sys
import yaml

root = pathlib.Path(sys.argv[1])
mode = sys.argv[2]
TOOLS = ("redlock-run", "with-lock.sh")
# Lines that ask redlock-run about itself rather than take a lock.
INFO = (["--version"], ["-V"], ["--help"], ["-h"])
found = []


def shell_lines(text):
    """The logical lines of a piece of shell: backslash-newline joins lines."""
    return text.replace("\\\n", " ").splitlines()


def from_words(where, words):
    """An invocation is a line whose program, past any VAR=value, exec or sudo, is one of
    TOOLS: a word that merely names them (a path, a repository) is none."""
    while words and (re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[0])
                     or words[0] in ("exec", "sudo")):
        words = words[1:]
    if words and words[0].rsplit("/", 1)[-1] in TOOLS:
        tool, args = words[0].rsplit("/", 1)[-1], words[1:]
        if args not in INFO:
            found.append((where, tool, args))


def from_shell(where, text):
    for line in shell_lines(text):
        from_words(where, shlex.split(line, comments=True))


# Where YAML holds shell (GitHub's run, GitLab's scripts) and an argv (a container's).
SHELL_KEYS = ("run", "script", "before_script", "after_script")


def walk(where, node, key=None):
    if isinstance(node, dict):
        for k, value in node.items():
            walk(where, value, k)
    elif isinstance(node, list):
        if key == "command":
            from_words(where, [str(word) for word in node])
        else:
            for value in node:
                walk(where, value, key if key in SHELL_KEYS else None)
    elif isinstance(node, str) and key in SHELL_KEYS:
        from_shell(where, node)


def cron_jobs():
    """(line number, command) of each job of the cron.d file."""
    path = root / "cron" / "redlock-run.cron"
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", line):
            continue
        fields = line.split(None, 6)
        yield n, fields[6] if len(fields) == 7 else ""


def yaml_file(name):
    return yaml.safe_load((root / name).read_text())


def readme_blocks():
    """(where, language, text) of each fenced block of the top README."""
    where, lang, lines = None, None, []
    for n, line in enumerate((root.parent / "README.md").read_text().splitlines(), 1):
        if line.startswith("```") and lang is None:
            where, lang, lines = f"README.md:{n}", line[3:].strip(), []
        elif line.startswith("```"):
            yield where, lang, "\n".join(lines)
            lang = None
        elif lang is not None:
            lines.append(line)


def cron_commands(text):
    """The command of each job of a crontab (five time fields, then the command)."""
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", line):
            continue
        fields = line.split(None, 5)
        yield fields[5] if len(fields) == 6 else ""


if mode == "commands":
    service = root / "systemd" / "nightly-report.service"
    for n, line in enumerate(service.read_text().splitlines(), 1):
        if line.startswith("ExecStart="):
            from_words(f"{service.name}:{n}", shlex.split(line[len("ExecStart="):]))
    for n, command in cron_jobs():
        from_shell(f"redlock-run.cron:{n}", command.replace("\\%", "%"))
    for name in ("github-actions/deploy.yml", "gitlab-ci/gitlab-ci.yml",
                 "kubernetes/cronjob.yaml"):
        walk(name, yaml_file(name))
    # The top README's blocks, as they would run: shell, crontabs, CI YAML, systemd units.
    for where, lang, text in readme_blocks():
        if lang == "sh":
            from_shell(where, text)
        elif lang == "cron":
            for command in cron_commands(text):
                from_shell(where, command)
        elif lang == "yaml":
            walk(where, yaml.safe_load(text))
        elif lang == "ini":
            for line in text.splitlines():
                if line.startswith("ExecStart="):
                    from_words(where, shlex.split(line[len("ExecStart="):]))
    # The README's code spans that hold a whole command line.
    for n, line in enumerate((root / "README.md").read_text().splitlines(), 1):
        for span in re.findall(r"`([^`]*)`", line):
            if span.startswith("redlock-run ") and " -- " in span:
                from_shell(f"README.md:{n}", span)
    for where, tool, args in found:
        print(f"{where}\t{tool}\t{shlex.join(args)}")
elif mode == "snippets":
    out = pathlib.Path(sys.argv[3])
    snippets = []
    # cron runs each command with SHELL=/bin/sh; "\%" is cron's, not the shell's.
    for n, command in cron_jobs():
        snippets.append((f"cron-{n}.sh", "sh", command.replace("\\%", "%")))
    # GitHub runs each step with bash (the workflow says shell: bash).
    deploy = yaml_file("github-actions/deploy.yml")
    for job_name, job in deploy["jobs"].items():
        for i, step in enumerate(job["steps"]):
            if "run" in step:
                snippets.append((f"github-{job_name}-{i}.bash", "bash", step["run"]))
    # GitLab runs before_script and script as one script, with sh in a minimal image.
    gitlab = yaml_file("gitlab-ci/gitlab-ci.yml")
    for job_name, job in gitlab.items():
        if isinstance(job, dict) and "script" in job:
            lines = job.get("before_script", []) + job["script"]
            snippets.append((f"gitlab-{job_name}.sh", "sh", "\n".join(lines)))
    # The top README's shell and crontabs (cron's sh).
    for where, lang, text in readme_blocks():
        name = where.replace(".md:", "-")
        if lang == "sh":
            snippets.append((f"{name}.sh", "sh", text))
        elif lang == "cron":
            snippets.append((f"{name}.sh", "sh", "\n".join(cron_commands(text))))
    for name, dialect, text in snippets:
        path = out / name
        path.write_text(f"#!/bin/{dialect}\n{text}\n")
        print(f"{path}\t{dialect}")
EOF
}

# run_example TOOL ARGS...: runs one extracted command line with COMMAND replaced by true:
# the options and KEY as written, the test's password file standing in for the example's,
# the test server for any -r. A line with --password-file runs without
# $REDLOCK_PASSWORD_FILE, so that the option alone must bring the password; the others get
# it from there, as the cron file's jobs do (and the CI URLs carry it themselves).
run_example() {
	local tool=$1 args=() prev='' word program=$RR environment=(env)
	shift
	for word; do
		[[ $word == -- ]] && break
		case $prev in
		--password-file) word=$BATS_TEST_TMPDIR/password ;;
		-r | --redis) word=$REDLOCK_URL ;;
		esac
		args+=("$word")
		prev=$word
	done
	[[ $tool == with-lock.sh ]] && program=$EX/cron/with-lock.sh
	[[ " ${args[*]} " == *" --password-file "* ]] && environment+=(-u REDLOCK_PASSWORD_FILE)
	run --separate-stderr "${environment[@]}" "$program" "${args[@]}" -- true </dev/null
}

@test "the shell scripts and the shell in the examples pass shellcheck" {
	need shellcheck shellcheck
	need_yaml
	scripts=()
	while IFS= read -r -d '' f; do
		scripts+=("$f")
	done < <(find "$EX" -name '*.sh' -print0)
	((${#scripts[@]} >= 1))
	for f in "${scripts[@]}"; do
		[[ -x $f ]] || { echo "$f is not executable" >&2; false; }
		run shellcheck "$f"
		assert_success
	done
	mkdir "$BATS_TEST_TMPDIR/snippets"
	run extract snippets "$BATS_TEST_TMPDIR/snippets"
	assert_success
	snippets=$output
	(($(wc -l <<<"$snippets") >= 6))
	while IFS=$'\t' read -r f dialect; do
		run shellcheck -s "$dialect" "$f"
		[[ $status == 0 ]] || { echo "in $(basename "$f"):" >&2; cat "$f" >&2; }
		assert_success
	done <<<"$snippets"
}

# units_to_verify: $units, a folder for units that systemd-analyze verify is to check, once
# it is seen to work here. First a unit that cannot be wrong: if even that fails, verify does
# not work in this container, which says nothing about ours, and the test is skipped.
units_to_verify() {
	need systemd-analyze systemd
	units=$BATS_TEST_TMPDIR/units
	mkdir "$units"
	printf '[Service]\nType=oneshot\nExecStart=/bin/true\n' >"$units/probe.service"
	run systemd-analyze verify --man=no "$units/probe.service"
	[[ $status == 0 && -z $output ]] ||
		skip "systemd-analyze verify does not work here: ${output:-status $status}"
}

@test "the README's blocks are as they run: a crontab with a PATH, a unit that verifies" {
	need_yaml
	n=0
	while IFS=$'\t' read -r where lang; do
		n=$((n + 1))
		printf '%s\n' "$where $lang" >&2
	done < <("$py" - "$SOURCE_ROOT/README.md" <<'PY'
import sys
lang = None
for n, line in enumerate(open(sys.argv[1]), 1):
    if line.startswith("```"):
        lang = None if lang is not None else line[3:].strip() or "-"
        if lang:
            print(f"README.md:{n}\t{lang}")
PY
	)
	((n >= 10))
	# Every crontab sets PATH: cron's own has no /usr/local/bin.
	crons=$(awk '/^```cron/ { c = 1; ok = 0; next } c && /^```/ { c = 0; if (!ok) print NR; next }
		c && /^PATH=/ { ok = 1 }' "$SOURCE_ROOT/README.md")
	assert_equal "$crons" ""
	# The unit runs what the package installs, and verifies.
	unit=$(awk '/^```ini/ { c = 1; next } c && /^```/ { c = 0 } c' "$SOURCE_ROOT/README.md")
	grep -q '^ExecStart=/usr/bin/redlock-run ' <<<"$unit"
	units_to_verify
	sed -e "s|^ExecStart=/usr/bin/redlock-run |ExecStart=$REDLOCK_RUN |" \
		-e 's| -- /usr/local/bin/reindex$| -- /bin/true|' <<<"$unit" >"$units/reindex.service"
	run systemd-analyze verify --man=no "$units/reindex.service"
	assert_success
	assert_output ''
}

@test "the systemd units pass systemd-analyze verify" {
	units_to_verify
	# verify wants ExecStart='s program to exist: the built binary and true stand in for the
	# installed redlock-run and the report, the rest of the line unchanged.
	sed -e "s|^ExecStart=/usr/bin/redlock-run |ExecStart=$REDLOCK_RUN |" \
		-e 's| -- /opt/report/run.sh$| -- /bin/true|' \
		"$EX/systemd/nightly-report.service" >"$units/nightly-report.service"
	cp "$EX/systemd/nightly-report.timer" "$units/"
	grep -q "^ExecStart=$REDLOCK_RUN .* -- /bin/true$" "$units/nightly-report.service"
	# --man=no: the man page need not be installed for Documentation= to be right.
	run systemd-analyze verify --man=no "$units/nightly-report.service" \
		"$units/nightly-report.timer"
	assert_success
	# verify only warns about unknown or malformed settings, and exits 0 anyway.
	assert_output ''
	run systemd-analyze calendar "$(sed -n 's/^OnCalendar=//p' "$EX/systemd/nightly-report.timer")"
	assert_success
	# What the comments promise.
	service=$EX/systemd/nightly-report.service
	grep -qx 'Type=oneshot' "$service"
	grep -qx 'KillMode=mixed' "$service"
	grep -q '^LoadCredential=redis-password:' "$service"
	grep -q '^ExecStart=.* --password-file %d/redis-password ' "$service"
	grep -qx 'DynamicUser=yes' "$service"
	grep -qx 'NoNewPrivileges=yes' "$service"
	grep -qx 'ProtectSystem=strict' "$service"
	grep -q '^#SuccessExitStatus=75$' "$service"
	grep -q '^RandomizedDelaySec=' "$EX/systemd/nightly-report.timer"
	grep -q '^Persistent=' "$EX/systemd/nightly-report.timer"
}

@test "the YAML files parse, have no duplicate keys, and set what matters" {
	need_yaml
	run "$py" - "$EX" <<'EOF'
import pathlib, re, sys
import yaml

root = pathlib.Path(sys.argv[1])


class Strict(yaml.SafeLoader):
    """A duplicate key is an error, not a silent override."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def load(name):
    return yaml.load((root / name).read_text(), Loader=Strict)


def seconds(duration):
    number, unit = re.fullmatch(r"([0-9.]+)(ms|s|m|h)?", duration).groups()
    return float(number) * {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600}[unit]


# GitHub Actions. YAML 1.1 reads the key "on" as True.
gh = load("github-actions/deploy.yml")
assert gh.get(True) or gh.get("on"), "the workflow has no triggers"
assert gh["jobs"], "the workflow has no jobs"
deploy = gh["jobs"]["deploy"]
assert deploy["concurrency"]["group"], "the deploy job has no concurrency group"
assert deploy["concurrency"]["cancel-in-progress"] is False
assert deploy["env"]["REDLOCK_URL"].replace(" ", "") == "${{secrets.REDLOCK_URL}}"
runs = [step["run"] for step in deploy["steps"] if "run" in step]
assert any(re.search(r"\bredlock-run -w 10m .* -- \./deploy\.sh", r) for r in runs), runs
assert all("${{" not in r for r in runs), "expressions belong in env:, not in run:"

# GitLab CI: REDLOCK_URL comes from the project's masked variables, never from the file.
gl = load("gitlab-ci/gitlab-ci.yml")
job = gl["deploy-production"]
assert job["resource_group"]
for variables in (gl.get("variables", {}), job.get("variables", {})):
    assert "REDLOCK_URL" not in variables, "REDLOCK_URL must be a masked CI variable"
assert any(re.search(r"\bredlock-run -w 10m .* -- \./deploy\.sh", line) for line in job["script"])

# Kubernetes.
cj = load("kubernetes/cronjob.yaml")
assert cj["apiVersion"] == "batch/v1" and cj["kind"] == "CronJob"
assert cj["spec"]["concurrencyPolicy"] == "Forbid"
assert len(cj["spec"]["schedule"].split()) == 5
job = cj["spec"]["jobTemplate"]["spec"]
assert job["backoffLimit"] == 0
pod = job["template"]["spec"]
assert pod["restartPolicy"] == "Never"
(container,) = pod["containers"]
command = container["command"]
assert command[0] == "redlock-run" and "--" in command, command
options = command[:command.index("--")]
for option in ("-n", "--min-hold"):
    assert option in options, f"the CronJob's redlock-run lacks {option}"
assert options[options.index("-E") + 1] == "0"
grace = seconds(options[options.index("--grace") + 1])
assert pod["terminationGracePeriodSeconds"] > grace, "terminationGracePeriodSeconds <= --grace"
max_hold = seconds(options[options.index("--max-hold") + 1])
assert job["activeDeadlineSeconds"] > max_hold, "activeDeadlineSeconds <= --max-hold"
env = {e["name"]: e for e in container["env"]}
for name in ("REDLOCK_URL", "REDLOCK_PASSWORD"):
    assert env[name]["valueFrom"]["secretKeyRef"]["name"], f"{name} is not from a Secret"
print("ok")
EOF
	assert_success
	assert_output ok
}

@test "the cron file is a cron.d file: five time fields and a user before each command" {
	cron=$EX/cron/redlock-run.cron
	jobs=0
	while IFS= read -r line; do
		[[ $line =~ ^[[:space:]]*(#|$) ]] && continue
		[[ $line =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] && continue
		read -r minute hour dom month dow user command <<<"$line"
		for field in "$minute" "$hour" "$dom" "$month" "$dow"; do
			[[ $field =~ ^[0-9*/,-]+$ ]] || { echo "not a time field: '$field' in: $line" >&2; false; }
		done
		[[ $user =~ ^[a-z_][a-z0-9_-]*$ ]] || { echo "not a user: '$user' in: $line" >&2; false; }
		# Without its user field, a line would take the program for the user: every
		# command here starts with redlock-run or an absolute path, and no user is one.
		[[ $command == redlock-run\ * || $command == /* ]] ||
			{ echo "no user field, or no command, in: $line" >&2; false; }
		# An unescaped % would end the command there.
		[[ ${command//\\%/} != *%* ]] || { echo "unescaped % in: $line" >&2; false; }
		jobs=$((jobs + 1))
	done <"$cron"
	((jobs >= 4))
	for name in SHELL PATH MAILTO REDLOCK_URL; do
		grep -q "^$name=" "$cron" || { echo "the cron file does not set $name" >&2; false; }
	done
	# cron's own PATH lacks /usr/local/bin, where meson installs redlock-run.
	grep -q '^PATH=.*/usr/local/bin' "$cron"
}

@test "every redlock-run command line in the examples runs as written" {
	need_yaml
	run extract commands
	assert_success
	commands=$output
	# Each example has at least one, so an extractor that finds nothing cannot pass.
	for where in nightly-report.service redlock-run.cron deploy.yml gitlab-ci.yml \
		cronjob.yaml README.md; do
		grep -q "^[^[:space:]]*$where" <<<"$commands" ||
			{ echo "no redlock-run command line found in $where" >&2; false; }
	done
	n=0
	while IFS=$'\t' read -r where tool words; do
		eval "args=($words)"
		# Every example separates COMMAND with --, so that KEY is never mistaken for it.
		[[ " ${args[*]} " == *" -- "* ]] || { echo "$where: no -- before COMMAND" >&2; false; }
		flush
		run_example "$tool" "${args[@]}"
		if [[ $status != 0 || -n $output || -n $stderr ]]; then
			echo "$where: $tool ${args[*]}: status $status: $output $stderr" >&2
			false
		fi
		n=$((n + 1))
	done <<<"$commands"
	((n >= 8))
}

@test "the once-a-night lines skip the second run, quietly, while --min-hold lasts" {
	need_yaml
	run extract commands
	assert_success
	commands=$output
	n=0
	while IFS=$'\t' read -r where tool words; do
		eval "args=($words)"
		[[ " ${args[*]} " == *" -n "* && " ${args[*]} " == *" --min-hold "* ]] || continue
		flush
		run_example "$tool" "${args[@]}"
		assert_success
		# The second machine, seconds later: the first one's report is long done.
		run_example "$tool" "${args[@]}"
		expected=75
		[[ " ${args[*]} " == *" -E 0 "* || $tool == with-lock.sh ]] && expected=0
		[[ $status == "$expected" && -z $output && -z $stderr ]] ||
			{ echo "$where: second run: status $status: $output $stderr" >&2; false; }
		n=$((n + 1))
	done <<<"$commands"
	((n >= 4))
}

# The wrapper, with a logger that writes to a file instead of syslog.
wrapper_setup() {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\n' "$BATS_TEST_TMPDIR/syslog" \
		>"$BATS_TEST_TMPDIR/bin/logger"
	chmod +x "$BATS_TEST_TMPDIR/bin/logger"
	export PATH=$BATS_TEST_TMPDIR/bin:$PATH
	: >"$BATS_TEST_TMPDIR/syslog"
	wrapper=$EX/cron/with-lock.sh
}
syslog() { cat "$BATS_TEST_TMPDIR/syslog"; }

@test "with-lock.sh: success and the command's output pass through, nothing is logged" {
	wrapper_setup
	run --separate-stderr "$wrapper" job -- echo hello
	assert_success
	assert_output hello
	[[ -z $stderr ]]
	[[ -z $(syslog) ]]
}

@test "with-lock.sh: a lock held elsewhere, or a wait that runs out, is a quiet success" {
	wrapper_setup
	# Another machine ran the job a moment ago and keeps the lock for a minute.
	"$RR" --min-hold 1m job -- true
	run --separate-stderr "$wrapper" -n job -- touch "$BATS_TEST_TMPDIR/ran"
	assert_success
	[[ -z $output && -z $stderr && -z $(syslog) ]]
	run --separate-stderr "$wrapper" -w 100ms job -- touch "$BATS_TEST_TMPDIR/ran"
	assert_success
	[[ -z $output && -z $stderr && -z $(syslog) ]]
	[[ ! -e $BATS_TEST_TMPDIR/ran ]]
}

@test "with-lock.sh: a failing command is logged, mailed and its status kept" {
	wrapper_setup
	run --separate-stderr "$wrapper" job -- sh -c 'exit 3'
	assert_equal "$status" 3
	assert_equal "$stderr" "with-lock: exit 3, the command failed: job -- sh -c exit 3"
	assert_equal "$(syslog)" \
		"-t with-lock -p user.err -- exit 3, the command failed: job -- sh -c exit 3"
}

@test "with-lock.sh: Redis unavailable is logged as such, with status 69" {
	wrapper_setup
	REDLOCK_URL=unix://$BATS_TEST_TMPDIR/nowhere.sock run --separate-stderr "$wrapper" -n job -- true
	assert_equal "$status" 69
	# redlock-run's own line, then the wrapper's.
	[[ $stderr == *"cannot connect to"* ]]
	[[ $stderr == *"with-lock: exit 69, Redis unavailable: -n job -- true" ]]
	[[ $(syslog) == *"-p user.err -- exit 69, Redis unavailable: -n job -- true" ]]
}

@test "with-lock.sh: WITH_LOCK_SKIP keeps a command's own 75 from passing for a skip" {
	wrapper_setup
	WITH_LOCK_SKIP=99 run --separate-stderr "$wrapper" job -- sh -c 'exit 75'
	assert_equal "$status" 75
	[[ $(syslog) == *"exit 75, the command failed"* ]]
	# ...and the skip is still quiet, now as 99.
	"$RR" --min-hold 1m held -- true
	WITH_LOCK_SKIP=99 run --separate-stderr "$wrapper" -n held -- true
	assert_success
	[[ -z $stderr ]]
	WITH_LOCK_SKIP=x run --separate-stderr "$wrapper" -n job -- true
	assert_equal "$status" 64
}

@test "with-lock.sh: without syslog the failure still reaches standard error and keeps its status" {
	wrapper_setup
	printf '#!/bin/sh\necho "logger: socket /dev/log: No such file or directory" >&2\nexit 1\n' \
		>"$BATS_TEST_TMPDIR/bin/logger"
	run --separate-stderr "$wrapper" job -- sh -c 'exit 4'
	assert_equal "$status" 4
	assert_equal "$stderr" "with-lock: exit 4, the command failed: job -- sh -c exit 4"
}
