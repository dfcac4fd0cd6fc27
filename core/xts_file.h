/*
 * xts_file.h - a private scratch file stored encrypted: SQLite's temporary
 * files (a VACUUM's temporary database, temporary tables and indexes,
 * statement journals, the sorter's spills) under a key.
 *
 * Such a file is made by one process, unlinked at once and never opened
 * again, so nothing about it needs to be found on disk: its logical size
 * lives in memory, and the file on disk is whole 512-byte data units, unit
 * u encrypted under the tweak (ALEX_XTS_TEMP, u, id) where id is 56 random
 * bits drawn for the file (two files never share tweaks, in practice).  A
 * unit stored as zeros (never written, a hole) reads as zeros; bytes at or
 * past the logical size read as zeros whatever the unit holds, so what a
 * truncation cut off never comes back.  A write of part of a unit reads,
 * decrypts and re-encrypts it; whole units go through a bounce buffer of
 * fixed size.  Rewrites of a unit reuse its tweak, as the database file's
 * units do (docs/ENCRYPTION.md: what XTS shows).
 */
#ifndef ALEX_XTS_FILE_H
#define ALEX_XTS_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "io.h"
#include "xts.h"

struct alex_xts_file;

/* For the descriptor fd of an empty file, reached through io, with the
 * process's key and a bounce buffer of bounce_bytes (whole units, at least
 * 4096).  0 or an errno. */
int alex_xts_file_new(const struct alex_io *io, int fd, const struct alex_key *key,
		      size_t bounce_bytes, struct alex_xts_file **out);
void alex_xts_file_free(struct alex_xts_file *f);

/* pread/pwrite/ftruncate of the plaintext: 0 or an errno. *got: bytes read
 * (short only at the logical end).  *done (if not NULL): bytes written
 * before an error, as the kernel's short count; nothing of a failed piece
 * shows past the logical size afterwards. */
int alex_xts_file_pread(struct alex_xts_file *f, void *buf, size_t n, uint64_t off, size_t *got);
int alex_xts_file_pwrite(struct alex_xts_file *f, const void *buf, size_t n, uint64_t off,
			 size_t *done);
int alex_xts_file_truncate(struct alex_xts_file *f, uint64_t size);
/* The logical size. */
uint64_t alex_xts_file_size(struct alex_xts_file *f);

#endif
