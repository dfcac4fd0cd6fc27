/*
 * locktab.h - SQLite's lock bytes as one word of shared memory (locktab.c).
 *
 * SQLite locks three regions of a database file: the PENDING byte, the
 * RESERVED byte and the SHARED range (EXCLUSIVE is a write lock on the
 * whole range).  Among processes that all run ALEX, the same locks can be
 * granted or refused with one compare-and-swap on a word they share instead
 * of a system call each (issue 14, docs/LOCKS.md).  Each process holds a
 * slot, 0 to ALEX_LT_SLOTS - 1, and the word says which slots hold what:
 *
 *   bits  0..45  one bit per slot: a read lock on the SHARED range
 *   bits 46..51  the RESERVED byte's writer, slot + 1 (0: nobody)
 *   bits 52..57  the PENDING byte's writer, slot + 1
 *   bits 58..63  the SHARED range's writer (EXCLUSIVE), slot + 1
 *
 * A set is all or nothing, as one F_SETLK over the regions is.  Two
 * departures from POSIX, both on the side of refusing more: a read lock on
 * PENDING is not kept (SQLite holds one only inside its SHARED request; a
 * caller that wants the question and SHARED to be one step sets both
 * regions in one call), and a read lock on RESERVED, which SQLite never
 * takes, is kept as a write lock.
 *
 * The word must be 8-byte aligned (one atomic access).  me is a slot the
 * caller holds, below ALEX_LT_SLOTS; a process that takes a slot clears it
 * first (alex_lt_clear), for what a dead holder left.
 *
 * The word is a hint that processes share, not a record: a process that
 * dies leaves its bits behind, and a damaged word can hold anything.  The
 * caller says which slots are alive (each holds a real lock for as long as
 * it lives; the kernel drops it at death); an owner field that names no
 * slot is cleared at once.
 */
#ifndef ALEX_LOCKTAB_H
#define ALEX_LOCKTAB_H

#include <stdint.h>

#define ALEX_LT_SLOTS 46

/* the regions, as a mask */
enum { ALEX_LT_PENDING = 1, ALEX_LT_RESERVED = 2, ALEX_LT_SHARED = 4, ALEX_LT_ALL = 7 };
/* lock types */
enum { ALEX_LT_NONE = 0, ALEX_LT_READ = 1, ALEX_LT_WRITE = 2 };

struct alex_lt_conflict {
	int slot; /* who holds it: a slot, or >= ALEX_LT_SLOTS for a damaged field */
	int type; /* what it holds there: ALEX_LT_READ or ALEX_LT_WRITE */
};

/*
 * Would slot me's lock of type on regions conflict with another slot's?
 * 0, or 1 with *c the first holder in the way (F_GETLK's answer).
 */
int alex_lt_test(const uint64_t *word, int me, unsigned regions, int type,
		 struct alex_lt_conflict *c);

/*
 * Sets slot me's lock on regions to type (ALEX_LT_NONE releases), all or
 * nothing: 0, or 1 with *c the first holder in the way and nothing changed.
 */
int alex_lt_set(uint64_t *word, int me, unsigned regions, int type, struct alex_lt_conflict *c);

/* Drops every lock of slot (its process died, or it leaves the table). */
void alex_lt_clear(uint64_t *word, int slot);

/*
 * Is slot alive?  If it is not, the callback must have called
 * alex_lt_clear for it while it held the slot's liveness lock (so that a
 * process taking the slot meanwhile cannot lose its first lock to the
 * clearing), and returns 0; 1 when it is alive or cannot tell.
 */
typedef int (*alex_lt_alive_fn)(void *arg, int slot);

/*
 * alex_lt_set, clearing dead holders in the way: 0, or EAGAIN (the lock is
 * held: SQLITE_BUSY) with *c the live holder in the way; EINVAL for a me
 * that is no slot.  A set or test by a me that is no slot is refused.
 */
int alex_lt_lock(uint64_t *word, int me, unsigned regions, int type, alex_lt_alive_fn alive,
		 void *arg, struct alex_lt_conflict *c);

/* What slot me holds on region (one of the three): ALEX_LT_NONE, _READ or
 * _WRITE (a read lock on PENDING is never kept: NONE). */
int alex_lt_held(uint64_t word, int me, unsigned region);

#endif
