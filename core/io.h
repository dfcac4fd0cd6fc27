/*
 * io.h - every byte the engine reads or writes goes through this table, so
 * tests can swap the real files for memory that loses power, tears writes and
 * fails on command (SQLite's aSyscall[] idea, one level up).
 *
 * Each call returns 0 or a positive errno.  pwrite writes all or fails (a
 * short write becomes ENOSPC); pread returns the count it got (short only at
 * the end of the file).  Handles are small non-negative ints.
 */
#ifndef ALEX_IO_H
#define ALEX_IO_H

#include <stddef.h>
#include <stdint.h>

enum alex_open_flags {
	ALEX_O_CREAT = 1, /* create if missing */
	ALEX_O_TRUNC = 2, /* start empty */
	ALEX_O_EXCL = 4   /* fail with EEXIST if it exists */
};

struct alex_io_ops {
	int (*open)(void *ctx, const char *path, int flags, int *fd);
	int (*close)(void *ctx, int fd);
	int (*pread)(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got);
	int (*pwrite)(void *ctx, int fd, const void *buf, size_t n, uint64_t off);
	int (*fdatasync)(void *ctx, int fd);
	int (*ftruncate)(void *ctx, int fd, uint64_t size);
	int (*fallocate)(void *ctx, int fd, uint64_t off, uint64_t len);
	int (*size)(void *ctx, int fd, uint64_t *size);
	int (*exists)(void *ctx, const char *path, int *yes);
	/* noreplace: fail with EEXIST rather than replace an existing to */
	int (*rename)(void *ctx, const char *from, const char *to, int noreplace);
	int (*unlink)(void *ctx, const char *path);
	/* makes the directory entry of path durable */
	int (*sync_dir)(void *ctx, const char *path);
	/* takes (1 shared, 2 exclusive) or drops (0) a lock on the whole file
	 * for this descriptor, without waiting: EAGAIN when another holds a
	 * conflicting one */
	int (*lock)(void *ctx, int fd, int mode);
};

struct alex_io {
	const struct alex_io_ops *ops;
	void *ctx;
};

/* The real files. */
extern const struct alex_io alex_io_posix;

/*
 * The memory backend.  Files live in memory; each remembers what was written
 * since its last fdatasync so that a crash image can be cut from it.  Directory
 * operations (create, rename) are durable at once.
 */
typedef struct alex_mem alex_mem;

enum alex_mem_op { ALEX_MEM_WRITE = 1, ALEX_MEM_SYNC = 2, ALEX_MEM_ALLOC = 4,
		   ALEX_MEM_TRUNC = 8, ALEX_MEM_READ = 16 };

enum alex_crash {
	ALEX_CRASH_LOSE = 0, /* every write since the file's last sync is lost */
	ALEX_CRASH_TEAR = 1, /* unsynced writes kept but the last one torn */
	ALEX_CRASH_KEEP = 2  /* every write reached the disk */
};

alex_mem *alex_mem_new(void);
void alex_mem_free(alex_mem *m);
struct alex_io alex_mem_io(alex_mem *m);

/* Files larger than this fail with EFBIG (ENOSPC for fallocate); the
 * default is 1 GiB. */
void alex_mem_limit(alex_mem *m, uint64_t bytes);

/* Stops keeping undo records, for benchmarks: alex_mem_crash then sees
 * every write as synced. */
void alex_mem_untracked(alex_mem *m);

/* Counts mutating operations (write, sync, alloc, trunc), from 1. */
uint64_t alex_mem_ops(const alex_mem *m);

/* The op_index-th mutating operation of a kind in mask fails with err and
 * changes nothing (0 disables). */
void alex_mem_fail_at(alex_mem *m, uint64_t op_index, unsigned mask, int err);

/* Called after every mutating operation that succeeded. */
void alex_mem_on_op(alex_mem *m, void (*fn)(void *arg, uint64_t op, enum alex_mem_op kind,
					    int fd),
		    void *arg);

/* A new memory backend holding what the disk would hold had the power failed
 * now.  For ALEX_CRASH_TEAR the last unsynced write is cut at a byte chosen
 * from seed. */
alex_mem *alex_mem_crash(const alex_mem *m, enum alex_crash how, uint64_t seed);

/* As ALEX_CRASH_TEAR, with the last unsynced write cut after exactly cut
 * bytes. */
alex_mem *alex_mem_crash_cut(const alex_mem *m, uint64_t cut);

/* Direct access to a file's current bytes, for tests and fuzzers. */
int alex_mem_set(alex_mem *m, const char *path, const void *data, size_t len);
const uint8_t *alex_mem_get(const alex_mem *m, const char *path, size_t *len);

#endif
