/*
 * The lock protocol (DESIGN §3, §3b): the token, the Lua scripts with their KEYS/ARGV
 * contracts, and acquire, renew and release on a set of nodes: one server, or a Redlock quorum
 * of several, by the same rules. It knows nothing about processes.
 */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "conn.h"
#include "nodes.h"

#define LOCK_VALUE_MAX 384
#define LOCK_HOLDER_MAX LOCK_VALUE_MAX

struct lock {
	const char *key;
	char *fence_key;            /* the fencing counter, in KEY's hash slot */
	char *wake_key;             /* the list a release pushes a wake-up to */
	char *waiting_key;          /* the waiters registered for a wake-up */
	char *shared_wake_key;      /* the list that wakes shared waiters */
	char *queue_key;            /* the line's arrival order (see LINE in scripts.c) */
	char *own_wake_key;         /* the list that wakes us in an ordered line: wake_key:value */
	char *broken_key;           /* what others did to whom: --break, --queue latest, and
				     * --cancel-running write it, for the runs they ended */
	char value[LOCK_VALUE_MAX]; /* "<uuid>:<hostname>:<pid>", the token stored at KEY, and
				     * the discipline (token_suffix) */
	const char *token_suffix;   /* "" (--queue fifo), ":latest" or ":latest:cancel" */
	bool ordered;               /* the line keeps arrival order: one node (see LINE) */
	bool superseded;            /* an attempt said LOCK_SUPERSEDED */
	bool mismatched;            /* an attempt was refused for options that other runs on
				     * KEY use otherwise (--queue, --limit) */
	long long arrived;          /* --queue latest: when it first took its place in line
				     * (server µs, as the script said), or 0; a newer run that came
				     * since supersedes it, also once it asks again after a stop (see
				     * QUEUE_RULES in scripts.c) */
	int64_t ttl;                /* the lease, ns */
	int64_t io_timeout;         /* how long one request may take */
	int64_t connect_timeout;    /* how long a server that never answered this run may take
				     * to, connecting included (--connect-timeout) */
	int replicas;               /* what changes the lock counts once this many replicas of
				     * a node acknowledged it (see nodes_replicas), */
	int64_t replicas_timeout;   /* waiting this long at most (ns) */
	int64_t min_hold;           /* the release leaves the lock taken until this long after
				     * held_since (--min-hold), or 0 */
	int limit;                  /* up to this many holders at once (--limit): a semaphore
				     * when more than 1 */
	bool shared;                /* any number of shared holders, or one exclusive (--shared) */
	long long holders;          /* once acquired: how many held it then, us included (a
				     * semaphore or shared lock) */
	long long fence;            /* once acquired: this acquisition's fencing number */
	int64_t acquired_at;        /* once acquired: when the winning requests were sent (the
				     * lease counts from there) */
	int64_t held_since;         /* once acquired: when their answers said it was ours
				     * (--min-hold and --max-hold count from there: a request
				     * queued behind a wait was sent as the wait began) */
	int64_t valid_until;        /* once acquired: when the lease ends on a quorum (as the last
				     * renewal left it, for the release) */
	int64_t answered_at;        /* when the answer to the last release came */
	bool handed_over;           /* it woke the first waiter of an ordered line, with others
				     * behind it (see line_follow_up) */
	char holder[LOCK_HOLDER_MAX]; /* who else held KEY when we last found it busy */
	int64_t holder_ttl;           /* and how long until a quorum is free (ns; -1: never) */
	bool holder_waits;            /* holder is a waiter in line before us, not a holder */
	char error[512];              /* why the last call did not succeed */

	/* Who cancelled our run (--cancel-running), as a renewal says; "" until then. */
	char cancelled_by[LOCK_HOLDER_MAX];
};

#define LOCK_IO_TIMEOUT (5 * NS_PER_S)
#define LOCK_LAST_ANSWER (250 * NS_PER_MS)
/* How long a split round waits for the nodes still to answer, at least (see attempt). */
#define LOCK_STRAGGLER (10 * NS_PER_MS)
/* How long a wait without end rides out a server that stopped answering: a restart, or a
 * Sentinel failover with its default 30s of down-after-milliseconds. */
#define LOCK_OUTAGE (60 * NS_PER_S)
/* How often -n tries again when contenders split the servers and nobody got a quorum. */
#define LOCK_SPLITS 5
/* How long a wake-up waits for a waiter that is between its attempt and its BLPOP, and how
 * much longer than the holder's lease a waiter stays registered. */
#define LOCK_HANDOFF_MS 1000
#define LOCK_HANDOFF (LOCK_HANDOFF_MS * NS_PER_MS)
/* How late a server may time a blocked client out: it does so at its next tick, 100 ms apart
 * at the default hz of 10. */
#define LOCK_TICK (200 * NS_PER_MS)

/*
 * Makes a fresh token for key (128 bits from getrandom) and names the helper keys.
 * Returns 0, or -1 with errno set when there is no randomness or memory: never a weaker
 * token.
 */
