/*
 * sqlite_locks.h - SQLite's lock bytes in a database file (os_unix.c),
 * spelled once for the interposer and the tools.  SQLite locks the byte
 * range [PENDING, PENDING + 2 + SHARED_SIZE) of the database file: PENDING,
 * then RESERVED, then the SHARED range; EXCLUSIVE is a write lock on the
 * whole SHARED range.
 */
#ifndef ALEX_SQLITE_LOCKS_H
#define ALEX_SQLITE_LOCKS_H

#define SQLITE_PENDING_BYTE 0x40000000LL
#define SQLITE_RESERVED_BYTE (SQLITE_PENDING_BYTE + 1)
#define SQLITE_SHARED_FIRST (SQLITE_PENDING_BYTE + 2)
#define SQLITE_SHARED_SIZE 510LL
/* every lock byte: what a process needs to know it is alone */
#define SQLITE_LOCK_BYTES (2 + SQLITE_SHARED_SIZE)

/*
 * The guard: the last SHARED byte, read-locked by every ALEX engine for as
 * long as it has the database open (an open-file-description lock on its
 * own descriptor).  SQLite's EXCLUSIVE covers the byte, so no program
 * without ALEX can write the database meanwhile; an ALEX process's own
 * EXCLUSIVE is taken without it (hooks_fcntl.c), and so are the locks of
 * the last close's checkpoint and of the alex tool.  Readers are not
 * kept out: a read lock on the byte is a reader's SHARED.
 */
#define ALEX_GUARD_BYTE (SQLITE_PENDING_BYTE + SQLITE_LOCK_BYTES - 1)
/* SQLite's EXCLUSIVE as an ALEX process takes it: every lock byte but the
 * guard, which is last */
#define ALEX_LOCK_BYTES_UNGUARDED (SQLITE_LOCK_BYTES - 1)

#endif
