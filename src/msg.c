#include "msg.h"

#include <ctype.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PREFIX "redlock-run: "
#define CLEAR_LINE "\r\033[K"

static enum msg_level level = MSG_NORMAL;
/* Where messages go (see msg.h): set up by the first message, so that a quiet run opens
 * nothing for them. */
static pthread_once_t out_once = PTHREAD_ONCE_INIT;
static int out_fd = STDERR_FILENO;
static bool out_socket;
/* Our own description could not be opened (no /proc, or a pipe another user made, which is not
 * ours to open): each write looks first whether it would wait. */
static bool out_looks;
/* A progress line is on the terminal and has no newline yet. Only the main thread opens one,
 * but the watchdog's messages (a renewal's -v news) close it too: atomic. */
static atomic_bool progress_open;

static void
open_out(void)
{
	struct stat st;
	int fd;

	if (fstat(STDERR_FILENO, &st) < 0 || S_ISREG(st.st_mode))
		return; /* a file never keeps a writer waiting, and its offset is shared */
	if (S_ISSOCK(st.st_mode)) {
		out_socket = true; /* the journal, say: each send says MSG_DONTWAIT */
		return;
	}
	/* A pipe or a terminal: a description of our own, that never blocks. */
	fd = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0)
		out_fd = fd;
	else
		out_looks = true;
}

/* One write that never waits (but for a regular file). */
static void
put(const char *buf, size_t len)
{
	ssize_t n;

	pthread_once(&out_once, open_out);
	if (out_looks) {
		/* Room in a pipe is room for a whole line up to PIPE_BUF bytes: it goes in at
		 * once, or (another writer racing us to the room) after that writer. */
		struct pollfd p = { out_fd, POLLOUT, 0 };
		if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
			return;
	}
	n = out_socket ? send(out_fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL)
		       : write(out_fd, buf, len);

	(void)n; /* nothing better to do with a message that cannot be written */
}

void
msg_set_level(enum msg_level l)
{
	level = l;
}

bool
msg_verbose(void)
{
	return level >= MSG_VERBOSE;
}

static void emit(const char *lead, const char *tail, size_t cols, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* The first and the last of the len bytes of s, "..." between them, into buf (size bytes, at
 * least 16), cut between characters of UTF-8: a message too long for its line keeps what it
 * ends with, the reason and what is done, and loses the middle of a long name. Its length. */
static size_t
elide(char *buf, size_t size, const char *s, size_t len)
{
	size_t head = (size - 4) / 2, tail = size - 4 - head;
	const char *end = s + len - tail;

	/* (A character takes 4 bytes at most: bytes that are not UTF-8 are cut anywhere.) */
	for (int k = 0; k < 3 && head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80; k++)
		head--;
	for (int k = 0; k < 3 && ((unsigned char)*end & 0xc0) == 0x80; k++)
		end++;
	memcpy(buf, s, head);
	memcpy(buf + head, "...", 3);
	memcpy(buf + head + 3, end, (size_t)(s + len - end));
	return head + 3 + (size_t)(s + len - end);
}

/* Formats "<lead>redlock-run: <message><tail>" and writes it in one go; with cols > 0, what
 * follows lead is cut to fewer columns than that (a character a column). */
static void
emit(const char *lead, const char *tail, size_t cols, const char *fmt, va_list ap)
{
	char line[1024];
	va_list again;
	int n = snprintf(line, sizeof(line), "%s" PREFIX, lead);
	size_t room = sizeof(line) - strlen(tail) - 1, len;
	int m;

	va_copy(again, ap);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (m < 0) {
		va_end(again);
		return;
	}
	len = (size_t)n + (size_t)m;
	if (len > room) {
		char *whole = malloc((size_t)m + 1);
		len = room; /* or, out of memory, its start alone */
		if (whole && vsnprintf(whole, (size_t)m + 1, fmt, again) == m)
			len = (size_t)n + elide(line + n, room - (size_t)n, whole, (size_t)m);
		free(whole);
	}
	va_end(again);
	line[len] = '\0';
	msg_printable(line + n);
	if (cols > 0) {
		size_t shown = 0, at = strlen(lead);
		for (; at < len; at++)
			if (((unsigned char)line[at] & 0xc0) != 0x80 && ++shown >= cols)
				break; /* (a UTF-8 sequence is cut before it starts) */
		len = at;
	}
	memcpy(line + len, tail, strlen(tail));
	len += strlen(tail);
	/* A line that does not fit at once is cut rather than waited for (see msg.h). */
	put(line, len);
}

static void emit_line(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void
emit_line(const char *fmt, va_list ap)
{
	emit(progress_open ? CLEAR_LINE : "", "\n", 0, fmt, ap);
	progress_open = false;
}

void
msg_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_line(fmt, ap);
	va_end(ap);
}

void
msg_warn(const char *fmt, ...)
{
	va_list ap;

	if (level < MSG_NORMAL)
		return;
	va_start(ap, fmt);
	emit_line(fmt, ap);
	va_end(ap);
}

void
msg_info(const char *fmt, ...)
{
	va_list ap;

	if (level < MSG_VERBOSE)
		return;
	va_start(ap, fmt);
	emit_line(fmt, ap);
	va_end(ap);
}

_Noreturn void
msg_fatal(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit_line(fmt, ap);
	va_end(ap);
	exit(status);
}

void
msg_progress(const char *fmt, ...)
{
	va_list ap;

	if (level < MSG_VERBOSE)
		return;
	va_start(ap, fmt);
	if (msg_progress_live()) {
		struct winsize ws;
		/* Cut to the terminal's width: a line that wraps is not redrawn in place, and
		 * each redraw would leave its first rows behind. */
		bool known = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0;
		emit(CLEAR_LINE, "", known ? ws.ws_col : 0, fmt, ap);
		progress_open = true;
	} else {
		emit_line(fmt, ap);
	}
	va_end(ap);
}

/* A terminal that cannot clear a line (TERM=dumb: Emacs's shell) gets no redraws. */
static bool
redraws(void)
{
	const char *term = getenv("TERM");

	return !term || strcmp(term, "dumb") != 0;
}

bool
msg_progress_live(void)
{
	return level >= MSG_VERBOSE && isatty(STDERR_FILENO) && redraws();
}

void
msg_progress_end(void)
{
	if (progress_open)
		put(CLEAR_LINE, strlen(CLEAR_LINE));
	progress_open = false;
}

int
msg_quoted_len(const char *s, size_t len)
{
	while (len > 0 && (s[len - 1] == '.' || s[len - 1] == ' '))
		len--;
	return (int)len;
}

bool
msg_is_control(char c)
{
	return (unsigned char)c < 0x20 || c == 0x7f;
}

char *
msg_printable(char *s)
{
	for (char *c = s; *c; c++)
		if (msg_is_control(*c))
			*c = '?';
	return s;
}

const char *
msg_strerror(int err, char *buf, size_t size)
{
	/* The GNU strerror_r: thread-safe (the watchdog thread speaks too), and it may return
	 * its own static string instead of filling buf. */
	const char *text = strerror_r(err, buf, size);

	if (text != buf)
		snprintf(buf, size, "%s", text);
	/* "Connection refused" reads as "connection refused" in the middle of a message;
	 * acronyms such as "I/O error" keep their case. */
	if (buf[0] && isupper((unsigned char)buf[0]) && !isupper((unsigned char)buf[1]))
		buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}
