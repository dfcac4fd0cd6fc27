/* The engine with a key (docs/ENCRYPTION.md): what it writes holds no
 * plaintext, reads back through a reopen, refuses a wrong key, no key, and
 * a database in clear; and a power cut after any write keeps every
 * acknowledged commit, as without a key. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "xts.h"

#define NB 6u      /* blocks a transaction writes */
#define SECRET "SECRET-ROW-"

static alex_mem *mem;
static struct alex_io io;
static struct alex_key *key, *key2;
static struct alex_config cfg;

static void setup(void)
{
	struct alex_xts *x;

	mem = alex_mem_new();
	io = alex_mem_io(mem);
	x = xts_for(11, &key);
	alex_xts_free(x);
	x = xts_for(12, &key2);
	alex_xts_free(x);
	small_config(&cfg);
	cfg.key = key;
}

static void teardown(void)
{
	alex_mem_free(mem);
	alex_key_free(key);
	alex_key_free(key2);
}

/* Block blk as transaction txn writes it: page 1 is an SQLite header
 * (the encrypted file keeps SQLite's magic only there), every block
 * carries recognisable text. */
static void xblock(uint8_t *b, uint32_t txn, uint32_t blk)
{
	memset(b, '.', BLK);
	for (unsigned i = 0; i < BLK; i += 32)
		snprintf((char *)b + i, 32, SECRET "%05u-%03u-%08u", txn, blk, i);
	if (blk && (txn + blk) % 2 == 0) {
		/* a b-tree leaf with a zero gap: the log stores it without the
		 * gap (GAP), whose header only the key can read */
		memset(b, 0, 3008);
		b[0] = 0x0d, b[4] = 1, b[5] = 3008 >> 8, b[6] = 3008 & 0xff;
		b[8] = 3008 >> 8, b[9] = 3008 & 0xff;
	}
	if (blk)
		return;
	memset(b, 0, 100);
	memcpy(b, "SQLite format 3", 16);
	b[16] = 0x10, b[18] = 1, b[19] = 1, b[21] = 64, b[22] = 32, b[23] = 32;
	for (int i = 0; i < 4; i++) {
		b[24 + i] = b[92 + i] = (uint8_t)(txn >> (24 - 8 * i)); /* change counter */
		b[28 + i] = (uint8_t)(NB >> (24 - 8 * i));
	}
	b[96] = 0x00, b[97] = 0x2e, b[98] = 0x5f, b[99] = 0x1a;
}

static void put(alex_db *db, uint32_t txn)
{
	uint8_t b[BLK];
	for (uint32_t i = 0; i < NB; i++) {
		xblock(b, txn, i);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)i * BLK), 0);
	}
}

/* The transaction whose blocks the database holds (0: empty), or -1 for
 * a mix or garbage. */
static int64_t which(alex_db *db)
{
	uint8_t b[BLK], want[BLK];
	size_t got;
	int64_t t = -2;

	for (uint32_t i = 0; i < NB; i++) {
		if (alex_read(db, ALEX_FILE_DB, b, BLK, (uint64_t)i * BLK, &got))
			return -1;
		if (!got)
			return t == -2 || t == 0 ? 0 : -1;
		unsigned txn = 0;
		if (sscanf((char *)b + 3008, "%*[^0-9]%5u", &txn) != 1)
			return -1;
		xblock(want, txn, i);
		if (got != BLK || memcmp(b, want, BLK) || (t != -2 && t != txn))
			return -1;
		t = txn;
	}
	return t;
}

static int holds(const char *path, const char *s)
{
	size_t len;
	const uint8_t *p = alex_mem_get(mem, path, &len);
	return p && memmem(p, len, s, strlen(s)) != NULL;
}

Test(engine_xts, round_trip_and_nothing_in_clear, .init = setup, .fini = teardown)
{
	alex_db *db = open_engine(&cfg, &io);

	for (uint32_t t = 1; t <= 30; t++) {
		put(db, t);
		cr_assert_eq(alex_commit(db), 0);
		if (t == 12)
			cr_assert_eq(alex_checkpoint(db), 0);
	}
	cr_expect_eq(which(db), 30);
	cr_assert_eq(alex_close(db), 0); /* the log keeps 18 commits */
	cr_expect(!holds(DB, SECRET), "the database file holds plaintext");
	cr_expect(!holds(DB, "SQLite format 3"), "the database file shows SQLite's magic");
	cr_expect(!holds(LOG, SECRET), "the log holds plaintext");

	db = open_engine(&cfg, &io);
	cr_expect_eq(which(db), 30);
	cr_assert_eq(alex_checkpoint(db), 0);
	cr_expect_eq(which(db), 30);
	cr_assert_eq(alex_close(db), 0);
	cr_expect(!holds(DB, SECRET));
	db = open_engine(&cfg, &io);
	int64_t w = which(db);
	cr_expect_eq(w, 30, "after the checkpoint, from the database file: %ld", (long)w);
	alex_close(db);

	/* another key, no key: refused before a page is read */
	struct alex_config other = cfg;
	other.key = key2;
	int orc = alex_open(DB, &other, &io, &db);
	cr_expect_eq(orc, ALEX_EKEY, "%s", alex_strerror(orc));
	other.key = NULL;
	cr_expect_eq(alex_open(DB, &other, &io, &db), ALEX_ENOKEY);
}

