/*
 * The known cache (core/known.h): the last version of each block written
 * lately is held, so that a FULL mode checkpoint -- whose log was written
 * past the page cache -- reads nothing back from the log.
 */
#include "db.h"
#include "helpers.h"
#include "known.h"

/* The memory backend's reads; those of records of the log read_fd counted. */
static int (*mem_pread)(void *, int, void *, size_t, uint64_t, size_t *);
static int read_fd = -1;
static uint64_t read_below;
static unsigned reads_seen;

static int counting_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	/* records, not the header nor the catch-up's look past the tail */
	reads_seen += fd == read_fd && off >= 2 * BLK && off < read_below;
	return mem_pread(ctx, fd, buf, n, off, got);
}

/* nblk blocks past sqlite_like_file's page 1, each changed in rounds
 * (one commit per block and round, 40 bytes each: deltas), checkpointed;
 * the checkpoint's reads of the log into *reads, the blocks logged as
 * deltas into *deltas, and the base checked. */
static void rounds_then_checkpoint(unsigned nblk, unsigned rounds, unsigned *reads,
				   uint64_t *deltas)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	static struct alex_io_ops ops;
	struct alex_config c;
	struct alex_stats st;
	uint8_t page1[BLK], b[BLK];
	uint8_t *want = calloc(nblk + 1, BLK);

	cr_assert_not_null(want);
	ops = *io.ops;
	mem_pread = ops.pread;
	ops.pread = counting_pread;
	io.ops = &ops;
	alex_config_default(&c); /* FULL */
	sqlite_like_file(m, page1);
	for (unsigned k = 1; k <= nblk; k++)
		memset(want + (size_t)k * BLK, k < 8 ? 0x11 : 0, BLK);
	alex_db *db = open_engine(&c, &io);
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned k = 1; k <= nblk; k++) {
			memset(want + (size_t)k * BLK + r * 40, (int)(k + r), 40);
			memcpy(b, want + (size_t)k * BLK, BLK);
			cr_assert_eq(alex_write(db, ALEX_FILE_DB, b, BLK, (uint64_t)k * BLK), 0);
			cr_assert_eq(alex_commit(db), 0);
		}
	alex_stats(db, &st);
	*deltas = st.blocks_delta;
	read_fd = db->log_fd;
	read_below = db->append_off;
	reads_seen = 0;
	cr_assert_eq(alex_checkpoint(db), 0);
	*reads = reads_seen;
	read_fd = -1;
	alex_close(db);
	size_t len;
	const uint8_t *d = alex_mem_get(m, DB, &len);
	cr_assert_eq(len, (size_t)(nblk + 1) * BLK);
	for (unsigned k = 1; k <= nblk; k++)
		cr_assert(memcmp(d + (size_t)k * BLK, want + (size_t)k * BLK, BLK) == 0,
			  "block %u", k);
	free(want);
	alex_mem_free(m);
}

/* FULL mode's early checkpoint copies at most 64 blocks (commit.c):
 * before, a cache of 32 places by place held a fraction of them, and
 * each miss was a chain of reads from the device (most of the 2.4 ms
 * such a checkpoint took inside its commit). */
Test(known, a_checkpoint_of_64_blocks_reads_nothing_from_the_log)
{
	unsigned reads;
	uint64_t deltas;

	rounds_then_checkpoint(64, 4, &reads, &deltas);
	/* every version after the first made against the one before */
	cr_expect_geq(deltas, 64u * 3, "deltas %lu", (unsigned long)deltas);
	cr_expect_eq(reads, 0, "%u reads of the log", reads);
}

/* More blocks than the cache holds: the misses walk their chains, and
 * the base is still exact. */
Test(known, more_blocks_than_it_holds_are_read_back)
{
	unsigned reads;
	uint64_t deltas;

	rounds_then_checkpoint(300, 3, &reads, &deltas);
	cr_expect_gt(reads, 0); /* the base's check is what counts here */
}

/* A block's newer version takes its older one's way, so that the versions
 * of one hot block do not push its neighbours out; and nothing is known
 * once the epoch's salt changed. */
