#include "tls.h"

#include "config.h"

#if !HAVE_TLS

#include <stdio.h>

bool
tls_available(void)
{
	return false;
}

const char *
tls_library_version(char *err, size_t size)
{
	snprintf(err, size, "not in this build");
	return NULL;
}

int
tls_configure(const struct tls_config *cfg, char *err, size_t size)
{
	(void)cfg;
	snprintf(err, size, "this build has no TLS support");
	return -2;
}

struct tls *
tls_new(int fd, const char *host, unsigned port, char *err, size_t size)
{
	(void)fd, (void)host, (void)port;
	snprintf(err, size, "this build has no TLS support");
	return NULL;
}

void
tls_free(struct tls *t)
{
	(void)t;
}

enum tls_result
tls_handshake(struct tls *t, char *err, size_t size)
{
	(void)t, (void)err, (void)size;
	return TLS_FAILED;
}

enum tls_result
tls_read(struct tls *t, void *buf, size_t size, size_t *got, char *err, size_t errsize)
{
	(void)t, (void)buf, (void)size, (void)got, (void)err, (void)errsize;
	return TLS_FAILED;
}

enum tls_result
tls_write(struct tls *t, const void *buf, size_t size, size_t *put, char *err, size_t errsize)
{
	(void)t, (void)buf, (void)size, (void)put, (void)err, (void)errsize;
	return TLS_FAILED;
}

bool
tls_resumed(const struct tls *t)
{
	(void)t;
	return false;
}

const char *
tls_closed_hint(const struct tls *t)
{
	(void)t;
	return "";
}

#else

#include <arpa/inet.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "util.h"

/*
 * The OpenSSL functions used, called through pointers that dlsym fills in: libssl (and the
 * libcrypto it needs) is loaded only when a connection speaks TLS. Macros of OpenSSL's that
 * expand to these calls (SSL_set_tlsext_host_name, sk_GENERAL_NAME_num, ...) are spelled out
 * with the pointers.
 */
#define OPENSSL_FUNCTIONS(X)                                                                       \
	X(TLS_client_method)                                                                       \
	X(SSL_CTX_new)                                                                             \
	X(SSL_CTX_free)                                                                            \
	X(SSL_CTX_ctrl)                                                                            \
	X(SSL_CTX_set_verify)                                                                      \
	X(SSL_CTX_set_default_verify_paths)                                                        \
	X(SSL_CTX_load_verify_locations)                                                           \
	X(SSL_CTX_use_certificate_chain_file)                                                      \
	X(SSL_CTX_use_PrivateKey_file)                                                             \
	X(SSL_CTX_check_private_key)                                                               \
	X(SSL_CTX_set_default_passwd_cb)                                                           \
	X(SSL_CTX_sess_set_new_cb)                                                                 \
	X(SSL_CTX_set_client_cert_cb)                                                              \
	X(SSL_new)                                                                                 \
	X(SSL_free)                                                                                \
	X(SSL_ctrl)                                                                                \
	X(SSL_set_fd)                                                                              \
	X(SSL_set_verify)                                                                          \
	X(SSL_set1_host)                                                                           \
	X(SSL_get0_param)                                                                          \
	X(SSL_set_ex_data)                                                                         \
	X(SSL_get_ex_data)                                                                         \
	X(SSL_set_session)                                                                         \
	X(SSL_session_reused)                                                                      \
	X(SSL_set_shutdown)                                                                        \
	X(SSL_SESSION_free)                                                                        \
	X(SSL_connect)                                                                             \
	X(SSL_read_ex)                                                                             \
	X(SSL_write_ex)                                                                            \
	X(SSL_get_error)                                                                           \
	X(SSL_get_verify_result)                                                                   \
	X(SSL_get_ex_data_X509_STORE_CTX_idx)                                                      \
	X(X509_STORE_CTX_get_ex_data)                                                              \
	X(X509_STORE_CTX_get_current_cert)                                                         \
	X(X509_STORE_CTX_get_error_depth)                                                          \
	X(X509_up_ref)                                                                             \
	X(X509_VERIFY_PARAM_set1_ip_asc)                                                           \
	X(X509_verify_cert_error_string)                                                           \
	X(X509_free)                                                                               \
	X(X509_get_ext_d2i)                                                                        \
	X(X509_get_subject_name)                                                                   \
	X(X509_NAME_get_text_by_NID)                                                               \
	X(X509_get0_notAfter)                                                                      \
	X(X509_get0_notBefore)                                                                     \
	X(ASN1_TIME_to_tm)                                                                         \
	X(ASN1_STRING_get0_data)                                                                   \
	X(ASN1_STRING_length)                                                                      \
	X(GENERAL_NAMES_free)                                                                      \
	X(OPENSSL_sk_num)                                                                          \
	X(OPENSSL_sk_value)                                                                        \
	X(ERR_get_error)                                                                           \
	X(ERR_peek_last_error)                                                                     \
	X(ERR_clear_error)                                                                         \
	X(ERR_error_string_n)                                                                      \
	X(OpenSSL_version)

