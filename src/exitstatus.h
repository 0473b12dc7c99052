/*
 * The exit statuses of redlock-run: the one table, mirrored by the man page (EXIT STATUS)
 * and asserted by the tests. Besides these, redlock-run exits with the command's own status,
 * or with 128+N (by re-raising signal N on itself) when the command was killed by signal N.
 */
#ifndef REDLOCK_EXITSTATUS_H
#define REDLOCK_EXITSTATUS_H

enum exit_status {
	STATUS_USAGE = 64,       /* bad option, duration, URL, missing KEY or COMMAND */
	STATUS_UNAVAILABLE = 69, /* Redis unreachable or unusable before the command ran */
	STATUS_OSERR = 71,       /* fork, pipe, thread, randomness or writing stdout failed */
	STATUS_CONFLICT = 75,  /* lock not acquired (held, or the wait timed out); -E changes it */
	STATUS_LOST = 76,      /* the lock was lost while the command ran */
	STATUS_CANCELLED = 77, /* a newer run cancelled this one (--cancel-running), which
				* stopped the command */
	STATUS_MAX_HOLD = 124, /* --max-hold ran out and the command was stopped */
	STATUS_CANNOT_EXEC = 126,
	STATUS_NOT_FOUND = 127,
	STATUS_SIGNAL_BASE = 128,
};

#endif
