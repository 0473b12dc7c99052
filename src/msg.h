/*
 * Messages: one line each on stderr, prefixed "redlock-run: ", lower-case, no trailing
 * period, naming what failed and where. Each line is written with a single write(2), so
 * lines from the watchdog thread and the main thread never interleave.
 */
#ifndef REDLOCK_MSG_H
#define REDLOCK_MSG_H

#include <stdbool.h>
#include <stddef.h>

enum msg_level {
	MSG_QUIET = -1,  /* -q: fatal errors only */
	MSG_NORMAL = 0,  /* errors and warnings */
	MSG_VERBOSE = 1, /* -v: what happens and how long it took */
};

/*
 * No message ever waits on stderr: a terminal paused with Ctrl-S, a log pipe nobody reads or
 * a full journal socket loses a message instead of holding up the one thread that stops the
 * command when the lease runs out. A pipe or a terminal is written through a non-blocking
 * description of our own, opened by the first message (stderr itself stays as it is, for
 * the command), a socket with MSG_DONTWAIT, a regular file as it is.
 */
void msg_set_level(enum msg_level level);
bool msg_verbose(void);

/* Always printed. */
void msg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed unless -q. */
void msg_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed with -v only. */
void msg_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints an error and exits with the given status (see exitstatus.h). */
_Noreturn void msg_fatal(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Progress that replaces itself on a terminal: with -v and stderr a terminal, the line is
 * redrawn in place (and msg_progress_end() finishes it); otherwise each call is an ordinary
 * -v line.
 */
void msg_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void msg_progress_end(void);
/* True when msg_progress redraws a line in place (-v, and stderr is a terminal). */
bool msg_progress_live(void);

/* strerror(), lower-cased as the rest of a message: "connection refused". */
const char *msg_strerror(int err, char *buf, size_t size);

/* Replaces each control character of s (a newline, an escape) with '?', in place, and returns
 * s: a name from the command line or from Redis stays on its line, and sends the terminal no
 * command. Every message goes through it. */
char *msg_printable(char *s);
/* Whether c is one of the control characters msg_printable replaces. */
bool msg_is_control(char c);

/* How much of the first len bytes of a server's message s to quote when more is said after it:
 * without the full stops and blanks at their end, which would stand before a semicolon. */
int msg_quoted_len(const char *s, size_t len);

#endif