Test(engine_xts, a_database_in_clear_is_not_taken_with_a_key, .init = setup, .fini = teardown)
{
	struct alex_config plain = cfg;
	alex_db *db;

	plain.key = NULL;
	db = open_engine(&plain, &io);
	put(db, 1);
	cr_assert_eq(alex_commit(db), 0);
	cr_assert_eq(alex_checkpoint(db), 0);
	alex_close(db);
	cr_expect(holds(DB, SECRET));
	cr_expect_eq(alex_open(DB, &cfg, &io, &db), ALEX_EPLAIN);
}

/* A log's own check: an encrypted log beside an empty database is refused
 * without the key, and a log in clear with one. */
Test(engine_xts, the_log_says_whether_it_is_encrypted, .init = setup, .fini = teardown)
{
	struct alex_config plain = cfg;
	alex_db *db = open_engine(&cfg, &io);

	put(db, 1);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db); /* the log holds the commit; the database is empty */
	cr_assert_eq(alex_mem_set(mem, DB, "", 0), 0);
	plain.key = NULL;
	cr_expect_eq(alex_open(DB, &plain, &io, &db), ALEX_ENOKEY);
	cr_assert_eq(alex_mem_set(mem, LOG, "", 0), 0); /* a log made anew, in clear */
	db = open_engine(&plain, &io);
	put(db, 2);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);
	cr_assert_eq(alex_mem_set(mem, DB, "", 0), 0);
	cr_expect_eq(alex_open(DB, &cfg, &io, &db), ALEX_EPLAIN);
}

/* Power cuts: after every write, sync and truncation of a workload of
 * commits and checkpoints in FULL mode, images that lose, keep, tear or
 * keep any subset of the unsynced writes; each must open with the key
 * and hold the last acknowledged transaction or the one in flight. */
static uint32_t acked, cur;
static unsigned cuts, bad;

static void on_op(void *arg, uint64_t op, enum alex_mem_op kind, int fd)
{
	(void)arg, (void)kind, (void)fd;
	for (int how = ALEX_CRASH_LOSE; how <= ALEX_CRASH_SUBSET; how++) {
		/* not a write torn inside a sector: encryption relies on a
		 * sector written whole (docs/ENCRYPTION.md); SUBSET keeps any
		 * subset of whole sectors */
		if (how == ALEX_CRASH_TEAR)
			continue;
		alex_mem *c = alex_mem_crash(mem, how, op * 7 + (uint64_t)how);
		struct alex_io cio = alex_mem_io(c);
		alex_db *db;
		int rc = alex_open(DB, &cfg, &cio, &db);
		int64_t t = rc ? -3 : which(db);
		cuts++;
		if (t != acked && !(t == cur && cur != acked)) {
			if (!bad)
				cr_log_error("op %lu, cut %d: open %s, holds %ld, acknowledged %u",
					     (unsigned long)op, how, alex_strerror(rc), (long)t, acked);
			bad++;
		}
		if (!rc)
			alex_close(db);
		alex_mem_free(c);
	}
}

Test(engine_xts, power_cuts_keep_every_acknowledged_commit, .init = setup, .fini = teardown)
{
	alex_db *db = open_engine(&cfg, &io);

	alex_mem_on_op(mem, on_op, NULL);
	for (uint32_t t = 1; t <= 12; t++) {
		cur = t;
		put(db, t);
		cr_assert_eq(alex_commit(db), 0);
		acked = t;
		if (t % 5 == 0) {
			cr_assert_eq(alex_checkpoint(db), 0);
		}
	}
	alex_mem_on_op(mem, NULL, NULL);
	alex_close(db);
	cr_expect_eq(bad, 0, "%u of %u power cuts lost or garbled a commit", bad, cuts);
	cr_expect_gt(cuts, 100);
}
