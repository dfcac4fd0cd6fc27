/* multidb.h - transactions across attached databases (multidb.c). */
#ifndef ALEX_PRELOAD_MULTIDB_H
#define ALEX_PRELOAD_MULTIDB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "state.h"

/* Is path named as SQLite names a super-journal ("<db>-mj" and hex)? */
int alex_multidb_is_super(const char *path);
/* SQLite's journal magic, which ends a super-journal's name in a journal */
#define ALEX_JOURNAL_MAGIC { 0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7 }
/* Can a write to an in-memory journal be the one that names a
 * super-journal?  Without the journal's bytes (no lock needed); inline:
 * it is asked at every journal write. */
static inline int alex_multidb_may_name_super(const void *buf, size_t n, int64_t off)
{
	static const unsigned char magic[8] = ALEX_JOURNAL_MAGIC;
	/* the last write of writeSuperJournal: the magic after name, length
	 * and checksum (the journal's own header, at 0, starts with it too) */
	return n == 8 && off > 16 && memcmp(buf, magic, 8) == 0;
}
/* A write to db's in-memory journal that succeeded: is it the one that
 * names a super-journal?  Then its name is in name (cap bytes).  Under
 * db->mu. */
int alex_multidb_super_of(struct pdb *db, const void *buf, size_t n, int64_t off, char *name,
			  size_t cap);

/* The functions below act on db with db->mu held (serve.c). */
/* db's journal names super: its transaction spans databases. */
void alex_multidb_begin(struct pdb *db, const char *super);
/* db's engine is open: is there a reference journal a crash left? */
void alex_multidb_opened(struct pdb *db);
/* The commit of db's part: reference journal, then conditional record.
 * 0 or an errno. */
int alex_multidb_commit(struct pdb *db);
/* SQLite finalized db's journal: the transaction is over. */
void alex_multidb_end(struct pdb *db);
/* After recovery decided: removes a reference journal left by a crash, and
 * the super-journal once nothing names it. */
void alex_multidb_cleanup(struct pdb *db);

#endif
