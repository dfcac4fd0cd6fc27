/*
 * alex.h - the ALEX engine: a crash-safe log of checksummed extents beside one
 * SQLite database, with an in-memory map of where each 4 KiB block lives.
 *
 * The engine knows nothing of LD_PRELOAD.  A caller (the preload layer, a test,
 * a tool) opens one engine per database and then reads and writes bytes of the
 * database's logical files: the database itself, its rollback journal and its
 * WAL.  Writes collect in memory until a transaction boundary (alex_commit),
 * which appends them to the log "<db>-alex" as one record.  Reads see the
 * newest bytes: the open transaction, then the log, then the database file.
 * A checkpoint copies live blocks back into the database file and restarts the
 * log.  The byte format of the log is in format.h and man/alex-log.5.
 *
 * Return codes: 0 on success, a positive errno passed through from the system
 * (EIO, ENOSPC, ...), or a negative ALEX_E* code.  alex_strerror() names both.
 * The engine never writes errno.  An engine is not thread-safe: the caller
 * serialises calls on one alex_db.
 */
#ifndef ALEX_H
#define ALEX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ALEX_VERSION_STRING "0.1.0"

/* Negative error codes of the engine's own. */
enum {
	ALEX_ECORRUPT = -1001, /* a log header is damaged or not an ALEX log */
	ALEX_EVERSION = -1002, /* the log was written by another format version */
	ALEX_EBUSY = -1003,    /* a spilled transaction is open; commit it first */
	ALEX_EFAILED = -1004,  /* an earlier I/O failure left the log unusable */
	ALEX_EINVAL = -1005,   /* an argument or configuration value is invalid */
	ALEX_ENOMEM = -1006,   /* the memory budget or the allocator ran out */
	ALEX_EBADBLOCK = -1007, /* a block read from the log failed its checksum */
	ALEX_EINUSE = -1008,   /* another engine holds the log (exclusive open) */
	ALEX_EFOREIGN = -1009, /* the log is for another database (or the database
				  file was replaced while its log held pages) */
	ALEX_EPERMS = -1010,   /* the log grants access the database does not,
				  and its mode cannot be narrowed */
	ALEX_EKEY = -1011,     /* the database is encrypted with another key */
	ALEX_ENOKEY = -1012,   /* the database or its log is encrypted, and no
				  key was given */
	ALEX_EPLAIN = -1013,   /* a key was given, and the database or its log
				  is not encrypted (alex encrypt converts it) */
	ALEX_EORPHAN = -1014   /* the database file carries the fence of a log
				  that is not beside it: moved, renamed or
				  deleted while it held pages (alex recover) */
};

/* The logical files of one database. */
enum alex_file { ALEX_FILE_DB = 0, ALEX_FILE_JOURNAL = 1, ALEX_FILE_WAL = 2 };
#define ALEX_NFILES 3

enum alex_sync {
	ALEX_SYNC_FULL = 0,   /* every commit is durable when alex_commit returns */
	ALEX_SYNC_NORMAL = 1, /* commits are durable within sync_ms or extent_kb */
	ALEX_SYNC_OFF = 2     /* never fdatasync the log: benchmarks only */
};

enum alex_compress {
	ALEX_COMPRESS_AUTO = 0, /* lz4, but stop trying while data does not compress */
	ALEX_COMPRESS_LZ4 = 1,  /* try lz4 on every block */
	ALEX_COMPRESS_OFF = 2
};

struct alex_key; /* core/xts.h */

