#include "nodes.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cluster.h"
#include "exitstatus.h"
#include "sentinel.h"

/* How often a Sentinel node's requests may be sent again to a new master. */
#define NODE_RESENDS 3
/* How often one request may be redirected before it counts as a loop, and the pauses before
 * asking again a cluster that is busy (-TRYAGAIN) or down (-CLUSTERDOWN). */
#define NODE_REDIRECTS 8
#define NODE_PAUSE_MIN (10 * NS_PER_MS)
#define NODE_PAUSE_MAX (200 * NS_PER_MS)
/* A Sentinel node asks the Sentinels whether its master is still theirs before a request when
 * it last did longer ago than this, and gives them this long to say. */
#define NODE_CONFIRM_AFTER (1 * NS_PER_S)
#define NODE_CONFIRM_TIMEOUT SENTINEL_ASK_TIMEOUT
/* How long finding a Sentinel's master again may take, when the request has no deadline (a
 * blocked waiter's). */
#define NODE_RESOLVE_TIMEOUT (5 * NS_PER_S)
/* A node that answers this long after an answer was due (a blocked request's: once it timed
 * out) sat frozen or cut off meanwhile: a cluster may have given its slots to a replica. */
#define NODE_SILENT (1 * NS_PER_S)

/* A request sent, and not answered yet. */
struct ask {
	bool changes;      /* it changes the lock (see struct command) */
	bool replicated;   /* WAIT follows it */
	struct copy *copy; /* the command, to send again elsewhere (a new master, a slot's owner) */
};

struct copy {
	int argc;
	const char *argv[NODES_ARGS_MAX];
	size_t lens[NODES_ARGS_MAX];
	int64_t blocks_until; /* see struct command */
	char timeout[24];     /* the timeout it is sent again with */
	char bytes[];
};

struct node {
	const struct redis_url *url;
	struct conn *conn;
	struct sentinel *sentinel; /* a Sentinel URL's: where the master is; else NULL */
	struct cluster *cluster;   /* once a server redirected it (or a cluster URL's): where
				    * the slot's owner is; else NULL */
	struct conn *side;         /* to where an -ASK pointed, for one request */
	struct ask ask[NODES_ASKS_MAX];
	unsigned asks;          /* requests whose answers are still to be handed out */
	int64_t asked_at;       /* when the first of them was sent */
	int64_t deadline;       /* when they are overdue */
	bool was_open;          /* its connection was open when they were sent */
	unsigned resends;       /* how often they were sent again after a failover */
	unsigned redirects;     /* how often the first was redirected (-MOVED, -ASK) */
	unsigned seeds_tried;   /* how many places could not be reached for it */
	bool reached;           /* it answered once this run */
	bool moving;            /* the first request was sent again elsewhere (see nodes_moving) */
	int64_t retry_at;       /* its master gone, the requests go out again then; 0: no */
	int64_t pause;          /* before asking again after -TRYAGAIN or -CLUSTERDOWN */
	enum conn_result early; /* the connection could not be opened to send them */
	int64_t confirmed_at;   /* a Sentinel node: when the Sentinels last named its master */
	int64_t heard_at;       /* when it last answered */
	bool silent;            /* it answered NODE_SILENT late since its last write (see take) */
	const char *why;        /* why the last request failed, when not the connection's word */
	bool why_here;          /* why says the Sentinels or their master could not be reached for
				 * want of a descriptor (or memory) of ours */
	char error[512];
	int64_t held_until;           /* our lease there ends then; 0: there is none */
	long long replicas_connected; /* when WAIT last fell short: how many replicas the
				       * server has (ROLE), or -1 when unknown */
	/* A cluster's: why the slot's owner failed the request in flight, said beside the last
	 * place asked when none could take it. */
	char first_failure[300];
};

struct nodes {
	size_t n;
	int replicas;           /* see nodes_replicas */
	char replicas_wait[24]; /* its timeout, in ms */
	bool hurried;           /* see nodes_hurry */
	struct node node[];
};

static struct nodes *
alloc_nodes(size_t n)
{
	struct nodes *ns;

	if (n == 0 || n > NODES_MAX || !(ns = calloc(1, sizeof(*ns) + n * sizeof(ns->node[0]))))
		return NULL;
	ns->n = n;
	for (size_t i = 0; i < n; i++)
		ns->node[i].replicas_connected = -1;
	return ns;
}

/* Node n's connection, to url: to the server it names, to the master its Sentinels name (asked
 * afresh), or through a cluster's seeds. -1 when out of memory. */
static int
connect_node(struct node *n, const struct redis_url *url)
{
	n->url = url;
	if (url->master) {
		if (!(n->sentinel = sentinel_new(url)))
			return -1;
		n->conn = conn_new(sentinel_master(n->sentinel));
	} else if (url->cluster) {
		if (!(n->cluster = cluster_new(url)))
			return -1;
		n->conn = conn_new(cluster_target(n->cluster));
	} else {
		n->conn = conn_new(url);
	}
	return n->conn ? 0 : -1;
}

struct nodes *
nodes_new(const struct redis_url *urls, size_t n)
{
	struct nodes *ns = alloc_nodes(n);

	for (size_t i = 0; ns && i < n; i++) {
		if (connect_node(&ns->node[i], &urls[i]) < 0) {
			nodes_free(ns);
			return NULL;
		}
	}
	return ns;
}

