# bash completion for redlock-run(1)                       -*- shell-script -*-
#
# Options come before KEY, as getopt_long with "+" parses them: the first word that is not an
# option or an option's value is KEY, and what follows KEY ("--" or "-c STRING" aside) is
# COMMAND, completed with COMMAND's own completion.

# _redlock_run_option WORD: sets opt to the long name of the option that WORD gives (a short
# option, a cluster such as -nt, or an unambiguous abbreviation), and inline to whether its
# value is in WORD itself (-t30s, --ttl=30s). Returns 0 when that option takes a value. The
# option lists are _redlock_run's.
_redlock_run_option()
{
	local word=$1 name c i matches=() takes=() o

	opt='' inline=false
	if [[ $word == --* ]]; then
		name=${word%%=*}
		[[ $word == *=* ]] && inline=true
		[[ " ${long_value[*]} " == *" $name "* ]] && { opt=$name; return 0; }
		[[ " ${long_flag[*]} " == *" $name "* ]] && { opt=$name; return 1; }
		for o in "${long_value[@]}"; do
			[[ $o == "$name"* ]] && matches+=("$o") && takes+=(1)
		done
		for o in "${long_flag[@]}"; do
			[[ $o == "$name"* ]] && matches+=("$o") && takes+=(0)
		done
		# getopt_long takes a prefix of several names only when they are one option; it is
		# enough here that they agree on taking a value.
		((${#matches[@]})) || return 1
		opt=${matches[0]}
		[[ " ${takes[*]} " != *" 0 "* ]] && return 0
		[[ " ${takes[*]} " != *" 1 "* ]] || opt=''
		return 1
	fi
	# A cluster of short options: the first that takes a value takes the rest of the word,
	# or the next word when it ends the cluster.
	for ((i = 1; i < ${#word}; i++)); do
		c=-${word:i:1}
		case " ${short_value[*]} " in
		*" $c "*)
			case $c in
			-r) opt=--redis ;;
			-t) opt=--ttl ;;
			-w) opt=--wait ;;
			-E) opt=--conflict-exit-code ;;
			-c) opt=--command ;;
			-l) opt=--limit ;;
			esac
			((i + 1 < ${#word})) && inline=true
			return 0
			;;
		esac
	done
	return 1
}

# _redlock_run_durations TEXT [PREFIX]: a DURATION (250ms, 30s, 5m, 1h) for TEXT: the number
# typed so far followed by each unit, or a few examples when nothing is typed yet.
_redlock_run_durations()
{
	local text=$1 prefix=${2-} number candidates=()

	if [[ -z $text ]]; then
		candidates=(30s 5m 1h 250ms)
	else
		number=${text%%[a-z]*}
		[[ $number =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] || return
		candidates=("${number}ms" "${number}s" "${number}m" "${number}h")
	fi
	mapfile -t COMPREPLY < <(compgen -P "$prefix" -W "${candidates[*]}" -- "$text")
}

# _redlock_run_value OPTION: completes the value of OPTION in cur.
_redlock_run_value()
{
	case $1 in
	--redis)
		# Only the scheme: the rest is a host or a path of the user's.
		mapfile -t COMPREPLY < <(compgen -W 'redis:// rediss:// unix:// redis+sentinel://
			rediss+sentinel:// redis+cluster:// rediss+cluster://' -- "$cur")
		compopt -o nospace
		__ltrim_colon_completions "$cur"
		;;
	--ttl | --wait | --timeout | --grace | --max-hold | --min-hold | --connect-timeout)
		_redlock_run_durations "$cur"
		;;
	--wait-replicas)
		# N[,TIMEOUT]: TIMEOUT is a DURATION.
		[[ $cur =~ ^[0-9]+, ]] && _redlock_run_durations "${cur#*,}" "${cur%%,*},"
		;;
	--on-lost)
		mapfile -t COMPREPLY < <(compgen -W 'term kill ignore' -- "$cur")
		;;
	--queue)
		mapfile -t COMPREPLY < <(compgen -W 'fifo latest' -- "$cur")
		;;
	--cacert | --cert | --key | --password-file)
		_filedir
		;;
	--cacertdir)
		_filedir -d
		;;
	--sni)
		_known_hosts_real -- "$cur"
		;;
	esac
	# -E N, -l N and -c STRING: nothing to offer.
}

