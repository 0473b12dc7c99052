# fish completion for redlock-run(1). Options come before KEY, as getopt_long with "+" parses
# them: the first word that is not an option or an option's value is KEY, and what follows KEY
# ("--" or "-c STRING" aside) is COMMAND, completed with COMMAND's own completion.

# Where the cursor is: "options" before KEY (an option, its value, or KEY itself), "key" right
# after a "--" that ends the options, "after-key N" right after KEY, where "--", -c or COMMAND
# may come, "command N" after that, "none" where nothing more is taken. COMMAND starts at the
# Nth word of the command line.
function __redlock_run_where
	set -l long_value redis ttl wait timeout conflict-exit-code command limit on-lost grace \
		max-hold min-hold cacert cacertdir cert key sni password-file wait-replicas \
		connect-timeout prefix queue
	set -l long_flag nonblock nb nonblocking shared exclusive status json break yes list insecure \
		verbose quiet help version cancel-running
	set -l words (commandline -opc)[2..-1]
	set -l n (count $words)
	set -l dashdash 0
	set -l status_only 0
	set -l shell 0
	set -l i 1
	while test $i -le $n
		set -l word $words[$i]
		if test $dashdash = 0; and test "$word" = --
			set dashdash 1
		else if test $dashdash = 0; and string match -qr -- '^--.' $word
			set -l name (string replace -r -- '^--([^=]*).*' '$1' $word)
			set -l matches
			if contains -- $name $long_value $long_flag
				set matches $name
			else
				set matches (string match -- "$name*" $long_value $long_flag)
			end
			test "$matches" = status -o "$matches" = break -o "$matches" = list; and set status_only 1
			test "$matches" = command; and set shell 1
			# A prefix of several names takes a value when they all do.
			set -l takes (count $matches)
			for m in $matches
				contains -- $m $long_value; or set takes 0
			end
			if test $takes -gt 0; and not string match -q -- '*=*' $word
				set i (math $i + 1)
			end
		else if test $dashdash = 0; and string match -qr -- '^-.' $word
			# A cluster of short options: the first that takes a value takes the rest of
			# the word, or the next word when it ends the cluster.
			string match -qr -- '^-[^rtwEcl]*c' $word; and set shell 1
			string match -qr -- '^-[^rtwEcl]*[rtwEcl]$' $word; and set i (math $i + 1)
		else
			# KEY is word i.
			if test $status_only = 1; or test $shell = 1
				echo none
			else if test $i -eq $n
				printf "%s\n" after-key (math $i + 2)
			else if contains -- $words[(math $i + 1)] -c --command
				echo none
			else if contains -- $words[(math $i + 1)] --
				printf "%s\n" command (math $i + 3)
			else
				printf "%s\n" command (math $i + 2)
			end
			return
		end
		set i (math $i + 1)
	end
	if test $dashdash = 1
		echo key
	else
		echo options
	end
end

# __redlock_run_at PLACE...: whether the cursor is at one of those places.
function __redlock_run_at
	contains -- (__redlock_run_where)[1] $argv
end

# COMMAND and its arguments, completed as if they were the command line.
function __redlock_run_command
	set -l from (__redlock_run_where)[2]
	set -l words (commandline -opc)
	set words $words[$from..-1]
	set -l line (string escape -- $words) (commandline -ct)
	complete --do-complete=(string join -- ' ' $line)
end

# A DURATION (250ms, 30s, 5m, 1h): the number typed so far followed by each unit, or a few
# examples when nothing is typed yet. TEXT is what is typed of it; what precedes TEXT in the
# word (--ttl=, -t) is fish's to handle.
function __redlock_run_durations
	set -l text (commandline -ct | string replace -r -- '^(--[^=]*=|-[^rtwEcl]*[rtwEcl])' '')
	# --wait-replicas N,TIMEOUT
	set -l prefix (string match -r -- '^[0-9]+,' $text)
	set text (string replace -r -- '^[0-9]+,' '' $text)
	if test -z "$text"
		for example in 30s 5m 1h 250ms
			printf '%s%s\tduration\n' "$prefix" $example
		end
	else
		set -l number (string replace -r -- '[a-z]+$' '' $text)
		if string match -qr -- '^([0-9]+\.?[0-9]*|\.[0-9]+)$' $number
			for unit in ms s m h
				printf '%s%s%s\tduration\n' "$prefix" $number $unit
			end
		end
	end
end

function __redlock_run_replicas
	string match -qr -- '^([^=]*=)?[0-9]+,' (commandline -ct); and __redlock_run_durations
end

# Only the scheme of a URL: the rest is a host or a path of the user's.
function __redlock_run_urls
	printf '%s\t%s\n' redis:// 'Redis' rediss:// 'Redis over TLS' unix:// 'a Unix socket' \
		redis+sentinel:// 'the master that Sentinels name' \
		rediss+sentinel:// 'the master that Sentinels name, over TLS' \
		redis+cluster:// 'a Redis Cluster' rediss+cluster:// 'a Redis Cluster, over TLS'