/* Forgets the requests outstanding on node n. */
static void
clear_asks(struct node *n)
{
	for (unsigned k = 0; k < n->asks && k < NODES_ASKS_MAX; k++)
		free(n->ask[k].copy);
	n->asks = 0;
	n->resends = n->redirects = n->seeds_tried = 0;
	n->pause = 0;
	n->early = CONN_OK;
	n->moving = false;
	n->retry_at = 0;
}

void
nodes_free(struct nodes *ns)
{
	if (!ns)
		return;
	for (size_t i = 0; i < ns->n; i++) {
		clear_asks(&ns->node[i]);
		conn_free(ns->node[i].conn);
		conn_free(ns->node[i].side);
		sentinel_free(ns->node[i].sentinel);
		cluster_free(ns->node[i].cluster);
	}
	free(ns);
}

void
nodes_replicas(struct nodes *ns, int count, long long timeout_ms)
{
	ns->replicas = count;
	snprintf(ns->replicas_wait, sizeof(ns->replicas_wait), "%lld", timeout_ms);
}

size_t
nodes_count(const struct nodes *ns)
{
	return ns->n;
}

size_t
nodes_quorum(const struct nodes *ns)
{
	return ns->n / 2 + 1;
}

const char *
nodes_address(const struct nodes *ns, size_t i)
{
	return conn_address(ns->node[i].conn);
}

const char *
nodes_error(const struct nodes *ns, size_t i)
{
	const struct node *n = &ns->node[i];

	return n->why ? n->why : conn_error(n->conn);
}

long long
nodes_replicas_connected(const struct nodes *ns, size_t i)
{
	return ns->node[i].replicas_connected;
}

bool
nodes_failed_here(const struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++) {
		const struct node *n = &ns->node[i];
		/* (A failure told in the node's own words, as a Sentinel node's is, was ours only
		 * when the reopen that failed said so.) */
		if (n->why ? n->why_here : conn_failed_here(n->conn))
			return true;
	}
	return false;
}

int
nodes_unavailable_status(const struct nodes *ns)
{
	return nodes_failed_here(ns) ? STATUS_OSERR : STATUS_UNAVAILABLE;
}

const char *
nodes_role(const struct nodes *ns, size_t i)
{
	const struct node *n = &ns->node[i];

	return n->sentinel ? "the master" : n->cluster ? "the owner of its slot" : NULL;
}

const char *
nodes_failover(const struct nodes *ns, size_t i)
{
	return ns->node[i].sentinel ? sentinel_failover(ns->node[i].sentinel) : NULL;
}

unsigned
nodes_failovers(const struct nodes *ns, size_t i)
{
	return ns->node[i].sentinel ? sentinel_moves(ns->node[i].sentinel) : 0;
}

bool
nodes_tls_resumed(const struct nodes *ns, size_t i)
{
	return conn_tls_resumed(ns->node[i].conn);
}

/* A copy of cmd, to send again; NULL when out of memory (then it is not sent again). */
static struct copy *
copy_command(const struct command *cmd)
{
	size_t total = 0;
	struct copy *c;
	char *p;

	for (int k = 0; k < cmd->argc; k++)
		total += cmd->lens[k];
	if (!(c = malloc(sizeof(*c) + total)))
		return NULL;
	c->argc = cmd->argc;
	c->blocks_until = cmd->blocks_until;
	p = c->bytes;
	for (int k = 0; k < cmd->argc; k++) {
		memcpy(p, cmd->argv[k], cmd->lens[k]);
		c->argv[k] = p;
		c->lens[k] = cmd->lens[k];
		p += cmd->lens[k];
	}
	return c;
}

/* A copy about to be sent again: a blocking command's timeout is what is left of it. */
static void
refresh(struct copy *c)
{
	int64_t left;

	if (!c->blocks_until)
		return;
	left = time_max(c->blocks_until - clock_now(), NS_PER_MS); /* (0 would block for ever) */
	snprintf(c->timeout, sizeof(c->timeout), "%.3f", (double)(left / NS_PER_MS) / 1e3);
	c->argv[c->argc - 1] = c->timeout;
	c->lens[c->argc - 1] = strlen(c->timeout);
}

/* Puts a command on connection c, with WAIT behind it when it must be replicated. */
static void
put(const struct nodes *ns, struct conn *c, int argc, const char **argv, const size_t *lens,
    bool replicated)
{
	char count[16];

	conn_send(c, argc, argv, lens);
	if (replicated) {
		snprintf(count, sizeof(count), "%d", ns->replicas);
		conn_send(c, 3, (const char *[]){ "WAIT", count, ns->replicas_wait },
			  (size_t[]){ 4, strlen(count), strlen(ns->replicas_wait) });
	}
}

/* (Re)opens node n's connection: to its URL, without waiting; or to the master its Sentinels
 * name, which waits for their answer. */
static enum conn_result
reopen(struct node *n, int64_t deadline, int intr_fd)
{
	enum conn_result res;

	if (!n->sentinel) {
		/* A seed whose name does not resolve fails at once: on to the next. */
		size_t seeds = n->url->nhosts;
		while ((res = conn_start(n->conn, deadline)) != CONN_OK && n->cluster &&
		       seeds-- > 1 && cluster_next_seed(n->cluster))
			;
		return res;
	}
	res = sentinel_connect(n->sentinel, n->conn,
			       time_min(deadline, clock_now() + NODE_RESOLVE_TIMEOUT), intr_fd);
	if (res != CONN_OK) {
		snprintf(n->error, sizeof(n->error), "%s", sentinel_error(n->sentinel));
		n->why = n->error;
		n->why_here = sentinel_failed_here(n->sentinel);
	}
	n->confirmed_at = clock_now();
	return res;
}

