/*
 * TLS for the connection module, and only for it: conn.c is its one caller. OpenSSL is loaded
 * with dlopen the first time TLS is needed, so that a run over a plain connection never pays
 * for loading and binding libssl and libcrypto (a few milliseconds, the cost of a whole
 * round trip or two).
 *
 * The socket stays ours (non-blocking, polled with our deadlines): these calls never block,
 * and say what they wait for instead.
 */
#ifndef REDLOCK_TLS_H
#define REDLOCK_TLS_H

#include <stdbool.h>
#include <stddef.h>

/* What the command line and the environment say about TLS; all may be NULL / false. */
struct tls_config {
	const char *cacert;    /* a PEM file of trusted CAs, instead of the system's */
	const char *cacertdir; /* a directory of them (c_rehash layout) */
	const char *cert;      /* a client certificate (chain), PEM */
	const char *key;       /* its private key, PEM */
	const char *sni;       /* the server name to send and verify, instead of the host */
	bool insecure;         /* no verification at all */
};

/* True when this build can speak TLS. */
bool tls_available(void);

/* The version string of the OpenSSL that TLS connections would load ("OpenSSL 3.0.x ..."),
 * loading it to ask; NULL with err saying why when there is none. */
const char *tls_library_version(char *err, size_t size);

/*
 * Loads OpenSSL and sets up the one client context from cfg: the trust store, the client
 * certificate and key (which must match). Returns 0; -1 with a message in err for a file
 * that cannot be read or used, or a key that does not match; -2 when there is no OpenSSL to
 * load. Called once, before any connection; without it, the first tls_new uses the defaults.
 */
int tls_configure(const struct tls_config *cfg, char *err, size_t size);

struct tls;

enum tls_result {
	TLS_DONE,
	TLS_WANT_READ,  /* call again once the socket is readable */
	TLS_WANT_WRITE, /* call again once the socket is writable */
	TLS_CLOSED,     /* the peer closed the connection */
	TLS_FAILED,     /* err says why, in words a user can act on */
};

/*
 * A TLS client on the connected socket fd, for a server reached as host (a name or an
 * address literal): its certificate must be valid for that name, or for --sni. The session
 * of an earlier connection to the same server is offered for resumption. NULL with err
 * set when it cannot be made. The socket is not the tls object's: tls_free leaves it open.
 */
struct tls *tls_new(int fd, const char *host, unsigned port, char *err, size_t size);
void tls_free(struct tls *t);

/* Takes the handshake a step further; TLS_DONE once it is complete and verified. */
enum tls_result tls_handshake(struct tls *t, char *err, size_t size);

/* Reads up to size bytes into buf (*got of them): TLS_DONE with *got > 0, or what it waits
 * for. Decrypted bytes that OpenSSL holds are returned before it asks for the socket. */
enum tls_result tls_read(struct tls *t, void *buf, size_t size, size_t *got, char *err,
			 size_t errsize);

/* Writes up to size bytes of buf (*put of them). After a TLS_WANT_*, the next call must
 * start with the same bytes (more may follow them). */
enum tls_result tls_write(struct tls *t, const void *buf, size_t size, size_t *put, char *err,
			  size_t errsize);

/* Whether the handshake resumed an earlier session (no full handshake was paid for). */
bool tls_resumed(const struct tls *t);

/* After a close by the server (TLS_CLOSED): words to add to what is said of it, or "". A close
 * before the first reply, with a client certificate given, may be its refusal. */
const char *tls_closed_hint(const struct tls *t);

#endif
