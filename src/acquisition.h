/*
 * What the lock's rooms share (DESIGN §5): lock.c (the token, the script calls and their
 * answers, renew and release), acquire.c (the attempts and what they found), line.c (the
 * waiting line between them) and inspect.c (--status, --list and --break). Private to those:
 * other modules see the lock through lock.h.
 */
#ifndef REDLOCK_ACQUISITION_H
#define REDLOCK_ACQUISITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock.h"
#include "nodes.h"

struct script;

/* A script call: EVALSHA <digest> <numkeys> <keys...> <args...>, or EVAL with the text. */
struct call {
	struct script *script;
	const char *argv[16];
	size_t lens[16];
	int argc;
	char numkeys[8];
	char arg[LOCK_VALUE_MAX + 64]; /* backs an argument made for the call (acquire_call, ...) */
};

/* Why the nodes that failed a request did: one node's reason as it is, several joined. */
struct failures {
	size_t count;
	char text[512];
};

/* What lock_acquire carries from one attempt to the next. */
struct acquisition {
	int64_t wait;          /* as asked: 0 (-n), ns, or WAIT_FOREVER */
	int64_t wait_deadline; /* when waiting ends */
	int64_t io_cap;        /* no request may outlast this */
	int64_t unsure_since;  /* when the first request whose outcome we do not know went out,
				* or -1 */
	int64_t unsure_at[NODES_MAX]; /* for each node, when such a request went out there, or
				       * -1 */
	/* For each node: a request went out on a connection the server accepted and never
	 * answered on, in this run (frozen, or busy with a long script): it took nothing yet,
	 * but may when the server resumes. Not waited for (see --connect-timeout), but said. */
	bool unheard[NODES_MAX];
	int64_t answered_at; /* when a quorum last answered; -1: never, in this run */
	int64_t pause;       /* the pause before trying silent servers again; 0 while they
			      * answer */
	int64_t outage_at;   /* when the first pause of this outage began */
	bool still_told;     /* a long wait for replicas was said (once, even without -v) */
	bool unreplicated;   /* the last attempt's grants fell short of --wait-replicas */
	bool seen_held;      /* a quorum said another holds the lock */
	bool young_told;     /* a wait for young servers was said (once, even without -v) */
	bool late_told;      /* a grant too late to count was said (once, even without -v) */
	bool renewing;       /* the next attempt renews a grant of ours (ATTEMPT_RENEW): not
			      * bounded by -w */
	int splits;          /* -n: rounds that contenders split, tried again (LOCK_SPLITS) */
	int cuts;            /* split rounds that stopped waiting for a node (see attempt) */
	bool in_line;        /* an attempt went out that may have put us in line */
	/* One server: the next attempt's request went out already, behind the BLPOP, so that
	 * Redis runs it as soon as a release wakes us (no round trip of ours in between). */
	bool pipelined;
	int64_t pipelined_at; /* when it went out */
	char shown[512];      /* the holder (or what else) the last progress line named */
};

/* What one attempt found, node by node. */
struct round {
	int64_t start;  /* when the requests went out */
	bool in_line;   /* they put us in line where KEY was found held */
	bool pipelined; /* they went out behind a BLPOP */
	size_t yes;     /* grants that count */
	size_t young;   /* grants from young nodes that do not count (yet): see verdict */
	size_t held, refused, failed;
	size_t usable;       /* nodes that can grant it once its holders let go; 0: all of them */
	size_t answered;     /* nodes that answered, whatever they said */
	size_t declined;     /* of them, those that refused (out of memory, read-only) */
	size_t not_now;      /* of them, those that cannot grant it yet: loading,
			      * or replicas that did not acknowledge */
	size_t reached;      /* nodes that failed, having answered this run before */
	size_t pending;      /* requests still out when the round was decided */
	int64_t young_ready; /* when enough young nodes count for a quorum */
	char run_id[NODES_MAX][41];    /* each granting node's server, when it said */
	bool twice;                    /* two nodes are one server: l->error says which */
	bool granted[NODES_MAX];       /* the node holds our key (a young one too) */
	bool young_at[NODES_MAX];      /* it is young, and its grant does not count */
	long long fence[NODES_MAX];    /* each granting node's counter */
	int64_t lease[NODES_MAX];      /* each granting node's lease end */
	int64_t counts_at[NODES_MAX];  /* a young node: when it will count */
	bool waiting[NODES_MAX];       /* registered as a waiter there: it was found held */
	bool unreplicated[NODES_MAX];  /* granted, but too few replicas acknowledged it */
	int64_t held_until[NODES_MAX]; /* when the holders' leases run out (and when young nodes
					* count), as they came */
	char young_why[200];           /* the first young node, for messages */
	struct failures why;           /* the nodes that failed or refused */
};