/* Whether the Sentinels still name the master node n is open to (asked once in a while): when
 * they name another, its connection is closed, and true returned. They get a quarter of the
 * time left to the request at most: Sentinels that do not answer (frozen, cut off) must not
 * make a renewal late. */
static bool
confirm(struct node *n, int64_t deadline, int intr_fd)
{
	int64_t now = clock_now();

	n->confirmed_at = now;
	return sentinel_confirm(
		n->sentinel, n->conn,
		now + time_min(NODE_CONFIRM_TIMEOUT, time_max(deadline - now, 0) / 4), intr_fd);
}

void
nodes_send(struct nodes *ns, size_t i, const struct command *cmd, int64_t deadline, int intr_fd)
{
	struct node *n = &ns->node[i];
	int64_t now = clock_now();
	bool replicated = cmd->replicated && ns->replicas > 0;
	enum conn_result res;

	n->why = NULL;
	n->why_here = false;
	/* An answer that was given up on and is overdue by now will not come: the server is
	 * stuck, or gone. Start afresh rather than queue behind it. */
	if (!n->asks && conn_due(n->conn) && now >= n->deadline)
		conn_close(n->conn);
	/* After a failover the old master may go on taking writes for a while: what a renewal
	 * extends there, the new master lets expire. */
	if (n->sentinel && !n->asks && conn_is_open(n->conn) &&
	    now - n->confirmed_at >= NODE_CONFIRM_AFTER)
		confirm(n, deadline, intr_fd);
	/* A connection the server hung up on while it sat idle is not sent on. */
	if (!conn_check(n->conn) && (res = reopen(n, deadline, intr_fd)) != CONN_OK) {
		clear_asks(n);
		n->asks = 1; /* nodes_next reports the failure, or take sends it again */
		n->ask[0] = (struct ask){
			.changes = cmd->changes,
			.replicated = replicated,
			.copy = copy_command(cmd),
		};
		n->early = res;
		n->asked_at = now;
		n->deadline = deadline;
		n->was_open = false;
		return;
	}
	assert(n->asks < NODES_ASKS_MAX); /* the protocol has a few requests out at a time */
	if (!n->asks) {
		n->asked_at = now;
		n->deadline = deadline;
		n->was_open = conn_is_ready(n->conn);
	}
	n->deadline = time_max(n->deadline, deadline);
	n->ask[n->asks++] = (struct ask){
		.changes = cmd->changes,
		.replicated = replicated,
		.copy = copy_command(cmd),
	};
	put(ns, n->conn, cmd->argc, cmd->argv, cmd->lens, replicated);
}

int64_t
nodes_sent(const struct nodes *ns, size_t i)
{
	return time_max(ns->node[i].asked_at, conn_opened_at(ns->node[i].conn));
}

bool
nodes_outstanding(const struct nodes *ns, size_t i)
{
	return ns->node[i].asks > 0;
}

bool
nodes_reached(const struct nodes *ns, size_t i)
{
	const struct node *n = &ns->node[i];

	return n->reached || (n->sentinel && sentinel_answered(n->sentinel));
}

bool
nodes_moving(const struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		if (ns->node[i].asks && ns->node[i].moving)
			return true;
	return false;
}

/* Whether an answer from a Sentinel node says that its master stepped down: it turned replica
 * (-READONLY to a write, -UNBLOCKED to a blocked BLPOP), or it cut the connection with the
 * request on it (Sentinel has the clients of a reconfigured server killed). */
static bool
stepped_down(const struct answer *a)
{
	const char *e;

	if (a->result == CONN_FAILED)
		return a->maybe_landed;
	if (a->result != CONN_OK || reply_type(a->reply) != REPLY_ERROR)
		return false;
	e = reply_string(a->reply, NULL);
	return strncmp(e, "READONLY", 8) == 0 || strncmp(e, "UNBLOCKED", 9) == 0;
}

/* Sleeps before asking again (a cluster, or a Sentinel's master), a pause that grows, within
 * the deadline: -1 when interrupted. */
static int
pause_again(struct node *n, int intr_fd)
{
	n->pause = n->pause ? time_min(2 * n->pause, NODE_PAUSE_MAX) : NODE_PAUSE_MIN;
	return clock_sleep_until(time_min(clock_now() + n->pause, n->deadline), intr_fd);
}

/* Whether node n's first outstanding request is a Sentinel master's blocked wait (a BLPOP,
 * see line_wait), which is not sent again to the master found again (see wait_moved). */
static bool
waits(const struct node *n)
{
	return n->sentinel && n->asks && n->ask[0].copy && n->ask[0].copy->blocks_until;
}

/*
 * Node n's blocked wait found its master again, after a failover: it is handed out as failed
 * rather than sent there, and the waiter looks again at once (see line_wait). The look before
 * the wait may have reached the old master after the promotion, which the Sentinels name a
 * second or so later, and been lost with it: on the new master the waiter's place is then the
 * one the look before that took, which ends a handoff after an earlier lease, and a release
 * there drops it from the line. Looked at again there, it stays in line. The caller hands
 * out *a, and forgets the request.
 */
static void
wait_moved(struct node *n, struct answer *a)
{
	a->reply = NULL;
	a->replicas = -1;
	a->result = CONN_FAILED;
	a->maybe_landed = false; /* (a BLPOP: nothing to settle) */
	snprintf(n->error, sizeof(n->error), "its master moved to %s", conn_address(n->conn));
	n->why = n->error;
}

