#!/usr/bin/env bats
# Shell completion (completions/): bash's is run for real by bash-completion, fish's by
# complete -C, zsh's in a pseudo-terminal (zpty). Each test completes one line, with the
# cursor at its end, and looks at what is offered.

bats_require_minimum_version 1.5.0
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

: "${REDLOCK_RUN:?meson test sets REDLOCK_RUN to the binary under test}"
: "${SOURCE_ROOT:?meson test sets SOURCE_ROOT}"
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-20}

COMPLETIONS=$SOURCE_ROOT/completions
BASH_COMPLETION=/usr/share/bash-completion/bash_completion

# Prints what bash offers for the line $1: COMP_WORDS is split as readline splits it, at
# blanks and around COMP_WORDBREAKS characters (redis://h:6379 is redis : //h : 6379).
# shellcheck disable=SC2016 # expanded by the bash that runs it
bash_driver='
. "$BASH_COMPLETION"
. "$COMPLETIONS/redlock-run.bash"
# compopt works only in a completion that readline started.
compopt() { :; }
complete -W "alpha beta" mycmd
# A short PATH, for tests that list every command.
PATH=${COMMAND_PATH:-$PATH}
line=$1
breaks=${COMP_WORDBREAKS//[[:space:]]/}
piece="^([^$breaks]+|[$breaks]+)(.*)\$"
COMP_WORDS=()
read -ra blank_separated <<<"$line"
for word in "${blank_separated[@]}"; do
	while [[ $word =~ $piece ]]; do
		COMP_WORDS+=("${BASH_REMATCH[1]}")
		word=${BASH_REMATCH[2]}
	done
done
[[ $line == *[[:blank:]] ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMP_LINE=$line COMP_POINT=${#line}
spec=$(complete -p redlock-run) || exit
function=${spec##*-F } function=${function%% *}
"$function" redlock-run "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
((${#COMPREPLY[@]} == 0)) || printf "%s\n" "${COMPREPLY[@]}"
'

# Prints what fish offers for the line $1, without the descriptions.
# shellcheck disable=SC2016 # expanded by fish
fish_driver='
source $COMPLETIONS/redlock-run.fish
complete -c mycmd -f -a "alpha beta"
complete --do-complete=$argv[1] | string replace -r "\t.*" ""
# string replace fails when it replaces nothing, as when nothing is offered.
true
'

# Prints what zsh offers for the line $1: an interactive zsh in a pseudo-terminal completes
# it with compinit's system, and a compadd wrapper writes down every candidate that is added.
# Errors of the completion functions show in the terminal: they are printed too.
# shellcheck disable=SC2016 # expanded by zsh
zsh_setup='
PS1= RPS1=
unset zle_bracketed_paste
# No listing and no menu: TAB only completes.
unsetopt auto_list auto_menu beep
fpath=($COMPLETIONS $fpath)
autoload -Uz compinit
compinit -u -d $ZSH_DUMP
compadd() {
	# Calls that only compute matches (-O, -A, -D) add nothing.
	if (( ${@[(I)-[^-]#[OAD]*]} )); then builtin compadd "$@"; return; fi
	local -a hits
	builtin compadd -O hits "$@"
	(( $#hits )) && print -rl -- $hits >>$ZSH_OUT
	builtin compadd "$@"
}
mycmd() {}
_mycmd() { compadd alpha beta }
compdef _mycmd mycmd
'
# shellcheck disable=SC2016 # expanded by zsh
zsh_driver='
zmodload zsh/zpty || exit 2
rm -f -- $ZSH_OUT
print -r -- $ZSH_SETUP >$ZSH_OUT.rc
zpty z zsh -f -i
zpty -w z "source ${(q)ZSH_OUT}.rc"
zpty -w -n z "$1"$'\''\t'\''
# Clear the line, and wait for a mark that only the command after the completion prints.
zpty -w -n z $'\''\C-a\C-k'\''
zpty -w z "print -r -- \${:-COMPLETION}DONE"
zpty -r -m z transcript "*COMPLETIONDONE*" || exit 3
zpty -d z
print -r -- "$transcript" | grep -aEo "(_redlock-run|__redlock_run_[a-z]*):[0-9]+: [^$(printf "\r")]*"
[[ ! -f $ZSH_OUT ]] || cat -- $ZSH_OUT
'

# compinit's dump, made once: without it, each zsh would spend half a second scanning $fpath.
setup_file() {
	if command -v zsh >/dev/null; then
		COMPLETIONS=$COMPLETIONS ZSH_DUMP=$BATS_FILE_TMPDIR/zcompdump \
			zsh -f -c 'fpath=($COMPLETIONS $fpath); autoload -Uz compinit; compinit -u -d $ZSH_DUMP'
	fi
}

need_bash_completion() {
	[[ -r $BASH_COMPLETION ]] || skip "bash-completion is not installed (Debian: bash-completion)"
}

need_fish() {
	command -v fish >/dev/null || skip "fish is not installed (Debian: fish)"
}

need_zsh() {
	command -v zsh >/dev/null || skip "zsh is not installed (Debian: zsh)"
}

# complete_bash LINE, complete_fish LINE, complete_zsh LINE: what each shell offers, one a
# line in $output, sorted and without duplicates; anything on stderr fails the test.
complete_bash() {
	need_bash_completion
	run --separate-stderr env BASH_COMPLETION="$BASH_COMPLETION" COMPLETIONS="$COMPLETIONS" \
		COMMAND_PATH="${COMMAND_PATH-}" bash --norc --noprofile -c "$bash_driver" driver "$1"
	finish_completion
}

complete_fish() {
	need_fish
	run --separate-stderr env COMPLETIONS="$COMPLETIONS" fish --no-config -c "$fish_driver" "$1"
	finish_completion
}

complete_zsh() {
	need_zsh
	run --separate-stderr env COMPLETIONS="$COMPLETIONS" ZSH_SETUP="$zsh_setup" \
		ZSH_DUMP="$BATS_FILE_TMPDIR/zcompdump" ZSH_OUT="$BATS_TEST_TMPDIR/zsh.out" \
		timeout 10 zsh -f -c "$zsh_driver" driver "$1"
	finish_completion
}

finish_completion() {
	if [[ $status != 0 || -n $stderr ]]; then
		echo "status $status, stderr: $stderr" >&2
		return 1
	fi
	output=$(sort -u <<<"$output" | sed '/^$/d')
	mapfile -t lines <<<"$output"
}

# offers WORD...: $output is exactly these words (in any order).
offers() {
	assert_equal "$output" "$(printf '%s\n' "$@" | sort -u)"
}

help_long_options() {
	"$REDLOCK_RUN" --help | grep -o -- '--[a-z][a-z-]*' | sort -u
}

help_short_options() {
	"$REDLOCK_RUN" --help | grep -Eo '^  -[a-zA-Z](, -[a-zA-Z])*' | grep -o -- '-[a-zA-Z]' | sort -u
}

@test "each completion file names every option of --help, short and long" {
	local opt count=0
	for opt in $(help_long_options); do
		count=$((count + 1))
		grep -Eq -- "$opt([^a-z-]|\$)" "$COMPLETIONS/redlock-run.bash" ||
			{ echo "redlock-run.bash lacks $opt" >&2; false; }
		grep -Eq -- "$opt([^a-z-]|\$)" "$COMPLETIONS/_redlock-run" ||
			{ echo "_redlock-run lacks $opt" >&2; false; }
		grep -Eq -- "-l ${opt#--}( |\$)" "$COMPLETIONS/redlock-run.fish" ||
			{ echo "redlock-run.fish lacks $opt" >&2; false; }
	done
	((count >= 30))
	count=0
	for opt in $(help_short_options); do
		count=$((count + 1))
		grep -Eq -- "[ (]${opt}[ )]" "$COMPLETIONS/redlock-run.bash" ||
			{ echo "redlock-run.bash lacks $opt" >&2; false; }
		grep -Eq -- "[{(, ]${opt}[+ ,)}]" "$COMPLETIONS/_redlock-run" ||
			{ echo "_redlock-run lacks $opt" >&2; false; }
		grep -Eq -- "-s ${opt#-}( |\$)" "$COMPLETIONS/redlock-run.fish" ||
			{ echo "redlock-run.fish lacks $opt" >&2; false; }
	done
	((count >= 12))
}

@test "shellcheck finds nothing in the bash completion" {
	command -v shellcheck >/dev/null || skip "shellcheck is not installed (Debian: shellcheck)"
	shellcheck -s bash "$COMPLETIONS/redlock-run.bash"
}

@test "bash: -- offers exactly the long options of --help, - the short ones too" {
	complete_bash 'redlock-run --'
	assert_equal "$output" "$(help_long_options)"
	complete_bash 'redlock-run -'
	assert_equal "$output" "$({ help_long_options; help_short_options; } | sort -u)"
	complete_bash 'redlock-run --on'
	offers --on-lost
}

@test "bash: --on-lost offers term, kill and ignore" {
	complete_bash 'redlock-run --on-lost '
	offers term kill ignore
	complete_bash 'redlock-run -n --on-lost=k'
	offers kill
}

@test "bash: a duration gets its units" {
	complete_bash 'redlock-run -t 5'
	offers 5ms 5s 5m 5h
	complete_bash 'redlock-run --max-hold 1.5'
	offers 1.5ms 1.5s 1.5m 1.5h
	complete_bash 'redlock-run --ttl=30'
	offers 30ms 30s 30m 30h
	complete_bash 'redlock-run -nw '
	offers 30s 5m 1h 250ms
	complete_bash 'redlock-run --wait-replicas 1,2'
	offers 1,2ms 1,2s 1,2m 1,2h
}

@test "bash: --cacert completes files, --cacertdir directories" {
	mkdir "$BATS_TEST_TMPDIR/tls"
	cd "$BATS_TEST_TMPDIR/tls"
	touch ca.pem client.key
	mkdir certs
	complete_bash 'redlock-run --cacert '
	offers ca.pem certs client.key
	complete_bash 'redlock-run --password-file cl'
	offers client.key
	complete_bash 'redlock-run --cacertdir '
	offers certs
}

@test "bash: -r offers the URL schemes" {
	complete_bash 'redlock-run -r '
	offers redis:// rediss:// unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// \
		rediss+cluster://
	complete_bash 'redlock-run --redis rediss+s'
	offers rediss+sentinel://
	# Readline replaces only what follows the colon.
	complete_bash 'redlock-run -r rediss:'
	offers //
}

@test "bash: KEY gets nothing, after the options or after --" {
	complete_bash 'redlock-run -t 30s '
	assert_output ''
	complete_bash 'redlock-run -v -- '
	assert_output ''
	complete_bash 'redlock-run -- -'
	assert_output ''
}

@test "bash: the word after KEY is a command, with or without --" {
	complete_bash 'redlock-run k -- ech'
	assert_line echo
	complete_bash 'redlock-run k ech'
	assert_line echo
	complete_bash 'redlock-run k -'
	offers -- -c --command
}

@test "bash: the words after the command get the command's own completion" {
	complete_bash 'redlock-run k -- mycmd al'
	offers alpha
	complete_bash 'redlock-run k mycmd '
	offers alpha beta
	# COMP_WORDBREAKS splits URLs and KEY into several COMP_WORDS: the offset must count them.
	complete_bash 'redlock-run -r redis://u:pw@h:6379 --ttl=5s deploy:prod -- mycmd b'
	offers beta
}

@test "bash: options that take a value consume the next word, so KEY comes after it" {
	# Every command is offered: only a few, to be quick.
	mkdir "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\n' >"$BATS_TEST_TMPDIR/bin/mytool"
	chmod +x "$BATS_TEST_TMPDIR/bin/mytool"
	COMMAND_PATH=$BATS_TEST_TMPDIR/bin complete_bash 'redlock-run -t 30s k '
	assert_line mytool
	refute_line --partial -- '--'
	complete_bash 'redlock-run -nt 30s k ech'
	assert_line echo
	complete_bash 'redlock-run --tt 30s k ech'
	assert_line echo
	complete_bash 'redlock-run -t30s k ech'
	assert_line echo
	complete_bash 'redlock-run -v --ttl=30s k ech'
	assert_line echo
}

@test "bash: --status and -c run no COMMAND, so nothing follows KEY" {
	complete_bash 'redlock-run --status k '
	assert_output ''
	complete_bash 'redlock-run -c make k '
	assert_output ''
	complete_bash 'redlock-run k -c '
	assert_output ''
}

@test "zsh: the completion function parses" {
	need_zsh
	zsh -n "$COMPLETIONS/_redlock-run"
}

@test "zsh: options and their values" {
	complete_zsh 'redlock-run --'
	assert_equal "$output" "$(help_long_options)"
	complete_zsh 'redlock-run --on-lost '
	offers term kill ignore
	complete_zsh 'redlock-run -t 5'
	offers 5ms 5s 5m 5h
	complete_zsh 'redlock-run --grace '
	offers 30s 5m 1h 250ms
	complete_zsh 'redlock-run --redis '
	offers redis:// rediss:// unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// \
		rediss+cluster://
}

@test "zsh: KEY gets nothing, then COMMAND gets its own completion" {
	complete_zsh 'redlock-run -t 30s '
	assert_output ''
	complete_zsh 'redlock-run -t 30s k -- ech'
	assert_line echo
	complete_zsh 'redlock-run -r redis://u:pw@h:6379 deploy:prod mycmd al'
	offers alpha
	complete_zsh 'redlock-run --ttl 30s k mycmd '
	offers alpha beta
	complete_zsh 'redlock-run --status k '
	assert_output ''
}

@test "fish: the completion file parses" {
	need_fish
	fish --no-execute "$COMPLETIONS/redlock-run.fish"
}

@test "fish: options and their values" {
	complete_fish 'redlock-run --'
	assert_equal "$output" "$(help_long_options)"
	complete_fish 'redlock-run --on-lost '
	offers term kill ignore
	complete_fish 'redlock-run -t 5'
	offers 5ms 5s 5m 5h
	complete_fish 'redlock-run --grace '
	offers 30s 5m 1h 250ms
	complete_fish 'redlock-run --ttl=5'
	offers --ttl=5ms --ttl=5s --ttl=5m --ttl=5h
	complete_fish 'redlock-run -r '
	offers redis:// rediss:// unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// \
		rediss+cluster://
}

@test "fish: KEY gets nothing, then COMMAND gets its own completion" {
	complete_fish 'redlock-run -t 30s '
	assert_output ''
	complete_fish 'redlock-run -t 30s k -- ech'
	assert_line echo
	complete_fish 'redlock-run -t 30s k ech'
	assert_line echo
	complete_fish 'redlock-run -r redis://u:pw@h:6379 deploy:prod -- mycmd al'
	offers alpha
	complete_fish 'redlock-run --ttl 30s k mycmd '
	offers alpha beta
	complete_fish 'redlock-run --status k '
	assert_output ''
}
