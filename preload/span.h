/* span.h - SQLite's lock calls of a transaction under one lock (span.c). */
#ifndef ALEX_PRELOAD_SPAN_H
#define ALEX_PRELOAD_SPAN_H

#include <fcntl.h>

#include "state.h"

/*
 * SQLite's lock call (cmd, l) on db's file through fd, in a span or at its
 * first call (first: a read lock on PENDING): -1 when the span lock has
 * nothing to do with it (the caller goes on as without it), 0 when the
 * caller makes the call as asked (then alex_locks_made), 1 when it was
 * answered here (*r and errno set, the model followed): from the model,
 * or by a call of ALEX's own on the span's description.
 */
int alex_span_call(struct pdb *db, int fd, int cmd, struct flock *l, int first,
		   int (*real)(int, int, ...), int *r);
/* The span lock given up: the kernel's locks set to what SQLite was told,
 * as the process's own POSIX locks.  Before SQLite's calls go past the
 * model (WAL mode), which may be never: SQLite then holds SHARED for as
 * long as it has the file open.  1 when the span stays, because SQLite
 * holds a write lock, which cannot pass from the span's description to
 * the process without a moment in which nobody holds it: alex_span_call
 * makes SQLite's calls on the description until it lets go. */
int alex_span_leave(struct pdb *db);
/* F_GETLK for l while a span stands, asked through its own description:
 * the answer leaves out the span's locks, and only them -- after the lease
 * (SPAN_REAL) others may hold a read lock beside the span's, which a POSIX
 * F_GETLK would hide behind it (review).  1 answered, 0 no span (ask the
 * kernel as the process). */
int alex_span_getlk(struct pdb *db, struct flock *l);
/* Does a span stand?  Its locks are on a description of its own, which no
 * close of the program's descriptors lets go: the model stays true. */
int alex_span_stands(struct pdb *db);
/* Before the last close: the span's locks let go (the close's own lock
 * calls would meet them). */
void alex_span_close(struct pdb *db);
/* The pdb goes: the span's description too. */
void alex_span_free(struct pdb *db);
/* The lease, at each of its thread's ticks: a span held under the write
 * lock since the last tick gets the locks SQLite was told instead, so that
 * a long transaction does not keep others out.  1 while a span is young. */
int alex_span_lease(struct pdb *db);
/* In a fork()ed child: nobody changes the span's state (the parent's
 * threads are not here), and no span is held. */
void alex_span_forked(struct pdb *db);
/* Fork handler (init.c): the child has no lease thread. */
void alex_span_atfork_child(void);

#endif