end

function __redlock_run_on_lost
	printf '%s\t%s\n' term 'SIGTERM, then SIGKILL after --grace' kill SIGKILL ignore 'let it run'
end

function __redlock_run_queue
	printf '%s\t%s\n' fifo 'arrival order (the default)' latest 'only the newest waits'
end

set -l opts '__redlock_run_at options'

complete -c redlock-run -f
complete -c redlock-run -n $opts -s r -l redis -x -a '(__redlock_run_urls)' -d 'Redis server URL (several for a quorum)'
complete -c redlock-run -n $opts -s t -l ttl -x -a '(__redlock_run_durations)' -d 'the lease, renewed every TTL/3'
complete -c redlock-run -n $opts -s n -l nonblock -d 'fail at once if KEY is held'
complete -c redlock-run -n $opts -l nb -d 'fail at once if KEY is held'
complete -c redlock-run -n $opts -l nonblocking -d 'fail at once if KEY is held'
complete -c redlock-run -n $opts -s w -l wait -x -a '(__redlock_run_durations)' -d 'give up after waiting this long for KEY'
complete -c redlock-run -n $opts -l timeout -x -a '(__redlock_run_durations)' -d 'give up after waiting this long for KEY'
complete -c redlock-run -n $opts -s E -l conflict-exit-code -x -d 'exit status when the lock is not acquired'
complete -c redlock-run -n $opts -s c -l command -x -d 'run STRING with $SHELL -c'
complete -c redlock-run -n $opts -s s -l shared -d 'share KEY with other shared holders'
complete -c redlock-run -n $opts -s x -l exclusive -d 'an exclusive lock (the default)'
complete -c redlock-run -n $opts -s e -d 'an exclusive lock (the default)'
complete -c redlock-run -n $opts -s l -l limit -x -d 'up to N holders of KEY at once'
complete -c redlock-run -n $opts -l on-lost -x -a '(__redlock_run_on_lost)' -d 'what happens to COMMAND if the lock is lost'
complete -c redlock-run -n $opts -l grace -x -a '(__redlock_run_durations)' -d 'from SIGTERM to SIGKILL'
complete -c redlock-run -n $opts -l max-hold -x -a '(__redlock_run_durations)' -d 'stop COMMAND after holding the lock this long'
complete -c redlock-run -n $opts -l connect-timeout -x -a '(__redlock_run_durations)' -d 'a server silent this long ends the run'
complete -c redlock-run -n $opts -l min-hold -x -a '(__redlock_run_durations)' -d 'keep the lock at least this long'
complete -c redlock-run -n $opts -l status -d 'say who holds KEY, and run nothing'
complete -c redlock-run -n $opts -l json -d 'with --status: one JSON object'
complete -c redlock-run -n $opts -l break -d 'end the lock on purpose, and run nothing'
complete -c redlock-run -n $opts -l yes -d 'with --break: do not ask'
complete -c redlock-run -n $opts -l list -d 'list every lock whose name matches a pattern'
complete -c redlock-run -n $opts -l cacert -r -F -d 'TLS: trust the CAs in FILE'
complete -c redlock-run -n $opts -l cacertdir -x -a '(__fish_complete_directories)' -d 'TLS: trust the CAs in DIR'
complete -c redlock-run -n $opts -l cert -r -F -d 'TLS: a client certificate'
complete -c redlock-run -n $opts -l key -r -F -d 'TLS: the client certificate\'s key'
complete -c redlock-run -n $opts -l sni -x -a '(__fish_print_hostnames)' -d 'TLS: the server name to send and verify'
complete -c redlock-run -n $opts -l insecure -d 'TLS: do not verify the server'
complete -c redlock-run -n $opts -l prefix -x -d 'put STRING in front of KEY: a namespace'
complete -c redlock-run -n $opts -l queue -x -a '(__redlock_run_queue)' -d "the line's discipline"
complete -c redlock-run -n $opts -l cancel-running -d 'with --queue latest: a newer run also stops the running one'
complete -c redlock-run -n $opts -l password-file -r -F -d 'the password, on the first line of FILE'
complete -c redlock-run -n $opts -l wait-replicas -x -a '(__redlock_run_replicas)' -d 'N[,TIMEOUT]: replicas that must acknowledge'
complete -c redlock-run -n $opts -s v -l verbose -d 'say what happens and how long it took'
complete -c redlock-run -n $opts -s q -l quiet -d 'print fatal errors only'
complete -c redlock-run -n $opts -s h -l help -d 'show the help and exit'
complete -c redlock-run -n $opts -s V -l version -d 'show the version and exit'

# After KEY: "--", -c STRING, or COMMAND with its own completion.
complete -c redlock-run -n '__redlock_run_at after-key' -a '--' -d 'COMMAND follows'
complete -c redlock-run -n '__redlock_run_at after-key' -a '-c --command' -d 'run STRING with $SHELL -c'
complete -c redlock-run -n '__redlock_run_at after-key command' -x -a '(__redlock_run_command)'
