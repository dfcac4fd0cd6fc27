/*
 * codec.c - how a block is stored.  Two ways to store fewer bytes, tried in
 * order of cost:
 *
 *  GAP  a SQLite b-tree page keeps its free space as one run between the
 *       cell pointer array and the cell content area; on a page that grows
 *       by inserts that run is zeros.  Leaving it out costs a zero check and
 *       two copies -- a few hundred instructions, where LZ4 of the same page
 *       costs some 20 000.  The page header is only a hint of where the run
 *       is: the run is left out only when every byte of it is zero, so the
 *       codec is lossless for any block, b-tree page or not.
 *  LZ4  for a block GAP cannot shrink enough: stored compressed only when
 *       that saves compress_min_saving_pct of it (the paper's R_min); in
 *       AUTO mode a run of blocks that do not compress makes us skip the
 *       attempt for a while (the paper's T_min, adapted).
 *
 * What an attempt costs is on the commit's path: 2.9 us for a page of
 * repeated text, 6.3 us for one of random bytes that then fails, 10 us for
 * prose (LZ4's acceleration 1, here).  An engine whose commits do not wait
 * for the device (ALEX_SYNC=normal without staging, or the staging log,
 * whose bytes the merge encodes again below) spends less: LZ4 at
 * acceleration 4 (the same format; a third to half the time for 5-26 %
 * more bytes: docs/BENCHMARKS.md, thirtieth session), and in AUTO mode no
 * attempt on a block whose bytes look random (looks_random).  FULL mode
 * waits for the device at every commit, where each byte saved is time
 * saved, and so does the log below a staging log (FULL while it has one:
 * io_over.c): acceleration 1, every block tried.
 */
#include <lz4.h>
#include <string.h>

#include "bytes.h"
#include "codec.h"
#include "db.h"

#define AUTO_MISSES 8   /* misses in a row before skipping */
#define AUTO_SKIP 64    /* blocks stored raw without trying */

/* LZ4's acceleration when the commit does not wait for the device */
#define ACCEL_NORMAL 4

/* The sample: SAMPLE_RUN bytes at every SAMPLE_STEP, 512 in all */
#define SAMPLE_RUN 16
#define SAMPLE_STEP 128
/* Below this sum of squared byte counts the sample looks random.  Pages
 * of this project's workloads fell on two sides of it: those LZ4 could
 * not shrink by 10 % at 2 048-2 474, those it could at 5 600 and above;
 * but see looks_random for pages it misjudges. */
#define RANDOM_BELOW 3500u

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

/*
 * The zero run to leave out of blk: the b-tree page's gap when the block
 * starts a b-tree page whose header is at hdr_at, else the block's zero
 * tail (a page of a new table, a freelist trunk, the last overflow page).
 * Returns its length (0: none) and its start in *off.
 */
static uint32_t zero_run(const uint8_t *blk, uint32_t hdr_at, uint32_t *off)
{
	const uint8_t *h = blk + hdr_at;
	uint32_t hsize = (*h == 2 || *h == 5) ? 12 : (*h == 10 || *h == 13) ? 8 : 0;

	if (hsize) {
		uint32_t start = hdr_at + hsize + 2 * be16(h + 3), end = be16(h + 5);
		if (end == 0 || end > ALEX_BLOCK)
			end = ALEX_BLOCK; /* 0 is 65536; past a block: a larger page */
		if (start < end && alex_all_zero(blk + start, end - start)) {
			*off = start;
			return end - start;
		}
	}
	uint32_t n = ALEX_BLOCK;
	while (n >= 8 && !(blk[n - 1] | blk[n - 2] | blk[n - 3] | blk[n - 4] | blk[n - 5] |
			   blk[n - 6] | blk[n - 7] | blk[n - 8]))
		n -= 8;
	*off = n;
	return ALEX_BLOCK - n;
}

static uint32_t pack_gap(const uint8_t *blk, uint32_t hdr_at, uint8_t *out, uint32_t room)
{
	uint32_t off, len = zero_run(blk, hdr_at, &off);
	uint32_t stored = ALEX_GAP_HDR + ALEX_BLOCK - len;

	if (!len || stored > room)
		return 0;
	alex_put16(out, off);
	alex_put16(out + 2, len);
	memcpy(out + ALEX_GAP_HDR, blk, off);
	memcpy(out + ALEX_GAP_HDR + off, blk + off + len, ALEX_BLOCK - off - len);
	return stored;
}