/* Finds node n's master again and sends it every request still outstanding; not a blocked
 * wait (waits), which the caller hands out. */
static enum conn_result
send_again(const struct nodes *ns, struct node *n, int intr_fd)
{
	enum conn_result res;

	conn_reset(n->conn);
	n->silent = false; /* (of the server the requests went to; they go elsewhere now) */
	if ((res = reopen(n, n->deadline, intr_fd)) != CONN_OK)
		return res;
	if (waits(n))
		return CONN_OK;
	n->asked_at = clock_now();
	n->was_open = conn_is_ready(n->conn);
	for (unsigned k = 0; k < n->asks; k++) {
		struct copy *c = n->ask[k].copy;
		if (!c)
			return CONN_FAILED;
		refresh(c);
		put(ns, n->conn, c->argc, c->argv, c->lens, n->ask[k].replicated);
	}
	return CONN_OK;
}

/* WAIT fell short on c: asks the server how many replicas it has (ROLE) into
 * n->replicas_connected, for the message to tell too few replicas from slow ones; -1 when it
 * cannot tell (ROLE refused by an ACL, more replies still due on c). */
static void
count_replicas(struct node *n, struct conn *c, int intr_fd)
{
	struct reply *r = NULL;
	enum conn_result res = CONN_FAILED;

	n->replicas_connected = -1;
	if (conn_due(c) == 0)
		res = conn_call(c, &r, n->deadline, intr_fd, 1, (const char *[]){ "ROLE" },
				(size_t[]){ 4 });
	if (res == CONN_INTERRUPTED)
		conn_close(c); /* nothing may queue behind an answer still to come */
	if (res == CONN_OK && reply_type(r) == REPLY_ARRAY && reply_count(r) >= 3 &&
	    reply_type(reply_element(r, 2)) == REPLY_ARRAY)
		n->replicas_connected = (long long)reply_count(reply_element(r, 2));
	reply_free(r);
}

/* WAIT's answer, behind a replicated command's on c, is not waited for: c is closed, as WAIT may
 * block for its whole timeout, and nothing is to queue behind it. The command's own answer in *a
 * stands, with its replicas unknown (why says why). */
static void
forgo_replicas(struct node *n, struct conn *c, struct answer *a, const char *why)
{
	snprintf(n->error, sizeof(n->error), "%s: %s", conn_address(c), why);
	n->why = n->error;
	a->replicas = -1;
	conn_close(c);
}

/* Reads WAIT's answer, behind a replicated command's on c, into a->replicas; or forgoes it when
 * interrupted (intr_fd readable) or hurried (see nodes_hurry). */
static void
take_replicas(const struct nodes *ns, struct node *n, struct conn *c, struct answer *a, int intr_fd)
{
	struct reply *r;
	enum conn_result res;

	if (ns->hurried) {
		forgo_replicas(n, c, a, "its replicas were not waited for");
		return;
	}
	res = conn_recv(c, &r, n->deadline, intr_fd);
	if (res == CONN_INTERRUPTED) {
		/* What the command did (a lock taken) is known, and can be undone. */
		forgo_replicas(n, c, a, "interrupted while its replicas were waited for");
		return;
	}
	if (res != CONN_OK) {
		reply_free(a->reply);
		a->reply = NULL;
		a->result = res;
		return;
	}
	if (reply_type(r) == REPLY_INTEGER) {
		a->replicas = reply_integer(r);
		if (a->replicas < ns->replicas)
			count_replicas(n, c, intr_fd);
	} else {
		snprintf(n->error, sizeof(n->error), "%s cannot wait for replicas (WAIT: %s)",
			 conn_address(c),
			 reply_type(r) == REPLY_ERROR ? reply_string(r, NULL) : "unexpected reply");
		n->why = n->error;
	}
	reply_free(r);
}

enum take {
	TAKEN,       /* *a is the answer */
	SENT_AGAIN,  /* to a new master, the slot's owner, a seed: nothing to hand out yet */
	INTERRUPTED, /* while finding where to send it */
};

/*
 * Node n's requests could not be sent again (res): a Sentinel's master that answered this run
 * and cannot be reached now (killed, not replaced yet) is looked for again after a pause that
 * grows, until their deadline, as a failover takes the Sentinels' down-after-milliseconds and
 * more; nodes_next goes on with the other nodes meanwhile (SENT_AGAIN: nothing to hand out
 * yet). Otherwise the failure is the answer (TAKEN).
 */
static enum take
later(struct node *n, struct answer *a, enum conn_result res)
{
	int64_t now = clock_now();

	if (n->sentinel && n->reached && res != CONN_REFUSED && now < n->deadline) {
		n->pause = n->pause ? time_min(2 * n->pause, NODE_PAUSE_MAX) : NODE_PAUSE_MIN;
		n->retry_at = time_min(now + n->pause, n->deadline);
		return SENT_AGAIN;
	}
	a->result = res;
	a->maybe_landed = true;
	return TAKEN;
}

/* Sends node n's requests again (send_again) instead of handing out *a. */
static enum take
take_again(const struct nodes *ns, struct node *n, struct answer *a, int intr_fd)
{
	enum conn_result res;

	reply_free(a->reply);
	a->reply = NULL;
	n->resends++;
	n->moving = true;
	if ((res = send_again(ns, n, intr_fd)) == CONN_OK && !waits(n))
		return SENT_AGAIN;
	if (res == CONN_INTERRUPTED)
		return INTERRUPTED;
	if (res == CONN_OK) {
		wait_moved(n, a); /* (take forgets it) */
		return TAKEN;
	}
	return later(n, a, res);
}

