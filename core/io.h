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
	ALEX_O_RDONLY = 4 /* for reading only (a read-only engine's files) */
};

/* What the engine needs to know of an open file. */
struct alex_finfo {
	uint64_t size;
	uint32_t mode;  /* permission bits (st_mode & 07777) */
	uint32_t uid, gid;
	uint32_t nlink; /* 0: the file was unlinked while open */
	uint64_t dev, ino; /* which file: two opens of one file agree */
};

/* Lock modes, and the bytes of the log the engines lock (alex-log(5)). */
enum alex_lock_mode { ALEX_UNLOCK = 0, ALEX_SHARED = 1, ALEX_EXCLUSIVE = 2 };
enum alex_lock_byte {
	ALEX_LOCK_OPEN = 0, /* shared by every engine that has the log open;
			       exclusive for the alex tool, and for the last
			       engine while it removes the log */
	ALEX_LOCK_CKPT = 1,  /* exclusive while an engine checkpoints without
				SQLite's EXCLUSIVE lock to keep others out */
	ALEX_LOCK_WRITER = 2 /* shared by every engine that has the log open
				and may write the database (not a read-only
				one): whether a close that cannot checkpoint
				leaves it to another (alex_other_writers) */
};

/* One write of many (pwrite_many). */
struct alex_piece {
	const void *buf;
	size_t n;
	uint64_t off;
};

struct alex_io_ops {
	int (*open)(void *ctx, const char *path, int flags, int *fd);
	int (*close)(void *ctx, int fd);
	int (*pread)(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got);
	int (*pwrite)(void *ctx, int fd, const void *buf, size_t n, uint64_t off);
	int (*fdatasync)(void *ctx, int fd);
	/* puts [off, off + n) of fd on the device and waits for it, without
	 * flushing the device's cache, so that the next fdatasync of with
	 * (a file on the same device) makes it durable too (io_writeout.c);
	 * an error where that cannot be promised (the caller then syncs) */
	int (*write_out)(void *ctx, int fd, uint64_t off, uint64_t n, int with);
	/* starts writing [off, off + n) of fd to the device and does not wait:
	 * a hint, durable only by a sync (NULL: none) */
	void (*writeback)(void *ctx, int fd, uint64_t off, uint64_t n);
	int (*ftruncate)(void *ctx, int fd, uint64_t size);
	/* reserves [off, off + n) of fd's file without writing it (it reads
	 * as zeros), the size growing to its end: ENOSPC when the file system
	 * has no room, EOPNOTSUPP where it cannot (NULL: nowhere) */
	int (*allocate)(void *ctx, int fd, uint64_t off, uint64_t n);
	int (*size)(void *ctx, int fd, uint64_t *size);
	int (*stat)(void *ctx, int fd, struct alex_finfo *fi);
	/* gives fd like's permission bits whatever the umask, and like's owner
	 * and group when the process may (root), as SQLite does for its
	 * journal and WAL */
	int (*own)(void *ctx, int fd, const struct alex_finfo *like);
	/* bytes an unprivileged writer can still add to fd's file system */
	int (*space)(void *ctx, int fd, uint64_t *avail);
	int (*exists)(void *ctx, const char *path, int *yes);
	/* what path names, not following a symbolic link; ENOENT if nothing
	 * (no open: a FIFO there must not block) */
	int (*stat_path)(void *ctx, const char *path, struct alex_finfo *fi);
	/* noreplace: fail with EEXIST rather than replace an existing to */
	int (*rename)(void *ctx, const char *from, const char *to, int noreplace);
	int (*unlink)(void *ctx, const char *path);
	/* makes the directory entry of path durable */
	int (*sync_dir)(void *ctx, const char *path);
	/* takes or drops (enum alex_lock_mode) a lock on one byte of the file
	 * for this descriptor's open file description, without waiting:
	 * EAGAIN when another holds a conflicting one */
	int (*lock)(void *ctx, int fd, uint64_t byte, int mode);
	/* maps the 4096-byte region of path, shared with every process that
	 * maps it; made with like's permissions (and owner, for root) and
	 * allocated, so that no store to it can fault; then runs init on it
	 * (which must be safe beside another process's init; may_change 0:
	 * the file has other names, and is used only if it needs no change,
	 * else init says EINVAL); *wrote: the bytes it wrote to make the file
	 * (a tracer records them).  Optional:
	 * without it the engine reads the log at every catch-up (shm.c). */
	/* A second, write-only descriptor of fd's file whose writes go past
	 * the page cache (O_DIRECT): buffers, offsets and lengths multiples
	 * of 512.  Optional; EINVAL where the file system refuses. */
	int (*open_direct)(void *ctx, int fd, int *dfd);
	/* Writes every piece through dfd, a direct descriptor of fd's file,
	 * in any order and as many at once as the backend can, waits for
	 * all, and makes fd's page cache show them (the kernel may leave a
	 * racing reader's stale page: io_many.c): 0 or an errno (EINVAL: the
	 * file system refuses writes this small; EOPNOTSUPP: nothing was
	 * written, use the page cache).  Optional for a backend without a
	 * page cache (memory): the pieces then go one by one through pwrite. */
	int (*pwrite_many)(void *ctx, int dfd, int fd, const struct alex_piece *p, size_t n);
	/* Drops fd's file's clean pages from the page cache: after a failed
	 * write-back they may show bytes the disk lacks.  Optional. */
	void (*forget)(void *ctx, int fd);
	int (*shm_map)(void *ctx, const char *path, const struct alex_finfo *like,
		       int (*init)(void *region, void *arg, int may_change), void *arg, void **region,
		       uint32_t *wrote);
	void (*shm_unmap)(void *ctx, void *region);
	/* Optional: a backend whose base files are another engine's
	 * (io_over.c) names the point that engine's log stands at; a staging
	 * engine's every epoch records it where a log records its base's
	 * header, and recovery replays the epoch only over that point. */
	int (*ident)(void *ctx, uint8_t out[100]);
	/* Optional, with ident: before a staging epoch's first record, the
	 * engine below has a live epoch and its fence on the database file,
	 * so that no program without ALEX writes the database while commits
	 * are staged that it does not hold. */
	int (*prepare)(void *ctx);
};