/* Says why the last call did not succeed, in l->error. */
void set_error(struct lock *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Draws a token into l->value: "<uuid>:<hostname>:<pid>" and l->token_suffix, the uuid from
 * 128 bits of getrandom. 0, or -1 with errno set when there is no randomness: never a weaker
 * token. */
int make_token(struct lock *l);

/* A call of script s with its nargs arguments, args, of which the first nkeys are keys: the
 * strings must outlive the call. */
void call_init(struct call *call, struct script *s, int nkeys, int nargs, const char *const *args);

/* The acquire script's call for kind_of(l), its ARGV[1]
 * ("TTL:HANDOFF:N:IN_LINE:AGE:ORDERED:VALUE") in call->arg: the lease in ms, the handoff
 * allowance in ms (0: not waiting), the semaphore's N (1 for a lock), 1 when an earlier attempt
 * may have put us in line (the grant then takes us out of it), else 0, 1 when a grant must say
 * how old the server's data is (a new acquisition over several nodes, where a young one does
 * not count: see young in acquire.c), 1 when the line keeps arrival order (l->ordered), and our
 * value. */
void acquire_call(struct lock *l, bool waiting, bool in_line, bool age, struct call *call);

/* The keys of the scripts that touch the line, in their order (see LINE in scripts.c). */
#define LINE_KEYS(l)                                                                               \
	(l)->key, (l)->fence_key, (l)->wake_key, (l)->waiting_key, (l)->queue_key, (l)->broken_key

/* The release script's call for kind_of(l), leaving the lock taken keep ms still (0: deleted). */
void release_call(struct lock *l, long long keep, struct call *call);

/* Sends the call to node i: by the script's digest, or by its text (which also caches it
 * there) when the server does not know it yet, or when its answer will not be read. */
void call_send(struct nodes *ns, size_t i, const struct call *call, int64_t deadline, int intr_fd,
	       bool text);

/* A request to node i, sent at `sent`, may have landed unanswered: the earliest such counts. */
void unsure_mark(struct acquisition *q, size_t i, int64_t sent);

/* When a request to node i must be answered, for one otherwise due by deadline: by
 * --connect-timeout when the node never answered this run, connecting included. */
int64_t due_from(const struct lock *l, const struct nodes *ns, size_t i, int64_t deadline);

/* The call, to every node. */
void call_send_all(struct nodes *ns, const struct call *call, int64_t deadline, int intr_fd);

/*
 * The next answer to call from any node, waited for until `until`; a node that did not know
 * the script is sent its text and asked again, due by `due`. What nodes_next returns.
 */
enum conn_result next_answer(struct nodes *ns, const struct call *call, int64_t until, int64_t due,
			     int intr_fd, struct answer *a);

/*
 * Whether what answer a says was written reached enough replicas (--wait-replicas): always,
 * without it. Otherwise why says how many acknowledged what, or why WAIT could not tell.
 */
bool replicated(const struct lock *l, const struct nodes *ns, const struct answer *a,
		const char *what, char *why, size_t size);

/* Adds one node's reason to f. */
void failures_add(struct failures *f, const char *why);

/* l->error for a request that fewer than a quorum could grant: what the failing nodes said,
 * and with several nodes, how many a quorum needed. */
void set_quorum_error(struct lock *l, const struct nodes *ns, const struct failures *f);

/* The TTL in ms, as a script's argument. */
void ttl_ms(const struct lock *l, char *buf, size_t size);

/* A PTTL in ms as a TTL in ns, saturating (a server may say anything): -1 for none. */
int64_t ttl_ns(long long ms);

/*
 * What a server said when it refused a script, for a message: its error without the script's
 * internals Redis adds ("... script: 59e8..., on @user_script:20."), which name nothing a user
 * wrote; "unexpected reply" for anything but an error. Returns buf.
 */
const char *refusal(const struct reply *r, char *buf, size_t size);

/* Whether a script said that KEY is not a lock ("FOREIGN what", see ALIEN in scripts.c): then
 * l->error says what KEY holds on the server at address, and `advice` follows. */
bool foreign(struct lock *l, const char *address, const struct reply *r, const char *advice);

enum acquire_reply {
	REPLY_ACQUIRED,
	REPLY_HELD,
	REPLY_NOT_NOW, /* the server cannot run it yet: it is loading its data, or busy */
	REPLY_REFUSED,
};

/* Reads the acquire script's reply from the server at address into l; a grant's *age, how
 * long that server has run (s), or -1 when it did not say, and its run id into run_id (41
 * bytes), or "". */
enum acquire_reply parse_acquire(struct lock *l, const char *address, const struct reply *r,
				 long long *age, char *run_id);

/* The fence script's call, raising KEY's fence counter to `fence` where it is lower; both
 * strings (the lease in ms in ttl) must outlive the call. */
void fence_call(struct lock *l, const char *fence, const char *ttl, struct call *call);

/* "3s", or "less than 1s": a server's uptime in whole seconds, up, as a time ago. */
const char *uptime_ago(long long up, char *buf, size_t size);

#endif
