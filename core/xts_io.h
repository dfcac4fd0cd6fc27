/*
 * xts_io.h - the database file stored encrypted: an alex_io that passes
 * every file through except the one opened under the database's path,
 * whose bytes it encrypts on the way out and decrypts on the way in.
 *
 * The file is a sequence of 512-byte data units (SQLite's smallest page,
 * so no page of any page size shares a unit with another, and no SQLite
 * truncation cuts one); the last may be shorter.  Unit u is AES-256-XTS
 * under the tweak (ALEX_XTS_DB, u), except that unit 0's first 16 bytes
 * -- SQLite's magic "SQLite format 3\0" in a database -- are replaced by a
 * marker that says the file is encrypted, what the 16 bytes were, and the
 * key's check value:
 *
 *   0  6  "ALXXTS"
 *   6  1  what bytes 0..15 hold: 'S' SQLite's magic, 'P' ALEX's placeholder
 *         (protect.c), 'Z' zeros
 *   7  1  '1', the scheme's version
 *   8  6  the key check value's first 6 bytes (xts.h)
 *  14  2  a file under 512 bytes: its size (below)
 *
 * and the unit's bytes 16 on are the XTS unit.  A file under one unit (ALEX's
 * 100-byte placeholder; an SQLite database never is) is stored as one whole
 * unit, zeros after its end, its size at 14: a unit shorter than 512 bytes
 * would be encrypted for its length, and a crash that kept a later write
 * growing the file but not that unit's rewrite would leave it to be read
 * as a whole one -- garbage, where the file in clear holds its bytes and
 * zeros.  So before anything makes such a file longer, its unit is written
 * again with the size field 0 (the file's own size counts); a file of 512
 * bytes or more whose unit 0 still gives a size reads as that unit's bytes
 * and then zeros, which is what it holds.  A unit stored as zeros
 * reads as zeros: space the file system has not written (a hole, a
 * preallocation) is what it would be unencrypted.  A program without ALEX
 * sees no SQLite magic and refuses the file ("file is not a database").
 *
 * Writes that cover whole units encrypt through a bounce buffer of fixed
 * size (no allocation per write); a write of part of a unit reads,
 * decrypts and re-encrypts the unit.  Such in-place rewrites rely on a
 * 512-byte sector being written whole, as every disk encryption does.
 */
#ifndef ALEX_XTS_IO_H
#define ALEX_XTS_IO_H

#include "io.h"
#include "xts.h"

#define ALEX_XTS_UNIT 512u
#define ALEX_XTS_MARKER 16u

struct alex_xts_io;

/* A layer over inner for the database at db_path, with its own bounce
 * buffer of bounce_bytes (rounded to whole units, at least 4096). */
int alex_xts_io_new(const struct alex_io *inner, struct alex_xts *x, const char *db_path,
		    size_t bounce_bytes, struct alex_xts_io **out);
void alex_xts_io_free(struct alex_xts_io *c);
struct alex_io alex_xts_io(struct alex_xts_io *c);

/* What a file's first bytes (got of them, as stored) say. */
enum alex_xts_probe {
	ALEX_XTS_NOT = 0,   /* not encrypted by ALEX (or too short to tell) */
	ALEX_XTS_OURS = 1,  /* encrypted with the key whose check value is kcv */
	ALEX_XTS_OTHER = 2  /* encrypted with another key */
};
enum alex_xts_probe alex_xts_probe(const uint8_t *head, size_t got,
				   const uint8_t kcv[ALEX_KCV_BYTES]);

#endif
