/*
 * convert.h - an existing database file encrypted, decrypted or given a
 * new key, whole, crash-safely (alex encrypt|decrypt|rekey).
 */
#ifndef ALEX_CONVERT_H
#define ALEX_CONVERT_H

#include <stddef.h>

#include "io.h"
#include "xts.h"

/* What the new file is written under beside the database until it is
 * renamed over it; one left by a power cut is removed by the next
 * conversion. */
#define ALEX_CONVERT_SUFFIX "-alex-convert"
/* The bytes copied per read and write: the conversion's only buffer. */
#define ALEX_CONVERT_CHUNK (64u << 10)

/*
 * Rewrites the file at path, stored encrypted with from's key (NULL: in
 * clear), as stored encrypted with to's key (NULL: in clear): the whole
 * file is written to path ALEX_CONVERT_SUFFIX, synced, given the
 * original's permissions (and owner, for root), renamed over path and the
 * directory synced.  A power cut at any point leaves at path the old file
 * or the new one, whole.
 *
 * The caller keeps every other process out (the alex tool holds SQLite's
 * locks): the file must not change meanwhile.  Every descriptor of path
 * the conversion opens stays open until the rename is done, because
 * closing one drops the POSIX locks the process holds on the file.
 *
 * Refused before anything is written (EINVAL, with a one-line reason in
 * why): a file that is not what from says -- an SQLite database in clear
 * when from is NULL, else one encrypted with from's key -- unless it is
 * empty; a database whose first bytes are ALEX's placeholder (its log
 * holds pages not yet in it); EMLINK for a file with other names (they
 * would keep the old bytes).  0, or a positive errno with why naming the
 * step that failed.
 */
int alex_convert(const struct alex_io *io, const char *path, struct alex_xts *from,
		 struct alex_xts *to, char *why, size_t whycap);

#endif
