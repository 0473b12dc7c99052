#include "redis_fixture.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"

/* The servers started and not stopped yet: stopped at exit, also when a check fails. */
static struct redis_fixture *running[8];

static void
stop_at_exit(void)
{
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
		if (running[i])
			redis_fixture_stop(running[i]);
}

static int
answers(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char reply[16] = "";
	int fd = socket(AF_UNIX, SOCK_STREAM, 0), ok = 0;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 &&
	    write(fd, "PING\r\n", 6) == 6 && read(fd, reply, sizeof(reply) - 1) > 0)
		ok = strncmp(reply, "+PONG", 5) == 0 || strncmp(reply, "-NOAUTH", 7) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

void
redis_fixture_start(struct redis_fixture *f, const char *const extra[])
{
	const char *argv[64] = { "redis-server", "--port", "0",  "--unixsocket",
				 NULL,           "--save", "",   "--appendonly",
				 "no",           "--dir",  NULL, "--loglevel",
				 "warning" };
	int argc = 13;

	snprintf(f->dir, sizeof(f->dir), "/tmp/redlock-test.XXXXXX");
	if (!mkdtemp(f->dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(f->socket, sizeof(f->socket), "%s/redis.sock", f->dir);
	snprintf(f->url, sizeof(f->url), "unix://%s", f->socket);
	argv[4] = f->socket;
	argv[10] = f->dir;
	for (int i = 0; extra && extra[i] && argc < 62; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;

	f->pid = fork();
	if (f->pid == 0) {
		execvp(argv[0], (char *const *)argv);
		_exit(errno == ENOENT ? 77 : 1);
	}
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++) {
		if (!running[i]) {
			running[i] = f;
			break;
		}
	}
	if (f == running[0])
		atexit(stop_at_exit);
	for (int i = 0; i < 500; i++) { /* up to 5 s */
		int status;
		if (answers(f->socket))
			return;
		if (waitpid(f->pid, &status, WNOHANG) == f->pid) {
			f->pid = 0;
			fprintf(stderr, "redis-server did not start\n");
			exit(WIFEXITED(status) && WEXITSTATUS(status) == 77 ? 77 : 1);
		}
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	fprintf(stderr, "redis-server did not answer within 5 s\n");
	exit(1);
}

void
redis_fixture_stop(struct redis_fixture *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGCONT);
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
		f->pid = 0;
	}
	unlink(f->socket);
	rmdir(f->dir);
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
		if (running[i] == f)
			running[i] = NULL;
}

void
redis_fixture_freeze(const struct redis_fixture *f)
{
	kill(f->pid, SIGSTOP);
}

void
redis_fixture_thaw(const struct redis_fixture *f)
{
	kill(f->pid, SIGCONT);
}

const char *
redis_fixture_call(struct conn *c, ...)
{
	static char out[512];
	const char *argv[16];
	size_t lens[16];
	int argc = 0;
	struct reply *r;
	va_list ap;

	va_start(ap, c);
	while (argc < 16 && (argv[argc] = va_arg(ap, const char *)) != NULL) {
		lens[argc] = strlen(argv[argc]);
		argc++;
	}
	va_end(ap);
	if (!conn_is_open(c) && conn_open(c, clock_now() + NS_PER_S, -1) != CONN_OK)
		return "(failed)";
	if (conn_call(c, &r, clock_now() + 2 * NS_PER_S, -1, argc, argv, lens) != CONN_OK)
		return "(failed)";
	if (reply_type(r) == REPLY_INTEGER)
		snprintf(out, sizeof(out), "%lld", reply_integer(r));
	else if (reply_type(r) == REPLY_NIL)
		snprintf(out, sizeof(out), "nil");
	else
		snprintf(out, sizeof(out), "%s", reply_string(r, NULL));
	reply_free(r);
	return out;
}