struct alex_config {
	enum alex_sync sync;
	enum alex_compress compress;
	unsigned compress_min_saving_pct; /* keep lz4 output only if it saves this much */
	uint64_t memory_bytes;            /* collector + record buffer budget */
	uint64_t prealloc_bytes;          /* largest step the log grows by (zeros) */
	uint64_t checkpoint_bytes;        /* checkpoint when the log holds this much
					     (FULL: sooner when cheap, commit.c) */
	unsigned sync_ms;                 /* NORMAL: longest a commit stays unsynced */
	uint64_t extent_bytes;            /* NORMAL: sync once this much is unsynced */
	int checkpoint_on_close;          /* checkpoint in alex_close (default 1) */
	int exclusive;                    /* hold the log alone (tools); otherwise
					     shared with other engines (default 0) */
	int protect_base;                 /* mark the database file while the log
					     holds newer pages, so SQLite without
					     ALEX refuses it (default 1) */
	int db_only;                      /* only ALEX_FILE_DB is the engine's: the
					     journal and WAL files are never opened,
					     sized or truncated (libalex.so and the
					     alex tool, whose logs hold only the
					     database; default 0) */
	int remove_log;                   /* alex_close removes the log when it
					     holds nothing and no other engine has
					     it open (libalex.so; default 0) */
	int orphan_ok;                    /* a database fenced by a log that is
					     gone opens as of its last checkpoint,
					     the fence still on (alex recover);
					     otherwise ALEX_EORPHAN (default 0) */
	const struct alex_key *key;       /* encrypt the database file and the log
					     with it (xts.h, docs/ENCRYPTION.md);
					     NULL: neither is (default) */
	int direct;                       /* FULL: write records to a log of
					     format 6 past the page cache
					     (O_DIRECT), in 512-byte sectors,
					     where the file system lets us
					     (default 1; format.h) */
	int ckpt_direct;                  /* checkpoints write a block the base
					     file holds in part by its changed
					     512-byte sectors, past the page
					     cache (O_DIRECT), where the file
					     system lets us (default 1; ckpt.c) */
	int ckpt_carry;                   /* FULL: a checkpoint begins the next
					     epoch first and copies the last
					     one beside the commits that follow
					     (format 10; ckpt.c, carry.c;
					     default 0) */
	uint64_t crypt_buffer_bytes;      /* with a key: the bounce buffer the
					     database file's writes are encrypted
					     through (default 64 KiB) */
	int readonly;                     /* a reader that may not write the
					     database file: every file opened
					     for reading only, no change counter,
					     no checkpoint, recovery that writes
					     nothing; a commit fails with EROFS
					     (default 0) */
	int base_deltas;                  /* a block no record of the epoch
					     holds may be logged as its changes
					     to the database file's block
					     (format 9; default 1; format.h) */
	const char *log_suffix;           /* the log is "<db_path><log_suffix>",
					     its change counter that and "-shm":
					     NULL for "-alex"; a staging engine
					     (alex_io_over) has its own */
};

/* Fills *cfg with the defaults: FULL, AUTO, 10 %, 16 MiB, 1 MiB, 64 MiB, 100 ms,
 * 1 MiB, checkpoint on close, protect the base file, keep the log file,
 * records and checkpoints' sectors direct, deltas of the database file. */
void alex_config_default(struct alex_config *cfg);

struct alex_io; /* core/io.h: where the bytes go (POSIX files or memory) */

typedef struct alex_db alex_db;

/*
 * Opens the engine for the database at db_path, creating the database file
 * and the log "<db_path>-alex" if they do not exist, and recovering the log if
 * it does: the block map is rebuilt from every committed record up to the
 * first invalid one.  The log is locked for as long as the engine is open:
 * shared, or with cfg->exclusive alone (ALEX_EINUSE if another engine has
 * it); a shared open waits up to two seconds for an exclusive holder.  cfg may be NULL for the defaults; io may be NULL for the
 * POSIX backend.  What recovery found is in alex_stats().
 */
int alex_open(const char *db_path, const struct alex_config *cfg,
	      const struct alex_io *io, alex_db **out);

/*
 * Writes len bytes at offset off of logical file f.  The bytes join the open
 * transaction; they are durable only after alex_commit.  Writes of any size
 * and alignment are correct; a part of a block is merged with the current
 * content.  Writing past the end extends the file (holes read as zeros).
 * A file cannot grow past 2^48 bytes (EFBIG), SQLite's own limit.
 */
