/*
 * format.h - the byte format of an ALEX log ("<db>-alex"), and its pure
 * encoder and decoder.  man/alex-log.5 says the same for users.
 *
 * All integers are little-endian.  The log is a sequence of 4096-byte blocks.
 *
 * Blocks 0 and 1: header slots.  A new epoch writes the slot (epoch % 2), so a
 * torn header write always leaves the other slot, and the epoch it describes,
 * intact.  The valid slot with the higher epoch is the current one.
 *
 *   off len  field
 *     0   8  magic      "ALEXLOG\0"
 *     8   4  version    ALEX_FORMAT_NEW (10; formats 1 to 9 are read too).
 *                       GAP blocks are written only in a log of version 3
 *                       or later; a reader that knows only 2 refuses such a
 *                       log whole (below) instead of taking its records for
 *                       damage.  Version 4 adds data_off: a reader that
 *                       knows only 3 would look for the epoch's records in
 *                       the wrong place, and refuses it
 *    12   4  block_size 4096
 *    16  16  uuid       random, fixed at creation: names this log
 *    32   8  epoch      >= 1, +1 at every checkpoint
 *    40   8  start_lsn  LSN of the first record of this epoch
 *    48   4  salt       random per epoch: prev_crc of the epoch's first record
 *                       Version 5 is version 4 encrypted (log_xts.h,
 *                       alex-log(5)): flag XTS, which no other version has.
 *                       Version 6 is version 4 with records on 512-byte
 *                       sectors (below): a reader that knows only 4 or 5
 *                       would take a record of 1536 bytes for damage.
 *                       Version 7 is version 6 with DELTA blocks (below):
 *                       a reader that knows only 6 would take one for damage.
 *                       Version 8 may say STAGED (flags); version 9 is 8
 *                       with DELTA blocks rooted at the database file
 *                       (below), which a reader of 8 would take for damage
 *                       Version 10 is 9 with carried epochs (below)
 *    52   4  flags      bit 0 BASE: bytes 64..163 hold the base copy
 *                       bit 1 FENCED: the database file was marked with this
 *                       epoch's fence before its first COMMIT record; the
 *                       records count only while the file carries that fence
 *                       (protect.c); never set in format 1
 *                       bit 2 XTS: format 5, always
 *    56   4  base_crc   crc32c of bytes 64..163 (0 without BASE); in
 *                       version 4, of bytes 64..171
 *    60   4  crc        crc32c of bytes 0..59
 *    64 100  base       the database file's first 100 bytes when the epoch's
 *                       first record was written (byte 19 unmarked; zeros
 *                       for an empty file): which database this log is for.
 *                       A staging log ("<db>-alex-stage", io_over.h), whose
 *                       base is another engine, holds that engine's point
 *                       instead: "ALEXSTAGE", zeros to 16, its log's uuid,
 *                       the lsn its next record takes (8), zeros (or all
 *                       zeros after the magic when it had no log); its
 *                       records count only while the engine below is at
 *                       that point (recover.c)
 *   164   8  data_off   version 4: where the epoch's first record goes, a
 *                       multiple of 4096, at least 8192 (always 8192 before)
 *   Version 10, under base_crc too (64..219):
 *   172   8  fence_epoch whose fence the database file carries for this
 *                       epoch's records (1..epoch; the epoch's own unless
 *                       carried)
 *   180   8  prev_epoch 0, or the carried epoch: its records, [prev_off,
 *   188   8  prev_off   prev_end) from lsn prev_lsn under salt prev_salt,
 *   196   8  prev_end   are replayed before this epoch's (recover.c), all of
 *   204   8  prev_lsn   them; data_off lies outside them
 *   212   4  prev_salt
 *   216   4  zero
 *   The rest of the slot is zero (bytes 172..219 too, before version 10).
 *   Logs written before BASE existed have flags 0 and are not checked
 *   against their database.
 *
 *   Carried epochs (version 10, carry.c): a FULL-mode checkpoint writes
 *   the next epoch's slot naming the last epoch's records and keeping its
 *   fence, without a sync or a write to the database file; the copy into
 *   the file comes at a later commit, and its sync outside the commit, and
 *   then the slot is written again without the carried epoch.  A new slot
 *   (a new epoch, or the same one without its carried records) goes to the
 *   slot not holding the current one, so the two no longer follow the
 *   epoch's parity; of two valid slots of one epoch the one without a
 *   carried epoch is current.  Every record of an epoch that carries one,
 *   or whose fence is another epoch's, says CARRY: no slot is rebuilt from
 *   it (protect.c: alex_protect_adopt), since a record cannot name what
 *   its epoch carries.
 *
 *   An epoch begins at 8192, or, when the one before it was short (under
 *   ALEX_LOG_RUN bytes from 8192 to its end), right where that one's last
 *   commit ended: its records then never go over those of the epoch
 *   before, whose fence the disk may still hold, and the new epoch's fence
 *   may ride on its first commit's sync (protect.c) -- a kept log's short
 *   processes sync twice, not three times.  Such an epoch's slot says
 *   FENCED from its first write.
 *
 *   A log keeps the version it was made with (format 1: 2 from its next
 *   epoch on), so that no epoch of it has a version its other slot's
 *   reader does not know.  A new format-3 log's unused slot 0 holds a
 *   placeholder until epoch 2 is written there: the magic, version 3,
 *   zeros, and the complement of the crc at 60.  A reader of format 3
 *   takes it for a slot never written; a reader of format 2 sees a
 *   damaged slot beside one of an unknown version and refuses the log
 *   (with the slot unwritten it would take the log for one still being
 *   made, and replace it).  A reader refuses a log either of whose slots
 *   has a version it does not know, for the same reason.
 *
 *   A slot is written when its epoch begins (by a checkpoint, so that other
 *   processes see it) and again, with FENCED, together with the epoch's
 *   first COMMIT record, under that record's fdatasync.  A new log over an
 *   SQLite database says FENCED in its first slot already: its first
 *   epoch's mark rides on that fdatasync (protect.c).  Bytes 0 to 2 of
 *   the log file are lock bytes (io.h: ALEX_LOCK_OPEN, ALEX_LOCK_CKPT,
 *   ALEX_LOCK_WRITER).
 *
 * From the epoch's data_off on: records, back to back, each a multiple of
 * 512 bytes long (ALEX_SECTOR; formats 1 to 5 wrote multiples of 4096, and
 * still do in logs of those versions).  A record is one transaction, or a
 * part of one too large for memory (a spill).  Fixed header:
 *
 *   off len  field
 *     0   4  magic      "ALXR"
 *     4   4  hdr_len    112 + 20 * nblocks + cond_len
 *     8   4  rec_len    whole record incl. padding; a multiple of 512
 *    12   4  nblocks
 *    16   8  epoch      must equal the header's epoch
 *    24   8  lsn        must be the previous record's lsn + 1 (start_lsn first)
 *    32   8  txn        transaction id; spills carry their commit's id
 *    40   4  flags      bit 0 COMMIT: this record ends transaction txn
 *                       bit 1 COND: a commit of one database of a transaction
 *                       across several (SQLite's super-journal); it stands
 *                       once a later commit follows it in the epoch, or once
 *                       the super-journal it names no longer exists
 *                       bit 2 CARRY (format 10): its epoch is carried (above)
 *    44   4  nonce      random per engine open: two writers never share a chain
 *    48   4  prev_crc   hdr_crc of the previous record (the salt for the first)
 *    52   4  table_crc  crc32c of the block table
 *    56  24  size[3]    logical size of db, journal, wal after this record
 *                       (each at most 2^48)
 *    80  24  trunc[3]   lowest size each file had during this record's writes,
 *                       or all-ones: bytes at or past it no longer come from
 *                       older records or the base file
 *   104   4  cond_len   length of the super-journal's path after the table
 *                       (COND), 1..4096; 0 otherwise (format 1: reserved 0)
 *   108   4  hdr_crc    crc32c of bytes 0..107
 *
 * Block table, nblocks entries of 20 bytes, sorted by (file, block):
 *     0   8  block      logical byte offset / 4096, below 2^36
 *     8   1  file       0 db, 1 journal, 2 wal
 *     9   1  flags      bit 0 LZ4: stored bytes are an LZ4 block of 4096 bytes
 *                       bit 1 GAP: stored bytes are u16 off, u16 len, then
 *                       the block without the len zero bytes at off
 *                       (off + len <= 4096, len >= 1); never both bits
 *                       bit 2 DELTA (format 7): the stored bytes change an
 *                       earlier version of the block (below); alone
 *    10   2  reserved   0
 *    12   4  stored_len 1..4096; exactly 4096 when raw, 4 + 4096 - len for GAP,
 *                       20..1024 for DELTA
 *    16   4  crc        crc32c of the stored bytes
 *
 * Then, for COND, cond_len bytes: the super-journal's absolute path, no NUL;
 * table_crc covers them with the table.
 *
 * Payload: the stored bytes of each block in table order, packed, starting at
 * hdr_len; then zeros up to rec_len.  Header embedding: a commit whose
 * header and stored bytes fit in 4096 is a single record of at most 4096
 * bytes (a one-row INSERT: page 1 and one leaf, each without its gap).
 *
 * Sectors, not blocks (format 6): a commit is written in the fewest
 * 512-byte sectors that hold it, and the next record begins on the next
 * sector, so no write ever changes a byte of an earlier record.  A sector
 * write's neighbours on the same 4096-byte page (or physical sector) are
 * rewritten unchanged by the page cache -- the "powersafe overwrite" that
 * SQLite itself assumes by default (its WAL shares pages between commits
 * too).  Writers choose the padding (stage.c): NORMAL mode packs records
 * on sectors; FULL mode ends each record on a 4096-byte boundary unless
 * it writes the log direct (ALEX_DIRECT), sector by sector.
 *
 * Deltas (format 7): a DELTA block is the block as it was at an earlier
 * place in the same epoch's log (its "prev"), changed in a few byte runs
 * -- a one-row INSERT changes a hundred bytes of a leaf and eight of page
 * 1, not the 2 KiB that even a GAP leaf stores.  Stored bytes:
 *
 *     0   8  prev_off   log offset of prev's stored bytes; prev_off +
 *                       prev_len is at most this block's own offset
 *     8   4  prev_len   prev's stored_len
 *    12   4  prev_crc   prev's crc: prev is read and checked as any block
 *    16   1  prev_flags prev's flags (raw, LZ4, GAP or DELTA), or BASE
 *                       (format 9, below)
 *    17   1  depth      1..16: deltas from here to a whole block; 1 exactly
 *                       when prev is not a DELTA, else prev's depth + 1
 *    18   2  reserved   0
 *    20      runs, to the end: u16 off, u16 len >= 1, len bytes; in order,
 *            off at or past the previous run's end, off + len <= 4096
 *
 * The block is prev's content with each run's bytes put at its offset.  A
 * writer takes as prev only a committed place of the epoch whose content
 * it holds in memory (known.c), so a delta costs no read to write; the
 * chain's bound keeps a reader's cost to at most 16 short reads.  prev is
 * earlier in the same chain, so a record that survives a crash has its
 * prevs too; a committed record's place is never written again in its
 * epoch (an uncommitted tail's, an aborted group's, a failed write's may
 * be, and none of those is ever a prev).
 *
 * Deltas of the database file (format 9): a block of the database file
 * that no record of the epoch holds may be stored as a DELTA whose prev is
 * the file's own block -- prev_flags BASE (8), prev_off the block's offset
 * in the database file, prev_len 4096, prev_crc 0, depth 1.  A random
 * update of a large database changes a hundred bytes of a page no record
 * holds; that page whole, even LZ4'd, is some 400 bytes of log.  Only
 * blocks of the database file, never block 0 (its first bytes carry the
 * fence, protect.c), and only below every truncation of the epoch so far:
 * a block cut off later is dropped from the map with its chain, and one
 * that grows back is stored whole.  A block a truncation cuts inside (a
 * page size under 4096) keeps its chain, whose root's tail the checkpoint
 * cuts off before it copies: from then on it is stored whole too, or
 * bytes grown back as they were would be in no run of the chain.
 *
 * The root is read when the block is, not when the delta was made.  It is
 * the same bytes: nothing writes the database file during an epoch but
 * the checkpoint that ends it, and that writes each block's last version,
 * which is the root with the runs of its chain put on it.  A byte outside
 * every run of the chain has the same value in the root, in every version
 * and in any mix of them that a cut checkpoint leaves, sector by sector or
 * byte by byte (SQLite's own assumption: a sector write cut by a power
 * loss leaves old or new bytes, not others); replaying the chain writes
 * every byte inside the runs.  So the block reads the same before,
 * during and after its checkpoint, and after a cut one recovery copies it
 * again the same.  The root has no crc, as the database file has none.
 *
 * Validity: a record is accepted only if every rule holds -- magic, hdr_crc,
 * lengths within bounds and the file, epoch, lsn and prev_crc continuity,
 * table_crc, every block crc, zero padding.  The scan stops at the first
 * record that fails; the chain (prev_crc + nonce) makes sure bytes left from a
 * torn or abandoned tail can never extend a chain written after recovery.
 * Only blocks of transactions whose COMMIT record was accepted are visible.
 */
