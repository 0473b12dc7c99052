/*
 * Where a key's hash slot lives in a Redis Cluster, as this run has learned it (DESIGN §3b):
 * requests go to the URL's server (a cluster URL's first seed) until a -MOVED names the slot's
 * owner, which is then remembered for the rest of the run; an owner that cannot be reached
 * sends them back to the seeds, in turn. A node gets one only once a server redirected it, so
 * that a single server never pays for it.
 *
 * Like a connection, it belongs to one thread.
 */
#ifndef REDLOCK_CLUSTER_H
#define REDLOCK_CLUSTER_H

#include <stdbool.h>

#include "url.h"

struct cluster;

/* For url (a server URL, or a cluster URL's seeds), which must outlive it. NULL when out of
 * memory. */
struct cluster *cluster_new(const struct redis_url *url);
void cluster_free(struct cluster *c);

/* The server to send to now: the slot's owner, or a seed. Its address changes in place. */
const struct redis_url *cluster_target(const struct cluster *c);

/*
 * A -MOVED answer, "MOVED SLOT host:port" (or ":port": the same host as now): the slot's owner is
 * there from now on. -1 when it cannot be read, or out of memory.
 */
int cluster_moved(struct cluster *c, const char *where);
/* An -ASK answer, "ASK SLOT host:port": where to ask once (with ASKING first), without
 * remembering it; valid until the next call. NULL when it cannot be read. */
const struct redis_url *cluster_asked(struct cluster *c, const char *where);

/* The target cannot be reached: the next place is tried, the seed that led to it first, then
 * the seeds and the nodes that redirects named, in turn. False when there is only one place to
 * try. */
bool cluster_next_seed(struct cluster *c);

/* The target is to be asked whether it still owns the slot: another place is aimed at, a seed or
 * a node that redirects named, which sends there whoever owns it now (-MOVED). False when every
 * place is the target itself. */
bool cluster_elsewhere(struct cluster *c);

#endif
