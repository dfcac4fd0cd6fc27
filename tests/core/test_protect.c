/* The base file's mark (protect.c): which page 1 can carry it, what it
 * changes (byte 19, the change counter, the fence), that every state a
 * crash can leave of its write -- or of its removal -- unmasks to the true
 * page, and the fence that names one epoch of one log. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "bytes.h"
#include "crc32c.h"
#include "db.h"
#include "helpers.h"
#include "protect.h"

#define HDR 100u

static struct alex_db *db;
static alex_mem *mem;

static void setup(void)
{
	db = calloc(1, sizeof *db);
	cr_assert_not_null(db);
	alex_config_default(&db->cfg);
	for (int i = 0; i < 16; i++)
		db->hdr.uuid[i] = (uint8_t)(i * 17 + 1);
	db->hdr.epoch = 5;
	for (int f = 0; f < ALEX_NFILES; f++)
		db->base_fd[f] = -1;
	db->log_fd = -1;
}
static void teardown(void)
{
	free(db);
	alex_mem_free(mem);
	mem = NULL;
}
TestSuite(protect, .init = setup, .fini = teardown);

/* A page 1 as SQLite writes it: magic, read/write versions 1 or 2 equal,
 * change counter equal to "version valid for", zeros at 72..91. */
static void sqlite_page1(uint8_t *p, size_t len, uint32_t counter, uint8_t ver)
{
	memset(p, 0, len);
	memcpy(p, "SQLite format 3", 16);
	p[16] = 0x10; /* page size 4096, big-endian */
	p[18] = p[19] = ver;
	p[21] = 64, p[22] = 32, p[23] = 32;
	for (int i = 0; i < 4; i++)
		p[24 + i] = p[92 + i] = (uint8_t)(counter >> (24 - 8 * i));
	p[44] = 4;        /* schema format */
	p[68] = 0x77;     /* application id: not SQLite's zeros, must stay */
	p[96] = 0x2d;     /* SQLITE_VERSION_NUMBER */
	for (size_t i = HDR; i < len; i++)
		p[i] = (uint8_t)(i * 7);
}

/* The fence is the crc32c of the uuid in the low half and the epoch in
 * the high half: another epoch or another log gives another fence. */
Test(protect, fence_names_one_epoch_of_one_log)
{
	uint64_t f = alex_protect_fence(&db->hdr);

	cr_expect_eq(f, (uint64_t)alex_crc32c(0, db->hdr.uuid, 16) | (5ull << 32));
	db->hdr.epoch = 6;
	cr_expect_neq(alex_protect_fence(&db->hdr), f);
	db->hdr.epoch = 5;
	db->hdr.uuid[15] ^= 1;
	cr_expect_neq(alex_protect_fence(&db->hdr), f);
}

/* Only a page whose marked bytes can all be told back is markable. */
Test(protect, markable_needs_what_unmask_relies_on)
{
	uint8_t p[BLK];

	sqlite_page1(p, BLK, 0x01020304, 1);
	cr_expect(alex_protect_markable(p, BLK));
	cr_expect(alex_protect_markable(p, HDR), "the header alone suffices");
	cr_expect_not(alex_protect_markable(p, HDR - 1), "too short for the header");
	p[0] = 's';
	cr_expect_not(alex_protect_markable(p, BLK), "not an SQLite file");
	sqlite_page1(p, BLK, 9, 3);
	cr_expect_not(alex_protect_markable(p, BLK), "a read version above 2");
	sqlite_page1(p, BLK, 9, 1);
	p[18] = 2;
	cr_expect_not(alex_protect_markable(p, BLK), "bytes 18 and 19 differ");
	sqlite_page1(p, BLK, 9, 1);
	p[95] ^= 1;
	cr_expect_not(alex_protect_markable(p, BLK), "counter is not version-valid-for");
	/* every byte SQLite keeps zero must be zero, one at a time */
	for (unsigned i = 72; i < 92; i++) {
		sqlite_page1(p, BLK, 9, 2);
		p[i] = 1;
		cr_expect_not(alex_protect_markable(p, BLK), "byte %u not zero", i);
	}
}

/* apply changes exactly bytes 19, 24..27, 72..75 and 84..91, as the
 * format says, and nothing else of the block. */
