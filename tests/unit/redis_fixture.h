/*
 * A private redis-server for a module test: started on a Unix socket in a fresh temporary
 * folder, with no persistence, and stopped again (also when the test dies early).
 */
#ifndef REDLOCK_REDIS_FIXTURE_H
#define REDLOCK_REDIS_FIXTURE_H

#include <sys/types.h>

struct conn;

struct redis_fixture {
	char dir[64];
	char socket[96];
	char url[160];
	pid_t pid;
};

/* Starts the server with extra "--name value" arguments (NULL-terminated), and waits
 * (bounded) until it answers. Exits the test with status 77 (skipped) when there is no
 * redis-server, and 1 when it does not come up. */
void redis_fixture_start(struct redis_fixture *f, const char *const extra[]);
void redis_fixture_stop(struct redis_fixture *f);
/* SIGSTOP / SIGCONT: a frozen server that accepts connections and never answers. */
void redis_fixture_freeze(const struct redis_fixture *f);
void redis_fixture_thaw(const struct redis_fixture *f);

/* Runs one command (its arguments, then NULL) on c, opening it if needed, and returns the
 * reply as text: "OK", "3", "nil", the error message, or "(failed)" when there was none. */
const char *redis_fixture_call(struct conn *c, ...);

#endif
