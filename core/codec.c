/*
 * codec.c - per-block LZ4.  A block is stored compressed only when that
 * saves compress_min_saving_pct of it (the paper's R_min); in AUTO mode a run
 * of blocks that do not compress makes us skip the attempt for a while, so
 * incompressible data costs almost nothing (the paper's T_min, adapted).
 */
#include <lz4.h>
#include <string.h>

#include "codec.h"
#include "db.h"

#define AUTO_MISSES 8   /* misses in a row before skipping */
#define AUTO_SKIP 64    /* blocks stored raw without trying */

uint32_t alex_codec_pack(struct alex_db *db, const uint8_t *blk, uint8_t *out, int *lz4)
{
	const struct alex_config *cfg = &db->cfg;
	int room = (int)(ALEX_BLOCK - ALEX_BLOCK * cfg->compress_min_saving_pct / 100);

	*lz4 = 0;
	if (cfg->compress == ALEX_COMPRESS_OFF || room <= 0)
		goto raw;
	if (cfg->compress == ALEX_COMPRESS_AUTO && db->lz4_skip) {
		db->lz4_skip--;
		goto raw;
	}
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
	int n = LZ4_compress_fast_continue(db->lz4, (const char *)blk, (char *)out, ALEX_BLOCK,
					   room, 1);
	if (n > 0) {
		db->lz4_misses = 0;
		*lz4 = 1;
		return (uint32_t)n;
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
	if (!(flags & ALEX_BLK_LZ4)) {
		if (len != ALEX_BLOCK)
			return ALEX_EBADBLOCK;
		memcpy(blk, in, ALEX_BLOCK);
		return 0;
	}
	int n = LZ4_decompress_safe((const char *)in, (char *)blk, (int)len, ALEX_BLOCK);
	return n == (int)ALEX_BLOCK ? 0 : ALEX_EBADBLOCK;
}

void alex_codec_free(struct alex_db *db)
{
	if (db->lz4)
		LZ4_freeStream(db->lz4);
	db->lz4 = NULL;
}
