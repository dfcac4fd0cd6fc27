/*
 * state.h - what libalex.so knows about the files it tracks.
 *
 * A database file (one device and inode) has one struct pdb per process:
 * its engine, the lock that serialises calls into it, and its rollback
 * journal when that lives in memory.  An open file description of a tracked
 * file (shared by dup'd descriptors, like the kernel's) is a struct ofd; the
 * fd table maps descriptors to them.  Untracked descriptors map to NULL,
 * and that one load is all an untracked call pays.
 */
#ifndef ALEX_PRELOAD_STATE_H
#define ALEX_PRELOAD_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "alex.h"

enum alex_role { ROLE_NONE = 0, ROLE_DB, ROLE_JOURNAL, ROLE_WAL, ROLE_SHM };

struct pdb {
	dev_t dev;
	ino_t ino;
	char *path;          /* canonical path of the database */
	alex_db *eng;
	pthread_mutex_t mu;  /* serialises engine calls */
	int refs;            /* ofds and lookups holding it; registry lock */
	int jmem;            /* our memfd holding the in-memory journal, or -1 */
	dev_t dir_dev;       /* the database's directory, for SQLite's dirsync */
	ino_t dir_ino;
	int skip_dirsync;    /* a journal was made in memory: its dirsync is moot */
	char *super;         /* the super-journal the in-memory journal names:
				a transaction across databases (multidb.c) */
	int super_done;      /* its conditional commit is written */
	int ref_check;       /* a reference journal may be left to remove */
	int wal_ofds;        /* SQLite's open -wal descriptions (atomic): while
				there are any the database is in WAL mode, the
				log holds nothing, and the file is SQLite's own */
	struct pdb *next;
};

/* WAL mode: the database file is written and read by SQLite directly
 * (docs/PRELOAD.md); every call on it passes through. */
static inline int alex_pdb_direct(const struct pdb *db)
{
	return __atomic_load_n(&db->wal_ofds, __ATOMIC_ACQUIRE) > 0;
}

struct ofd {
	struct pdb *db;
	enum alex_role role; /* ROLE_DB: served by the engine (unless direct);
				ROLE_JOURNAL: a memfd, only its syncs are ours;
				ROLE_WAL: SQLite's -wal, passed through and
				counted in db->wal_ofds */
	uint64_t pos;        /* file offset for read/write/lseek (ROLE_DB) */
	int append;
	int refs;            /* descriptors pointing here (atomic) */
};

/* fdtable.c */
int alex_fd_init(void);
struct ofd *alex_fd_get(int fd);
/* Points fd at o (taking a reference); EMFILE if fd is beyond the table. */
int alex_fd_set(int fd, struct ofd *o);
/* Forgets fd; returns its ofd (whose reference the caller now owns). */
struct ofd *alex_fd_take(int fd);
void alex_ofd_put(struct ofd *o);
struct ofd *alex_ofd_new(struct pdb *db, enum alex_role role);

/* pdb.c */
/* The pdb for the database open on fd (SQLite's descriptor), made and its
 * engine opened on first use.  0 or an errno; *out holds a reference. */
int alex_pdb_get(int fd, const char *path, struct pdb **out);
/* The pdb of an open database at path, or NULL (with a reference). */
struct pdb *alex_pdb_find(const char *path);
/* The same, by the file's identity. */
struct pdb *alex_pdb_find_id(dev_t dev, ino_t ino);
void alex_pdb_put(struct pdb *db);
/* Any pdb waiting to drop SQLite's directory sync? (cheap, no lock) */
extern int alex_pdb_dirsync_pending;
/* Is fd a directory holding a database whose journal is in memory? */
int alex_pdb_take_dirsync(int fd);
void alex_pdb_atfork(void);

/* match.c */
/* Classifies a path by name.  For a journal or WAL, db receives the
 * database's path (dbcap bytes). */
enum alex_role alex_match(const char *path, char *db, size_t dbcap);

/* A vfork()ed child shares our memory until it execs: it must not change
 * the tables (hooks_open.c). */
int alex_vfork_child(void);
void alex_owner_reset(void);

/* SQLite opens db's -wal: empties the log first (or refuses, 0 or an
 * errno), then counts the description (pdb.c). */
int alex_pdb_wal_open(struct pdb *db);
/* The last descriptor of a -wal description is gone. */
void alex_pdb_wal_closed(struct pdb *db);
/* Commits db's open transaction at a boundary SQLite showed (pdb.c). */
int alex_pdb_commit(struct pdb *db);
/* The same when SQLite finalized db's journal: its transaction is over. */
int alex_pdb_journal_done(struct pdb *db);

/* Calls fn for each database this process has open (up to 64), holding a
 * reference, not the registry; stops at the first nonzero result. */
int alex_pdb_each(int (*fn)(struct pdb *db, void *arg), void *arg);

/* multidb.c: transactions across attached databases */
/* Is path named as SQLite names a super-journal ("<db>-mj" and hex)? */
int alex_multidb_is_super(const char *path);
/* SQLite is about to remove the super-journal at path (absolute): the
 * commit point.  0 or an errno for the unlink to fail with. */
int alex_multidb_super_unlink(const char *path);
/* A write to db's in-memory journal (fd), after it succeeded. */
void alex_multidb_journal_write(struct pdb *db, int fd, const void *buf, size_t n, int64_t off);
/* The commit of db's part: reference journal, then conditional record.
 * Holds db->mu.  0 or an errno. */
int alex_multidb_commit(struct pdb *db);
/* SQLite finalized db's journal: the transaction is over.  Holds db->mu. */
void alex_multidb_end(struct pdb *db);
/* After recovery decided: removes a reference journal left by a crash, and
 * the super-journal once nothing names it.  Holds db->mu. */
void alex_multidb_cleanup(struct pdb *db);

/* Engine result -> errno for the caller. */
int alex_errno_of(int rc);

#endif