int alex_write(alex_db *db, enum alex_file f, const void *buf, size_t len,
	       uint64_t off);

/* Reads up to len bytes at off of logical file f; *got is how many (short at
 * the end of the file).  The view is the one of the last alex_refresh: a
 * change a program without ALEX made since may not show before the next
 * (the database file's header is kept from it until alex_base_hdr_forget). */
int alex_read(alex_db *db, enum alex_file f, void *buf, size_t len,
	      uint64_t off, size_t *got);

int alex_size(alex_db *db, enum alex_file f, uint64_t *size);
int alex_truncate(alex_db *db, enum alex_file f, uint64_t size);

/*
 * Ends the open transaction: its blocks are appended to the log as one record
 * with the COMMIT flag (one pwrite), and with ALEX_SYNC_FULL the log is
 * fdatasync'ed before this returns.  On failure nothing of the transaction is
 * lost from memory and the call may be repeated.  When the log passes
 * checkpoint_bytes (in FULL mode, from 4 MiB on, when the copy is cheap:
 * commit.c) a checkpoint follows; its failure is counted in the stats, not
 * returned, because the commit itself succeeded.
 */
int alex_commit(alex_db *db);

/*
 * alex_commit for a write that may be a transaction's last with nothing
 * after it to show its end (SQLite with no journal and no sync: the
 * preload commits every such write as it is made).  ALEX_SYNC_FULL does
 * not sync it: the next alex_commit does, with or without a transaction
 * open, as does the syncing thread (alex_sync_start) and alex_close.
 */
int alex_commit_now(alex_db *db);

/* 1 when alex_commit has something to do: a transaction open, or FULL
 * mode's records of alex_commit_now not yet synced. */
int alex_commit_due(const alex_db *db);

/*
 * Catches up with transactions other engines (other processes) committed to
 * the same log since this one last looked, including a checkpoint they made
 * and a log they made or removed; with nothing in the log, with the sizes of
 * the database file as programs without ALEX may have left it.  Call it with
 * no transaction open, when SQLite takes its SHARED lock; with a
 * transaction open it does nothing (that lock excludes other writers).
 * locked: the caller holds SQLite's SHARED lock (or a stronger one) on the
 * database, so no writer is between the two phases of a commit across
 * databases, and a conditional commit whose super-journal still exists is
 * over and rolled back (durably); 0 leaves it undecided (alex_in_doubt).
 */
int alex_refresh(alex_db *db, int locked);

/* The caller's SHARED lock on the database ended: a program without ALEX
 * may write the file now, so reads no longer use the header kept by the
 * last catch-up; the next alex_refresh keeps it again. */
void alex_base_hdr_forget(alex_db *db);

/* 1 while the log holds committed pages the database file does not. */
int alex_holds_pages(const alex_db *db);

/* Has another engine that may write the database (not a read-only one)
 * the log open, to checkpoint it at its own close?  1 also when that
 * cannot be told (no log; the tool; a read-only engine asking). */
int alex_other_writers(alex_db *db);

/* The engine's own descriptor of the database file, or -1: for a lock
 * query (F_OFD_GETLK) that no close of the caller's can disturb.  Never
 * closed by the caller; valid until alex_close. */
int alex_db_fd(const alex_db *db);
/* 1 while a transaction is open: written, truncated or spilled, not yet
 * committed (or dropped). */
int alex_txn_open(const alex_db *db);

/* An epoch of the log, named so that two can be compared (alex_fence_now). */
struct alex_fence {
	uint8_t uuid[16];
	uint64_t epoch;
	uint32_t salt;
	uint32_t on; /* 0: no epoch (never equal to one that is) */
};
/*
 * 1, with the epoch in *f, when memory alone shows that the log holds pages
 * and the database file carries the epoch's fence: nothing changed in the
 * log since this engine last read it (the shared change counter: a load),
 * and the epoch is fenced.  A fence stays on from the epoch's first commit
 * to the checkpoint that ends it, so equal answers at two times mean it was
 * on all the while.  0 otherwise (no fence, or the log may have changed).
 */