#ifndef ALEX_FORMAT_H
#define ALEX_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "alex.h"
#include "bytes.h"

#define ALEX_FORMAT_VERSION 4u
#define ALEX_FORMAT_XTS 5u    /* version 4's layout, encrypted (ALEX_HDR_XTS):
				 made only with a key, so that an ALEX that
				 cannot decrypt it refuses it whole */
#define ALEX_FORMAT_V6 6u     /* version 4's layout, records on 512-byte sectors */
#define ALEX_FORMAT_V7 7u     /* version 6 with DELTA blocks */
#define ALEX_FORMAT_V8 8u     /* version 7's layout; may say STAGED (below), and
				 keeps out every reader that cannot honour it */
#define ALEX_FORMAT_V9 9u     /* version 8 with DELTA blocks rooted at the
				 database file (below) */
#define ALEX_FORMAT_V10 10u   /* version 9 with carried epochs (below) */
#define ALEX_FORMAT_NEW ALEX_FORMAT_V10 /* what a new log without a key is made with */
#define ALEX_FORMAT_MAX ALEX_FORMAT_V10 /* the latest this reader knows */
#define ALEX_FORMAT_V3 3u     /* read, and appended to (epochs at 8192 only) */
#define ALEX_FORMAT_V2 2u     /* read, and appended to (without GAP blocks) */
#define ALEX_FORMAT_V1 1u     /* read, never written */
#define ALEX_BLOCK 4096u
#define ALEX_BLOCK_SHIFT 12
#define ALEX_SECTOR 512u      /* records' unit in format 6 (above) */
#define ALEX_LOG_MAGIC "ALEXLOG"      /* 8 bytes with the NUL */
#define ALEX_REC_MAGIC 0x52584c41u    /* "ALXR" */
#define ALEX_HDR_SLOT_USED 220u
#define ALEX_HDR_BASE 1u      /* header flag: the base copy is present */
#define ALEX_HDR_FENCED 2u    /* header flag: the epoch is fenced (protect.c) */
#define ALEX_HDR_XTS 4u       /* header flag, format 5 only: blocks' stored bytes
				 and the base copy are encrypted (log_xts.c) */
