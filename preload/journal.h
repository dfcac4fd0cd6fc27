/*
 * journal.h - SQLite's rollback journal kept in memory (journal.c).  A
 * journal's content is needed only for SQLite's in-process rollback: the
 * log's commit is atomic without it.  So it lives in a buffer that the
 * database's pdb owns, and its name and descriptor exist only to the hooks.
 */
#ifndef ALEX_PRELOAD_JOURNAL_H
#define ALEX_PRELOAD_JOURNAL_H

#include <sys/stat.h>
#include <sys/uio.h>

#include "serve.h"
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
/* truncate(2) and stat(2) of the in-memory journal by name (and
 * ftruncate: the same).  0 or -1. */
int alex_journal_truncate(struct pdb *db, off_t size);
int alex_journal_stat(struct pdb *db, struct stat64 *st);

/*
 * A look by name (stat, access) at db's journal or WAL (role), before the
 * kernel is asked: 1 when memory knows the answer -- *exists, and for an
 * in-memory journal *st (when st is not NULL) -- else 0, and *before is
 * what alex_name_absent needs.  Then, when the kernel said ENOENT,
 * alex_name_absent remembers it for the rest of a fenced epoch.
 */
int alex_name_known(struct pdb *db, enum alex_role role, struct stat64 *st, int *exists,
		    struct alex_fence *before);
void alex_name_absent(struct pdb *db, enum alex_role role, const struct alex_fence *before);

/* posix_fallocate on it: grows it to end if it is smaller.  0 or an errno
 * (that function's convention). */
int alex_journal_extend(struct pdb *db, uint64_t end);
/* A descriptor of it: fstat, reads and writes at *pos (bytes done, or -1),
 * lseek (the new offset, or -1). */
void alex_journal_fstat(struct pdb *db, struct stat64 *st);
ssize_t alex_journal_io(struct pdb *db, const struct iovec *iov, int cnt, uint64_t *pos,
			enum alex_serve_io how);
int64_t alex_journal_seek(struct pdb *db, uint64_t *pos, int64_t off, int whence);
/* Up to n bytes at off, under db->mu (multidb.c reads a super-journal's
 * name there): the bytes copied. */
size_t alex_journal_read_locked(struct pdb *db, void *buf, size_t n, uint64_t off);
/* A fork()ed child's copy no longer exists by name; the registry frees it
 * all with its pdb. */
void alex_journal_forget(struct pdb *db);
void alex_journal_free(struct pdb *db);

#endif