/* Whether error e is the word w, alone or followed by more. */
static bool
is_error(const char *e, const char *w)
{
	size_t n = strlen(w);

	return strncmp(e, w, n) == 0 && (e[n] == ' ' || e[n] == '\0');
}

/* Node n gets a cluster to follow, and its connection goes where that says. -1 when out of
 * memory. */
static int
follow_cluster(struct node *n)
{
	struct cluster *c;
	struct conn *conn;

	if (n->cluster)
		return 0;
	if (!(c = cluster_new(n->url)) || !(conn = conn_new(cluster_target(c)))) {
		cluster_free(c);
		return -1;
	}
	conn_free(n->conn);
	n->conn = conn;
	n->cluster = c;
	return 0;
}

/*
 * -ASK: the first request goes, once, to where it points, after ASKING, on a connection of its
 * own; its answer there is handed out. The requests behind it stay where they were.
 */
static enum take
ask_once(const struct nodes *ns, struct node *n, struct answer *a, const char *e, int intr_fd)
{
	const struct redis_url *to = cluster_asked(n->cluster, e);
	struct copy *c = n->ask[0].copy;
	struct reply *r = NULL;
	enum conn_result res;

	conn_free(n->side);
	n->side = NULL;
	if (!to || !c || !(n->side = conn_new(to)))
		return TAKEN;
	if ((res = conn_open(n->side, n->deadline, intr_fd)) == CONN_OK) {
		conn_send(n->side, 1, (const char *[]){ "ASKING" }, (size_t[]){ 6 });
		refresh(c);
		put(ns, n->side, c->argc, (const char **)c->argv, c->lens, n->ask[0].replicated);
		if ((res = conn_recv(n->side, &r, n->deadline, intr_fd)) == CONN_OK) {
			reply_free(r);
			r = NULL;
			res = conn_recv(n->side, &r, n->deadline, intr_fd);
		}
	}
	if (res == CONN_INTERRUPTED)
		return INTERRUPTED;
	reply_free(a->reply);
	a->reply = r;
	a->result = res;
	if (res == CONN_OK && n->ask[0].replicated)
		take_replicas(ns, n, n->side, a, intr_fd);
	if (a->result != CONN_OK) {
		a->maybe_landed = true;
		snprintf(n->error, sizeof(n->error), "%s", conn_error(n->side));
		n->why = n->error;
	}
	conn_close(n->side);
	return TAKEN;
}

/*
 * A cluster's answer that the request belongs elsewhere, or later: -MOVED (the slot's owner is
 * there, from now on: the requests outstanding go there), -ASK (see ask_once), -TRYAGAIN and
 * -CLUSTERDOWN (a migration or a failover under way: asked again after a pause that grows,
 * within the deadline). TAKEN leaves in *a what to hand out: an answer that is none of these,
 * one that came too late to follow, or redirections that go round in circles.
 */
static enum take
redirected(const struct nodes *ns, struct node *n, struct answer *a, int intr_fd)
{
	const char *e = reply_string(a->reply, NULL);
	bool moved = is_error(e, "MOVED"), asked = is_error(e, "ASK");
	/* A blocked request whose node turned replica (a cluster's failover) is asked there
	 * again: it answers -MOVED. */
	bool later =
		is_error(e, "TRYAGAIN") || is_error(e, "CLUSTERDOWN") || is_error(e, "UNBLOCKED");

	if (n->sentinel || (!moved && !asked && !later))
		return TAKEN;
	/* (-UNBLOCKED alone does not make a node a cluster's: a plain server may turn replica
	 * too; a cluster's says -MOVED when asked again.) */
	if (clock_now() >= n->deadline || (!is_error(e, "UNBLOCKED") && follow_cluster(n) < 0))
		return TAKEN;
	if ((moved || asked) && ++n->redirects > NODE_REDIRECTS) {
		snprintf(n->error, sizeof(n->error),
			 "%s redirected one request %d times (the last: %.200s): a loop",
			 conn_address(n->conn), NODE_REDIRECTS, e);
		n->why = n->error;
		reply_free(a->reply);
		a->reply = NULL;
		a->result = CONN_REFUSED;
		conn_close(n->conn);
		return TAKEN;
	}
	if (asked) {
		enum take t = ask_once(ns, n, a, e, intr_fd);
		/* Where it pointed may itself say "later" (some of the keys have not moved yet)
		 * or "elsewhere". */
		if (t == TAKEN && a->result == CONN_OK && reply_type(a->reply) == REPLY_ERROR)
			return redirected(ns, n, a, intr_fd);
		return t;
	}
	if (moved && cluster_moved(n->cluster, e) < 0)
		return TAKEN;
	/* "Later" is progress, not a loop: it goes on until the deadline. */
	if (!moved)
		n->redirects = 0;
	/* A slot in the middle of moving may be sent back and forth for a moment, while its
	 * new owner is not known everywhere yet: after the first redirect, pause too. */
	if ((!moved || n->redirects > 1) && pause_again(n, intr_fd) < 0)
		return INTERRUPTED;
	return take_again(ns, n, a, intr_fd);
}

