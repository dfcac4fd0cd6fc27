/* internal.h - the engine's state, shared by the core's own files only. */
#ifndef ALEX_INTERNAL_H
#define ALEX_INTERNAL_H

#include <stdint.h>

#include "alex.h"
#include "format.h"
#include "io.h"
#include "map.h"

#define ALEX_SLAB_SLOTS 64u

/* Inside the engine only: the file at the log's path holds nothing (empty,
 * or a log whose making was cut short before anything was acknowledged). */
#define ALEX_ENOLOG (-1100)

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

/*
 * The collector: the blocks written since the last record, newest version
 * only.  Slots come from slabs allocated on first need and kept until close,
 * so steady-state writes never call malloc.
 */
struct alex_collect {
	struct alex_map index;   /* key -> slot (loc.off) */
	uint8_t **slabs;         /* nslabs x ALEX_SLAB_SLOTS x 4096 */
	uint64_t *slot_key;      /* key of each used slot, 0 if dropped */
	uint32_t nslabs, maxslabs;
	uint32_t used, max;      /* slots in use (incl. dropped), capacity */
};

struct alex_db {
	struct alex_io io;
	struct alex_config cfg;
	char *path[ALEX_NFILES]; /* base files: db, db-journal, db-wal */
	char *log_path;
	int base_fd[ALEX_NFILES]; /* -1 until needed */
	int log_fd;

	/* log position */
	struct alex_loghdr hdr;      /* the current epoch, as it must be on disk */
	struct alex_loghdr hdr_disk; /* as its slot was last written */
	int epoch_live;       /* hdr's epoch takes records at append_off; if 0,
				 the next record begins a new epoch (or log) */
	int epoch_started;    /* the base carries this epoch's fence (or the
				 base is not protected): records may follow */
	int log_stub;         /* the file at the log's path holds nothing */
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
	int slot_damaged;     /* one header slot failed its checks */
	struct alex_mark mark; /* what the base carries (protect.c) */
	uint32_t perm_log, perm_base; /* ALEX_EPERMS: the modes, for the message */
	int txn_truncated;    /* the open transaction shrank a file: the
				 committed map already lost blocks to it */

	/* logical files: view (incl. the open transaction) and committed */
	uint64_t size[ALEX_NFILES], csize[ALEX_NFILES];
	uint64_t limit[ALEX_NFILES], climit[ALEX_NFILES]; /* base bytes valid below */
	uint64_t trunc[ALEX_NFILES];  /* lowest size since the last record */

	struct alex_map map;      /* committed blocks */
	struct alex_map pending;  /* spilled blocks of the open transaction */
	struct alex_collect col;

	/* record staging: header + table + payload, 4096-aligned */
	uint8_t *rec;
	size_t rec_cap;
	uint8_t *scratch;         /* two blocks: decode input, block assembly */
	struct alex_ks *order;    /* live collector slots sorted by key */

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

	/* disk space: the free bytes last seen, when the log grew */
	uint64_t space_avail;
#define ALEX_SPACE_LOW(db) ((db)->space_avail < 4 * (db)->cfg.checkpoint_bytes)

	/* compression */
	union LZ4_stream_u *lz4;  /* reused state: no 16 KiB reset per block */
	unsigned lz4_misses, lz4_skip;

	struct alex_stats st;
};

/* collect.c */
int alex_col_init(struct alex_collect *c, uint32_t max_slots);
void alex_col_free(struct alex_collect *c);
uint8_t *alex_col_slot(struct alex_collect *c, uint32_t slot);
/* The slot holding key, or -1. */
int64_t alex_col_find(struct alex_collect *c, uint64_t key);
/* A fresh slot for key (the caller fills all 4096 bytes), or -1 when full. */
int64_t alex_col_add(struct alex_collect *c, uint64_t key);
void alex_col_trunc(struct alex_collect *c, unsigned file, uint64_t first);
void alex_col_clear(struct alex_collect *c);
uint64_t alex_col_bytes(const struct alex_collect *c);

/* codec.c: lz4 per block.  Returns the stored length (< 4096 when it
 * compressed) with the stored bytes in out; sets *lz4. */
uint32_t alex_codec_pack(struct alex_db *db, const uint8_t *blk, uint8_t *out, int *lz4);
void alex_codec_free(struct alex_db *db);
int alex_codec_unpack(const uint8_t *in, uint32_t len, uint32_t flags, uint8_t *blk);

/* log.c */
/* Opens the log if there is one (log_fd stays -1 if not), locks it shared
 * (exclusive for tools), checks its mode against the database's, and reads
 * its header.  A file that holds nothing becomes a stub (log_stub). */
