/*
 * trace_format.h - the trace file that ALEX_MODE=trace and ALEX_TRACE=FILE
 * write (preload/trace.c) and `alex trace` reads (trace_read.c).
 *
 * A trace file is a sequence of chunks, appended with O_APPEND by every
 * process of a traced program: one write(2) per chunk, so chunks of
 * different processes never interleave.  A chunk is
 *
 *   header (32 bytes, little-endian)
 *     0  u32 magic "ATRC"     4  u16 version (1)    6  u8 header size (32)
 *     7  u8 flags: ALEX_TRACE_LZ4 when the payload is one LZ4 block
 *            (what follows is then its decompressed form, at most
 *            ALEX_TRACE_RAW_MAX bytes)
 *     8  u32 pid             12  u32 tid
 *    16  u32 payload bytes as stored    20  u32 events in it
 *    24  u32 events dropped before this chunk (a signal handler's call
 *            while the thread was recording, or a full buffer)
 *    28  u32 CRC-32C of the header (this field as 0) and the stored payload
 *   payload: events of 48 bytes, in the order the thread finished them;
 *     an event with ALEX_TF_NAME carries a name after it (len bytes, then
 *     zeros to a multiple of 8).
 *
 * An event (48 bytes):
 *     0  u64 start, CLOCK_MONOTONIC ns   8  u64 offset (lock: l_start)
 *    16  u64 length (lock: l_len; name: its bytes)
 *    24  i64 result: the call's return value, or -errno when it failed
 *    32  u32 duration ns (saturates)    36  i32 fd (-1: a call by name)
 *    40  u32 page: the database page a write or read holds, the page a
 *            WAL frame header names, the big-endian word of a 4-byte
 *            journal write (a journal record's page number); 0: none
 *    44  u8 kind (enum alex_tkind)      45  u8 role (enum alex_trole)
 *    46  u8 flags (ALEX_TF_*)          47  u8 lock: (l_type << 6) | lock name
 */
#ifndef ALEX_TRACE_FORMAT_H
#define ALEX_TRACE_FORMAT_H

#include <stdint.h>

#define ALEX_TRACE_FILE_MAGIC 0x43525441u /* "ATRC" */
#define ALEX_TRACE_VERSION 1
#define ALEX_TRACE_HDR 32
#define ALEX_TRACE_EVENT 48
/* the largest chunk a writer makes; a reader refuses a larger one */
#define ALEX_TRACE_CHUNK_MAX (1u << 20)
/* the largest payload, decompressed */
#define ALEX_TRACE_RAW_MAX (1u << 20)
#define ALEX_TRACE_LZ4 1

/* The call, named as the kernel (and strace) names the system call it makes. */
enum alex_tkind {
	ALEX_TK_OPENAT = 1, ALEX_TK_CLOSE, ALEX_TK_READ, ALEX_TK_WRITE, ALEX_TK_PREAD64,
	ALEX_TK_PWRITE64, ALEX_TK_READV, ALEX_TK_WRITEV, ALEX_TK_PREADV, ALEX_TK_PWRITEV,
	ALEX_TK_LSEEK, ALEX_TK_FSYNC, ALEX_TK_FDATASYNC, ALEX_TK_FTRUNCATE, ALEX_TK_FALLOCATE,
	ALEX_TK_FCNTL, ALEX_TK_FSTAT, ALEX_TK_STAT, ALEX_TK_ACCESS, ALEX_TK_UNLINK,
	ALEX_TK_RENAME, ALEX_TK_MMAP, ALEX_TK_FSTATFS, ALEX_TK_FCHMOD, ALEX_TK_FCHOWN,
	ALEX_TK_UNLINKAT, ALEX_TK_FACCESSAT,
	ALEX_TK_DUP, /* dup, dup2, dup3 or fcntl F_DUPFD*: result is the copy */
	/* not a call: the process started (name: its program; offset: the
	 * CLOCK_REALTIME ns at the same instant as start; result: parent pid;
	 * lock: 1 when the process runs ALEX, 0 when it only traces) */
	ALEX_TK_PROC,
	ALEX_TK_SYNC_FILE_RANGE, /* ALEX's write-out of the fence (io_writeout.c) */
	ALEX_TK_COUNT
};

/* Which file: the roles SQLite gives its files, and ALEX's own. */
enum alex_trole {
	ALEX_TROLE_NONE = 0, ALEX_TROLE_DB, ALEX_TROLE_JOURNAL, ALEX_TROLE_WAL, ALEX_TROLE_SHM,
	ALEX_TROLE_DIR,   /* the database's directory (SQLite's directory sync) */
	ALEX_TROLE_SUPER, /* a super-journal (a transaction across databases) */
	ALEX_TROLE_LOG,   /* ALEX's log, FILE-alex */
	ALEX_TROLE_OTHER, /* any other file (--trace-all) */
	ALEX_TROLE_COUNT
};

enum alex_tflags {
	ALEX_TF_ALEX = 1,   /* ALEX's own call (the engine), not the program's */
	ALEX_TF_SERVED = 2, /* the program's call, answered by ALEX: it never
			       reached the kernel as such */
	ALEX_TF_NAME = 4,   /* a name follows the event */
	ALEX_TF_WAIT = 8    /* fcntl: a lock request that waits (F_SETLKW) */
};

/* The lock names (low 6 bits of the lock byte).  SQLite's lock bytes in the
 * database file (PENDING at 1 GiB, RESERVED after it, SHARED's 510 bytes
 * after that) and in -shm (WAL_WRITE_LOCK at 120, CKPT 121, RECOVER 122,
 * READ0..4 at 123..127). */
enum alex_tlock {
	ALEX_TL_NONE = 0,   /* not a lock call (F_GETFL, F_DUPFD ...) */
	ALEX_TL_OTHER,      /* a lock on bytes SQLite does not use */
	ALEX_TL_SHARED, ALEX_TL_RESERVED, ALEX_TL_PENDING, ALEX_TL_EXCLUSIVE,
	ALEX_TL_DB_ALL,     /* an unlock (or lock) of every lock byte at once */
	ALEX_TL_WAL_WRITE, ALEX_TL_WAL_CKPT, ALEX_TL_WAL_RECOVER,
	ALEX_TL_WAL_READ0,  /* ... READ4 = READ0 + 4 */
	ALEX_TL_WAL_DMS = ALEX_TL_WAL_READ0 + 5, /* the dead-man switch, byte 128 */
	ALEX_TL_WAL_RANGE,  /* several -shm lock bytes at once */
	ALEX_TL_GETLK       /* F_GETLK: a question, not a lock */
};

/* l_type as stored in the top two bits of the lock byte */
enum alex_tltype { ALEX_TLT_RD = 0, ALEX_TLT_WR = 1, ALEX_TLT_UN = 2 };

#endif
