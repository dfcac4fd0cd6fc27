/* db.h - struct alex_db: the engine's state for one database, shared by
 * the core's own files only (preload and tools see alex.h). */
#ifndef ALEX_DB_H
#define ALEX_DB_H

#include <stdint.h>

#include "alex.h"
#include "collect.h"
#include "format.h"
#include "io.h"
#include "map.h"
#include "xts.h"
#include "xts_io.h"

/* Inside the engine only: the file at the log's path holds nothing (empty,
 * or a log whose making was cut short before anything was acknowledged). */
#define ALEX_ENOLOG (-1100)
/* Inside the engine only: another process made the log first; it is open
 * now, and must be recovered before this engine appends to it. */
#define ALEX_EADOPT (-1101)
/* Inside the engine only: the database file's mark changed while the log
 * was looked for (a last close removing it): look again. */
#define ALEX_ERACED (-1102)

/* What the database file's first bytes carry (protect.c). */
enum alex_mark_kind {
	ALEX_MARK_NONE = 0,    /* nothing: the file is SQLite's own */
	ALEX_MARK_SQLITE,      /* page 1 marked (byte 19, change counter) */
	ALEX_MARK_PLACEHOLDER, /* an empty database's placeholder */
	ALEX_MARK_TORN         /* bytes of a format-1 placeholder a crash cut */
};

struct alex_mark {
	enum alex_mark_kind kind;
	int has_fence;  /* format 2: names the epoch it fences */
	uint64_t fence; /* alex_protect_fence() of that epoch */
};

struct alex_ks {
	uint64_t key;
	uint32_t slot;
};

struct alex_db {
	struct alex_io io;        /* with a key: the encrypting layer over io_plain */
	struct alex_io io_plain;
	struct alex_xts *xts;     /* the key's cipher (cfg.key), or NULL */
	struct alex_xts_io *xio;  /* the database file's encrypting layer */
	struct alex_xts *log_xts; /* the cipher of the log named log_xts_uuid */
	uint8_t log_xts_uuid[16];
	struct alex_config cfg;
	char *path[ALEX_NFILES]; /* base files: db, db-journal, db-wal */
	char *log_path;
	char *shm_path;           /* the log's change counter (shm.c) */
	int base_fd[ALEX_NFILES]; /* -1 until needed */
	int ckpt_doubt;           /* a checkpoint's copy failed: the page cache
				     may show bytes the disk lacks, so the next
				     copies all, compared with nothing (ckpt.c) */
	int base_dfd;             /* the database file's O_DIRECT descriptor for
				     checkpoints (ckpt.c), or -1; closed only
				     with base_fd: closing any descriptor of the
				     file drops SQLite's POSIX locks on it */
	int log_fd;
	unsigned log_gen;         /* counts the files log_fd was opened on: a
				     removal that saw it change no longer holds
				     the log it locked (log.c) */
	int log_pid;              /* the process that opened log_fd (a forked
				     child shares its lock, so never removes it) */
	struct alex_shm *shm;     /* mapped while a format-3 log is open */
	uint64_t shm_seen;        /* its gen when this engine last read the log */
	int shm_seen_ok;          /* ... and that read saw every change counted */

	/* log position */
	struct alex_loghdr hdr;      /* the current epoch, as it must be on disk */
	struct alex_loghdr hdr_disk; /* as its slot was last written */
	int hdr_slot;                /* the slot hdr_disk is in (log.c: slot_for) */
	int hdr_synced;              /* ... and a log sync followed its write */
	uint64_t slot_gone_off, slot_gone_end; /* the other slot, last read:
						  the same epoch still carrying
						  these records (carry.c) */
	uint64_t walk_epoch;         /* recover.c: the carried epoch being read */
	uint64_t own_commits;        /* commits in this epoch's own records (a
				        carried epoch's are not counted) */
	int own_cut;                 /* ... one of which cut a file short */
	uint64_t own_min[ALEX_NFILES]; /* ... the shortest each was cut to
				        (UINT64_MAX: none) */
	int epoch_live;       /* hdr's epoch takes records at append_off; if 0,
				 the next record begins a new epoch (or log) */
	int epoch_started;    /* the base carries this epoch's fence (or the
				 base is not protected): records may follow */
	int log_stub;         /* the file at the log's path holds nothing */
	int log_virgin;       /* this engine made the log: until its first
				 checkpoint no record of an older epoch lies
				 where a new one goes (protect.c: riding) */
	uint64_t append_off;  /* where the next record goes */
	uint64_t alloc_end;   /* preallocated end of the log file */
	uint64_t next_lsn;
	uint32_t prev_crc;
	uint32_t prev_crc_staged; /* hdr_crc of the record being written */
	uint32_t staged_hdr_len;  /* its header, table and condition */
	uint32_t nonce;
	uint64_t txn;         /* id of the open transaction */
	uint64_t epoch_commits; /* commit records in the current epoch */
	int failed;           /* an unrecoverable I/O error happened */
	int above_attached;   /* a staging engine is stacked over this one (or
				 was, and left nothing unmerged): without it,
				 an epoch that says STAGED is never ended */
	int above_holds;      /* a staging engine over this one (io_over.h) holds
			         commits this one does not: no checkpoint, no
			         unmark, no removal of the log until merged */
	int slot_damaged;     /* one header slot failed its checks */
	struct alex_mark mark; /* what the base carries (protect.c) */
	uint32_t perm_log, perm_base; /* ALEX_EPERMS: the modes, for the message */
	int txn_truncated;    /* the open transaction shrank a file: the
				 committed map already lost blocks to it */

