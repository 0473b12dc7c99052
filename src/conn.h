/*
 * A connection to one Redis server, and the only code that touches hiredis: hiredis formats
 * the commands and parses the replies; the socket, its deadlines and its interruptions are
 * ours, so that every wait is bounded on CLOCK_BOOTTIME and can be cut short by a signal.
 *
 * A connection is not thread-safe: each thread owns its own.
 */
#ifndef REDLOCK_CONN_H
#define REDLOCK_CONN_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "tls.h"
#include "url.h"

struct conn;
struct reply; /* a parsed reply; read it with the reply_* functions */

enum conn_result {
	CONN_OK,
	CONN_FAILED,      /* could not connect, or the connection broke: it is closed */
	CONN_TIMEOUT,     /* the deadline passed (a request may have landed): it is closed */
	CONN_INTERRUPTED, /* intr_fd became readable first: conn_recv leaves it open, with the
			   * replies pending; conn_open closes it */
	CONN_REFUSED,     /* conn_open: the server refused AUTH or SELECT: it is closed */
};

/*
 * Sets up TLS for every rediss:// connection of this run from cfg: loads OpenSSL, the trust
 * store, the client certificate and its key. 0; -1 with err set for a file OpenSSL cannot use
 * or a key that does not match its certificate; -2 when OpenSSL cannot be loaded.
 */
int conn_setup_tls(const struct tls_config *cfg, char *err, size_t size);
/* True when this build can speak TLS (rediss://). */
bool conn_has_tls(void);
/* For --version: the libraries this run would use, one per line ("hiredis 0.14.1", then
 * OpenSSL's own version string, or why there is none). Loads OpenSSL to ask it. */
void conn_print_libraries(FILE *out);

/* A closed connection to url, which must outlive it. NULL when out of memory. */
struct conn *conn_new(const struct redis_url *url);
void conn_free(struct conn *c);

/* The most connections one wait can drive (conn_wait_any). */
#define CONN_WAIT_MAX 64

/*
 * Starts (re)connecting without waiting: then authenticates and selects the db when the URL
 * asks for them. Commands sent meanwhile are queued, and go out only once AUTH and SELECT were
 * answered, so nothing can run as the wrong user or in the wrong db. Address literals are never
 * looked up, nor is a host name that was connected to before; any other name is resolved here,
 * which may block. The opening goes on while the caller waits on c (conn_wait, conn_recv,
 * conn_wait_any), and gives up at the deadline. CONN_OK while it goes on, or how it failed.
 */
enum conn_result conn_start(struct conn *c, int64_t deadline);
/* conn_start, then waits until c is open, the deadline, or until intr_fd (-1 for none) is
 * readable. */
enum conn_result conn_open(struct conn *c, int64_t deadline, int intr_fd);
/* Open, or on its way to it. */
bool conn_is_open(const struct conn *c);
/* Open, and done with AUTH and SELECT: a command sent now goes out at once. */
bool conn_is_ready(const struct conn *c);
/* The socket of an open connection, for a poll that watches it; -1 otherwise. */
int conn_fd(const struct conn *c);
/* Closes c if the server hung up while it sat idle, or with only answers due that are not
 * wanted (conn_forget): nothing wanted is lost then. True while it is open. Costs one poll,
 * no round trip. */
bool conn_check(struct conn *c);
void conn_close(struct conn *c);
/* Closes c and forgets the address it reached: the next conn_open resolves the host name
 * again (the server there answered in a way that says it may not be ours any more). */
void conn_reset(struct conn *c);

/* Sends one command on an open connection, as far as the socket takes it without waiting
 * (conn_recv sends the rest); -1 when out of memory or when the connection broke (then it is
 * closed, and conn_error says why). */
int conn_send(struct conn *c, int argc, const char **argv, const size_t *argvlen);

/*
 * Sends what is queued and waits for the next reply until deadline (CLOCK_BOOTTIME ns), or
 * until intr_fd (-1 for none) is readable. On CONN_OK, *reply is the caller's to free;
 * error replies (-ERR …) are CONN_OK too: what they mean is the caller's business.
 */
