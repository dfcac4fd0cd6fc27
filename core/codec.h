/* codec.h - LZ4 per block (codec.c). */
#ifndef ALEX_CODEC_H
#define ALEX_CODEC_H

#include "db.h"

/* Returns the stored length (< 4096 when it
 * compressed) with the stored bytes in out; sets *lz4. */
uint32_t alex_codec_pack(struct alex_db *db, const uint8_t *blk, uint8_t *out, int *lz4);
void alex_codec_free(struct alex_db *db);
int alex_codec_unpack(const uint8_t *in, uint32_t len, uint32_t flags, uint8_t *blk);

#endif