int lock_init(struct lock *l, const char *key, int64_t ttl);
void lock_free(struct lock *l);

/* The line's discipline (--queue latest, --cancel-running), written in the token, where every
 * script reads it: the default keeps arrival order. */
void lock_set_discipline(struct lock *l, bool latest, bool cancel_running);

/* The discipline written in a value (a holder's or waiter's): "latest" or "fifo". */
const char *lock_discipline_of(const char *value);

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
	LOCK_INTERRUPTED, /* intr_fd became readable; no lock was left behind (unless a
			   * release sent as we gave up never reached the server: then it
			   * expires by itself) */
	LOCK_UNAVAILABLE, /* Redis could not be reached, or refused: l->error says why */
	LOCK_SUPERSEDED,  /* not acquired: a newer run with --queue latest took our place in
			   * line; l->holder says who, "HOST:PID" */
};

/*
 * Takes the lock on a quorum of the nodes, waiting up to `wait` ns (0: not at all;
 * WAIT_FOREVER) while another holds it. The request goes to every node at once; the outcome is
 * decided as soon as a quorum granted it or can no longer grant it. Taken, the lease holds until
 * the quorum-th latest of the granting nodes' lease ends (l->valid_until), which must still
 * have two thirds of a TTL ahead (lock_grant_in_time), and l->fence is above every earlier
 * acquisition's on a quorum. A young node's grant counts only when no other holder can count on
 * it (see verdict in acquire.c). Not taken, whatever was taken is given back; contenders that split
 * the nodes try again after a random pause.
 *
 * A request whose reply is lost is sent again with the same token, which settles it, never
 * abandons it. While waiting, servers that stop answering are tried again until the wait ends
 * (see give_up_point in acquire.c).
 */
enum lock_result lock_acquire(struct lock *l, struct nodes *ns, int64_t wait, int intr_fd);

enum lock_renewal {
	LOCK_RENEWED,
	LOCK_RENEW_FAILED,      /* too few answered: l->error says why */
	LOCK_RENEW_INTERRUPTED, /* intr_fd became readable */
	LOCK_GONE,              /* KEY no longer holds our value on a quorum: expired or deleted */
	LOCK_GONE_WITH_DATA,    /* because the servers lost their data: they restarted after the
				 * lock was taken, or the fence counters are gone too */
	LOCK_TAKEN,             /* another holder has KEY now (l->holder) */
};

/*
 * Extends our lease to a full TTL on every node where KEY still holds our value; never
 * re-creates KEY there, except, while the lease as it stood holds on a quorum without them, on a
 * minority of nodes that lost it (a restart without its data) or never had it (a late answer, a
 * server that was down): those count from the next renewal on. As soon as a quorum has renewed,
 * renewed(arg, the lease's new end) is called; the answers of the others are waited for until
 * the deadline. On LOCK_RENEWED, l->error says which nodes did not answer, or is empty; on a
 * loss, it names the failover that explains it, or for LOCK_GONE_WITH_DATA the server that lost
 * its data, or is empty.
 */
enum lock_renewal lock_renew(struct lock *l, struct nodes *ns, int64_t deadline, int intr_fd,
			     void (*renewed)(void *arg, int64_t lease_end), void *arg);

enum lock_release_result {
	LOCK_RELEASED,
	LOCK_RELEASE_GONE,        /* KEY no longer held our value on a quorum when
				   * l->answered_at came */
	LOCK_RELEASE_UNCONFIRMED, /* a request's reply was lost, and asked again KEY was no
				   * longer ours: most likely that request deleted it */
	LOCK_RELEASE_LOST_DATA,   /* too few nodes had it: servers lost their data (restarted
				   * empty) while the command ran, l->error says which */
	LOCK_RELEASE_FAILED,      /* too few nodes could be asked: l->error says why */
};

/* How long the release must still leave the lock taken at now (l->min_hold): 0 when it may
 * delete it. */
int64_t lock_hold_left(const struct lock *l, int64_t now);

/* Deletes KEY on every node where it still holds our value, reconnecting once where a
 * connection has gone stale; or, while lock_hold_left says so, leaves it to expire then,
 * waking a waiter to wait for that. Once a quorum has answered, the others get
 * LOCK_LAST_ANSWER. */
enum lock_release_result lock_release(struct lock *l, struct nodes *ns, int64_t deadline,
				      int intr_fd);

/* How many of a semaphore's holders a state lists. */
#define LOCK_STATE_HOLDERS 16
#define LOCK_STATE_WAITERS 16