int alex_log_open(struct alex_db *db);
/* Closes the log and opens what is at its path now. */
int alex_log_reopen(struct alex_db *db);
/* Was the log removed or made by another process since we opened it?
 * Also refreshes alloc_end. */
int alex_log_changed(struct alex_db *db, int *changed);
/* Reads both header slots: the current one into *out; sets slot_damaged.
 * ALEX_ENOLOG when no slot was ever completely written. */
int alex_log_read_header(struct alex_db *db, struct alex_loghdr *out);
/* Begins the next epoch (making the log if there is none): a new header,
 * written; synced if sync.  On a failed write the engine stops. */
int alex_log_begin_epoch(struct alex_db *db, int sync);
/* Writes db->hdr into its slot (no sync). */
int alex_log_write_header(struct alex_db *db);
int alex_log_append(struct alex_db *db, uint32_t rec_len, uint64_t *rec_off);
int alex_log_sync(struct alex_db *db);
/* Grows the log so that a record of this many blocks fits after the end:
 * a full disk then surfaces as SQLite writes a page (SQLITE_FULL), not
 * later when it syncs. */
int alex_log_reserve(struct alex_db *db, uint32_t blocks);
/* Writes the current header into its slot again, and syncs. */
int alex_log_rewrite_header(struct alex_db *db);
/* Takes (on) or drops the checkpoint lock (ALEX_LOCK_CKPT). */
int alex_log_lock_ckpt(struct alex_db *db, int on);
/* Gives back the log's preallocated space past the last record (a file
 * system running full); the next record grows it again. */
int alex_log_trim(struct alex_db *db);
/* Unlinks the log if no other engine has it open (ALEX_EINUSE if one
 * has); the engine then has no log. */
int alex_log_remove(struct alex_db *db);
/* Reads the stored bytes at loc and decodes them into blk, checking the crc. */
int alex_log_read_block(struct alex_db *db, const struct alex_loc *loc, uint8_t *blk);
uint32_t alex_random32(void);

/* recover.c */
int alex_recover(struct alex_db *db);
/* Applies records other engines committed since this one last looked.
 * may_abort: the caller holds SQLite's SHARED lock, so a transaction across
 * databases whose super-journal still exists is over, and its conditional
 * records here are rolled back (made invalid, durably). */
int alex_refresh_scan(struct alex_db *db, int may_abort);

/* protect.c: the base file's mark while the log holds newer pages */
#define ALEX_MARK 0xa1u
/* The fence of hdr's epoch. */
uint64_t alex_protect_fence(const struct alex_loghdr *hdr);
/* Reads the base's mark into db->mark; a placeholder makes *size 0. */
int alex_protect_probe(struct alex_db *db, uint64_t *size);
/* Does the base carry the fence of db->hdr's epoch (or a format-1 mark)? */
int alex_protect_is_live(const struct alex_db *db);
/* Marks the base with the current epoch's fence and syncs it.  A file that
 * is neither empty nor an SQLite database is left alone (db->mark NONE). */
int alex_protect_mark(struct alex_db *db);
/* Can this page 1 carry the mark and be given back exactly (an SQLite
 * header with zeros where SQLite keeps them)? */
int alex_protect_markable(const uint8_t *blk0, size_t len);
/* Puts the current epoch's mark on a copy of block 0 that holds an SQLite
 * header; 1 if it did. */
int alex_protect_apply(const struct alex_db *db, uint8_t *blk0, size_t len);
/* Takes the mark off: writes the true first bytes of block 0 (size is the
 * file's logical size).  No sync: see the top of protect.c. */
int alex_protect_clear(struct alex_db *db, const uint8_t *blk0, uint64_t size);
/* Restores the true bytes of a marked block 0 read from the base file. */
void alex_protect_unmask(uint8_t *blk0, size_t len);
/* The base's first 100 bytes as SQLite would read them (byte 19 restored,
 * zeros for an empty file or the placeholder): what log headers record. */
int alex_protect_base_header(struct alex_db *db, uint8_t out[ALEX_BASE_HDR]);
/* Is this log the base's?  For an epoch that is not fenced, after
 * recovery: the base must match the header's copy, or the log's own newest
 * block 0 (a checkpoint was cut short after writing it), byte by byte.
 * 0 or ALEX_EFOREIGN. */
int alex_protect_check_base(struct alex_db *db);

/* ckpt.c */
int alex_ckpt_run(struct alex_db *db);

/* flush.c: whether NORMAL mode should sync now. */
int alex_flush_due(const struct alex_config *cfg, uint64_t unsynced_bytes,
		   uint64_t since_ns, uint64_t now_ns);
uint64_t alex_now_ns(void);

#endif
