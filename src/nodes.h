/*
 * The nodes a lock lives on, and which connection a request goes to: one Redis server, or a
 * Redlock quorum of N independent ones that must agree, ⌊N/2⌋+1 of them. A node is one logical
 * Redis: a server, or the master that Sentinels name, found again on every reconnect and
 * followed through a failover. A request goes to every node at once, and the answers come
 * back one by one from one poll loop, as they arrive. The quorum's arithmetic is kept here
 * too, so that the protocol (lock.c, acquire.c) states its rules once, whatever the number
 * of nodes: one server is a quorum of one.
 *
 * Like a connection, a set of nodes belongs to one thread.
 */
#ifndef REDLOCK_NODES_H
#define REDLOCK_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "url.h"

/* The most servers one lock may live on. */
#define NODES_MAX URL_LIST_MAX

struct nodes;

/* Closed connections to the n servers of urls, which must outlive them. NULL when out of
 * memory. */
struct nodes *nodes_new(const struct redis_url *urls, size_t n);
void nodes_free(struct nodes *ns);

size_t nodes_count(const struct nodes *ns);
size_t nodes_quorum(const struct nodes *ns);
/* "127.0.0.1:6379", for messages. */
const char *nodes_address(const struct nodes *ns, size_t i);

/* Every command that changes the lock counts only once this many replicas of each node
 * acknowledged it (WAIT count timeout_ms, sent right behind it). */
void nodes_replicas(struct nodes *ns, int count, long long timeout_ms);

/* The most requests one node may have outstanding: nodes_send asserts it. */
#define NODES_ASKS_MAX 8

/* The most arguments a command may have. */
#define NODES_ARGS_MAX 16

struct command {
	int argc;
	const char **argv;
	const size_t *lens;
	bool replicated; /* WAIT follows it (see nodes_replicas) */
	/* It changes the lock: what a master wrote counts only while it is still the one (a
	 * Sentinel's) or the slot's owner (a cluster's); otherwise it is asked where that went. */
	bool changes;
	/* A blocking command (BLPOP) whose last argument is its timeout in seconds: when it
	 * is sent again (to a slot's new owner, a new master), that timeout is what is left
	 * until this time (clock_now's; a ms at least), not the whole of it again. 0: none. */
	int64_t blocks_until;
};

/*
 * Sends a command to node i, (re)opening its connection first when it is closed, or stuck on
 * an answer that is overdue; a Sentinel node asks its Sentinels where the master is then, which
 * may take until deadline, or until intr_fd (-1 for none) is readable. Its answer is due by
 * deadline; nodes_next hands it out, or says what went wrong.
 */
void nodes_send(struct nodes *ns, size_t i, const struct command *cmd, int64_t deadline,
		int intr_fd);

/* When node i's request went out (its connection may have opened after it was sent). */
int64_t nodes_sent(const struct nodes *ns, size_t i);

struct answer {
	size_t node;
	enum conn_result result; /* CONN_OK with reply (the caller's to free), or how the node
				  * failed: its connection is closed, nodes_error says why */
	struct reply *reply;
	bool maybe_landed;  /* on failure: the request may have reached the server */
	long long replicas; /* a replicated command: how many replicas acknowledged it; -1 when
			     * WAIT was refused, or not waited for (interrupted, or hurried: see
			     * nodes_hurry), as nodes_error says */
};

/*
 * The next answer from any node with a request outstanding: CONN_OK with *a filled in. A node
 * whose deadline passes is an answer too (CONN_TIMEOUT in a->result). A Sentinel node whose
 * master stepped down (it answers -READONLY or -UNBLOCKED, or drops the connection) finds the
 * new one and is asked again there, within the request's deadline: the protocol's requests
 * can all be asked twice. Otherwise CONN_TIMEOUT
 * at deadline, CONN_INTERRUPTED when intr_fd (-1 for none) is readable, CONN_FAILED when no
 * request is outstanding.
 */
enum conn_result nodes_next(struct nodes *ns, int64_t deadline, int intr_fd, struct answer *a);

/* The answers node i still owes are due by deadline from now on: a request that went out
 * behind one that may block for long (a BLPOP) is due once that one has returned. */
void nodes_due(struct nodes *ns, size_t i, int64_t deadline);

/* Whether node i's requests always go to the server its URL names, which answers them in
 * order: not a Sentinel's master, nor (so far) a cluster's node, whose requests may be sent
 * again elsewhere. */
bool nodes_plain(const struct nodes *ns, size_t i);

/* Whether node i answered this run (or its Sentinels did, or a node of its cluster): one that
 * fails now is having an outage, not a wrong address. */
bool nodes_reached(const struct nodes *ns, size_t i);
/* Whether node i still owes an answer. */
bool nodes_outstanding(const struct nodes *ns, size_t i);
/* Whether a request outstanding was sent again elsewhere as the server it was on is gone (a
 * Sentinel's master or a cluster's slot owner, killed or failed over): its answer may take as
 * long as a failover. */