# _redlock_run_words: sets args to the words up to the cursor as redlock-run will get them, and
# at to the index in COMP_WORDS where each starts. COMP_WORDS is also split at
# COMP_WORDBREAKS (redis://user:pw@host, --ttl=30s, deploy:prod), and _command_offset counts
# in COMP_WORDS: pieces that no blank separates in COMP_LINE make one word.
_redlock_run_words()
{
	local i line=$COMP_LINE

	args=() at=()
	for ((i = 0; i <= COMP_CWORD; i++)); do
		if ((i == 0)) || [[ $line == [[:blank:]]* ]]; then
			line=${line#"${line%%[![:blank:]]*}"}
			args+=("${COMP_WORDS[i]}")
			at+=("$i")
		else
			args[-1]+=${COMP_WORDS[i]}
		fi
		line=${line#"${COMP_WORDS[i]}"}
	done
}

_redlock_run()
{
	# _init_completion sets all of these; only cur is used, the words come from
	# _redlock_run_words.
	# shellcheck disable=SC2034
	local cur prev words cword split
	# cur: the value of --ttl=5, and a URL's scheme whole (rediss:) for
	# __ltrim_colon_completions.
	_init_completion -s -n : || return

	# Every name getopt_long accepts, so that an abbreviation resolves as it does there.
	local long_value=(--redis --ttl --wait --timeout --conflict-exit-code --command --limit
		--on-lost --grace --max-hold --min-hold --cacert --cacertdir --cert --key --sni
		--password-file --wait-replicas --connect-timeout --prefix --queue)
	local long_flag=(--nonblock --nb --nonblocking --shared --exclusive --status --json
		--break --yes --list --insecure --verbose --quiet --help --version --cancel-running)
	local short_value=(-r -t -w -E -c -l) short_flag=(-n -s -x -e -v -q -h -V)
	local args at i opt inline key=0 dashdash=false status=false shell=false command word
	_redlock_run_words
	local last=$((${#args[@]} - 1))

	for ((i = 1; i < last; i++)); do
		if ! $dashdash && [[ ${args[i]} == -- ]]; then
			dashdash=true
		elif ! $dashdash && [[ ${args[i]} == -?* ]]; then
			if _redlock_run_option "${args[i]}" && ! $inline; then
				((i++))
				((i == last)) && { _redlock_run_value "$opt"; return; }
			fi
			[[ $opt == --status || $opt == --break || $opt == --list ]] && status=true
			[[ $opt == --command ]] && shell=true
		else
			key=$i
			break
		fi
	done

	word=${args[last]}
	if ((key == 0)); then
		[[ $word == -* ]] && ! $dashdash || return # KEY: a lock's name, nothing to offer
		if [[ $word == --*=* ]]; then
			# --ttl=5: _init_completion -s left the value in cur.
			_redlock_run_option "$word" && _redlock_run_value "$opt"
		else
			mapfile -t COMPREPLY < <(compgen -W "${long_value[*]} ${long_flag[*]}
				${short_value[*]} ${short_flag[*]}" -- "$cur")
		fi
		return
	fi

	# --status runs nothing, and -c's STRING is the command.
	$status && return
	$shell && return
	command=$((key + 1))
	if ((last == command)) && [[ $word == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W '-- -c --command' -- "$cur")
		return
	fi
	case ${args[command]} in
	--) ((command++)) ;;
	-c | --command) return ;;
	esac
	((last >= command)) && _command_offset "${at[command]}"
} &&
	complete -F _redlock_run redlock-run

# ex: filetype=sh