/*
 * Could LZ4 shrink blk at all?  LZ4 saves by repeats, and a block whose
 * bytes are spread evenly over all 256 values (random blobs, compressed or
 * encrypted content) has none worth a token.  The sum of squared byte
 * counts of a sample tells it for about 1 500 instructions, where a failed
 * attempt costs 25 000-60 000.  Blind to repeats longer than the sample's
 * runs: random bytes repeated at a period of a few hundred bytes or more
 * (duplicate blobs), or rows of a hash or key with short columns that
 * repeat, look random here though LZ4 would shrink them by 10-75 % (a
 * review's pages).  So it is asked only where bytes are cheap (above), and
 * a block it turns away is not a miss: it never pauses LZ4 for the blocks
 * after it.
 */
static int looks_random(const uint8_t *blk)
{
	uint16_t count[256] = { 0 };
	uint32_t sum = 0;

	for (uint32_t i = 0; i < ALEX_BLOCK; i += SAMPLE_STEP)
		for (uint32_t j = 0; j < SAMPLE_RUN; j++)
			count[blk[i + j]]++;
	for (int v = 0; v < 256; v++)
		sum += (uint32_t)count[v] * count[v];
	return sum < RANDOM_BELOW;
}

uint32_t alex_codec_pack(struct alex_db *db, const uint8_t *blk, int hdr_at, uint8_t *out,
			 uint32_t *flags)
{
	const struct alex_config *cfg = &db->cfg;
	int room = (int)(ALEX_BLOCK - ALEX_BLOCK * cfg->compress_min_saving_pct / 100);
	uint32_t n;

	*flags = 0;
	if (cfg->compress == ALEX_COMPRESS_OFF || room <= 0)
		goto raw;
	if (hdr_at >= 0 && (n = pack_gap(blk, (uint32_t)hdr_at, out, (uint32_t)room))) {
		*flags = ALEX_BLK_GAP;
		return n;
	}
	if (cfg->compress == ALEX_COMPRESS_AUTO && db->lz4_skip) {
		db->lz4_skip--;
		goto raw;
	}
	int cheap = cfg->sync != ALEX_SYNC_FULL;
	if (cheap && cfg->compress == ALEX_COMPRESS_AUTO && looks_random(blk))
		goto raw;
	/* A stream reset the fast way instead of the 16 KiB memset that
	 * LZ4_compress_default pays per call; with no dictionary the output
	 * is an independent LZ4 block.  LZ4 stops and returns 0 when the
	 * output would not fit in room. */
	if (!db->lz4) {
		if (!(db->lz4 = LZ4_createStream()))
			goto raw;
	} else {
		LZ4_resetStream_fast(db->lz4);
	}
	int z = LZ4_compress_fast_continue(db->lz4, (const char *)blk, (char *)out, ALEX_BLOCK,
					   room, cheap ? ACCEL_NORMAL : 1);
	if (z > 0) {
		db->lz4_misses = 0;
		*flags = ALEX_BLK_LZ4;
		return (uint32_t)z;
	}
	if (++db->lz4_misses >= AUTO_MISSES) {
		db->lz4_misses = 0;
		db->lz4_skip = AUTO_SKIP;
	}
raw:
	memcpy(out, blk, ALEX_BLOCK);
	return ALEX_BLOCK;
}

int alex_codec_unpack(const uint8_t *in, uint32_t len, uint32_t flags, uint8_t *blk)
{
	uint32_t off, glen;

	switch (flags) {
	case 0:
		if (len != ALEX_BLOCK)
			return ALEX_EBADBLOCK;
		memcpy(blk, in, ALEX_BLOCK);
		return 0;
	case ALEX_BLK_GAP:
		if (!alex_gap_decode(in, len, &off, &glen))
			return ALEX_EBADBLOCK;
		memcpy(blk, in + ALEX_GAP_HDR, off);
		memset(blk + off, 0, glen);
		memcpy(blk + off + glen, in + ALEX_GAP_HDR + off, ALEX_BLOCK - off - glen);
		return 0;
	case ALEX_BLK_LZ4: {
		int n = LZ4_decompress_safe((const char *)in, (char *)blk, (int)len, ALEX_BLOCK);
		return n == (int)ALEX_BLOCK ? 0 : ALEX_EBADBLOCK;
	}
	default:
		return ALEX_EBADBLOCK;
	}
}

void alex_codec_free(struct alex_db *db)
{
	if (db->lz4)
		LZ4_freeStream(db->lz4);
	db->lz4 = NULL;
}