bool nodes_moving(const struct nodes *ns);
/* Nudges the server of node i, where a request is outstanding (see conn_nudge). */
void nodes_nudge(struct nodes *ns, size_t i);
/* The answers still outstanding are not waited for: they are dropped as they come. */
void nodes_forget(struct nodes *ns);
/* The requests still outstanding are taken back: their connections are closed (the only way
 * to take back a blocked request). */
void nodes_cancel(struct nodes *ns);
/* The requests still outstanding are let go: those that have gone out are forgotten (as
 * nodes_forget), those that have not (their connection is still opening) are taken back, as
 * are those a WAIT for replicas follows (it may block for its whole timeout). */
void nodes_let_go(struct nodes *ns);
/* While on, answers are wanted at once: a request that a WAIT follows is answered without the
 * replicas' count (an answer's replicas are -1), and its connection is closed, WAIT and what was
 * sent behind it unread. */
void nodes_hurry(struct nodes *ns, bool on);
/* Until when a request sent now may wait behind answers forgotten on its connection (the
 * deadline those requests had); 0 when nothing is ahead of it. */
int64_t nodes_queued_until(const struct nodes *ns);
/* Closes node i's connection and has it resolve its name again (see conn_reset). */
void nodes_reset(struct nodes *ns, size_t i);
const char *nodes_error(const struct nodes *ns, size_t i);
/* Whether node i's server refused the connection for good (see conn_refused). */
bool nodes_refused(const struct nodes *ns, size_t i);
/* When a replicated request last fell short of its replicas on node i: how many replicas its
 * server has connected, or -1 when it could not tell. */
long long nodes_replicas_connected(const struct nodes *ns, size_t i);
/* Whether a node was out of reach for a reason of this process's own (out of file descriptors
 * or memory): no outage to ride out. */
bool nodes_failed_here(const struct nodes *ns);
/* The exit status for a request these servers could not serve: 69, or 71 when nodes_failed_here
 * says so. */
int nodes_unavailable_status(const struct nodes *ns);
/* How node i's server was found, when not from its URL alone: "the master" (its Sentinels
 * named it) or "the owner of its slot" (a cluster redirected it there); else NULL. */
const char *nodes_role(const struct nodes *ns, size_t i);
/* What a failover did to node i (a Sentinel's master that moved), or NULL. */
const char *nodes_failover(const struct nodes *ns, size_t i);
/* How many failovers node i followed (its Sentinels named another master): 0 for none. */
unsigned nodes_failovers(const struct nodes *ns, size_t i);
/* Whether node i's connection resumed an earlier TLS session. */
bool nodes_tls_resumed(const struct nodes *ns, size_t i);

/* Opens the connections that are closed, without a request, so that nodes_watch can watch them
 * (but a Sentinel node's, which its first request opens). */
void nodes_open(struct nodes *ns, int64_t deadline, int intr_fd);

/*
 * Waits until `until`, or until intr_fd (-1 for none) is readable, watching the connections that
 * are idle, open or opening: CONN_OK as soon as one of them is closed (a server's restart, most
 * likely), with its node in *i; otherwise CONN_TIMEOUT or CONN_INTERRUPTED.
 */
enum conn_result nodes_watch(struct nodes *ns, int64_t until, int intr_fd, size_t *i);
/* The socket of the first connection that nodes_watch would watch, to poll beside other
 * things (readable: nodes_watch then says what came); -1 when there is none. */
int nodes_watch_fd(const struct nodes *ns);

/* What each node holds for us: our lease there ends at until (our clock), or there is none. */
void nodes_hold(struct nodes *ns, size_t i, int64_t until);
void nodes_drop(struct nodes *ns, size_t i);
bool nodes_holds(const struct nodes *ns, size_t i);
/* Whether every node holds it. */
bool nodes_hold_all(const struct nodes *ns);
/* When our lease ends on a quorum: the quorum-th latest of the nodes' ends; 0 (long past)
 * when fewer than a quorum hold it. */
int64_t nodes_lease_end(const struct nodes *ns);

enum verdict {
	VERDICT_OPEN, /* not decided yet */
	VERDICT_YES,  /* a quorum said yes */
	VERDICT_NO,   /* so many said no that a quorum can no longer say yes */
};

enum verdict nodes_verdict(const struct nodes *ns, size_t yes, size_t no);

/* Of n times, one from each node that said yes: the quorum-th latest, until which a quorum
 * agrees; 0 when fewer than a quorum said yes. */
int64_t nodes_quorum_until(const struct nodes *ns, const int64_t *until, size_t n);

/* Of n times, one from each node found held by others: when enough of them will have run out
 * for a quorum to be free, at the latest, of the usable nodes that can grant it (0: all); 0 when
 * it is free now. */
int64_t nodes_free_at(const struct nodes *ns, const int64_t *until, size_t n, size_t usable);

#endif