int alex_fence_now(alex_db *db, struct alex_fence *f);
static inline int alex_fence_same(const struct alex_fence *a, const struct alex_fence *b)
{
	return a->on && b->on && a->epoch == b->epoch && a->salt == b->salt &&
	       __builtin_memcmp(a->uuid, b->uuid, sizeof a->uuid) == 0;
}

/*
 * A memory image of logical file f (view.c), for a private mapping of its
 * base file.  alex_view_plain: the base file's bytes below it are f's, but
 * for the blocks alex_view_fill copies (0 when there is no base file);
 * alex_view_fd: the engine's descriptor of the base file, or -1.
 * alex_view_fill: img holds f's bytes [0, to) at their offsets, those below
 * plain (<= alex_view_plain) as the base file has them, zeros above; copies
 * into [from, to) every block whose content is not that -- the log's, a
 * spilled record's, the open transaction's, block 0 (the base's carries the
 * fence), and the base's past plain.  Nothing past the logical size.
 */
uint64_t alex_view_plain(const alex_db *db, enum alex_file f);
/* Moves whenever a catch-up (alex_refresh) may have brought in changes
 * made outside this engine: an image made before it may be stale. */
uint64_t alex_view_gen(const alex_db *db);
int alex_view_fd(const alex_db *db, enum alex_file f);
int alex_view_fill(alex_db *db, enum alex_file f, uint8_t *img, uint64_t plain, uint64_t from,
		   uint64_t to);

/*
 * Drops the open transaction -- collected pages, spills, truncations -- and
 * rebuilds the committed view from the log.  For a forked child, whose copy
 * of the engine holds its parent's unfinished transaction.
 */
int alex_discard(alex_db *db);

/*
 * ALEX_SYNC_NORMAL's syncs, made outside the caller's lock so that commits
 * do not wait for them.  A commit syncs inline only when a whole window
 * (sync_ms, or extent_bytes) is unsynced.  After a commit alex_sync_wanted
 * says ALEX_WANT_CLOCK when the commit is the first unsynced one (the
 * thread must look within a tick: its clock starts) and ALEX_WANT_NOW, once,
 * at half the window's bytes or when a carried copy waits for its sync (a
 * sync is due now) -- and the caller wakes its syncing thread.  That thread
 * looks by its tick while alex_sync_pending says commits wait, and at
 * alex_sync_due_at, when the time part comes: under the lock,
 * alex_sync_start is 1 when a sync is due (half the bytes, three quarters
 * of the time), covering what is written now; then without the
 * lock alex_sync_run (the sync, its error), and under the lock again
 * alex_sync_finish, which counts what the sync covered as durable (an error
 * fails the engine, as an inline one does).  One at a time.  A forked
 * child, which has no such thread, calls alex_sync_forget.
 */
enum { ALEX_WANT_CLOCK = 1, ALEX_WANT_NOW = 2 };
int alex_sync_wanted(alex_db *db);
int alex_sync_pending(const alex_db *db);
/* When alex_sync_start will say 1 by time alone; UINT64_MAX: nothing waits
 * (alex_now_ns's clock). */
uint64_t alex_sync_due_at(const alex_db *db);
int alex_sync_start(alex_db *db);
int alex_sync_run(alex_db *db);
int alex_sync_finish(alex_db *db, int err);
void alex_sync_forget(alex_db *db);

/*
 * Commits the open transaction as one database's part of a transaction
 * across several (SQLite's ATTACH), whose commit point is the removal of
 * SQLite's super-journal at super_path (absolute): after a crash the record
 * stands only once that file no longer exists, or a later commit follows
 * it in the log.  Synced whatever cfg.sync says.  Until alex_resolve, no
 * checkpoint copies it into the database file.
 */
int alex_commit_cond(alex_db *db, const char *super_path);

/* The transaction across databases is over (SQLite finalized its journals,
 * after removing the super-journal, or rolled it back): checkpoints may
 * copy the conditional commit. */