#define DECLARE(name) static __typeof__(name) *p_##name;
OPENSSL_FUNCTIONS(DECLARE)
#undef DECLARE

/* The process's one client context, and the sessions kept for resumption. */
static struct {
	pthread_once_t once;
	char load_error[256]; /* why OpenSSL could not be loaded, if it could not */
	pthread_mutex_t lock;
	SSL_CTX *ctx;
	bool insecure;
	char sni[256];
	struct {
		char server[300]; /* "host:port" */
		SSL_SESSION *session;
	} sessions[8];
	unsigned next_session; /* the slot to reuse when all are taken */
	bool with_cert;        /* a client certificate is given (--cert) */
	char cas[4096];        /* the CAs trusted instead of the system's (--cacert...), or "" */
} tls = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

struct tls {
	SSL *ssl;
	X509 *leaf;       /* the server's certificate, kept to explain a refusal */
	char host[256];   /* the name verified and sent, or the address literal */
	char server[300]; /* "host:port", the key of its session */
	bool by_address;  /* host is an IP address literal */
	bool no_cert;     /* the server asked for a client certificate, and we had none */
	bool read_any;    /* application data came from the server */
};

static void
load(void)
{
	/* libssl.so.3 brings libcrypto.so.3 with it; dlsym on its handle finds both. */
	void *h = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL), *f;

	if (!h) {
		snprintf(tls.load_error, sizeof(tls.load_error), "cannot load OpenSSL: %s",
			 dlerror());
		return;
	}
	/* ISO C has no conversion from dlsym's object pointer to a function pointer: POSIX
	 * promises the representation is the same, so the bytes are copied. */
