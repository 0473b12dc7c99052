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

short_options() {
	sed -n 's/^static const char short_options\[\] = "+:\(.*\)";/\1/p' "$SOURCE_ROOT/src/opts.c" |
		tr -d ':' | grep -o .
}

# The option lines of each mirror: the table of the README, the OPTIONS section of the man
# page (mdoc spells --opt as "\-opt" after Fl), and --help up to its first blank line after
# "Options:".
readme_options() { grep '^| `-' "$SOURCE_ROOT/README.md"; }
man_options() {
	sed -n '/^\.Sh OPTIONS/,/^\.Sh /p' "$SOURCE_ROOT/man/redlock-run.1" | grep '^\.It Fl' |
		sed 's/\\-/--/g'
}
help_options() { "$REDLOCK_RUN" --help | sed -n '/^Options:/,/^$/p'; }

@test "every option is in --help, the man page and the README, short and long" {
	local opt c count=0 help man readme
	help=$(help_options)
	man=$(man_options)
	readme=$(readme_options)
	for opt in $(long_options); do
		count=$((count + 1))
		grep -Eq -- "--$opt([^a-z-]|\$)" <<<"$help" || { echo "--help lacks --$opt" >&2; false; }
		grep -Eq -- "--$opt([^a-z-]|\$)" <<<"$man" || { echo "man page lacks --$opt" >&2; false; }
		grep -Eq -- "--$opt([^a-z-]|\$)" <<<"$readme" ||
			{ echo "README lacks --$opt" >&2; false; }
	done
	((count >= 20))
	for c in $(short_options); do
		grep -Eq -- "(^| )-$c([, ]|\$)" <<<"$help" || { echo "--help lacks -$c" >&2; false; }
		grep -Eq -- "^\.It Fl ([a-zA-Z] , )*$c( |\$)" <<<"$man" ||
			{ echo "man page lacks -$c" >&2; false; }
		grep -Eq -- "\`-$c[\`, ]|, -$c[\`, ]" <<<"$readme" || { echo "README lacks -$c" >&2; false; }
	done
}

@test "no mirror names an option that does not exist" {
	local opt known
	known=" $(long_options | tr '\n' ' ') "
	for opt in $({ help_options; man_options; readme_options; } | grep -Eo -- '--[a-z][a-z-]*' |
		sed 's/^--//' | sort -u); do
		[[ $known == *" $opt "* ]] || { echo "--$opt is documented but does not exist" >&2; false; }
	done
}

@test "man renders the page's header and footer without a BSD in them" {
	command -v groff >/dev/null && command -v man >/dev/null || skip "man or groff is not installed"
	run sh -c "man -l '$SOURCE_ROOT/man/redlock-run.1' 2>/dev/null | col -b"
	[[ ${lines[0]} =~ ^REDLOCK-RUN\(1\)[[:space:]]+General\ Commands\ Manual[[:space:]]+REDLOCK-RUN\(1\)$ ]]
	[[ ${lines[-1]} =~ ^redlock-run[[:space:]]+ ]]
	[[ $output != *BSD* ]]
	[[ $output == *"--limit 1 is the ordinary lock"* ]]
}

@test "the man page is clean for mandoc -Tlint" {
	command -v mandoc >/dev/null || skip "mandoc is not installed (Debian: mandoc)"
	# Whether the system's own pages are indexed is not the page's business.
	run mandoc -Tlint "$SOURCE_ROOT/man/redlock-run.1"
	grep -v 'mandoc\.db' <<<"$output" | { ! grep .; }
}

@test "the man page's ACL SETUSER line allows exactly what the tests run as (LOCKER_COMMANDS)" {
	line=$(sed -n '/^ACL SETUSER locker/,/^\.Ed/p' "$SOURCE_ROOT/man/redlock-run.1" |
		tr -d '\\' | tr -s ' \n' '\n' | grep '^[+-]' | sort)
	assert_equal "$line" "$(printf '%s\n' -@all "${LOCKER_COMMANDS[@]}" | sort)"
	readme=$(grep '^ACL SETUSER locker' "$SOURCE_ROOT/README.md" | tr ' ' '\n' | grep '^[+-]' | sort)
	assert_equal "$readme" "$line"
}