/*
 * Node n's server cannot be reached, or closed the connection with the requests on it: they go
 * to the next place that can say where the slot is now (a seed, or a node a redirect named).
 * A cluster that answered this run before has lost the slot's owner (killed, or failed over):
 * it is asked again and again, after a pause that grows, until the deadline, as a failover
 * takes the cluster's node timeout (the protocol's requests can all be asked twice). One that
 * never answered has each seed tried once: more likely a wrong address than an outage.
 */
static enum take
reroute(const struct nodes *ns, struct node *n, struct answer *a, int intr_fd)
{
	size_t seeds = n->url->nhosts ? n->url->nhosts : 1;

	if (!n->seeds_tried)
		snprintf(n->first_failure, sizeof(n->first_failure), "%s", conn_error(n->conn));
	if (!cluster_next_seed(n->cluster) && !n->reached)
		return TAKEN;
	if (clock_now() >= n->deadline || (!n->reached && ++n->seeds_tried >= seeds + 1) ||
	    (!n->reached && a->maybe_landed)) {
		/* What failed first (the owner, most often) is the news; the last seed asked
		 * says only that the cluster could not name another in time. */
		if (strcmp(n->first_failure, conn_error(n->conn)) != 0) {
			char both[sizeof(n->error)];
			snprintf(both, sizeof(both),
				 "%s; asking the cluster where its slot is now: %s",
				 n->first_failure, conn_error(n->conn));
			memcpy(n->error, both, sizeof(both));
			n->why = n->error;
		}
		return TAKEN;
	}
	if (n->reached && n->seeds_tried++ && pause_again(n, intr_fd) < 0)
		return INTERRUPTED;
	n->redirects = 0; /* redirects to a server that is gone are no loop */
	return take_again(ns, n, a, intr_fd);
}

/* Node i's next answer, which has come, or failed, or is overdue. */
static enum take
take(struct nodes *ns, size_t i, struct answer *a, int intr_fd)
{
	struct node *n = &ns->node[i];
	bool opened = conn_opened_at(n->conn) >= n->asked_at;
	struct ask first = n->ask[0];
	enum take t = TAKEN;

	a->node = i;
	a->reply = NULL;
	a->replicas = -1;
	a->maybe_landed = false;
	if (n->early != CONN_OK) {
		a->result = n->early;
		n->early = CONN_OK;
		/* A master that was there this run, gone as the request was to go out. */
		if (n->sentinel && n->reached && a->result != CONN_REFUSED &&
		    clock_now() < n->deadline && (t = take_again(ns, n, a, intr_fd)) != TAKEN)
			return t;
		clear_asks(n);
		return TAKEN;
	}
	a->result = conn_recv(n->conn, &a->reply, n->deadline, -1);
	/* (A server that said "not now" to AUTH or SELECT is there: an outage to ride out.) */
	n->reached = n->reached || a->result == CONN_OK || conn_not_now(n->conn);
	if (a->result == CONN_OK) {
		int64_t now = clock_now(),
			due = time_max(time_max(n->asked_at, conn_opened_at(n->conn)), n->heard_at);
		if (first.copy && first.copy->blocks_until)
			due = time_max(due, first.copy->blocks_until);
		n->silent = n->silent || now - due > NODE_SILENT;
		n->heard_at = now;
	}
	if (a->result == CONN_OK && first.replicated)
		take_replicas(ns, n, n->conn, a, intr_fd);
	if (a->result != CONN_OK)
		a->maybe_landed = n->was_open || opened;
	/* A cluster's server that took the request and sat on it (frozen, a stalled machine) is
	 * as good as gone for the next one, which goes to the next place that can say where the
	 * slot is: a failover may have moved it, and a seed that does not answer is no seed. (If
	 * it has not moved, the owner is named again.) The timeout closed the connection. */
	if (a->result == CONN_TIMEOUT && n->cluster)
		cluster_next_seed(n->cluster);
	if (n->sentinel && stepped_down(a) && n->resends < NODE_RESENDS &&
	    clock_now() < n->deadline)
		t = take_again(ns, n, a, intr_fd);
	else if (n->sentinel && first.changes && a->result == CONN_OK &&
		 reply_type(a->reply) != REPLY_ERROR && n->resends < NODE_RESENDS &&
		 confirm(n, n->deadline, intr_fd))
		/* What the master wrote counts only while the Sentinels name it: for a
		 * second or so after a failover the old one goes on taking writes, which the
		 * new one never sees. They name another: it is asked there. */
		t = take_again(ns, n, a, intr_fd);
	else if (n->cluster && n->silent && first.changes && a->result == CONN_OK &&
		 reply_type(a->reply) != REPLY_ERROR && n->resends < NODE_RESENDS &&
		 clock_now() < n->deadline && cluster_elsewhere(n->cluster)) {
		/* Resumed from a freeze, an owner that lost its slots meanwhile takes writes for
		 * a moment, until it hears of it (what it had queued runs first): what it wrote
		 * counts once another node sends the request back to it. Elsewhere, it is asked
		 * where the owner is now. */
		n->silent = false;
		t = take_again(ns, n, a, intr_fd);
	} else if (a->result == CONN_OK && reply_type(a->reply) == REPLY_ERROR)
		t = redirected(ns, n, a, intr_fd);
	else if (a->result == CONN_FAILED && n->cluster)
		t = reroute(ns, n, a, intr_fd);
	if (t == INTERRUPTED) {
		/* Nothing is handed out: a redirect still held (while pausing, or asking
		 * elsewhere, when the wait was cut short) goes. */
		reply_free(a->reply);
		a->reply = NULL;
	}
	if (t != TAKEN)
		return t;
	if (!conn_is_open(n->conn)) {
		/* Nothing more comes from it. */
		clear_asks(n);
		return TAKEN;
	}
	free(first.copy);
	memmove(&n->ask[0], &n->ask[1], (n->asks - 1) * sizeof(n->ask[0]));
	n->asks--;
	n->resends = n->redirects = n->seeds_tried = 0;
	n->pause = 0;
	n->moving = false;
	return TAKEN;
}

