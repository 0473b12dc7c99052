#!/bin/sh
# with-lock.sh: redlock-run for cron lines that should be quiet when another machine has
# the lock, and loud (in the mail and in syslog) when anything else goes wrong.
#
#   with-lock.sh [redlock-run options] KEY -- COMMAND [ARG...]
#
# takes the same arguments as redlock-run and runs it. Its exit status is:
#   0       COMMAND succeeded, or the lock was held elsewhere (-n) or the wait ran out (-w):
#           another machine is doing the job, nothing is printed or logged;
#   other   anything else, unchanged: COMMAND's own failure, 69 Redis unavailable, 76 lock
#           lost, 124 --max-hold ran out, 128+N killed by signal N... Each is logged with
#           logger(1) at user.err, tagged with-lock (or $WITH_LOCK_TAG), and printed on
#           standard error, which cron mails to MAILTO.
#
# Do not pass -E: a COMMAND that itself exits 75 (EX_TEMPFAIL, "try again later", which some
# programs use) would be taken for a skip and go unreported. When COMMAND may exit 75, set
# WITH_LOCK_SKIP to a status it never uses; the script passes it to redlock-run as -E.
# $REDLOCK_RUN names the binary when it is not redlock-run on $PATH.
#
# Install it as /usr/local/lib/redlock-run/with-lock.sh, mode 0755 (the Debian package
# ships it among its examples, in /usr/share/doc/redlock-run/, not as a command).

# POSIX sh, not bash: cron runs /bin/sh (dash on Debian), and nothing here needs more.
# -e stops on mistakes in this script; redlock-run's own status is caught with || below, so
# it never trips -e. -u catches a misspelt variable.
set -eu

tag=${WITH_LOCK_TAG:-with-lock}
skip=${WITH_LOCK_SKIP:-75}
redlock_run=${REDLOCK_RUN:-redlock-run}

case $skip in
'' | *[!0-9]*)
	echo "$tag: WITH_LOCK_SKIP must be a number, not '$skip'" >&2
	exit 64
	;;
esac

# Not exec: the status has to come back here. redlock-run passes SIGTERM, SIGINT and SIGHUP
# on to COMMAND itself, so this shell needs no traps of its own.
status=0
"$redlock_run" -E "$skip" "$@" || status=$?

case $status in
0 | "$skip")
	# Done here, or being done by another machine: nothing to say. A held lock prints
	# nothing either, so cron has nothing to mail.
	exit 0
	;;
64) why="usage error (see redlock-run --help)" ;;
69) why="Redis unavailable" ;;
76) why="lock lost while the command ran" ;;
124) why="--max-hold ran out, the command was stopped" ;;
126) why="command not executable" ;;
127) why="command not found" ;;
*)
	if [ "$status" -gt 128 ]; then
		why="killed by signal $((status - 128))"
	else
		why="the command failed"
	fi
	;;
esac

# One line with the status, its meaning and the arguments, so that the mail and the log
# say which job failed without looking anything up. (The arguments hold no password as long
# as it comes from a file or $REDLOCK_PASSWORD, as it should: a URL's password would also
# be in ps.)
message="exit $status, $why: $*"
echo "$tag: $message" >&2
# syslog may be missing (a container without /dev/log): the line above already went out,
# so a failing logger must not change the status.
logger -t "$tag" -p user.err -- "$message" 2>/dev/null || :
exit "$status"