void alex_resolve(alex_db *db);

/* The super-journal of a conditional commit recovery found and could not
 * yet decide on (its file still exists and no lock showed that the
 * transaction is over), or NULL. */
const char *alex_in_doubt(const alex_db *db);

/* The log's records, for the tools (alex stat, verify). */
enum alex_rec_state {
	ALEX_RS_COMMITTED,    /* its transaction committed */
	ALEX_RS_CHECKPOINTED, /* ... and is in the database file already */
	ALEX_RS_UNCOMMITTED,  /* a spill of a transaction that never committed */
	ALEX_RS_UNDECIDED     /* a conditional commit whose super-journal exists:
				 the next SQLite lock rolls it back */
};
struct alex_recinfo {
	uint64_t off, lsn, txn;
	uint32_t rec_len, nblocks, flags; /* flags: format.h, COMMIT and COND */
	char *cond;                       /* COND: the super-journal, else NULL */
	enum alex_rec_state state;
};
/* Nonzero from fn stops the walk and is returned. */
typedef int (*alex_rec_fn)(void *arg, const struct alex_recinfo *ri);
/* Calls fn for every valid record of the current epoch, in log order, with
 * the state recovery gives it; reads only. */
int alex_records(alex_db *db, alex_rec_fn fn, void *arg);
const char *alex_rec_state_name(enum alex_rec_state s);

/* Makes every committed transaction durable (a no-op when it already is). */
int alex_sync(alex_db *db);

/*
 * Catches up (alex_refresh, locked), copies committed blocks into the base
 * files and begins a new epoch; the base is a plain SQLite file after it.
 * Takes the log's checkpoint lock, so that engines holding only SQLite's
 * SHARED lock may call it side by side.  The caller holds SQLite's SHARED
 * lock or a stronger one, and so keeps other writers out.
 */
int alex_checkpoint(alex_db *db);

/*
 * Does the database file carry a mark that an epoch holding nothing left
 * (a power cut between a checkpoint's next header and its unmark)?  As of
 * the last catch-up, which reads the file's header when the log holds
 * nothing.  alex_checkpoint takes it off.
 */
int alex_stale_mark(const alex_db *db);

/*
 * May a checkpoint write the database file the engine has open: does it
 * carry, read now, the fence of the epoch whose pages would go in (1), or
 * is there nothing of a fenced epoch to write (1)?  0 when the file is
 * another's now -- renamed and replaced, its log taken up by another
 * engine for the file now at the name -- or an errno / ALEX_E* code.
 */
int alex_base_is_ours(alex_db *db);

/* Removes the log if it holds nothing and no other engine has it open
 * (ALEX_EBUSY, ALEX_EINUSE otherwise); a later record makes a new one. */
int alex_remove_log(alex_db *db);

/* Overrides cfg.checkpoint_on_close for this engine (the caller may know
 * that other processes still use the database). */
void alex_set_checkpoint_on_close(alex_db *db, int on);

/* Closes the engine; checkpoints first when configured.  Uncommitted writes
 * are discarded.  The engine is freed even when an error is returned. */
int alex_close(alex_db *db);

/* Why recovery stopped scanning. */
enum alex_stop {
	ALEX_STOP_NONE = -1,    /* nothing stops the scan: a valid record */
	ALEX_STOP_END = 0,      /* no record here: zeros, the end of the file,
				   or bytes left by an older epoch */
	ALEX_STOP_STALE,        /* a record of an older epoch or another chain */
	ALEX_STOP_BAD_MAGIC,
	ALEX_STOP_BAD_HEADER,   /* header crc or an impossible length */
	ALEX_STOP_BAD_TABLE,    /* block table crc */
	ALEX_STOP_BAD_BLOCK,    /* a block's crc32c */
	ALEX_STOP_BAD_PADDING,  /* non-zero bytes after the payload */
	ALEX_STOP_TRUNCATED     /* the record runs past the end of the file */
};