Test(protect, apply_writes_the_documented_mark)
{
	uint8_t p[BLK], orig[BLK];

	sqlite_page1(p, BLK, 0xa0b0c0d0, 1);
	memcpy(orig, p, BLK);
	cr_assert_eq(alex_protect_apply(db, p, BLK), 1);
	cr_expect_eq(p[19], ALEX_MARK);
	for (int i = 0; i < 4; i++)
		cr_expect_eq(p[24 + i], (uint8_t)~orig[24 + i]);
	cr_expect_arr_eq(p + 72, "ALXF", 4);
	cr_expect_eq(alex_get64(p + 84), alex_protect_fence(&db->hdr));
	for (unsigned i = 0; i < BLK; i++) {
		int marked = i == 19 || (i >= 24 && i < 28) || (i >= 72 && i < 76) ||
			     (i >= 84 && i < 92);
		if (!marked)
			cr_assert_eq(p[i], orig[i], "byte %u changed", i);
	}
}

/* Not marked: a base that is not protected, or a page that is not
 * markable (left exactly as it was). */
Test(protect, apply_refuses_without_changing_anything)
{
	uint8_t p[BLK], orig[BLK];

	sqlite_page1(p, BLK, 1, 1);
	memcpy(orig, p, BLK);
	db->cfg.protect_base = 0;
	cr_expect_eq(alex_protect_apply(db, p, BLK), 0);
	cr_expect_arr_eq(p, orig, BLK);
	db->cfg.protect_base = 1;
	p[80] = 1;
	memcpy(orig, p, BLK);
	cr_expect_eq(alex_protect_apply(db, p, BLK), 0);
	cr_expect_arr_eq(p, orig, BLK);
}

/* unmask(apply(p)) == p, for counters whose bytes include 0x00 and 0xff
 * (their inverses are each other) and both versions. */
Test(protect, apply_then_unmask_round_trips)
{
	static const uint32_t counters[] = { 0, 1, 0xffffffffu, 0x00ff00ffu, 0x12345678u };
	uint8_t p[BLK], orig[BLK];

	for (size_t c = 0; c < sizeof counters / sizeof counters[0]; c++)
		for (uint8_t ver = 1; ver <= 2; ver++) {
			sqlite_page1(p, BLK, counters[c], ver);
			memcpy(orig, p, BLK);
			cr_assert_eq(alex_protect_apply(db, p, BLK), 1);
			cr_assert(memcmp(p, orig, BLK) != 0);
			alex_protect_unmask(p, BLK);
			cr_assert_arr_eq(p, orig, BLK, "counter %08x version %u", counters[c],
					 ver);
		}
}

/* The mark is one write of bytes 19..91; a crash may cut it after any
 * byte.  Every such page unmasks to the true one. */
Test(protect, torn_mark_unmasks_at_every_cut)
{
	uint8_t orig[HDR], marked[HDR], p[HDR];

	sqlite_page1(orig, HDR, 0x00ff7f80u, 1);
	memcpy(marked, orig, HDR);
	cr_assert_eq(alex_protect_apply(db, marked, HDR), 1);
	for (unsigned cut = 0; cut <= 92 - 19; cut++) {
		memcpy(p, orig, HDR);
		memcpy(p + 19, marked + 19, cut);
		alex_protect_unmask(p, HDR);
		cr_assert_arr_eq(p, orig, HDR, "mark cut after %u bytes", cut);
	}
}

/* Taking the mark off writes bytes 20..99 first and 0..19 last; a crash
 * may cut the first write anywhere, and stop before the second. */
Test(protect, torn_unmark_unmasks_at_every_cut)
{
	uint8_t orig[HDR], marked[HDR], p[HDR];

	sqlite_page1(orig, HDR, 0xdeadbeefu, 2);
	memcpy(marked, orig, HDR);
	cr_assert_eq(alex_protect_apply(db, marked, HDR), 1);
	for (unsigned cut = 0; cut <= HDR - 20; cut++) {
		memcpy(p, marked, HDR);
		memcpy(p + 20, orig + 20, cut);
		alex_protect_unmask(p, HDR);
		cr_assert_arr_eq(p, orig, HDR, "unmark cut after %u bytes", cut);
	}
}

/* Format 1 marked byte 19 only: restored from byte 18, nothing else
 * touched.  A page that is not SQLite's, or is unmarked, is left alone;
 * a short read restores what it holds of byte 19. */
