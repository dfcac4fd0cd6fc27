/*
 * trace_format.h - the trace file that ALEX_MODE=trace and ALEX_TRACE=FILE
 * write (preload/trace.c) and `alex trace` reads (trace_read.c).
 *
 * A trace file is a sequence of chunks, appended with O_APPEND by every
 * process of a traced program: one write(2) per chunk, so chunks of
 * different processes never interleave.  A chunk is
 *
 *   header (32 bytes, little-endian)
 *     0  u32 magic "ATRC"     4  u16 version (1 or 2: how events are laid out)
 *     6  u8 header size (32)
 *     7  u8 flags: ALEX_TRACE_LZ4 when the payload is one LZ4 block
 *            (what follows is then its decompressed form, at most
 *            ALEX_TRACE_RAW_MAX bytes)
 *     8  u32 pid             12  u32 tid
 *    16  u32 payload bytes as stored    20  u32 events in it
 *    24  u32 events dropped before this chunk (a signal handler's call
 *            while the thread was recording, or a full buffer)
 *    28  u32 CRC-32C of the header (this field as 0) and the stored payload
 *   payload: the events, in the order the thread finished them.
 *
 * An event has these fields:
 *   start   u64 CLOCK_MONOTONIC ns when the call began
 *   off     u64 offset (lock: l_start)
 *   len     u64 length (lock: l_len; name: its bytes)
 *   res     i64 the call's return value, or -errno when it failed
 *   dur     u32 duration ns (saturates)
 *   fd      i32 (-1: a call by name)
 *   page    u32 the database page a write or read holds, the page a WAL
 *               frame header names, the big-endian word of a 4-byte
 *               journal write (a journal record's page number); 0: none
 *   kind    u8 (enum alex_tkind)    role  u8 (enum alex_trole)
 *   flags   u8 (ALEX_TF_*)          lock  u8: (l_type << 6) | lock name
 *   with ALEX_TF_NAME, a name of len bytes (at most 4096)
 *
 * Version 1 lays an event out in 48 bytes, at 0 start, 8 off, 16 len,
 * 24 res, 32 dur, 36 fd, 40 page, 44 kind, 45 role, 46 flags, 47 lock,
 * then the name and zeros to a multiple of 8.  Writers made it until
 * LZ4-compressing each chunk cost more than the calls it recorded.
 *
 * Version 2 (written now, uncompressed; a reader takes ALEX_TRACE_LZ4 on
 * it too) packs an event into what it
 * needs, about a quarter of that; varint is LEB128 (7 bits a byte, low
 * first, at most 10 bytes), zigzag maps a signed n to (n << 1) ^ (n >> 63):
 *     u8 kind    u8 role << 4 | flags (both < 16)    u8 which: ALEX_TP_*
 *     varint zigzag(start - the chunk's previous event's start; 0 first)
 *     varint dur
 *     varint zigzag(fd)          unless ALEX_TP_SAMEFD: the previous event's
 *                                 (-1 for a chunk's first event)
 *     varint off                 with ALEX_TP_OFF, else 0
 *     varint len                 with ALEX_TP_LEN, else 0 (a name's: below)
 *     u8 r                       with ALEX_TP_REF: the event's name is the
 *                                 one in the chunk's name slot r, and len
 *                                 its length (the names a chunk writes out
 *                                 fill slots 0, 1, 2, 3, 0 ... in turn; r
 *                                 names a filled one)
 *     varint zigzag(res)         with ALEX_TP_RES; with ALEX_TP_RESLEN res
 *                                 is len; with neither, 0
 *     varint page                with ALEX_TP_PAGE, else 0
 *     u8 lock                    with ALEX_TP_LOCK, else 0
 *     the name's len bytes       with ALEX_TF_NAME and not ALEX_TP_REF
 * LEN and REF, RES and RESLEN exclude each other; REF needs ALEX_TF_NAME.
 */
#ifndef ALEX_TRACE_FORMAT_H
#define ALEX_TRACE_FORMAT_H

#include <stdint.h>

#define ALEX_TRACE_FILE_MAGIC 0x43525441u /* "ATRC" */
#define ALEX_TRACE_VERSION 2 /* what writers write; readers read 1 and 2 */
#define ALEX_TRACE_HDR 32
#define ALEX_TRACE_EVENT 48  /* a version 1 event */
#define ALEX_TRACE_NAME_MAX 4096u
#define ALEX_TRACE_NAME_REFS 4 /* a version 2 chunk's recent names */
/* the largest chunk a writer makes; a reader refuses a larger one */
#define ALEX_TRACE_CHUNK_MAX (1u << 20)
/* the largest payload, decompressed */
#define ALEX_TRACE_RAW_MAX (1u << 20)
#define ALEX_TRACE_LZ4 1

/* A version 2 event's third byte: which fields follow. */
enum alex_tpresent {
	ALEX_TP_OFF = 1, ALEX_TP_LEN = 2, ALEX_TP_REF = 4, ALEX_TP_RESLEN = 8,
	ALEX_TP_RES = 16, ALEX_TP_PAGE = 32, ALEX_TP_LOCK = 64, ALEX_TP_SAMEFD = 128
};

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