struct alex_stats {
	uint64_t writes, write_bytes, reads, read_bytes;
	uint64_t commits;          /* alex_commit calls that wrote a record */
	uint64_t records;          /* records appended (commits + spills) */
	uint64_t spills;
	uint64_t blocks_logged, blocks_compressed; /* compressed: by LZ4 */
	uint64_t blocks_gapped;    /* stored without their zero gap (GAP) */
	uint64_t blocks_delta;     /* stored as changes to an earlier version (DELTA) */
	uint64_t blocks_delta_base; /* ... of them, to the database file's (format 9) */
	uint64_t dedup_hits;       /* writes that replaced a block already pending */
	uint64_t bytes_logged;     /* record bytes appended to the log */
	uint64_t direct_writes;    /* records written past the page cache */
	int direct_refused;        /* the errno with which the file system
				      refused O_DIRECT (then records go
				      through the page cache), or 0 */
	uint64_t bytes_raw;        /* 4096 x blocks_logged */
	uint64_t syncs;            /* fdatasync calls on the log */
	uint64_t checkpoints, checkpoint_failures;
	uint64_t checkpoint_blocks;  /* blocks a checkpoint changed in a base file */
	uint64_t checkpoint_sectors; /* of those, sectors written direct */
	int ckpt_direct_refused;     /* the errno with which the file system
					refused a checkpoint's O_DIRECT (then
					its blocks go through the page cache) */
	uint64_t log_used;         /* bytes of records in the current epoch */
	uint64_t mem_buffers;      /* collector slabs, index and record buffer:
				      bounded by memory_bytes */
	uint64_t mem_maps;         /* block maps: grow with the log, which
				      checkpoint_bytes bounds */
	/* recovery at open */
	uint64_t recovered_records, recovered_commits, dropped_records;
	uint64_t stop_offset;
	enum alex_stop stop_reason;
	int header_repaired;       /* the newest header slot was damaged and rebuilt
				      from its epoch's first record */
	int open_raced;            /* another process changed the log while the
				      open read it (no lock is held then): a
				      torn tail is its record being written */
	uint64_t remote_commits;   /* commits of other processes picked up by
				      alex_refresh */
	uint64_t refreshes_skipped; /* catch-ups the change counter made
				       unnecessary (shm.c) */
	uint64_t lost_offset;      /* nonzero: a valid record of this epoch lies
				      past a damaged one, at this offset -- the
				      damage is not a torn tail, commits were lost */
	int epoch_applied;         /* the log's epoch was fenced and the database
				      no longer carries its fence: a checkpoint
				      finished before a crash, nothing to replay */
	int log_present;           /* there is a log file (it may hold nothing) */
	uint64_t space_checkpoints; /* checkpoints to make room on a full disk */
	uint64_t carries;          /* epochs begun carrying the last (format 10) */
	uint64_t carry_applies;    /* carried epochs copied into the base */
	uint64_t log_trims;        /* preallocated log space given back */
	uint64_t fenced_epochs;    /* epochs whose first commit fenced the base */
	uint64_t fence_rides;      /* fences made durable by the commit's own
				      sync, not one of their own (protect.c) */
	uint64_t cond_commits;     /* commits of one database of a transaction
				      across several (alex_commit_cond) */
	uint64_t cond_applied;     /* recovered conditional commits whose
				      super-journal was gone: committed */
	uint64_t cond_discarded;   /* ... whose super-journal remained after the
				      transaction was over: rolled back */
	uint64_t unmark_failures;  /* checkpoints whose fence could not come off */
};

void alex_stats(const alex_db *db, struct alex_stats *st);
const char *alex_stop_name(enum alex_stop reason);
/* What stopped the scan, said as damage: as alex_stop_name, but the end
 * of the log (zeros) is "zeros where a record should be" -- it is damage
 * when lost_offset says this epoch's records follow. */
const char *alex_damage_name(enum alex_stop reason);

/* A static string for an engine code or a positive errno. */
const char *alex_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