Test(known, a_newer_version_takes_the_older_ones_way)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	uint8_t img[BLK];
	uint64_t a = alex_key(ALEX_FILE_DB, 5), b = alex_key(ALEX_FILE_DB, 6);

	alex_config_default(&c);
	alex_db *db = open_engine(&c, &io);
	struct alex_loc lb = { 4u << 20, BLK, 7, 0, (uint32_t)db->hdr.epoch }, la = lb;
	memset(img, 0xbb, BLK);
	alex_known_put(db, b, &lb, img, 0);
	for (unsigned v = 0; v < 4 * ALEX_KNOWN_WAYS; v++) {
		la.off = 8192 + (uint64_t)v * BLK;
		la.crc = v;
		memset(img, (int)v, BLK);
		alex_known_put(db, a, &la, img, 0);
	}
	const uint8_t *got = alex_known_get(db, a, &la, NULL);
	cr_assert_not_null(got, "the newest version of a");
	cr_expect_eq(got[100], 4 * ALEX_KNOWN_WAYS - 1);
	struct alex_loc older = la;
	older.off -= BLK;
	older.crc--;
	cr_expect_null(alex_known_get(db, a, &older, NULL), "an older version of a is still held");
	got = alex_known_get(db, b, &lb, NULL);
	cr_assert_not_null(got, "b was pushed out by a's versions");
	cr_expect_eq(got[100], 0xbb);
	cr_expect_null(alex_known_get(db, a, &lb, NULL), "b's place answered for a");
	db->hdr.salt ^= 1; /* as a new epoch draws */
	cr_expect_null(alex_known_get(db, b, &lb, NULL), "known across a new salt");
	db->hdr.salt ^= 1;
	alex_close(db);
	alex_mem_free(m);
}

/* A commit's blocks are taken, not copied: the collector's buffer becomes
 * the cache's, and the collector gets one back that nobody else holds --
 * after many exchanges over every way, the cache's buffers and the ones
 * handed out are still all distinct, and each way answers with the bytes
 * it took. */
Test(known, taken_buffers_are_exchanged_never_shared)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config c;
	enum { HANDS = 4, KEYS = 3 * ALEX_KNOWN_SETS * ALEX_KNOWN_WAYS };
	uint8_t *hand[HANDS];

	alex_config_default(&c);
	alex_db *db = open_engine(&c, &io);
	for (int h = 0; h < HANDS; h++)
		cr_assert_not_null(hand[h] = aligned_alloc(BLK, BLK));
	uint8_t *mine[HANDS];
	memcpy(mine, hand, sizeof hand);
	struct alex_loc l = { 8192, BLK, 0, 0, (uint32_t)db->hdr.epoch };
	for (unsigned v = 0; v < 5 * KEYS; v++) {
		uint8_t **h = &hand[v % HANDS];
		memset(*h, (int)(v & 0xff), BLK);
		l.off = 8192 + (uint64_t)v * BLK;
		l.crc = v;
		alex_known_take(db, alex_key(ALEX_FILE_DB, v % KEYS), &l, h, 0);
		/* what was taken is what the cache answers */
		const uint8_t *got = alex_known_get(db, alex_key(ALEX_FILE_DB, v % KEYS), &l, NULL);
		cr_assert_not_null(got);
		cr_assert_eq(got[0], v & 0xff);
		cr_assert_eq(got[BLK - 1], v & 0xff);
		cr_assert_neq(got, *h, "the buffer taken was handed back");
	}
	/* every buffer has one holder: the ways' and the hands' are distinct */
	struct alex_known *k = db->known;
	unsigned n = k->sets * ALEX_KNOWN_WAYS;
	uint8_t **all = calloc(n + HANDS, sizeof *all);
	cr_assert_not_null(all);
	memcpy(all, k->at, n * sizeof *all);
	memcpy(all + n, hand, sizeof hand);
	for (unsigned i = 0; i < n + HANDS; i++)
		for (unsigned j = i + 1; j < n + HANDS; j++)
			cr_assert_neq(all[i], all[j], "a buffer held twice (%u, %u)", i, j);
	/* the hands' own buffers went into the cache: take them back, and
	 * give the cache its own (those the hands hold now), before each
	 * frees what it made */
	for (int h = 0; h < HANDS; h++)
		for (unsigned i = 0; i < n; i++)
			if (k->at[i] == mine[h]) {
				k->at[i] = hand[h];
				hand[h] = mine[h];
			}
	for (int h = 0; h < HANDS; h++)
		free(hand[h]);
	free(all);
	alex_close(db);
	alex_mem_free(m);
}