#define ALEX_HDR_STAGED 8u    /* header flag, formats 8 and 9: a staging log
				 (<db>-alex-stage, io_over.h) may hold commits
				 this log lacks; every writer goes through it */
#define ALEX_BASE_HDR 100u    /* bytes of the database header copied */
/* The first 16 bytes of an SQLite database, and of the placeholder an
 * empty database file gets while its log holds pages (protect.c); the
 * encrypted file's marker says which it replaced (xts_io.h). */
#define ALEX_SQLITE_MAGIC "SQLite format 3" /* with its NUL: 16 bytes */
#define ALEX_PLACEHOLDER "ALEX-log-pending" /* 16 bytes, no NUL */
#define ALEX_LOG_DATA (2u * ALEX_BLOCK) /* the first record of a log */
/* An epoch whose predecessor ended below ALEX_LOG_DATA + ALEX_LOG_RUN
 * begins right after it (format 4, above); else at ALEX_LOG_DATA. */
#define ALEX_LOG_RUN (1u << 20)
#define ALEX_REC_FIXED 112u
#define ALEX_REC_ENTRY 20u
#define ALEX_REC_COMMIT 1u
#define ALEX_REC_COND 2u
#define ALEX_REC_CARRY 4u     /* format 10: the record's epoch is carried (its
				 header names a fence or records of an earlier
				 epoch), so no header can be rebuilt from it */