enum conn_result conn_recv(struct conn *c, struct reply **reply, int64_t deadline, int intr_fd);

/*
 * Waits until the next reply has arrived whole, so that conn_recv hands it out at once
 * (CONN_OK), until deadline (CONN_TIMEOUT) or until intr_fd is readable (CONN_INTERRUPTED);
 * unlike conn_recv, both leave the connection open with the reply still to come. A caller
 * that gives up on it must close the connection.
 */
enum conn_result conn_wait(struct conn *c, int64_t deadline, int intr_fd);

/* conn_send and conn_recv in one. */
enum conn_result conn_call(struct conn *c, struct reply **reply, int64_t deadline, int intr_fd,
			   int argc, const char **argv, const size_t *argvlen);

/*
 * Waits on n connections (at most CONN_WAIT_MAX) at once, driving all of them, until one has a
 * reply ready or has failed (*which, the first in order: conn_recv on it then returns at once),
 * until deadline (CONN_TIMEOUT: all stay as they are) or until intr_fd is readable.
 */
enum conn_result conn_wait_any(struct conn *const *cs, size_t n, int64_t deadline, int intr_fd,
			       size_t *which);

/* How many replies c still owes to commands sent, the forgotten ones aside. */
unsigned conn_due(const struct conn *c);
/* The replies still due are dropped as they come: the connection can carry on with the next
 * request at once. */
void conn_forget(struct conn *c);
/* Sends an empty line, which a Redis server reads and skips: no command, no reply. Reading it
 * wakes the server's event loop, which times a blocked client out then (Redis 6 and later do
 * so whenever the loop turns), not at its next tick. -1 when it cannot be sent. */
int conn_nudge(struct conn *c);
/* When c last became open (CLOCK_BOOTTIME): a request queued while it was opening went out
 * then. */
int64_t conn_opened_at(const struct conn *c);

/* Whether c is open over TLS on a session resumed from an earlier connection. */
bool conn_tls_resumed(const struct conn *c);

/* One line on the last failure, naming the server: "cannot connect to 127.0.0.1:6379:
 * connection refused". Never contains the password. */
const char *conn_error(const struct conn *c);
/* Whether c was closed, last, by a failure of this process's own as it connected (out of file
 * descriptors or memory: the server was never asked), not of the server's or the network's. */
bool conn_failed_here(const struct conn *c);
/* Whether the last opening of c was refused for good: the TLS handshake (a certificate), or
 * AUTH or SELECT. Asking again would not change it. */
bool conn_refused(const struct conn *c);
/* Whether the last opening of c failed on a server that answered AUTH or SELECT "not now"
 * (conn_error_not_now): it is there, and may take us later. */
bool conn_not_now(const struct conn *c);
/* Whether an error reply says "not now" rather than "no": a restarted server still loading its
 * data, one busy with a long script, a replica that lost its master, a server that has as many
 * clients as it takes (its error comes ahead of any answer). */
bool conn_error_not_now(const char *error);
/* "127.0.0.1:6379", "[::1]:6379" or the socket's path. */
const char *conn_address(const struct conn *c);

enum reply_type {
	REPLY_STRING,
	REPLY_ARRAY,
	REPLY_INTEGER,
	REPLY_NIL,
	REPLY_STATUS,
	REPLY_ERROR,
	REPLY_OTHER, /* anything newer than RESP2: never asked for */
};

/* Parses one whole RESP reply from buf (for module tests and fuzzing, where no server
 * answers): NULL when buf does not hold exactly that. */
struct reply *reply_parse(const char *buf, size_t len);

enum reply_type reply_type(const struct reply *r);
long long reply_integer(const struct reply *r);
/* The bytes of a string, status or error reply; *len may be NULL. */
const char *reply_string(const struct reply *r, size_t *len);
size_t reply_count(const struct reply *r);
const struct reply *reply_element(const struct reply *r, size_t i);
void reply_free(struct reply *r);

#endif
