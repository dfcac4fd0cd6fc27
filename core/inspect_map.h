/*
 * inspect_map.h - a read-only look at a log, for `alex inspect`: its header
 * slots, the chain of records of its current epoch, and the block map those
 * records build, with what is live in it and what is not.
 *
 * Unlike alex_open it takes no lock (neither SQLite's nor the log's), writes
 * nothing, syncs nothing and repairs nothing: it opens the log and the
 * database file O_RDONLY (by system call, so that even a preloaded
 * libalex.so never sees them) and decodes their bytes with the pure
 * functions of format.h, in the order and by the rules recovery uses
 * (recover.c), so that it may look at a log other processes are writing.
 * A log that changed while it was read, or looks damaged, is read again (a
 * few times), so a record caught half written is not reported as damage.
 */
#ifndef ALEX_INSPECT_MAP_H
#define ALEX_INSPECT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "alex.h"
#include "db.h"
#include "format.h"
#include "map.h"

enum alex_slot_state { ALEX_SLOT_UNWRITTEN = 0, ALEX_SLOT_VALID, ALEX_SLOT_DAMAGED };

/* Do the current epoch's records count?  Decided from the database file's
 * fence as recovery decides it (protect.c). */
enum alex_epoch_state {
	ALEX_EPOCH_LIVE,     /* fenced, and the file carries the fence */
	ALEX_EPOCH_UNFENCED, /* not fenced (format 1, a file not SQLite's): they count */
	ALEX_EPOCH_APPLIED,  /* fenced, the file no longer carries it: checkpointed */
	ALEX_EPOCH_FOREIGN   /* the file carries another log's fence: alex_open
				refuses the pair (ALEX_EFOREIGN) */
};

struct alex_lm_rec {
	uint64_t off, lsn, txn;
	uint32_t rec_len, hdr_len, nblocks, flags; /* flags: ALEX_REC_* */
	uint32_t lz4, gap, delta; /* blocks stored by LZ4, without their gap, as deltas */
	uint32_t delta_base;      /* ... of the deltas, rooted at the database file */
	uint64_t stored;         /* payload: the blocks as stored */
	uint64_t live;           /* of the payload, what the map points at */
	uint64_t size[ALEX_NFILES], trunc[ALEX_NFILES];
	size_t first;            /* its blocks: ent[first .. first + nblocks) */
	enum alex_rec_state state;
	char *cond;              /* COND: the super-journal, else NULL */
};

struct alex_lm_ent {
	uint64_t key;            /* alex_key(file, block) */
	struct alex_loc loc;
	size_t rec;              /* index of the record that holds it */
};

/* Records found past the end of the chain, by epoch: older epochs' bytes
 * not yet overwritten, an abandoned chain, or this epoch's lost commits. */
struct alex_lm_left {
	uint64_t epoch, records, bytes;
};

struct alex_logmap {
	uint64_t log_size;
	int in_use;              /* an engine holds the log's open lock */
	int changed;             /* it kept changing while being read */
	enum alex_slot_state slot[2];
	struct alex_loghdr slot_hdr[2];
	int cur;                 /* the current epoch's slot, -1 if none */
	int hdr_err;             /* no usable header: ALEX_ECORRUPT, ALEX_EVERSION */
	int empty;               /* the file holds nothing (empty, or its
				    making was cut short) */
	int adopted;             /* the newer slot is damaged: the epoch comes
				    from its first record (recovery rewrites it) */
	struct alex_loghdr hdr;  /* the current epoch */
	enum alex_epoch_state epoch_state;

	int base_exists;
	struct alex_mark mark;   /* what the database file carries (protect.c) */
	uint8_t base_hdr[ALEX_BASE_HDR]; /* its header as SQLite reads it */
	int have_base_hdr;
	uint64_t base_size[ALEX_NFILES]; /* UINT64_MAX: no such file */

	struct alex_lm_rec *rec; /* the chain, in log order */
	size_t nrec, rec_cap;
	struct alex_lm_ent *ent; /* every block of every record */
	size_t nent, ent_cap;
	struct alex_lm_ent *blk; /* the map: newest committed copies, by key */
	size_t nblk;
	struct alex_lm_left *left;
	size_t nleft;

	uint64_t end;            /* where the chain stops, and why */
	enum alex_stop stop;
	uint64_t lost_off;       /* a commit of this epoch past damage: lost */
	uint64_t used;           /* bytes of the chain's records */
	uint64_t live;           /* stored bytes the map points at */
	uint64_t commits;        /* COMMIT records that count (or counted) */
	uint64_t size[ALEX_NFILES]; /* logical sizes after the last commit */
	int have_page1;          /* page1: the newest block 0 of the database */
	uint8_t page1[ALEX_BASE_HDR];
};

/*
 * Reads "<db_path>-alex" into *lm (freed with alex_logmap_free, also after
 * an error).  0, ENOENT when there is no log, another errno, or ALEX_ENOMEM.
 * A log that cannot be used (lm->hdr_err) or is damaged (lm->stop, lost_off)
 * still returns 0: what it holds up to the damage is in *lm.
 */
int alex_logmap_read(const char *db_path, struct alex_logmap *lm);
void alex_logmap_free(struct alex_logmap *lm);

/* Is the log damaged, as `alex verify` would say: a record that is not
 * valid where one should be, commits lost behind it, or no usable header. */
int alex_logmap_damaged(const struct alex_logmap *lm);

#endif
