/* msg: one line per message on stderr, prefixed, each with one write; levels; strerror in
 * the lower case of a message. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "msg.h"

static char captured[4096];
static int pipe_fds[2] = { -1, -1 };

/* Runs fn with stderr going to a pipe, and returns what it wrote. The pipe is the same every
 * time: messages open a description of their own of it at the first one, as they would of a
 * log pipe, and keep it. Between captures stderr is itself again, for the checks' output. */
static const char *
capture(void (*fn)(void))
{
	int saved = dup(STDERR_FILENO);
	ssize_t n;

	if (pipe_fds[0] < 0 && pipe2(pipe_fds, O_NONBLOCK) < 0)
		return "(no pipe)";
	dup2(pipe_fds[1], STDERR_FILENO);
	fn();
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = read(pipe_fds[0], captured, sizeof(captured) - 1);
	captured[n > 0 ? n : 0] = '\0';
	return captured;
}

static void
all_three(void)
{
	msg_error("cannot connect to %s", "10.0.0.5:6379");
	msg_warn("cannot renew %s", "job");
	msg_info("acquired %s", "job");
}

static void
control(void)
{
	msg_error("cannot take %s", "two\nlines\x1b[2J\x7f");
}

/* A name of 3000 bytes, 'é' after 'é'. */
static void
long_name(void)
{
	static char name[3001];

	for (size_t i = 0; i + 1 < sizeof(name); i += 2)
		memcpy(name + i, "\xc3\xa9", 2);
	msg_error("lost the lock on %s: it was broken by %s; %s", name, "web-1:42",
		  "stopping the command");
}

/* Whether s is whole UTF-8 (as long_name writes it): no sequence cut. */
static bool
whole_utf8(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s == 0xc3 ? (unsigned char)s[1] != 0xa9 || !*++s
					      : ((unsigned char)*s & 0x80) != 0)
			return false;
	return true;
}

static void
progress(void)
{
	msg_progress("waiting for %s", "job");
	msg_progress_end();
	msg_info("acquired");
}

int
main(void)
{
	char buf[64];

	msg_set_level(MSG_NORMAL);
	CHECK_STR(capture(all_three), "redlock-run: cannot connect to 10.0.0.5:6379\n"
				      "redlock-run: cannot renew job\n");
	msg_set_level(MSG_QUIET);
	CHECK_STR(capture(all_three), "redlock-run: cannot connect to 10.0.0.5:6379\n");
	msg_set_level(MSG_VERBOSE);
	CHECK(msg_verbose());
	CHECK_STR(capture(all_three), "redlock-run: cannot connect to 10.0.0.5:6379\n"
				      "redlock-run: cannot renew job\n"
				      "redlock-run: acquired job\n");
	/* Off a terminal, progress is an ordinary line. */
	CHECK(!msg_progress_live());
	CHECK_STR(capture(progress), "redlock-run: waiting for job\nredlock-run: acquired\n");

	/* A name with control characters in it stays on its line, and sends the terminal none. */
	CHECK_STR(capture(control), "redlock-run: cannot take two?lines?[2J?\n");
	CHECK_STR(msg_printable((char[]){ "a\tb\xc3\xa9" }), "a?b\xc3\xa9");
	/* One too long for a line keeps its start and its end (the reason, what is done), and
	 * loses the middle, between characters. */
	const char *cut = capture(long_name),
		   *end = "\xc3\xa9: it was broken by web-1:42; stopping "
			  "the command\n";
	CHECK(strlen(cut) <= 1024 && strlen(cut) > 1000);
	CHECK(strncmp(cut, "redlock-run: lost the lock on \xc3\xa9", 32) == 0);
	CHECK(strlen(cut) > strlen(end) && strcmp(cut + strlen(cut) - strlen(end), end) == 0);
	CHECK(strstr(cut, "\xc3\xa9...\xc3\xa9") && whole_utf8(strstr(cut, "...") + 3));
	CHECK(whole_utf8(cut));

	CHECK_STR(msg_strerror(ECONNREFUSED, buf, sizeof(buf)), "connection refused");
	CHECK_STR(msg_strerror(EIO, buf, sizeof(buf)), "input/output error");
	CHECK_STR(msg_strerror(ENOENT, buf, sizeof(buf)), "no such file or directory");

	/* A server's message quoted before more is said: without its closing full stop. */
	CHECK_INT(msg_quoted_len("NOAUTH Authentication required.", 31), 30);
	CHECK_INT(msg_quoted_len("OOM command not allowed. ", 25), 23);
	CHECK_INT(msg_quoted_len("ERR x", 5), 5);
	CHECK_INT(msg_quoted_len("...", 3), 0);
	return check_done("msg");
}
