/* locks.h - SQLite's lock calls on a served database, made fewer (locks.c). */
#ifndef ALEX_PRELOAD_LOCKS_H
#define ALEX_PRELOAD_LOCKS_H

#include <fcntl.h>

#include "state.h"

/* What the model says of each region (struct alex_held) */
enum { ALEX_HELD_NONE, ALEX_HELD_READ, ALEX_HELD_WRITE };

/*
 * Before SQLite's lock call (cmd, l: a lock set or asked about) on o, a
 * served database's descriptor: 1 when it was answered with fewer system
 * calls (result in *r, errno set as the kernel would), 2 when it was made
 * as asked and followed here (span.c), 0 when the caller makes it (then
 * alex_locks_made after).  The process's lock calls on the file come one
 * at a time (SQLite holds its inode mutex around them).
 */
int alex_locks_call(struct ofd *o, int fd, int cmd, struct flock *l,
		    int (*real)(int, int, ...), int *r);
/* The model after the successful lock call l on the file. */
void alex_held_apply(struct alex_held *h, const struct flock *l);
/* ALEX's own lock call on fd, traced as ALEX's. */
int alex_locks_own(int fd, int cmd, struct flock *l, int (*real)(int, int, ...));
/* After the caller made the lock call (result r). */
void alex_locks_made(struct ofd *o, int cmd, const struct flock *l, int r);
/* May the process hold EXCLUSIVE (a write lock on the SHARED range) on
 * db's file?  In doubt (a lock the model could not follow), yes. */
int alex_locks_may_hold_exclusive(const struct pdb *db);
/* A descriptor of db's file was closed: the process holds no POSIX lock
 * on it (a span's locks stay: span.c). */
void alex_locks_dropped(struct pdb *db);
/* The same, and no catch-up made under those locks counts: a close the
 * hooks saw as it happened. */
void alex_locks_gone(struct pdb *db);
/* A close learnt of late (its number handed out again): the locks then
 * dropped may have been taken again since; the model is in doubt until
 * SQLite's next release of them all. */
void alex_locks_gone_late(struct pdb *db);
/* Does the model say the process may hold a lock on db's file? */
int alex_locks_any(const struct pdb *db);
/* The model is no longer known to follow the kernel's locks (SQLite's
 * calls went past it): in doubt until SQLite's next release of them all. */
void alex_locks_unknown(struct pdb *db);

#endif