Test(protect, unmask_legacy_foreign_and_short)
{
	uint8_t orig[BLK], p[BLK];

	sqlite_page1(orig, BLK, 77, 1);
	memcpy(p, orig, BLK);
	p[19] = ALEX_MARK;
	alex_protect_unmask(p, BLK);
	cr_expect_arr_eq(p, orig, BLK);

	alex_protect_unmask(p, BLK); /* unmarked: no change */
	cr_expect_arr_eq(p, orig, BLK);

	fill_block(p, 3, 0);
	p[19] = ALEX_MARK;
	memcpy(orig, p, BLK);
	alex_protect_unmask(p, BLK);
	cr_expect_arr_eq(p, orig, BLK, "not an SQLite page: left alone");

	/* a 20-byte read of a marked page: byte 19 comes back, and nothing
	 * past the 20 bytes is touched */
	sqlite_page1(orig, BLK, 77, 2);
	memcpy(p, orig, BLK);
	cr_assert_eq(alex_protect_apply(db, p, BLK), 1);
	alex_protect_unmask(p, 20);
	cr_expect_eq(p[19], 2);
	cr_expect_eq(p[27], (uint8_t)~orig[27], "past the length: still inverted");
	/* 19 bytes do not hold byte 19: nothing to restore, nothing touched */
	memcpy(p, orig, BLK);
	p[19] = ALEX_MARK;
	alex_protect_unmask(p, 19);
	cr_expect_eq(p[19], ALEX_MARK);
}

/* The mark counts only while it names the current epoch; a legacy mark
 * has no fence and counts; no mark (or torn bytes) does not. */
Test(protect, live_only_with_this_epochs_fence)
{
	db->mark.kind = ALEX_MARK_SQLITE;
	db->mark.has_fence = 1;
	db->mark.fence = alex_protect_fence(&db->hdr);
	cr_expect(alex_protect_is_live(db));
	db->mark.kind = ALEX_MARK_PLACEHOLDER;
	cr_expect(alex_protect_is_live(db));
	db->hdr.epoch++; /* a checkpoint finished: the mark is stale */
	cr_expect_not(alex_protect_is_live(db));
	db->mark.has_fence = 0;
	cr_expect(alex_protect_is_live(db), "format 1: no fence to compare");
	db->mark.kind = ALEX_MARK_NONE;
	cr_expect_not(alex_protect_is_live(db));
	db->mark.kind = ALEX_MARK_TORN;
	cr_expect_not(alex_protect_is_live(db));
}

/* On a file: mark writes the mark and syncs it, probe reads it back,
 * base_header sees the true bytes, clear restores the file. */
static void open_base(const uint8_t *data, size_t len)
{
	mem = alex_mem_new();
	cr_assert_not_null(mem);
	db->io = alex_mem_io(mem);
	cr_assert_eq(alex_mem_set(mem, DB, data, len), 0);
	cr_assert_eq(db->io.ops->open(db->io.ctx, DB, 0, &db->base_fd[ALEX_FILE_DB]), 0);
	db->climit[ALEX_FILE_DB] = db->csize[ALEX_FILE_DB] = len;
}

Test(protect, mark_probe_clear_on_a_file)
{
	uint8_t orig[2 * BLK], h[ALEX_BASE_HDR];
	uint64_t size = sizeof orig;
	size_t len;

	sqlite_page1(orig, sizeof orig, 42, 1);
	open_base(orig, sizeof orig);
	uint64_t ops = alex_mem_ops(mem);
	cr_assert_eq(alex_protect_mark(db, 0), 0);
	cr_expect_eq(alex_mem_ops(mem), ops + 2, "one write and one sync");
	const uint8_t *now = alex_mem_get(mem, DB, &len);
	cr_assert_eq(len, sizeof orig);
	cr_expect_eq(now[19], ALEX_MARK);
	cr_expect_arr_eq(now + HDR, orig + HDR, sizeof orig - HDR, "only the header changes");

	db->mark.kind = ALEX_MARK_NONE;
	cr_assert_eq(alex_protect_probe(db, &size), 0);
	cr_expect_eq(db->mark.kind, ALEX_MARK_SQLITE);
	cr_expect(db->mark.has_fence);
	cr_expect_eq(db->mark.fence, alex_protect_fence(&db->hdr));
	cr_expect_eq(size, sizeof orig, "a marked database keeps its size");
	cr_assert_eq(alex_protect_base_header(db, h), 0);
	cr_expect_arr_eq(h, orig, ALEX_BASE_HDR);

	cr_assert_eq(alex_protect_clear(db, orig, sizeof orig), 0);
	cr_expect_eq(db->mark.kind, ALEX_MARK_NONE);
	now = alex_mem_get(mem, DB, &len);
	cr_expect_arr_eq(now, orig, sizeof orig);
}

