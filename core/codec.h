/* codec.h - how a block is stored: raw, without its zero gap, or LZ4 (codec.c). */
#ifndef ALEX_CODEC_H
#define ALEX_CODEC_H

#include "db.h"

/*
 * Packs blk into out and returns the stored length (4096 when raw), with
 * the block's ALEX_BLK_* flag in *flags.  hdr_at is where a SQLite b-tree
 * page's header would begin in the block (100 for the database's first
 * block, 0 for its others), or -1 where no gap may be left out (a journal
 * or WAL block, or a log whose format predates GAP).
 */
uint32_t alex_codec_pack(struct alex_db *db, const uint8_t *blk, int hdr_at, uint8_t *out,
			 uint32_t *flags);
void alex_codec_free(struct alex_db *db);
int alex_codec_unpack(const uint8_t *in, uint32_t len, uint32_t flags, uint8_t *blk);

#endif
