#include "nodes.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"

struct node {
	struct conn *conn;
	unsigned asks;      /* requests whose answers are still to be handed out */
	int64_t asked_at;   /* when the first of them was sent */
	int64_t deadline;   /* when they are overdue */
	bool was_open;      /* its connection was open when they were sent */
	int64_t held_until; /* our lease there ends then; 0: there is none */
};

struct nodes {
	size_t n;
	struct node node[];
};

static struct nodes *
alloc_nodes(size_t n)
{
	struct nodes *ns;

	if (n == 0 || n > NODES_MAX || !(ns = calloc(1, sizeof(*ns) + n * sizeof(ns->node[0]))))
		return NULL;
	ns->n = n;
	return ns;
}

struct nodes *
nodes_new(const struct redis_url *urls, size_t n)
{
	struct nodes *ns = alloc_nodes(n);

	for (size_t i = 0; ns && i < n; i++) {
		if (!(ns->node[i].conn = conn_new(&urls[i]))) {
			nodes_free(ns);
			return NULL;
		}
	}
	return ns;
}

struct nodes *
nodes_new_like(const struct nodes *like)
{
	struct nodes *ns = alloc_nodes(like->n);

	for (size_t i = 0; ns && i < ns->n; i++) {
		ns->node[i].held_until = like->node[i].held_until;
		if (!(ns->node[i].conn = conn_new_like(like->node[i].conn))) {
			nodes_free(ns);
			return NULL;
		}
	}
	return ns;
}

void
nodes_free(struct nodes *ns)
{
	if (!ns)
		return;
	for (size_t i = 0; i < ns->n; i++)
		conn_free(ns->node[i].conn);
	free(ns);
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
	return conn_error(ns->node[i].conn);
}

bool
nodes_tls_resumed(const struct nodes *ns, size_t i)
{
	return conn_tls_resumed(ns->node[i].conn);
}

void
nodes_send(struct nodes *ns, size_t i, int argc, const char **argv, const size_t *lens,
	   int64_t deadline)
{
	struct node *n = &ns->node[i];
	int64_t now = clock_now();

	/* An answer that was given up on and is overdue by now will not come: the server is
	 * stuck, or gone. Start afresh rather than queue behind it. */
	if (!n->asks && conn_due(n->conn) && now >= n->deadline)
		conn_close(n->conn);
	/* A connection the server hung up on while it sat idle is not sent on. */
	if (!conn_check(n->conn) && conn_start(n->conn, deadline) != CONN_OK) {
		n->asks = 1; /* nodes_next reports the failure */
		n->asked_at = now;
		n->deadline = deadline;
		n->was_open = false;
		return;
	}
	if (!n->asks) {
		n->asked_at = now;
		n->deadline = deadline;
		n->was_open = conn_is_ready(n->conn);
	}
	n->deadline = time_max(n->deadline, deadline);
	n->asks++;
	conn_send(n->conn, argc, argv, lens);
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

/* Hands out node i's next answer, which has come, or failed, or is overdue. */
static void
take(struct nodes *ns, size_t i, struct answer *a)
{
	struct node *n = &ns->node[i];
	bool opened = conn_opened_at(n->conn) >= n->asked_at;

	a->node = i;
	a->reply = NULL;
	a->result = conn_recv(n->conn, &a->reply, n->deadline, -1);
	n->asks--;
	if (a->result != CONN_OK) {
		/* The connection is closed: nothing more comes from it. */
		a->maybe_landed = n->was_open || opened;
		n->asks = 0;
	}
}

enum conn_result
nodes_next(struct nodes *ns, int64_t deadline, int intr_fd, struct answer *a)
{
	for (;;) {
		struct conn *cs[NODES_MAX];
		size_t at[NODES_MAX], k = 0, w;
		int64_t until = deadline, now;
		enum conn_result res;

		for (size_t i = 0; i < ns->n; i++) {
			if (ns->node[i].asks) {
				cs[k] = ns->node[i].conn;
				at[k++] = i;
				until = time_min(until, ns->node[i].deadline);
			}
		}
		if (!k)
			return CONN_FAILED;
		res = conn_wait_any(cs, k, until, intr_fd, &w);
		if (res == CONN_INTERRUPTED)
			return res;
		if (res == CONN_OK) {
			take(ns, at[w], a);
			return CONN_OK;
		}
		now = clock_now();
		for (size_t j = 0; j < k; j++) {
			if (now >= ns->node[at[j]].deadline) {
				take(ns, at[j], a);
				return CONN_OK;
			}
		}
		if (now >= deadline)
			return CONN_TIMEOUT;
	}
}

void
nodes_forget(struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++) {
		if (ns->node[i].asks) {
			conn_forget(ns->node[i].conn);
			ns->node[i].asks = 0;
		}
	}
}

void
nodes_cancel(struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++) {
		if (ns->node[i].asks) {
			conn_close(ns->node[i].conn);
			ns->node[i].asks = 0;
		}
	}
}

void
nodes_reset(struct nodes *ns, size_t i)
{
	conn_reset(ns->node[i].conn);
	ns->node[i].asks = 0;
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
nodes_free_at(const struct nodes *ns, const int64_t *until, size_t n)
{
	/* A quorum is free once at most n - quorum of the nodes are held: all but that many
	 * of the n must have run out. */
	size_t k = ns->n - nodes_quorum(ns) + 1;

	return n < k ? 0 : kth_latest(until, n, k);
}