/* Riding on the next sync (the commit's): the mark is written out, not
 * synced.  A power cut before any later sync loses it; one after a sync of
 * another file keeps it, as a device's cache flush does. */
Test(protect, riding_mark_is_durable_with_the_next_sync_of_any_file)
{
	uint8_t orig[2 * BLK];
	size_t len;
	int other;

	sqlite_page1(orig, sizeof orig, 42, 1);
	open_base(orig, sizeof orig);
	cr_assert_eq(db->io.ops->open(db->io.ctx, "other", ALEX_O_CREAT, &other), 0);
	db->log_fd = other; /* the log, whose sync carries the mark */
	uint64_t ops = alex_mem_ops(mem);
	cr_assert_eq(alex_protect_mark(db, 1), 0);
	cr_expect_eq(alex_mem_ops(mem), ops + 1, "one write, no sync");
	cr_expect_eq(db->st.fence_rides, 1u);
	alex_mem *cut = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	cr_expect_arr_eq(alex_mem_get(cut, DB, &len), orig, sizeof orig, "not durable yet");
	alex_mem_free(cut);

	cr_assert_eq(db->io.ops->pwrite(db->io.ctx, other, "x", 1, 0), 0);
	cr_assert_eq(db->io.ops->fdatasync(db->io.ctx, other), 0);
	cut = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	const uint8_t *now = alex_mem_get(cut, DB, &len);
	cr_assert_eq(len, sizeof orig);
	cr_expect_eq(now[19], ALEX_MARK, "durable with the other file's sync");
	alex_mem_free(cut);
}

/* The model never promises more than a disk: with an unsynced write across
 * the edge of the mark's page, nothing is taken as written out. */
Test(protect, riding_mark_beside_a_straddling_write_is_not_durable)
{
	uint8_t orig[2 * BLK], junk[64];
	size_t len;
	int other;

	sqlite_page1(orig, sizeof orig, 42, 1);
	open_base(orig, sizeof orig);
	memset(junk, 0x5a, sizeof junk);
	cr_assert_eq(db->io.ops->pwrite(db->io.ctx, db->base_fd[ALEX_FILE_DB], junk, sizeof junk,
					BLK - 32), 0);
	cr_assert_eq(db->io.ops->open(db->io.ctx, "other", ALEX_O_CREAT, &other), 0);
	db->log_fd = other;
	cr_assert_eq(alex_protect_mark(db, 1), 0);
	cr_assert_eq(db->io.ops->pwrite(db->io.ctx, other, "x", 1, 0), 0);
	cr_assert_eq(db->io.ops->fdatasync(db->io.ctx, other), 0);
	alex_mem *cut = alex_mem_crash(mem, ALEX_CRASH_LOSE, 1);
	cr_expect_eq(alex_mem_get(cut, DB, &len)[19], orig[19]);
	alex_mem_free(cut);
}

/* A placeholder grows the file: it is synced by itself even when asked
 * to ride. */
Test(protect, riding_placeholder_is_synced_itself)
{
	open_base(NULL, 0);
	uint64_t ops = alex_mem_ops(mem);
	cr_assert_eq(alex_protect_mark(db, 1), 0);
	cr_expect_eq(alex_mem_ops(mem), ops + 2, "one write and one sync");
	cr_expect_eq(db->st.fence_rides, 0u);
}

/* An empty base gets the placeholder: probe reads it as no content at
 * all (size 0) and base_header as zeros. */
Test(protect, empty_base_gets_a_placeholder)
{
	uint8_t h[ALEX_BASE_HDR], zeros[ALEX_BASE_HDR] = { 0 };
	uint64_t size;
	size_t len;

	open_base(NULL, 0);
	cr_assert_eq(alex_protect_mark(db, 0), 0);
	const uint8_t *now = alex_mem_get(mem, DB, &len);
	cr_assert_eq(len, HDR);
	cr_expect_arr_eq(now, "ALEX-log-pending", 16);
	size = len;
	cr_assert_eq(alex_protect_probe(db, &size), 0);
	cr_expect_eq(db->mark.kind, ALEX_MARK_PLACEHOLDER);
	cr_expect_eq(size, 0u);
	cr_expect(alex_protect_is_live(db));
	cr_assert_eq(alex_protect_base_header(db, h), 0);
	cr_expect_arr_eq(h, zeros, ALEX_BASE_HDR);
}

