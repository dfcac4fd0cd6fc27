/* pdb.h - the registry: one struct pdb per database file (pdb.c). */
#ifndef ALEX_PRELOAD_PDB_H
#define ALEX_PRELOAD_PDB_H

#include <sys/types.h>

#include "state.h"

/* The pdb for the database open on fd (SQLite's descriptor), made and its
 * engine opened on first use.  0 or an errno (ENOTSUP: not a regular
 * file); *out holds a reference. */
int alex_pdb_get(int fd, const char *path, struct pdb **out);
/* The pdb of an open database at path, or NULL (with a reference). */
struct pdb *alex_pdb_find(const char *path);
/*
 * By the name a database was opened under, for the names SQLite derives
 * from it (its journal, its WAL): the database SQLite means, with no
 * system call.  When no database, or more than one, was opened under that
 * name, as alex_pdb_find.
 */
struct pdb *alex_pdb_find_name(const char *path);
/*
 * The journal's or WAL's name of a database this process has open, known
 * by comparing bytes (SQLite passes the same absolute names at every
 * transaction): ROLE_JOURNAL or ROLE_WAL, *db the database with a
 * reference.  ROLE_NONE for any other name, or one not as spelt (relative,
 * another spelling, two databases opened under it): alex_match,
 * alex_abs_path and alex_pdb_find_name then decide, and give the same
 * answer for every name this finds.
 */
enum alex_role alex_pdb_name(const char *path, struct pdb **db);
/* The one database opened under exactly this canonical name (an
 * ALEX_MATCH one), with a reference; NULL otherwise.  No system call. */
struct pdb *alex_pdb_named(const char *path);
/* Does path end as a journal's or a WAL's name does? */
int alex_sidecar_suffix(const char *path);
/*
 * Any name: its role (alex_match's), and for a journal's or WAL's name the
 * open database it belongs to in *db (with a reference), or NULL.  The
 * bytes first (alex_pdb_name), then the long way.
 */
enum alex_role alex_pdb_sidecar(int dirfd, const char *path, struct pdb **db);
/* The same, by the file's identity. */
struct pdb *alex_pdb_find_id(dev_t dev, ino_t ino);
/* Drops a reference; the last one closes the engine (serve.c). */
void alex_pdb_put(struct pdb *db);
/* SQLite closes fd, a descriptor of db's file that k may keep: 1 when fd
 * is k's (it stays open; the caller must not close it), 0 when fd is to
 * be closed. */
int alex_pdb_kept_back(struct pdb *db, struct alex_kept *k, int fd);
/* Is fd (>= 0) still the file (dev, ino)?  One fstat: a program's sweep
 * of descriptors may have closed a number of ALEX's own and the kernel
 * handed it to another file. */
int alex_fd_is(int fd, dev_t dev, ino_t ino);
/* The pdb goes: k's descriptor is closed if it still is the file (dev,
 * ino) -- a program may have closed the number and the kernel reused it. */
void alex_pdb_kept_close(struct alex_kept *k, dev_t dev, ino_t ino);
/*
 * A number of ALEX's own descriptors (the kept journal, the watch's
 * queue), marked while it is ours, so that the hooks see the program close
 * it or the kernel hand it out again: a close, a dup2 over it, a sweep, a
 * new descriptor of that number -- then alex_kept_epoch moves, and the
 * next use checks it is still ours.  One load per call on the
 * pass-through path.
 */
extern unsigned alex_kept_epoch;
void alex_kept_mark(int fd, int on);
void alex_kept_met(int fd);
/* Is fd (marked) still the file (dev, ino)?  The fstat is made only when
 * the hooks met a marked number since c's last check, or at one use in
 * every (a raw close, and the number reused by a call the hooks do not
 * see); -1 is never. */
int alex_kept_still(struct alex_kept_check *c, int fd, dev_t dev, ino_t ino, unsigned every);
/* c as checked now: fd was just made (before it is marked) */
void alex_kept_fresh(struct alex_kept_check *c);
/* The descriptor o's file has kept, if any (the journal, the directory). */
static inline struct alex_kept *alex_ofd_kept(const struct ofd *o)
{
	if (!o)
		return NULL;
	return o->role == ROLE_JOURNAL ? &o->db->j.kept : o->role == ROLE_DIR ? &o->db->dir : NULL;
}
/* One more reference to a database the caller holds one to. */
void alex_pdb_ref(struct pdb *db);

/* Calls fn for each database this process has open (up to 64), holding a
 * reference, not the registry; stops at the first nonzero result. */
int alex_pdb_each(int (*fn)(struct pdb *db, void *arg), void *arg);
/* Calls fn for each open database under the registry's lock: fn may take
 * db->mu (the lock order is registry, then a database), nothing else. */
void alex_pdb_scan(void (*fn)(struct pdb *db, void *arg), void *arg);
/* The same, but 0 without calling fn if the registry stays taken for some
 * 10 ms (its holder may be the caller itself, interrupted by a signal
 * whose handler exits); 1 when scanned. */
int alex_pdb_scan_try(void (*fn)(struct pdb *db, void *arg), void *arg);

/* Registers the fork handlers (the constructor calls it). */
void alex_pdb_atfork(void);

#endif
