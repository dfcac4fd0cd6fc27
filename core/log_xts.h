/*
 * log_xts.h - the log's encrypted parts (format 5, docs/ENCRYPTION.md).
 *
 * Each block's stored bytes (after GAP or LZ4) are encrypted alone, so the
 * table's crcs cover ciphertext and recovery checks a record without the
 * key's help; the base copy in a header slot is encrypted too.  A log's
 * key is derived from the database's key and the log's uuid, so that a
 * log made anew (another uuid) never repeats a (key, tweak) pair of an
 * earlier one; within a log the tweak is the bytes' offset with the
 * record's epoch and transaction: an offset is written again only in a
 * later epoch, or in the same one by a later transaction after a spilled
 * one was dropped.
 */
#ifndef ALEX_LOG_XTS_H
#define ALEX_LOG_XTS_H

#include "db.h"

/* Is the engine's log encrypted (it has a key)? */
static inline int alex_log_sealed(const struct alex_db *db)
{
	return db->xts != NULL;
}

/* Encrypts (enc 1) or decrypts the n >= 16 stored bytes of a block at log
 * offset off, of the record of (epoch, txn), in place. */
int alex_log_xts_block(struct alex_db *db, int enc, uint8_t *p, uint32_t n, uint64_t off,
		       uint64_t epoch, uint64_t txn);

/* The base copy of a slot, in place (h->uuid names the log). */
int alex_log_xts_base(struct alex_db *db, int enc, struct alex_loghdr *h);

void alex_log_xts_free(struct alex_db *db);

#endif