/* SQLite's first write over a placeholder cut short: its magic's first
 * bytes over the placeholder's last ones, the fence area still there.
 * Nothing was committed over it: it is still the placeholder.  One byte
 * that is neither's makes it no mark of ours. */
Test(protect, placeholder_torn_by_sqlite_magic_is_still_a_placeholder)
{
	uint8_t now[HDR];
	uint64_t size;
	size_t len;

	open_base(NULL, 0);
	cr_assert_eq(alex_protect_mark(db, 0), 0);
	memcpy(now, alex_mem_get(mem, DB, &len), HDR);
	cr_assert_eq(len, HDR);
	for (size_t cut = 1; cut < 16; cut++) {
		uint8_t h[HDR];
		memcpy(h, now, HDR);
		memcpy(h, ALEX_SQLITE_MAGIC, cut);
		cr_assert_eq(alex_mem_set(mem, DB, h, HDR), 0);
		size = HDR;
		cr_assert_eq(alex_protect_probe(db, &size), 0);
		cr_expect_eq(db->mark.kind, ALEX_MARK_PLACEHOLDER, "cut %zu", cut);
		cr_expect_eq(size, 0u);
		h[cut] = 'Z'; /* neither SQLite's nor the placeholder's */
		cr_assert_eq(alex_mem_set(mem, DB, h, HDR), 0);
		size = HDR;
		cr_assert_eq(alex_protect_probe(db, &size), 0);
		cr_expect_neq(db->mark.kind, ALEX_MARK_PLACEHOLDER, "cut %zu, a foreign byte", cut);
	}
}

/* SQLite keeps bytes 72..91 zero; a header with any of them set is not
 * markable (the mark would hide it). */
Test(protect, markable_needs_every_reserved_byte_zero)
{
	uint8_t p[HDR];

	sqlite_page1(p, sizeof p, 7, 1);
	cr_assert(alex_protect_markable(p, sizeof p));
	for (size_t i = 72; i < 92; i++) {
		p[i] = 1;
		cr_expect_not(alex_protect_markable(p, sizeof p), "byte %zu", i);
		p[i] = 0;
	}
	p[92] ^= 1; /* "version valid for" no longer the change counter */
	cr_expect_not(alex_protect_markable(p, sizeof p));
}

/* A file that is neither empty nor SQLite's is not ours to mark: it is
 * left untouched and the mark stays NONE; so with protect_base off. */
Test(protect, foreign_or_unprotected_base_is_left_alone)
{
	uint8_t data[BLK];
	size_t len;

	fill_block(data, 9, 9);
	open_base(data, sizeof data);
	uint64_t ops = alex_mem_ops(mem);
	cr_assert_eq(alex_protect_mark(db, 0), 0);
	cr_expect_eq(db->mark.kind, ALEX_MARK_NONE);
	cr_expect_eq(alex_mem_ops(mem), ops, "nothing written or synced");
	cr_expect_arr_eq(alex_mem_get(mem, DB, &len), data, sizeof data);

	sqlite_page1(data, sizeof data, 1, 1);
	cr_assert_eq(alex_mem_set(mem, DB, data, sizeof data), 0);
	db->cfg.protect_base = 0;
	cr_assert_eq(alex_protect_mark(db, 0), 0);
	cr_expect_eq(alex_mem_ops(mem), ops);
	cr_expect_arr_eq(alex_mem_get(mem, DB, &len), data, sizeof data);
}

/* A failed write of the mark is returned (and no sync is attempted). */
Test(protect, failed_mark_write_is_returned)
{
	uint8_t data[BLK];

	sqlite_page1(data, sizeof data, 3, 1);
	open_base(data, sizeof data);
	alex_mem_fail_at(mem, alex_mem_ops(mem) + 1, ALEX_MEM_WRITE, EIO);
	cr_expect_eq(alex_protect_mark(db, 0), EIO);
	cr_expect_eq(alex_mem_ops(mem), 1u, "no sync after the failed write");
	size_t len;
	cr_expect_arr_eq(alex_mem_get(mem, DB, &len), data, sizeof data);
}