struct lock_state {
	bool answered; /* a node's state: it answered (else error says why) */
	bool foreign;  /* it answered that KEY holds something redlock-run did not write */
	bool denied;   /* it refused to say, as the user may not read KEY (NOPERM) */
	bool silent;   /* it did not answer in time (else it answered, or failed at once) */
	char error[300];
	bool held;                   /* no one else can take it now (a semaphore: all N are; a
				      * shared lock: any holder is, unless we would share it) */
	char value[LOCK_HOLDER_MAX]; /* the holder's value, when held (a semaphore or shared lock:
				      * the one whose lease ends first, when any) */
	const char *process;         /* its process, as the answer came: see lock_value_process */
	int64_t ttl;                 /* what is left of that lease, ns; -1: no expiry */
	long long fence;             /* the last fence handed out; -1: never taken */
	int limit;                   /* a semaphore's N; 0 for a lock */
	bool shared;                 /* held shared (--shared) */
	size_t holders;              /* a semaphore's or shared lock's holders, of which holder[]
				      * has the first */
	struct {
		char value[LOCK_HOLDER_MAX];
		int64_t ttl;
		const char *process;
	} holder[LOCK_STATE_HOLDERS];
	int64_t held_for; /* a lock: how long its holder has held it (ns), from its
			   * fence and the server's clock; -1: cannot tell */
	bool kept;        /* a lock: its holder's command has finished, and --min-hold
			   * keeps it taken for the rest of ttl */
	char cancelled_by[LOCK_HOLDER_MAX]; /* a lock: the newer run that cancelled its holder
					     * (--cancel-running), "HOST:PID"; "" if none */
	long long waiting;                  /* how many wait for it, */
	long long waiting_shared;           /* of which shared */
	size_t nwaiters; /* some of them: the first in arrival order, when the line
			  * keeps it (ordered), else exclusive ones first */
	bool ordered;
	struct {
		char value[LOCK_HOLDER_MAX];
		bool shared;
		int64_t waited; /* how long it has been in line (ns); -1 when not ordered */
		int64_t place;  /* how long its place lasts (ns): it looks again by then */
		const char *process;
	} waiter[LOCK_STATE_WAITERS];
};

/* Asks every node who holds the lock, without touching it: each node's view into node[i] (one
 * per node), the quorum's into *st. A node with skip[i] (skip may be NULL) is not asked: it
 * counts as silent. 0, or -1 with l->error set when the quorum's view cannot be told (too few
 * answered). */
int lock_query(struct lock *l, struct nodes *ns, int64_t deadline, const bool *skip,
	       struct lock_state *node, struct lock_state *st);

/* Splits a value written by redlock-run into host and pid (a lock kept by --min-hold after its
 * release has ":kept" after them); -1 for any other value. */
int lock_parse_holder(const char *value, char *host, size_t size, long *pid);
/* Whether the process of a holder's or waiter's value runs: "running", "stopped" or "gone" when
 * it is on this host (whose name is here), NULL when that cannot be told here (another host, or
 * a value redlock-run did not write). A holder whose process is gone did not release: its lease
 * runs out; a waiter that is gone did not leave: its place ends with the lease it waits out. A
 * stopped holder renews nothing until it is continued. */
const char *lock_value_process(const char *value, const char *here);
/* Whether a holder's value says that its command has finished and --min-hold keeps its lock, or
 * its place of a semaphore or shared lock, taken (":kept"). */
bool lock_value_kept(const char *value);

/* What --break did on one node. */
struct lock_breaking {
	bool answered; /* else error says why */
	bool unheard;  /* not answered, but the break went out and may still be carried out */
	char error[300];
	bool broke;                   /* someone held KEY there, and no longer does */
	bool changed;                 /* the holder shown holds it no more: nothing was broken,
				       * holder is who holds it now ("": nobody) */
	long long fence, before;      /* the fence now, and the one before (-1: none) */
	int64_t left;                 /* what was left of the broken holders' leases (ns) */
	size_t holders;               /* how many held it */
	bool exclusive;               /* a lock held exclusively: before was its holder's fence */
	char holder[LOCK_HOLDER_MAX]; /* the first of them */
};

/* Breaks the lock on every node (script_break), saying it was broken by `by` ("HOST:PID"),
 * only where `shown` (a holder's value, as --status showed it) still holds it, unless shown is
 * NULL: each node's outcome into node[i]. 0 once a quorum answered, else -1 with l->error
 * set. */
int lock_break(struct lock *l, struct nodes *ns, const char *by, const char *shown,
	       int64_t deadline, struct lock_breaking *node);

/* Whether a holder's value, as a renewal or a release that lost the lock reports it, says that
 * the lock was broken with --break ("broken:HOST:PID"): then buf holds who broke it, "HOST:PID". */
bool lock_broken_by(const char *value, char *buf, size_t size);

/* What a user can do about a server's refusal (error): "; see LEAST PRIVILEGE ..." after
 * NOPERM or a command refused inside a script, "; give its password ..." after NOAUTH, else "". */
const char *lock_refusal_advice(const char *error);

/* "host:pid" for a value written by redlock-run, else the value itself, made printable. */
const char *lock_describe_holder(const char *value, char *buf, size_t size);

/* The name of a helper key for key, in the same Redis Cluster hash slot: "{key}suffix", or
 * "key" + suffix when key already has a hash tag. Returns a string to free, or NULL. */
char *lock_aux_key(const char *key, const char *suffix);

#endif
