/*
 * The waiting line (DESIGN §3, §5): what a run does between lock_acquire's attempts while
 * others hold the lock. The acquire script puts it in line where it finds KEY held; here it
 * blocks on the wake lists a release pushes to (on one plain server with its next attempt
 * queued behind, see line_wait), and leaves the line where it stops waiting. Private to
 * acquire.c, which makes the attempts, and to lock.c, whose release asks after the waiter it
 * woke (line_follow_up); what the lock's rooms share is in acquisition.h.
 */
#ifndef REDLOCK_LINE_H
#define REDLOCK_LINE_H

#include "lock.h"
#include "nodes.h"

struct acquisition;
struct round;

/*
 * Others hold the lock: says so (a live line is redrawn every second, a log names each holder
 * once) and blocks on the wake lists of the nodes that hold it (BLPOP), until one release wakes
 * us, until a little after enough of the holders' leases would have run out for a quorum to be
 * free (wait_margin), or until the wait ends, whichever comes first: a lost wake-up or a
 * crashed holder costs the lease, and at most the server's timer resolution more (a blocked
 * client is timed out at the server's next tick, up to 1/hz late). A lock that never expires
 * was not taken by redlock-run and wakes nobody: it is looked at again twice a second.
 *
 * The servers time the BLPOPs out, so that a waiter keeps its connections while a holder keeps
 * renewing: it then looks again once per lease, on the same connection, and blocks again. The
 * end of the wait is kept on our clock, to the millisecond: there the connections still blocked
 * are closed (as are those of the other nodes once one has woken us), as they are when a server
 * does not answer its BLPOP's timeout in time. A wake-up one may have been handing us meanwhile
 * is not lost to the next waiter: the attempt that follows finds the lock free and takes it.
 * LOCK_ACQUIRED means "try again"; otherwise, how to end.
 */
enum lock_result line_wait(struct lock *l, struct nodes *ns, struct acquisition *q,
			   const struct round *rd, int intr_fd);

/*
 * We stop waiting (a signal, or the wait ran out while an attempt put us in line): our place
 * in line goes, where we took one, and shared waiters behind an exclusive waiter that goes
 * are woken (script_leave). A bounded wait: a server that does not answer keeps the place
 * only until the lease it was waiting out ends.
 */
void line_leave(struct lock *l, struct nodes *ns, const struct round *rd);

/*
 * Our release woke the first waiter of an ordered line (one node): one round trip later, that
 * waiter has taken its turn, unless it was killed outright (or was not blocked as it came);
 * then the next few are woken (script_follow_up), and the first of them that lives passes it a
 * handoff later, rather than sleeping until the lease it waited out would have ended. Best
 * effort: it waits for the answer a second at most (the exit waits for it, a round trip).
 */
void line_follow_up(struct lock *l, struct nodes *ns, int intr_fd);

/* Sends our leave from the line (script_leave) wherever the round found KEY held, and does not
 * wait for the answers: the caller lets them go (see nodes_let_go). */
void line_send_leaves(struct lock *l, struct nodes *ns, const struct round *rd);

#endif