#define ALEX_COND_MAX 4096u   /* longest super-journal path a record holds */
#define ALEX_BLK_LZ4 1u
#define ALEX_BLK_GAP 2u
#define ALEX_BLK_DELTA 4u
#define ALEX_GAP_HDR 4u       /* a GAP block's off and len */
#define ALEX_DELTA_HDR 20u    /* a DELTA block's prev and depth */
#define ALEX_DELTA_RUN 4u     /* a run's off and len */
#define ALEX_DELTA_DEPTH 16u  /* longest chain of deltas */
#define ALEX_DELTA_MAX 1024u  /* most stored bytes of a DELTA block */
#define ALEX_DELTA_BASE 8u    /* prev_flags (format 9): prev is the database
				 file's block, not a place in the log */
#define ALEX_NO_TRUNC UINT64_MAX
/* No logical file may be larger (SQLite's own limit is just below it). */
#define ALEX_MAX_FILE (1ull << 48)
/* No record may exceed this; a header that claims more is invalid. */
#define ALEX_REC_MAX (64u << 20)
#define ALEX_REC_MAX_BLOCKS ((ALEX_REC_MAX - ALEX_REC_FIXED) / (ALEX_REC_ENTRY + 1u))

struct alex_loghdr {
	uint8_t uuid[16];
	uint64_t epoch;
	uint64_t start_lsn;
	uint32_t salt;
	uint32_t flags; /* ALEX_HDR_*: BASE (base holds the database's header), FENCED */
	uint8_t base[ALEX_BASE_HDR];
	uint32_t version; /* filled in by decode; encode writes it back (0: the
			     current one), so a slot decodes and encodes alike */
	uint64_t data_off; /* the epoch's first record (0 encodes as ALEX_LOG_DATA) */
	/* format 10 (0 before: fence_epoch then reads as epoch) */
	uint64_t fence_epoch; /* whose fence the database file carries for it */
	uint64_t prev_epoch;  /* 0, or the carried epoch replayed first: */
	uint64_t prev_off, prev_end, prev_lsn; /* its records, first lsn */
	uint32_t prev_salt, reserved;
};

