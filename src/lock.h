/*
 * The lock protocol (DESIGN §3): the token, the Lua scripts with their KEYS/ARGV contracts,
 * and acquire, renew and release on a given connection. It knows nothing about processes.
 */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "conn.h"

#define LOCK_VALUE_MAX 384
#define LOCK_HOLDER_MAX LOCK_VALUE_MAX

struct lock {
	const char *key;
	char *fence_key;              /* the fencing counter, in KEY's hash slot */
	char *wake_key;               /* the list a release pushes a wake-up to */
	char *waiting_key;            /* the waiters registered for a wake-up */
	char value[LOCK_VALUE_MAX];   /* "<uuid>:<hostname>:<pid>", the token stored at KEY */
	int64_t ttl;                  /* the lease, ns */
	int64_t io_timeout;           /* how long one request may take */
	long long fence;              /* once acquired: this acquisition's fencing number */
	int64_t acquired_at;          /* once acquired: when the winning request was sent */
	int64_t answered_at;          /* when the answer to the last release came */
	char holder[LOCK_HOLDER_MAX]; /* who else held KEY when we last found it busy */
	int64_t holder_ttl;           /* and how long their lease had left (ns; -1: none) */
	char error[512];              /* why the last call did not succeed */
};

#define LOCK_IO_TIMEOUT (5 * NS_PER_S)
#define LOCK_LAST_ANSWER (250 * NS_PER_MS)
/* How long a wait without end rides out a server that stopped answering: a restart, or a
 * Sentinel failover with its default 30s of down-after-milliseconds. */
#define LOCK_OUTAGE (60 * NS_PER_S)
/* How long a wake-up waits for a waiter that is between its attempt and its BLPOP, and how
 * much longer than the holder's lease a waiter stays registered. */
#define LOCK_HANDOFF (1000 * NS_PER_MS)

/*
 * Makes a fresh token for key (128 bits from getrandom) and names the helper keys.
 * Returns 0, or -1 with errno set when there is no randomness or memory: never a weaker
 * token.
 */
int lock_init(struct lock *l, const char *key, int64_t ttl);
void lock_free(struct lock *l);

/* When the lease taken by a request sent at `sent` can no longer be trusted, on the local
 * clock: sent + TTL, less the allowance for clock drift (1% of TTL + 2 ms). */
int64_t lock_lease_deadline(const struct lock *l, int64_t sent);

/*
 * Whether a grant whose lease is valid until valid_until (see lock_lease_deadline) still
 * counts at now: only while two thirds of it are ahead, which leaves the time to start the
 * command and renew. Its answer must come within a third of the TTL of the request, as a
 * renewal's must; a later one may already belong to the next holder.
 */
bool lock_grant_in_time(const struct lock *l, int64_t valid_until, int64_t now);

enum lock_result {
	LOCK_ACQUIRED,    /* l->fence and l->acquired_at are set */
	LOCK_BUSY,        /* not acquired: -n, or the wait ran out; l->holder names who held
			   * it, or is empty and l->error says why (a grant came too late) */
	LOCK_INTERRUPTED, /* intr_fd became readable; no lock was left behind */
	LOCK_UNAVAILABLE, /* Redis could not be reached, or refused: l->error says why */
};

/*
 * Takes the lock, waiting up to `wait` ns (0: not at all; WAIT_FOREVER) while another
 * holds it. c is opened, and reopened, as needed. A request whose reply is lost is sent
 * again with the same token, which settles it, never abandons it. A grant that comes too
 * late (lock_grant_in_time) is given back, as if the lock had been held. While waiting, a
 * server that stops answering is tried again until the wait ends (see give_up_point in
 * lock.c). meanwhile (may be NULL)
 * is called once, as soon as the first request is on its way: work that then overlaps
 * with the round trip.
 */
enum lock_result lock_acquire(struct lock *l, struct conn *c, int64_t wait, int intr_fd,
			      void (*meanwhile)(void *), void *arg);

enum lock_renewal {
	LOCK_RENEWED,
	LOCK_RENEW_FAILED,      /* no answer, or the connection broke: l->error says why */
	LOCK_RENEW_INTERRUPTED, /* intr_fd became readable */
	LOCK_GONE,              /* KEY no longer holds our value: expired or deleted */
	LOCK_GONE_WITH_DATA,    /* and the fence counter is gone too: the server lost its data */
	LOCK_TAKEN,             /* another holder has KEY now (l->holder) */
};

/* Extends our lease to a full TTL if KEY still holds our value; never re-creates KEY.
 * c is opened first when it is not. */
enum lock_renewal lock_renew(struct lock *l, struct conn *c, int64_t deadline, int intr_fd);

enum lock_release_result {
	LOCK_RELEASED,
	LOCK_RELEASE_GONE,        /* KEY no longer held our value when l->answered_at came */
	LOCK_RELEASE_UNCONFIRMED, /* a request's reply was lost, and asked again KEY was no
				   * longer ours: most likely that request deleted it */
	LOCK_RELEASE_FAILED,      /* Redis could not be asked: l->error says why */
};

/* Deletes KEY if it still holds our value, reconnecting once if c has gone stale. */
enum lock_release_result lock_release(struct lock *l, struct conn *c, int64_t deadline,
				      int intr_fd);

struct lock_state {
	bool held;
	char value[LOCK_HOLDER_MAX]; /* the holder's value, when held */
	int64_t ttl;                 /* what is left of the holder's lease, ns; -1: no expiry */
	long long fence;             /* the last fence handed out; -1: never taken */
};

/* Asks who holds the lock, without touching it. 0, or -1 with l->error set. */
int lock_query(struct lock *l, struct conn *c, int64_t deadline, struct lock_state *st);

/* Splits a value written by redlock-run into host and pid; -1 for any other value. */
int lock_parse_holder(const char *value, char *host, size_t size, long *pid);

/* "host:pid" for a value written by redlock-run, else the value itself, made printable. */
const char *lock_describe_holder(const char *value, char *buf, size_t size);

/* The name of a helper key for key, in the same Redis Cluster hash slot: "{key}suffix", or
 * "key" + suffix when key already has a hash tag. Returns a string to free, or NULL. */
char *lock_aux_key(const char *key, const char *suffix);

#endif