	/* logical files: view (incl. the open transaction) and committed */
	uint64_t size[ALEX_NFILES], csize[ALEX_NFILES];
	uint64_t limit[ALEX_NFILES], climit[ALEX_NFILES]; /* base bytes valid below */
	uint64_t trunc[ALEX_NFILES];  /* lowest size since the last record */
	uint64_t txn_cut[ALEX_NFILES]; /* lowest size of the open transaction
					  (spills do not reset it: merge.c) */

	struct alex_map map;      /* committed blocks */
	struct alex_map pending;  /* spilled blocks of the open transaction */
	struct alex_collect col;

	/* record staging: header + table + payload, 4096-aligned */
	uint8_t *rec;
	size_t rec_cap;
	size_t rec_dirty;         /* rec holds zeros from here on (stage.c) */
	uint8_t *scratch;         /* two blocks: decode input, block assembly */
	/* page 1's newest log copy, decoded (read.c): SQLite reads its change
	 * counter at every transaction, and this engine wrote it last, more
	 * often than not.  Valid for one place in one epoch of the log.  A
	 * commit keeps only the header (the counter's bytes; SQLite reads the
	 * page whole only after another process changed it, and then it is
	 * another place); a page decoded from the log is kept whole. */
#define ALEX_P1_HEAD 100u /* SQLite's database header */
	struct alex_page1 {
		int valid;
		uint32_t len;     /* bytes of img that hold the page: ALEX_P1_HEAD or a block */
		struct alex_loc loc;
		uint64_t epoch;
		uint32_t salt;
		uint8_t *img;     /* a block, made with scratch */
	} p1;
	struct alex_ks *order;    /* live collector slots sorted by key */
	struct alex_known *known; /* blocks held by place (known.h), made on first use */

	/* transactions across databases (alex_commit_cond) */
	const char *cond;         /* the super-journal of the record being staged */
	int cond_open;            /* a conditional commit not yet resolved: no
				     checkpoint may copy it */
	char *doubt;              /* recovery: the super-journal of a held group */
	uint64_t doubt_off;       /* where that group starts in the log */

	int unsynced_commit;      /* a commit record is not yet synced */
	int unsynced_spill;       /* a spill record is not yet synced */

	/* durability */
	uint64_t unsynced_bytes;
	uint64_t unsynced_since_ns;
	uint64_t unsynced_seq;    /* +1 with every record counted unsynced */
	uint64_t sync_resets;     /* +1 whenever everything became synced */
	int bg_asked;             /* alex_sync_wanted said yes; no job since */
	int bg_want;              /* ... and has yet to say it */
	struct {                  /* a sync outside the caller's lock (commit.c) */
		int on;
		int parked;       /* the log was closed meanwhile: fd waits
				     for the sync to end (alex_log_drop) */
		int fd;
		uint64_t seq, bytes, resets, start_ns; /* what it covers */
		int state;        /* ALEX_BG_* (atomic: alex_sync_run runs
				     without the lock) */
		int err;          /* its fdatasync's, once DONE */
		int carry;        /* the base file's, for a carried epoch's
				     copy (carry.c), not the log's */
	} bg;
	struct {                  /* a carried epoch's copy (carry.c) */
		int state;        /* ALEX_CA_*, under the caller's lock */
		uint64_t epoch;   /* the epoch whose carried records it copied */
		uint32_t salt;
		int waits;        /* commits since it was copied, not synced */
		int err;          /* the sync's, once DONE */
		uint64_t mine;    /* the epoch this engine began by a carry */
		uint32_t mine_salt;
		uint64_t *keys;   /* COPYING: the blocks to copy, sorted */
		uint8_t *buf;     /* ... and room for a slice of them */
		size_t n, pos;    /* ... how many, and how many copied */
		uint64_t gone_off, gone_end; /* the stretch let go, until the
						header saying so is synced */
		uint64_t used;    /* the log's length at the last slice */
		int pause;        /* commits until a failed copy is tried again */
	} ca;
#define ALEX_CA_IDLE 0
#define ALEX_CA_COPYING 4   /* copying, a slice at each commit */
#define ALEX_CA_COPIED 1    /* copied, the base file's sync wanted */
#define ALEX_CA_SYNCING 2   /* the syncing thread took it */
#define ALEX_CA_DONE 3      /* synced (or failed: err) */
#define ALEX_BG_STARTED 1   /* begun, its fdatasync not yet */
#define ALEX_BG_RUNNING 2   /* in its fdatasync */
#define ALEX_BG_DONE 3
#define ALEX_BG_CANCELLED 4 /* an inline sync came first: nothing to do */