struct alex_rec {
	uint32_t hdr_len, rec_len, nblocks;
	uint32_t cond_len; /* COND: bytes of the super-journal path after the table */
	uint64_t epoch, lsn, txn;
	uint32_t flags, nonce, prev_crc, table_crc;
	uint64_t size[ALEX_NFILES];
	uint64_t trunc[ALEX_NFILES];
	uint32_t hdr_crc; /* filled in by both encode and decode */
};

struct alex_entry {
	uint64_t block;
	uint8_t file;
	uint8_t flags;
	uint32_t stored_len;
	uint32_t crc;
};

static inline uint64_t alex_roundup_block(uint64_t n)
{
	return (n + ALEX_BLOCK - 1) & ~(uint64_t)(ALEX_BLOCK - 1);
}

static inline uint64_t alex_roundup_sector(uint64_t n)
{
	return (n + ALEX_SECTOR - 1) & ~(uint64_t)(ALEX_SECTOR - 1);
}

/* Where an epoch that follows a short one begins, after a last commit
 * that ends at end: on the next block (data_off is a multiple of 4096,
 * records of format 6 end on any sector). */
static inline uint64_t alex_epoch_follows_at(uint64_t end)
{
	return alex_roundup_block(end);
}

/* How much of a record to read first when room bytes of log follow its
 * start: a block, or all there is (a record is at least a sector). */
static inline size_t alex_rec_first(uint64_t room)
{
	return room < ALEX_BLOCK ? (size_t)room : ALEX_BLOCK;
}

/* A GAP block's stored bytes (len of them at in): is its run where it
 * must be?  Fills the run's place in the block. */
static inline int alex_gap_decode(const uint8_t *in, uint32_t len, uint32_t *off, uint32_t *run)
{
	if (len < ALEX_GAP_HDR || len >= ALEX_GAP_HDR + ALEX_BLOCK)
		return 0;
	*off = alex_get16(in);
	*run = alex_get16(in + 2);
	return *run >= 1 && *off + *run <= ALEX_BLOCK && len == ALEX_GAP_HDR + ALEX_BLOCK - *run;
}

/* Header slot: encode into, decode from ALEX_HDR_SLOT_USED bytes (0 or
 * ALEX_E*).  The encoder always writes the base copy and sets ALEX_HDR_BASE. */
void alex_loghdr_encode(uint8_t out[ALEX_HDR_SLOT_USED], const struct alex_loghdr *h);
int alex_loghdr_decode(const uint8_t in[ALEX_HDR_SLOT_USED], struct alex_loghdr *h);
/* The placeholder of a new log's unused slot (above): make, recognise. */
void alex_loghdr_placeholder(uint8_t out[ALEX_HDR_SLOT_USED], uint32_t version);
int alex_loghdr_is_placeholder(const uint8_t in[ALEX_HDR_SLOT_USED]);
/* The version of a log's next epoch, after one of version v. */
/* Version 7's layout: records on sectors, DELTA blocks. */
static inline int alex_format_deltas(uint32_t v)
{
	return v == ALEX_FORMAT_V7 || v == ALEX_FORMAT_V8 || v == ALEX_FORMAT_V9 ||
	       v == ALEX_FORMAT_V10;
}