/* The Sentinels name another master than the one node i's requests went to: they go there. */
static enum take
take_moved(struct nodes *ns, size_t i, struct answer *a, int intr_fd)
{
	struct node *n = &ns->node[i];
	enum conn_result res;

	n->resends++;
	if ((res = send_again(ns, n, intr_fd)) == CONN_OK && !waits(n))
		return SENT_AGAIN;
	if (res == CONN_INTERRUPTED)
		return INTERRUPTED;
	a->node = i;
	a->reply = NULL;
	a->replicas = -1;
	a->maybe_landed = true;
	a->result = res;
	if (res == CONN_OK)
		wait_moved(n, a);
	clear_asks(n);
	return TAKEN;
}

/* Node i's requests, waiting for their master to be found again (see later): sent again once it
 * is time, or handed out as failed at their deadline. */
static enum take
retry(struct nodes *ns, size_t i, struct answer *a, int intr_fd)
{
	struct node *n = &ns->node[i];
	int64_t now = clock_now();
	enum conn_result res;
	enum take t;

	if (now < n->retry_at)
		return SENT_AGAIN;
	n->retry_at = 0;
	a->node = i;
	a->reply = NULL;
	a->replicas = -1;
	a->maybe_landed = true;
	if (now >= n->deadline) {
		a->result = CONN_TIMEOUT;
		clear_asks(n);
		return TAKEN;
	}
	if ((res = send_again(ns, n, intr_fd)) == CONN_OK && !waits(n))
		return SENT_AGAIN;
	if (res == CONN_INTERRUPTED)
		return INTERRUPTED;
	if (res == CONN_OK) {
		wait_moved(n, a);
		t = TAKEN;
	} else {
		t = later(n, a, res);
	}
	if (t == TAKEN)
		clear_asks(n);
	return t;
}

enum conn_result
nodes_next(struct nodes *ns, int64_t deadline, int intr_fd, struct answer *a)
{
	for (;;) {
		struct conn *cs[NODES_MAX];
		size_t at[NODES_MAX], k = 0, w, resting = 0;
		int64_t until = deadline, now;
		enum conn_result res;
		enum take t;

		for (size_t i = 0; i < ns->n; i++) {
			struct node *n = &ns->node[i];
			if (!n->asks)
				continue;
			if (n->early != CONN_OK) {
				if ((t = take(ns, i, a, intr_fd)) == TAKEN)
					return CONN_OK;
				if (t == INTERRUPTED)
					return CONN_INTERRUPTED;
			}
			if (n->retry_at) {
				if ((t = retry(ns, i, a, intr_fd)) == TAKEN)
					return CONN_OK;
				if (t == INTERRUPTED)
					return CONN_INTERRUPTED;
				if (n->retry_at) { /* not yet */
					until = time_min(until, n->retry_at);
					resting++;
					continue;
				}
			}
			/* A request that waits long (a blocked BLPOP) follows the master too. */
			if (n->sentinel && clock_now() - n->confirmed_at >= NODE_CONFIRM_AFTER &&
			    confirm(n, n->deadline, intr_fd)) {
				if ((t = take_moved(ns, i, a, intr_fd)) == TAKEN)
					return CONN_OK;
				if (t == INTERRUPTED)
					return CONN_INTERRUPTED;
			}
			cs[k] = n->conn;
			at[k++] = i;
			until = time_min(until, n->deadline);
			if (n->sentinel)
				until = time_min(until, n->confirmed_at + NODE_CONFIRM_AFTER);
		}
		if (!k && !resting)
			return CONN_FAILED;
		if (!k) {
			/* Every request waits for its master to be found again. */
			if (clock_sleep_until(until, intr_fd) < 0)
				return CONN_INTERRUPTED;
			if (clock_now() >= deadline)
				return CONN_TIMEOUT;
			continue;
		}
		res = conn_wait_any(cs, k, until, intr_fd, &w);
		if (res == CONN_INTERRUPTED)
			return res;
		if (res == CONN_OK) {
			if ((t = take(ns, at[w], a, intr_fd)) == TAKEN)
				return CONN_OK;
			if (t == INTERRUPTED)
				return CONN_INTERRUPTED;
			continue;
		}
		now = clock_now();
		for (size_t j = 0; j < k; j++) {
			if (now >= ns->node[at[j]].deadline) {
				if ((t = take(ns, at[j], a, intr_fd)) == TAKEN)
					return CONN_OK;
				if (t == INTERRUPTED)
					return CONN_INTERRUPTED;
			}
		}
		if (now >= deadline)
			return CONN_TIMEOUT;
	}
}

void
nodes_due(struct nodes *ns, size_t i, int64_t deadline)
{
	if (ns->node[i].asks)
		ns->node[i].deadline = deadline;
}

bool
nodes_plain(const struct nodes *ns, size_t i)
{
	return !ns->node[i].sentinel && !ns->node[i].cluster;
}

void
nodes_nudge(struct nodes *ns, size_t i)
{
	if (ns->node[i].asks && conn_is_open(ns->node[i].conn))
		conn_nudge(ns->node[i].conn);
}