/* Where a write of [woff, woff + wlen) stands to a write-out of
 * [off, off + n), which reaches whole 4096-byte pages: 1 inside them, 0
 * outside, -1 across their edge (for the crash models). */
static inline int alex_io_out_covers(uint64_t off, uint64_t n, uint64_t woff, uint64_t wlen)
{
	uint64_t lo = off & ~(uint64_t)4095, hi = (off + n + 4095) & ~(uint64_t)4095;

	if (woff >= hi || woff + wlen <= lo)
		return 0;
	return woff >= lo && woff + wlen <= hi ? 1 : -1;
}

struct alex_io {
	const struct alex_io_ops *ops;
	void *ctx;
};

/* The real files. */
extern const struct alex_io alex_io_posix;

/* Would SQLite leave the journal at path as it is -- empty, or its first
 * byte zero (pager.c's hasHotJournal rule; TRUNCATE and PERSIST mode leave
 * such a file for good)?  A regular file only, not followed through a
 * link.  Raw system calls, as alex_io_posix's: no hook of libalex.so. */
int alex_journal_cold(const char *path);

/*
 * The memory backend.  Files live in memory; each remembers what was written
 * since its last fdatasync so that a crash image can be cut from it, and
 * the name it had at its directory's last sync_dir, so that an image may
 * lose the name changes since (ALEX_CRASH_DIRS_LOST); without that flag
 * directory operations (create, rename, unlink) are durable at once.
 */
typedef struct alex_mem alex_mem;

enum alex_mem_op { ALEX_MEM_WRITE = 1, ALEX_MEM_SYNC = 2, ALEX_MEM_TRUNC = 8,
		   ALEX_MEM_READ = 16 };

enum alex_crash {
	ALEX_CRASH_LOSE = 0,  /* every write since the file's last sync is lost */
	ALEX_CRASH_TEAR = 1,  /* unsynced writes kept but the last one torn */
	ALEX_CRASH_KEEP = 2,  /* every write reached the disk */
	ALEX_CRASH_SUBSET = 3, /* each unsynced write (or size change) of each
				 file independently lost, kept, or kept in part
				 -- any subset of its 512-byte sectors -- as a
				 disk that reorders its cache may leave them */
	/* or'ed with one of the above: every name change (create, rename,
	 * unlink) since its directory's last sync_dir is lost too, as a file
	 * system that journals metadata may lose its last transactions.
	 * Without it, name changes are durable at once. */
	ALEX_CRASH_DIRS_LOST = 0x100
};

alex_mem *alex_mem_new(void);
void alex_mem_free(alex_mem *m);
struct alex_io alex_mem_io(alex_mem *m);

/* Files larger than this fail with EFBIG; the default is 1 GiB. */
void alex_mem_limit(alex_mem *m, uint64_t bytes);

/* The whole disk: a write or size change that would make all live files
 * together larger fails with ENOSPC (0: no limit, the default). */
void alex_mem_disk(alex_mem *m, uint64_t bytes);

/* Stops keeping undo records, for benchmarks: alex_mem_crash then sees
 * every write as synced. */
void alex_mem_untracked(alex_mem *m);

/* Counts mutating operations (write, sync, trunc), from 1. */
uint64_t alex_mem_ops(const alex_mem *m);
/* Writes and truncations of a log whose change counter is live made while
 * no engine counted a change (shm.c): always 0 unless a write bypasses
 * alex_log_pwrite. */
uint64_t alex_mem_uncounted(const alex_mem *m);
/* The change counter's region mapped under path, or NULL (tests). */
void *alex_mem_shm(alex_mem *m, const char *path);

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