/* Version 8's layout, which may say STAGED. */
static inline int alex_format_staged(uint32_t v)
{
	return v == ALEX_FORMAT_V8 || v == ALEX_FORMAT_V9 || v == ALEX_FORMAT_V10;
}

/* Version 9: DELTA blocks may be rooted at the database file. */
static inline int alex_format_base_deltas(uint32_t v)
{
	return v == ALEX_FORMAT_V9 || v == ALEX_FORMAT_V10;
}

/* Version 10: epochs may be carried (checkpoint off the commit path). */
static inline int alex_format_carry(uint32_t v)
{
	return v == ALEX_FORMAT_V10;
}

/* The epoch whose fence the database file carries for h's records. */
static inline uint64_t alex_hdr_fence_epoch(const struct alex_loghdr *h)
{
	return h->fence_epoch ? h->fence_epoch : h->epoch;
}

/* Which of two valid slots is current: the later epoch; of one epoch, the
 * slot whose carried records were since checkpointed (format 10 writes it
 * to the other slot); else slot 0. */
static inline int alex_loghdr_pick(const struct alex_loghdr *h0, const struct alex_loghdr *h1)
{
	if (h0->epoch != h1->epoch)
		return h1->epoch > h0->epoch;
	return h0->prev_epoch && !h1->prev_epoch;
}

/* h names no carried epoch (format 10). */
static inline void alex_hdr_no_prev(struct alex_loghdr *h)
{
	h->prev_epoch = h->prev_off = h->prev_end = h->prev_lsn = 0;
	h->prev_salt = 0;
}

/* Is h's epoch carried: its fence another epoch's, or records of the one
 * before still to replay (no header can be rebuilt from its records)? */
static inline int alex_hdr_carried(const struct alex_loghdr *h)
{
	return h->prev_epoch || (h->fence_epoch && h->fence_epoch != h->epoch);
}

static inline uint32_t alex_loghdr_next_version(uint32_t v)
{
	/* format 5 (encrypted) is kept, as every version is */
	return v == ALEX_FORMAT_V1 ? ALEX_FORMAT_V2 : v ? v : ALEX_FORMAT_NEW;
}

/* Records.  The encoder writes the fixed header (and fills r->hdr_crc); the
 * table entries are written with alex_entry_encode before it, since
 * r->table_crc must be known. */
void alex_rec_encode(uint8_t *out, struct alex_rec *r);
void alex_entry_encode(uint8_t *out, const struct alex_entry *e);
void alex_entry_decode(const uint8_t *in, struct alex_entry *e);

/*
 * Decodes and checks the fixed header in buf (avail bytes, at least
 * ALEX_REC_FIXED) against what must come next: epoch, lsn and prev_crc.
 * room is how many bytes the log has from the record's start.  Returns
 * ALEX_STOP_NONE when the record is valid so far (the caller then checks the
 * body with alex_rec_check_body), else the reason it is not a record here.
 */
enum alex_stop alex_rec_decode(const uint8_t *buf, uint64_t room, uint64_t epoch,
			       uint64_t lsn, uint32_t prev_crc, struct alex_rec *r);

/* Does buf (ALEX_REC_FIXED bytes) hold a record header whose own crc holds?
 * Fills r from it, unchecked against any chain: for scans that look for
 * records out of order (recovery's adoption of a lost epoch, look_past). */
int alex_rec_peek(const uint8_t *buf, struct alex_rec *r);

/* Checks the table, each block's crc and the padding of a whole record in
 * rec (r->rec_len bytes).  Returns ALEX_STOP_NONE when all is valid. */
enum alex_stop alex_rec_check_body(const uint8_t *rec, const struct alex_rec *r);
/* The same for a log of version `version`: in format 5 (sealed) a block's
 * stored bytes are ciphertext, whose GAP header is checked when it is
 * decrypted (codec.c); a DELTA block is a format-7 one.  check_body is
 * the current version's. */
enum alex_stop alex_rec_check_in(const uint8_t *rec, const struct alex_rec *r, uint32_t version);

#endif
