/*
 * The master that Sentinels name (DESIGN §3b), found as Redis specifies it for clients: the
 * Sentinels are asked in turn, each for a short while, starting with the one that answered
 * last; the server they name is connected to and asked for its ROLE, and one that is not a
 * master (a failover under way) sends us back to the Sentinels after a pause.
 *
 * Like a connection, it belongs to one thread.
 */
#ifndef REDLOCK_SENTINEL_H
#define REDLOCK_SENTINEL_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "url.h"

/* How long one Sentinel may take to answer before the next is asked. */
#define SENTINEL_ASK_TIMEOUT (500 * NS_PER_MS)
/* How long to let a failover go on before asking the Sentinels again. */
#define SENTINEL_PAUSE (100 * NS_PER_MS)

struct sentinel;

/* For url, a Sentinel URL, which must outlive it. NULL when out of memory. */
struct sentinel *sentinel_new(const struct redis_url *url);
void sentinel_free(struct sentinel *s);

/* The master's URL: the Sentinel URL's credentials and db, at the address found last (until
 * then it names the master by its name). A connection to it opens where sentinel_connect
 * says. */
const struct redis_url *sentinel_master(const struct sentinel *s);

/*
 * Asks the Sentinels where the master is and opens c, a connection to sentinel_master(s),
 * there, confirmed as the master. CONN_OK with c open; otherwise c is closed and
 * sentinel_error says which it was: no Sentinel could be reached (CONN_FAILED), none knows the
 * master (CONN_REFUSED), the master they name cannot be reached (what conn_open said), or none
 * was a master until deadline (CONN_TIMEOUT). CONN_INTERRUPTED when intr_fd became readable.
 */
enum conn_result sentinel_connect(struct sentinel *s, struct conn *c, int64_t deadline,
				  int intr_fd);
const char *sentinel_error(const struct sentinel *s);
/* Whether the last sentinel_connect failed for want of a descriptor (or memory) of ours, as
 * conn_failed_here says of a connection: no Sentinel could be asked, or the master they named
 * could not be reached. */
bool sentinel_failed_here(const struct sentinel *s);

/*
 * Asks the Sentinels whether the master c is open to is still the one they name (two servers
 * may both say they are the master for a while after a failover, and only the Sentinels' word
 * counts): when they name another, c is closed, so that the next sentinel_connect goes there,
 * and it returns true. Sentinels that cannot be asked by deadline leave c as it is.
 */
bool sentinel_confirm(struct sentinel *s, struct conn *c, int64_t deadline, int intr_fd);

/* Whether the Sentinels named a master this run. */
bool sentinel_answered(const struct sentinel *s);

/* "the master of 'mymaster' moved from 10.0.0.1:6379 to 10.0.0.2:6379 (a failover)", the last
 * time the master found changed (back to the first, too); NULL while it never did. */
const char *sentinel_failover(const struct sentinel *s);
/* How often the master found changed this run: 0, or the failovers seen. */
unsigned sentinel_moves(const struct sentinel *s);

#endif