void
nodes_forget(struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++) {
		struct node *n = &ns->node[i];
		if (!n->asks)
			continue;
		/* Requests still queued on a connection that is opening go out the next time it is
		 * driven (the release, at the latest), and clean up after us there. */
		conn_forget(n->conn);
		clear_asks(n);
	}
}

void
nodes_cancel(struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++) {
		if (ns->node[i].asks) {
			conn_close(ns->node[i].conn);
			clear_asks(&ns->node[i]);
		}
	}
}

int64_t
nodes_queued_until(const struct nodes *ns)
{
	int64_t until = 0;

	for (size_t i = 0; i < ns->n; i++)
		if (!ns->node[i].asks && conn_due(ns->node[i].conn))
			until = time_max(until, ns->node[i].deadline);
	return until;
}

void
nodes_let_go(struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++) {
		struct node *n = &ns->node[i];
		if (!n->asks)
			continue;
		bool waits = false; /* a WAIT, which may block for its whole timeout */
		for (unsigned k = 0; k < n->asks && k < NODES_ASKS_MAX; k++)
			waits = waits || n->ask[k].replicated;
		if (conn_is_ready(n->conn) && !waits)
			conn_forget(n->conn);
		else
			conn_close(n->conn); /* nothing went out, or nothing may queue behind it */
		clear_asks(n);
	}
}

void
nodes_hurry(struct nodes *ns, bool on)
{
	ns->hurried = on;
}

void
nodes_reset(struct nodes *ns, size_t i)
{
	conn_reset(ns->node[i].conn);
	clear_asks(&ns->node[i]);
}

void
nodes_hold(struct nodes *ns, size_t i, int64_t until)
{
	ns->node[i].held_until = until;
}

void
nodes_drop(struct nodes *ns, size_t i)
{
	ns->node[i].held_until = 0;
}

bool
nodes_holds(const struct nodes *ns, size_t i)
{
	return ns->node[i].held_until > 0;
}

bool
nodes_hold_all(const struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		if (!ns->node[i].held_until)
			return false;
	return true;
}

void
nodes_open(struct nodes *ns, int64_t deadline, int intr_fd)
{
	/* (A Sentinel's master is found by asking the Sentinels, which takes round trips: it is
	 * left to the first request.) */
	for (size_t i = 0; i < ns->n; i++)
		if (!ns->node[i].asks && !ns->node[i].sentinel && !conn_is_open(ns->node[i].conn))
			reopen(&ns->node[i], deadline, intr_fd);
}

enum conn_result
nodes_watch(struct nodes *ns, int64_t until, int intr_fd, size_t *i)
{
	struct conn *cs[NODES_MAX];
	size_t at[NODES_MAX], k = 0, w;
	enum conn_result res;

	for (size_t j = 0; j < ns->n; j++) {
		if (!ns->node[j].asks && conn_is_open(ns->node[j].conn)) {
			cs[k] = ns->node[j].conn;
			at[k++] = j;
		}
	}
	if (!k)
		return clock_sleep_until(until, intr_fd) < 0 ? CONN_INTERRUPTED : CONN_TIMEOUT;
	res = conn_wait_any(cs, k, until, intr_fd, &w);
	if (res == CONN_OK) {
		/* Nothing was asked: anything but the end of it is out of place. */
		conn_close(cs[w]);
		*i = at[w];
	}
	return res;
}

bool
nodes_refused(const struct nodes *ns, size_t i)
{
	return !ns->node[i].why && conn_refused(ns->node[i].conn);
}

int
nodes_watch_fd(const struct nodes *ns)
{
	for (size_t j = 0; j < ns->n; j++)
		if (!ns->node[j].asks && conn_fd(ns->node[j].conn) >= 0)
			return conn_fd(ns->node[j].conn);
	return -1;
}

static int
later_first(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y) - (x > y);
}

/* The k-th latest of n times (k counts from 1); 0 when there are fewer. */
static int64_t
kth_latest(const int64_t *t, size_t n, size_t k)
{
	int64_t sorted[NODES_MAX];

	if (k == 0 || n < k || n > NODES_MAX)
		return 0;
	memcpy(sorted, t, n * sizeof(*t));
	qsort(sorted, n, sizeof(*sorted), later_first);
	return sorted[k - 1];
}

int64_t
nodes_lease_end(const struct nodes *ns)
{
	int64_t until[NODES_MAX];
	size_t n = 0;

	for (size_t i = 0; i < ns->n; i++)
		if (ns->node[i].held_until > 0)
			until[n++] = ns->node[i].held_until;
	return kth_latest(until, n, nodes_quorum(ns));
}

enum verdict
nodes_verdict(const struct nodes *ns, size_t yes, size_t no)
{
	if (yes >= nodes_quorum(ns))
		return VERDICT_YES;
	if (no > ns->n - nodes_quorum(ns))
		return VERDICT_NO;
	return VERDICT_OPEN;
}

int64_t
nodes_quorum_until(const struct nodes *ns, const int64_t *until, size_t n)
{
	return kth_latest(until, n, nodes_quorum(ns));
}

int64_t
nodes_free_at(const struct nodes *ns, const int64_t *until, size_t n, size_t usable)
{
	/* A quorum is free once at most usable - quorum of the nodes are held: all but that
	 * many of the n must have run out. */
	size_t k = (usable ? usable : ns->n) - nodes_quorum(ns) + 1;

	return n < k ? 0 : kth_latest(until, n, k);
}