	/* disk space: the free bytes last seen, when the log grew */
	uint64_t space_avail;
	int making_room;          /* a checkpoint for room (alex_make_room) */
	int rec_locked;           /* recovery runs under SQLite's lock (a locked
				     catch-up, the tool), not at an open, which
				     holds none: only then may it write */
	int merged_windows;       /* a staging engine above this NORMAL (or OFF)
				     one: its commits are merges, one a window,
				     synced (io_over.c); its space is reserved
				     as NORMAL's (log_space.c) */
	int stage_room;           /* a merge into this engine may checkpoint it
				     for room, keeping the fence (alex_merge_room) */
	int ckpt_held;            /* a merge under SQLite's RESERVED lock only
				     (alex_merge_held): readers may be at work,
				     so no checkpoint writes the database file */
	int no_allocate;          /* the log's file system has no fallocate */
	int log_direct;           /* records go to the log through log_dfd */
	int writes_now;           /* alex_commit_now has been used: FULL's
				     records go through the page cache from
				     then on (a direct write waits for the
				     device, ~110 us a page: a kill would tear
				     SQLite's transaction far more often than
				     without ALEX) */
	int log_dfd;              /* the log's O_DIRECT descriptor, or -1 */
	int log_foreign;          /* the log holds commits this engine read
				     (another process's, or a crash's) and has
				     not synced since: a checkpoint syncs first */
#define ALEX_SPACE_LOW(db) ((db)->space_avail < 4 * (db)->cfg.checkpoint_bytes)

	/* compression */
	union LZ4_stream_u *lz4;  /* reused state: no 16 KiB reset per block */
	unsigned lz4_misses, lz4_skip;

	uint64_t view_gen;        /* moves when a catch-up may have changed the
				     view from outside this engine (view.c) */
	uint64_t base_stamp;      /* the database file's size and header as last
				     read (protect.c): with nothing in the log,
				     a program without ALEX changed it if this did */
	int base_markable;        /* ... and it was an SQLite database without a
				     mark, which any fenced epoch would put there
				     before its first record (refresh.c) */
	int nolog_seen;           /* the last catch-up looked for a log and found
				     none, with the file's stamp then: */
	uint64_t nolog_stamp;
	int below_looked;         /* a staging engine's catch-up, right after
				     below's own (merge.c): below's stamp is now */
	/* The database file's header as the last probe read it, unmasked,
	 * while no log was open (protect.c): SQLite's change-counter read and
	 * the staging engine's probe through this engine are answered from it
	 * (read.c), not with a pread each.  Only until something of ours may
	 * write the file -- a log made or opened, a mark -- or the caller's
	 * lock ends (alex_base_hdr_forget, from the interposer's lock hooks):
	 * outside it another program may.  Under it another process's mark
	 * may still come (a spill's prepare under RESERVED writes bytes
	 * 19..91), but a mark unmasks to the page it covers: kept unmasked,
	 * the copy stays the file's content.  valid is atomic: the hooks drop
	 * it without the engine's mutex. */
	struct alex_base_head {
		int valid;
		uint8_t img[ALEX_BASE_HDR];
	} bh;
	struct alex_stats st;
};

/* Where the current epoch's records begin (format.h: data_off); no log,
 * no header: where a new log's would. */
/* A new epoch's own records: none yet, none cut a file (carry.c). */
static inline void alex_own_reset(struct alex_db *db)
{
	db->own_commits = 0;
	db->own_cut = 0;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->own_min[f] = UINT64_MAX;
}

static inline uint64_t alex_data_off(const struct alex_db *db)
{
	return db->hdr.data_off ? db->hdr.data_off : ALEX_LOG_DATA;
}

#endif
