/*
 * journal.h - SQLite's rollback journal kept in memory (journal.c).  A
 * journal's content is needed only for SQLite's in-process rollback: the
 * log's commit is atomic without it.  So it lives in a memfd that the
 * database's pdb owns, and its name exists only to the hooks.
 */
#ifndef ALEX_PRELOAD_JOURNAL_H
#define ALEX_PRELOAD_JOURNAL_H

#include <sys/stat.h>

#include "state.h"

enum alex_journal_open { ALEX_JOURNAL_MEM, ALEX_JOURNAL_DISK };
/* SQLite opens db's journal at jpath with flags: a descriptor of the
 * in-memory journal in *fd (ALEX_JOURNAL_MEM), or ALEX_JOURNAL_DISK when a
 * journal was on disk before us (a crash of a program without ALEX: SQLite
 * must see it, to roll it back), or -1 with errno. */
int alex_journal_open(struct pdb *db, const char *jpath, int flags, int *fd);
/* The database whose in-memory journal path names (with a reference), or
 * NULL: a name that is not a journal, or one on disk. */
struct pdb *alex_journal_find(int dirfd, const char *path);
/* SQLite deletes the journal (DELETE mode): the transaction is committed.
 * 0 or -1. */
int alex_journal_unlink(struct pdb *db);
/* truncate(2) and stat(2) of the in-memory journal by name.  0 or -1. */
int alex_journal_truncate(struct pdb *db, off_t size);
int alex_journal_stat(struct pdb *db, struct stat64 *st);

#endif
