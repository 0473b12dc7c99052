/*
 * The names of a lock's helper keys, after the lock's own (see lock_aux_key, which puts a tag
 * in front when the name has none). Like every key in Redis, they are an interface: a fleet
 * upgrades one host at a time. The scripts make two more of them: the queue's with "-shared"
 * after it, and a waiter's wake-up list, the wake key's with ":" and the waiter's value.
 */
#ifndef REDLOCK_NAMES_H
#define REDLOCK_NAMES_H

#define NAME_FENCE ":fence"             /* the fence counter */
#define NAME_WAKE ":wake"               /* what a release pushes to wake a waiter */
#define NAME_WAITING ":waiting"         /* the waiters' places */
#define NAME_WAKE_SHARED ":wake-shared" /* the same, for shared waiters */
#define NAME_QUEUE ":queue"             /* the line, in arrival order */
#define NAME_BROKEN ":broken"           /* the fates: who broke, superseded, cancelled whom */

#endif
