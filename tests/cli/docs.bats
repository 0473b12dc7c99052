#!/usr/bin/env bats
# The one exit-status table (src/exitstatus.h) and the options are mirrored by the man page,
# the README and --help: these keep the mirrors honest.

bats_require_minimum_version 1.5.0
load helpers

: "${SOURCE_ROOT:?meson test sets SOURCE_ROOT}"

statuses() {
	sed -n 's/^[[:space:]]*STATUS_[A-Z_]* = \([0-9]*\),.*/\1/p' "$SOURCE_ROOT/src/exitstatus.h"
}

long_options() {
	sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", [a-z_]*_argument,.*/\1/p' "$SOURCE_ROOT/src/opts.c"
}

@test "every exit status in exitstatus.h is in the man page, the README and --help" {
	man_page=$(sed -n '/^\.Sh EXIT STATUS/,/^\.Sh /p' "$SOURCE_ROOT/man/redlock-run.1")
	run "$REDLOCK_RUN" --help
	help=$output
	count=0
	for s in $(statuses); do
		count=$((count + 1))
		((s == 128)) && continue # 128+N: spelled out as such everywhere
		grep -qx "\.It $s" <<<"$man_page" || { echo "man page lacks $s" >&2; false; }
		grep -Eq "^\| ([0-9]+ / )?$s( / [0-9]+)? \|" "$SOURCE_ROOT/README.md" ||
			{ echo "README lacks $s" >&2; false; }
		grep -q "\b$s\b" <<<"$help" || { echo "--help lacks $s" >&2; false; }
	done
	((count >= 9))
	grep -q '^\.It 128+' <<<"$man_page"
	grep -q '^| 128+N |' "$SOURCE_ROOT/README.md"
}

@test "every long option is in the man page and in --help" {
	run "$REDLOCK_RUN" --help
	help=$output
	count=0
	for opt in $(long_options); do
		count=$((count + 1))
		grep -q -- "--$opt\b" <<<"$help" || { echo "--help lacks --$opt" >&2; false; }
		# mdoc spells --opt as "\-opt" after Fl
		grep -Eq -- "\\\\-$opt([^a-z-]|\$)" "$SOURCE_ROOT/man/redlock-run.1" ||
			{ echo "man page lacks --$opt" >&2; false; }
	done
	((count >= 10))
}

@test "the man page's ACL SETUSER line allows exactly what the tests run as (LOCKER_COMMANDS)" {
	line=$(sed -n '/^ACL SETUSER locker/,/^\.Ed/p' "$SOURCE_ROOT/man/redlock-run.1" |
		tr -d '\\' | tr -s ' \n' '\n' | grep '^[+-]' | sort)
	assert_equal "$line" "$(printf '%s\n' -@all "${LOCKER_COMMANDS[@]}" | sort)"
	readme=$(grep '^ACL SETUSER locker' "$SOURCE_ROOT/README.md" | tr ' ' '\n' | grep '^[+-]' | sort)
	assert_equal "$readme" "$line"
}
