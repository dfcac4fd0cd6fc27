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

#endif