#define RESOLVE(name)                                                                              \
	if (!(f = dlsym(h, #name))) {                                                              \
		snprintf(tls.load_error, sizeof(tls.load_error),                                   \
			 "cannot load OpenSSL: no %s in libssl.so.3", #name);                      \
		return;                                                                            \
	}                                                                                          \
	memcpy(&p_##name, &f, sizeof(f));
	OPENSSL_FUNCTIONS(RESOLVE)
#undef RESOLVE
}

/* Keeps the newest session of each server, for the next connection to resume. */
static int
keep_session(SSL *ssl, SSL_SESSION *session)
{
	struct tls *t = p_SSL_get_ex_data(ssl, 0);
	unsigned slot = ARRAY_LEN(tls.sessions);

	if (!t)
		return 0;
	pthread_mutex_lock(&tls.lock);
	for (unsigned i = 0; i < ARRAY_LEN(tls.sessions) && slot == ARRAY_LEN(tls.sessions); i++)
		if (!tls.sessions[i].session || !strcmp(tls.sessions[i].server, t->server))
			slot = i;
	if (slot == ARRAY_LEN(tls.sessions))
		slot = tls.next_session++ % ARRAY_LEN(tls.sessions);
	if (tls.sessions[slot].session)
		p_SSL_SESSION_free(tls.sessions[slot].session);
	tls.sessions[slot].session = session;
	snprintf(tls.sessions[slot].server, sizeof(tls.sessions[slot].server), "%s", t->server);
	pthread_mutex_unlock(&tls.lock);
	return 1; /* the reference is ours now */
}

/* Keeps the server's own certificate as verification sees it: a refused one is no longer to
 * be had from the connection, and the message names what it is for. */
static int
see_certificate(int ok, X509_STORE_CTX *store)
{
	SSL *ssl = p_X509_STORE_CTX_get_ex_data(store, p_SSL_get_ex_data_X509_STORE_CTX_idx());
	struct tls *t = ssl ? p_SSL_get_ex_data(ssl, 0) : NULL;
	X509 *cert = p_X509_STORE_CTX_get_current_cert(store);

	if (t && cert && p_X509_STORE_CTX_get_error_depth(store) == 0 && !t->leaf &&
	    p_X509_up_ref(cert) == 1)
		t->leaf = cert;
	return ok;
}

/* Called when the server asks for a client certificate and none was given: TLS 1.3 completes
 * the handshake on our side all the same, and the server's refusal arrives later, as an alert
 * or a bare close, whichever the network delivers first. Noting the request here lets either
 * be explained. */
static int
no_client_certificate(SSL *ssl, X509 **cert, EVP_PKEY **key)
{
	struct tls *t = p_SSL_get_ex_data(ssl, 0);

	(void)cert, (void)key;
	if (t)
		t->no_cert = true;
	return 0;
}

/* An encrypted private key is not supported: without this, OpenSSL would ask for its
 * passphrase on the terminal, and a cron job would hang there. */
static int
no_passphrase(char *buf, int size, int rwflag, void *arg)
{
	(void)buf, (void)size, (void)rwflag, (void)arg;
	return -1;
}

/* Whether the PEM file at path holds an encrypted key ("ENCRYPTED" in a line: PKCS#8's header, or
 * a traditional key's Proc-Type), so that a key that cannot be used is said to be encrypted only
 * when it is. */
static bool
pem_encrypted(const char *path)
{
	char line[256];
	bool encrypted = false;
	FILE *f = fopen(path, "re");

	/* (Line by line, the first 1000: a certificate may come before the key.) */
	for (int i = 0; f && !encrypted && i < 1000 && fgets(line, sizeof(line), f); i++)
		encrypted = strstr(line, "ENCRYPTED") != NULL;
	if (f)
		fclose(f);
	return encrypted;
}

/* OpenSSL's queue of errors, as one line (and emptied). */
static const char *
openssl_error(char *buf, size_t size)
{
	unsigned long e = p_ERR_get_error(), last = e;

	while (e) {
		last = e;
		e = p_ERR_get_error();
	}
	if (!last) {
		snprintf(buf, size, "unknown error");
		return buf;
	}
	p_ERR_error_string_n(last, buf, size);
	return buf;
}

static int
setup(const struct tls_config *cfg, char *err, size_t size)
{
	char why[256];

	if (tls.ctx)
		return 0;
	if (!(tls.ctx = p_SSL_CTX_new(p_TLS_client_method()))) {
		snprintf(err, size, "cannot set up TLS: %s", openssl_error(why, sizeof(why)));
		return -1;
	}
	p_SSL_CTX_ctrl(tls.ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
	/* Writes may stop halfway (the socket is non-blocking), and our buffer may move
	 * between a write and its retry (it grows as commands are queued). */
	p_SSL_CTX_ctrl(tls.ctx, SSL_CTRL_MODE,
		       SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, NULL);
	p_SSL_CTX_ctrl(tls.ctx, SSL_CTRL_SET_SESS_CACHE_MODE,
		       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE, NULL);
	p_SSL_CTX_sess_set_new_cb(tls.ctx, keep_session);
	p_SSL_CTX_set_verify(tls.ctx, SSL_VERIFY_PEER, see_certificate);
	p_SSL_CTX_set_default_passwd_cb(tls.ctx, no_passphrase);
	p_SSL_CTX_set_client_cert_cb(tls.ctx, no_client_certificate);
	tls.insecure = cfg && cfg->insecure;
	if (cfg && cfg->sni)
		snprintf(tls.sni, sizeof(tls.sni), "%s", cfg->sni);

	if (cfg && (cfg->cacert || cfg->cacertdir)) {
		snprintf(tls.cas, sizeof(tls.cas), "%s",
			 cfg->cacert ? cfg->cacert : cfg->cacertdir);
		if (p_SSL_CTX_load_verify_locations(tls.ctx, cfg->cacert, cfg->cacertdir) != 1) {
			snprintf(err, size, "cannot use the CA certificates in %s: %s",
				 cfg->cacert ? cfg->cacert : cfg->cacertdir,
				 openssl_error(why, sizeof(why)));
			return -1;
		}
	} else if (p_SSL_CTX_set_default_verify_paths(tls.ctx) != 1) {
		snprintf(err, size, "cannot load the system's CA certificates: %s",
			 openssl_error(why, sizeof(why)));
		return -1;
	}
	if (cfg && (cfg->cert || cfg->key)) {
		if (!cfg->cert || !cfg->key) {
			snprintf(err, size,
				 "%s needs %s too (in the environment: REDLOCK_CERT and "
				 "REDLOCK_CERT_KEY; REDLOCK_KEY is the lock's name)",
				 cfg->cert ? "--cert" : "--key", cfg->cert ? "--key" : "--cert");
			return -1;
		}
		if (p_SSL_CTX_use_certificate_chain_file(tls.ctx, cfg->cert) != 1) {
			snprintf(err, size, "cannot use the certificate in %s: %s", cfg->cert,
				 openssl_error(why, sizeof(why)));
			return -1;
		}
		/* OpenSSL checks the key against the certificate as it loads it. */
		if (p_SSL_CTX_use_PrivateKey_file(tls.ctx, cfg->key, SSL_FILETYPE_PEM) != 1 &&
		    ERR_GET_REASON(p_ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
			snprintf(err, size, "cannot use the private key in %s%s: %s", cfg->key,
				 pem_encrypted(cfg->key) ? " (an encrypted key is not supported)"
							 : "",
				 openssl_error(why, sizeof(why)));
			return -1;
		}
		if (p_SSL_CTX_check_private_key(tls.ctx) != 1) {
			p_ERR_clear_error();
			snprintf(err, size, "the key in %s does not match the certificate in %s",
				 cfg->key, cfg->cert);
			return -1;
		}
		tls.with_cert = true;
	}
	return 0;
}

bool
tls_available(void)
{
	return true;
}

const char *
tls_library_version(char *err, size_t size)
{
	pthread_once(&tls.once, load);
	if (tls.load_error[0]) {
		snprintf(err, size, "%s", tls.load_error);
		return NULL;
	}
	return p_OpenSSL_version(OPENSSL_VERSION);
}

int
tls_configure(const struct tls_config *cfg, char *err, size_t size)
{
	pthread_once(&tls.once, load);
	if (tls.load_error[0]) {
		snprintf(err, size, "%s", tls.load_error);
		return -2;
	}
	return setup(cfg, err, size);
}

struct tls *
tls_new(int fd, const char *host, unsigned port, char *err, size_t size)
{
	unsigned char addr[16];
	struct tls *t;

	if (tls_configure(NULL, err, size) < 0)
		return NULL;
	if (!(t = calloc(1, sizeof(*t))) || !(t->ssl = p_SSL_new(tls.ctx))) {
		free(t);
		snprintf(err, size, "cannot set up TLS: out of memory");
		return NULL;
	}
	snprintf(t->host, sizeof(t->host), "%s", tls.sni[0] ? tls.sni : host);
	snprintf(t->server, sizeof(t->server), "%s:%u", host, port);
	t->by_address =
		inet_pton(AF_INET, t->host, addr) == 1 || inet_pton(AF_INET6, t->host, addr) == 1;
	p_SSL_set_ex_data(t->ssl, 0, t);
	p_SSL_set_fd(t->ssl, fd);
	/* SNI names the server we want; an address literal is not sent (RFC 6066). */
	if (!t->by_address)
		p_SSL_ctrl(t->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
			   t->host);
	if (tls.insecure)
		p_SSL_set_verify(t->ssl, SSL_VERIFY_NONE, NULL);
	else if (t->by_address)
		p_X509_VERIFY_PARAM_set1_ip_asc(p_SSL_get0_param(t->ssl), t->host);
	else
		p_SSL_set1_host(t->ssl, t->host);

	pthread_mutex_lock(&tls.lock);
	for (unsigned i = 0; i < ARRAY_LEN(tls.sessions); i++)
		if (tls.sessions[i].session && !strcmp(tls.sessions[i].server, t->server))
			p_SSL_set_session(t->ssl, tls.sessions[i].session);
	pthread_mutex_unlock(&tls.lock);
	return t;
}

void
tls_free(struct tls *t)
{
	if (!t)
		return;
	/* No close_notify: the socket is closed anyway. One that carried answers counts as shut
	 * down all the same, else OpenSSL marks its session as not to be resumed, and the next
	 * connection to the server (after it closed this one: an idle timeout, CLIENT KILL) pays
	 * for a full handshake. (Every reply is framed: an end cut short is never taken for a
	 * whole one.) */
	if (t->read_any)
		p_SSL_set_shutdown(t->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
	p_SSL_free(t->ssl);
	if (t->leaf)
		p_X509_free(t->leaf);
	free(t);
}

/* The names a certificate is for: its DNS and IP subject alternative names, else its
 * common name. */
static void
certificate_names(X509 *cert, char *out, size_t size)
{
	GENERAL_NAMES *names = p_X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	size_t o = 0;

	out[0] = '\0';
	for (int i = 0; names && i < p_OPENSSL_sk_num((const OPENSSL_STACK *)names); i++) {
		const GENERAL_NAME *n = p_OPENSSL_sk_value((const OPENSSL_STACK *)names, i);
		char text[INET6_ADDRSTRLEN];
		const unsigned char *data;
		int len;

		if (n->type == GEN_DNS) {
			data = p_ASN1_STRING_get0_data(n->d.dNSName);
			len = p_ASN1_STRING_length(n->d.dNSName);
			snprintf(text, sizeof(text), "%.*s", len, (const char *)data);
		} else if (n->type == GEN_IPADD) {
			data = p_ASN1_STRING_get0_data(n->d.iPAddress);
			len = p_ASN1_STRING_length(n->d.iPAddress);
			if (!inet_ntop(len == 4 ? AF_INET : AF_INET6, data, text, sizeof(text)))
				continue;
		} else {
			continue;
		}
		if (o < size)
			o += (size_t)snprintf(out + o, size - o, "%s%s", o ? ", " : "", text);
	}
	if (names)
		p_GENERAL_NAMES_free(names);
	if (!out[0] && p_X509_NAME_get_text_by_NID(p_X509_get_subject_name(cert), NID_commonName,
						   out, (int)size) < 0)
		snprintf(out, size, "no name");
}

/* A certificate date, as "2026-11-23 10:00 UTC". */
static const char *
certificate_date(const ASN1_TIME *when, char *buf, size_t size)
{
	struct tm tm;

	if (!when || p_ASN1_TIME_to_tm(when, &tm) != 1 ||
	    !strftime(buf, size, "%Y-%m-%d %H:%M UTC", &tm))
		snprintf(buf, size, "an unreadable date");
	return buf;
}

/* Why the server's certificate was not accepted, in words a user can act on. */
static void
explain_verification(struct tls *t, long result, char *err, size_t size)
{
	X509 *cert = t->leaf;
	char names[512], date[64];

	switch (result) {
	case X509_V_ERR_HOSTNAME_MISMATCH:
	case X509_V_ERR_IP_ADDRESS_MISMATCH:
		if (cert)
			certificate_names(cert, names, sizeof(names));
		snprintf(err, size, "the certificate is for %s, not %s",
			 cert ? names : "other names", t->host);
		break;
	case X509_V_ERR_CERT_HAS_EXPIRED:
		snprintf(err, size, "the certificate expired on %s",
			 certificate_date(cert ? p_X509_get0_notAfter(cert) : NULL, date,
					  sizeof(date)));
		break;
	case X509_V_ERR_CERT_NOT_YET_VALID:
		snprintf(err, size, "the certificate is valid only from %s",
			 certificate_date(cert ? p_X509_get0_notBefore(cert) : NULL, date,
					  sizeof(date)));
		break;
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
	case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
		if (tls.cas[0])
			snprintf(err, size,
				 "the certificate is not signed by a CA in %s (%s; is that the "
				 "CA that signed the server's?)",
				 tls.cas, p_X509_verify_cert_error_string(result));
		else
			snprintf(err, size,
				 "the certificate is not signed by a trusted CA (%s; name the "
				 "CA with --cacert)",
				 p_X509_verify_cert_error_string(result));
		break;
	default:
		snprintf(err, size, "the certificate was refused: %s",
			 p_X509_verify_cert_error_string(result));
		break;
	}
}

/* The peer closed the connection: a server that asked for the client certificate we did not
 * have closes before its first reply, and says why only if its alert outran the close. (One
 * that refused the certificate we gave may close so too: see tls_closed_hint.) */
static enum tls_result
closed(const struct tls *t, char *err, size_t size)
{
	if (!t->no_cert || t->read_any)
		return TLS_CLOSED;
	snprintf(err, size,
		 "the server asked for a client certificate and closed the connection "
		 "without one (give one with --cert and --key)");
	return TLS_FAILED;
}

const char *
tls_closed_hint(const struct tls *t)
{
	/* TLS 1.3 checks the client certificate after our side of the handshake is done; the
	 * alert often loses a race with the reset our first request causes. A close is an
	 * outage all the same (a restart, a failover): only a hint. */
	return tls.with_cert && !t->read_any
		       ? " before its first reply (as a server does that refuses the client "
			 "certificate: a CA it does not trust, expired; its log says why)"
		       : "";
}

/* What the outcome of an SSL call means for us; err is set for TLS_FAILED. */
static enum tls_result
outcome(struct tls *t, int ok, bool handshaking, char *err, size_t size)
{
	int e = ok ? SSL_ERROR_NONE : p_SSL_get_error(t->ssl, 0);
	unsigned long code;
	char why[256];

	switch (e) {
	case SSL_ERROR_NONE:
		return TLS_DONE;
	case SSL_ERROR_WANT_READ:
		return TLS_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return TLS_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN:
		return closed(t, err, size);
	default:
		break;
	}
	if (handshaking && p_SSL_get_verify_result(t->ssl) != X509_V_OK) {
		explain_verification(t, p_SSL_get_verify_result(t->ssl), err, size);
		p_ERR_clear_error();
		return TLS_FAILED;
	}
	code = p_ERR_get_error();
	if (!code && e == SSL_ERROR_SYSCALL)
		return closed(t, err, size);
	switch (ERR_GET_REASON(code)) {
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_PACKET_LENGTH_TOO_LONG:
		snprintf(err, size, "the server does not speak TLS (a plain port? use redis://)");
		break;
	case SSL_R_UNEXPECTED_EOF_WHILE_READING:
		p_ERR_clear_error();
		return closed(t, err, size);
	case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
	case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
	case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
	case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
	case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
		/* The server's alerts are about our certificate, or the lack of one. */
		p_ERR_error_string_n(code, why, sizeof(why));
		if (t->no_cert)
			snprintf(err, size,
				 "the server demanded a client certificate it accepts (%s; give "
				 "one with --cert and --key)",
				 why);
		else
			snprintf(err, size,
				 "the server refused the client certificate (--cert): %s", why);
		break;
	default:
		p_ERR_error_string_n(code, why, sizeof(why));
		snprintf(err, size, "TLS failed: %s", why);
		break;
	}
	p_ERR_clear_error();
	return TLS_FAILED;
}

enum tls_result
tls_handshake(struct tls *t, char *err, size_t size)
{
	p_ERR_clear_error();
	return outcome(t, p_SSL_connect(t->ssl) == 1, true, err, size);
}

enum tls_result
tls_read(struct tls *t, void *buf, size_t size, size_t *got, char *err, size_t errsize)
{
	bool ok;

	*got = 0;
	p_ERR_clear_error();
	ok = p_SSL_read_ex(t->ssl, buf, size, got) == 1;
	t->read_any |= ok;
	return outcome(t, ok, false, err, errsize);
}

enum tls_result
tls_write(struct tls *t, const void *buf, size_t size, size_t *put, char *err, size_t errsize)
{
	*put = 0;
	p_ERR_clear_error();
	return outcome(t, p_SSL_write_ex(t->ssl, buf, size, put) == 1, false, err, errsize);
}

bool
tls_resumed(const struct tls *t)
{
	return p_SSL_session_reused(t->ssl) == 1;
}

#endif
