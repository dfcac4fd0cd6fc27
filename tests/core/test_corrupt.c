/*
 * Corruption: one flipped bit at every byte of every record of a log.
 * Recovery must open, keep exactly the commits before the damaged record,
 * and say where and why it stopped.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "format.h"
#include "helpers.h"

#define NREC 8
#define NB 12

Test(corrupt, every_flipped_byte_is_found, .timeout = 300)
{
	alex_mem *mem = alex_mem_new();
	struct alex_io io = alex_mem_io(mem);
	struct alex_config cfg;
	static uint8_t state[NREC + 1][NB * BLK], got[NB * BLK];
	uint64_t bound[NREC + 1], sizes[NREC + 1] = { 0 };
	uint8_t b[BLK];
	alex_db *db;

	small_config(&cfg);
	cfg.memory_bytes = 1u << 20; /* no spills: one record per commit */
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	bound[0] = ALEX_LOG_DATA;
	for (uint32_t t = 1; t <= NREC; t++) {
		memcpy(state[t], state[t - 1], sizeof state[t]);
		sizes[t] = sizes[t - 1];
		for (uint32_t k = 0; k < t % 4 + 1; k++) { /* 1-4 blocks, some raw */
			uint32_t blk = (t * 5 + k * 3) % NB;
			fill_block(b, t, blk);
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)blk * BLK), 0);
			memcpy(state[t] + (uint64_t)blk * BLK, b, BLK);
			if ((blk + 1) * (uint64_t)BLK > sizes[t])
				sizes[t] = (blk + 1) * (uint64_t)BLK;
		}
		cr_assert_eq(alex_commit(db), 0);
		struct alex_stats st;
		alex_stats(db, &st);
		bound[t] = ALEX_LOG_DATA + st.log_used;
	}
	alex_close(db);

	size_t len;
	uint8_t *log = (uint8_t *)alex_mem_get(mem, LOG, &len);
	uint64_t s = 99, flips = 0;
	for (uint64_t p = ALEX_LOG_DATA; p < bound[NREC]; p++) {
		uint32_t rec = 0;
		while (bound[rec + 1] <= p)
			rec++;
		uint8_t bit = (uint8_t)(1u << (rnd(&s) % 8));
		log[p] ^= bit;
		int rc = alex_open(DB, &cfg, &io, &db);
		cr_assert_eq(rc, 0, "byte %lu: %s", (unsigned long)p, alex_strerror(rc));
		struct alex_stats st;
		alex_stats(db, &st);
		cr_assert_eq(st.recovered_commits, rec, "byte %lu of record %u: kept %lu commits",
			     (unsigned long)p, rec, (unsigned long)st.recovered_commits);
		cr_assert_eq(st.stop_offset, bound[rec], "byte %lu: stop offset %lu",
			     (unsigned long)p, (unsigned long)st.stop_offset);
		cr_assert_gt(st.stop_reason, ALEX_STOP_STALE, "byte %lu: reported as %s",
			     (unsigned long)p, alex_stop_name(st.stop_reason));
		cr_assert_eq(st.dropped_records, 1);
		/* damage before the last record is lost commits, and says so;
		 * damage of the last one looks like a torn tail */
		if (rec + 1 < NREC)
			cr_assert_eq(st.lost_offset, bound[rec + 1], "byte %lu: lost_offset %lu",
				     (unsigned long)p, (unsigned long)st.lost_offset);
		else
			cr_assert_eq(st.lost_offset, 0);
		uint64_t size;
		size_t n;
		alex_size(db, ALEX_FILE_DB, &size);
		cr_assert_eq(size, sizes[rec]);
		cr_assert_eq(alex_read(db, ALEX_FILE_DB, got, size, 0, &n), 0);
		cr_assert_arr_eq(got, state[rec], size, "byte %lu: content", (unsigned long)p);
		alex_close(db);
		log[p] ^= bit;
		flips++;
	}
	cr_log_info("%lu single-bit flips over %u records, all detected", (unsigned long)flips,
		    NREC);
	alex_mem_free(mem);
}

Test(corrupt, hostile_lengths_do_not_allocate_without_bound)
{
	alex_mem *mem = alex_mem_new();
	struct alex_io io = alex_mem_io(mem);
	struct alex_config cfg;
	alex_db *db;
	uint8_t b[BLK];

	small_config(&cfg);
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	fill_block(b, 1, 0);
	alex_write(db, ALEX_FILE_DB, b, BLK, 0);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);
	size_t len;
	uint8_t *log = (uint8_t *)alex_mem_get(mem, LOG, &len);
	/* a record that claims 4 GiB, with a matching crc: must stop cleanly */
	log[ALEX_LOG_DATA + 8] = 0;
	log[ALEX_LOG_DATA + 9] = 0;
	log[ALEX_LOG_DATA + 10] = 0;
	log[ALEX_LOG_DATA + 11] = 0xff;
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	struct alex_stats st;
	alex_stats(db, &st);
	cr_expect_eq(st.recovered_commits, 0);
	cr_expect_eq(st.stop_reason, ALEX_STOP_BAD_HEADER);
	cr_expect_lt(st.mem_buffers + st.mem_maps, 4u << 20);
	alex_close(db);
	alex_mem_free(mem);
}

/* A record lost in the middle (torn, never synced) leaves a valid-looking
 * later record behind.  After recovery commits over the hole, that record
 * has the next lsn at the next offset -- only the chain keeps it out. */
Test(corrupt, stale_record_after_recovered_hole_stays_dead)
{
	alex_mem *mem = alex_mem_new();
	struct alex_io io = alex_mem_io(mem);
	struct alex_config cfg;
	alex_db *db;
	uint8_t b[BLK], r[BLK];
	uint64_t end[4];
	size_t len, got;

	small_config(&cfg);
	cfg.direct = 0; /* records of a block each, below */
	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	for (uint32_t t = 1; t <= 3; t++) { /* (t + 1) % 3 != 0: compressible */
		fill_block(b, t == 2 ? 4 : t, 1);
		cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
		cr_assert_eq(alex_commit(db), 0);
		struct alex_stats st;
		alex_stats(db, &st);
		end[t] = ALEX_LOG_DATA + st.log_used;
	}
	alex_close(db);
	cr_assert_eq(end[1] - ALEX_LOG_DATA, BLK);
	cr_assert_eq(end[2] - end[1], BLK);
	uint8_t *log = (uint8_t *)alex_mem_get(mem, LOG, &len);
	log[end[1] + 200] ^= 0x10; /* damage record 2's payload */

	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	fill_block(b, 7, 1); /* a one-block record lands where record 2 was */
	cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, BLK), 0);
	cr_assert_eq(alex_commit(db), 0);
	alex_close(db);

	cr_assert_eq(alex_open(DB, &cfg, &io, &db), 0);
	struct alex_stats st;
	alex_stats(db, &st);
	cr_expect_eq(st.recovered_commits, 2, "record 3 must not follow the new record 2");
	cr_expect_eq(st.stop_offset, end[2]);
	cr_expect_eq(st.stop_reason, ALEX_STOP_STALE);
	cr_assert_eq(alex_read(db, ALEX_FILE_DB, r, BLK, BLK, &got), 0);
	cr_expect_arr_eq(r, b, BLK);
	alex_close(db);
	alex_mem_free(mem);
}
