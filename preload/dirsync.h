/* dirsync.h - SQLite's directory sync after making a journal (dirsync.c). */
#ifndef ALEX_PRELOAD_DIRSYNC_H
#define ALEX_PRELOAD_DIRSYNC_H

#include "state.h"

/* db's journal was made in memory: the next sync of its directory is moot. */
void alex_dirsync_expect(struct pdb *db);
/* Is fd a directory whose sync is moot?  Then it is taken (not expected
 * again).  One atomic load while nothing is expected. */
int alex_dirsync_take(int fd);
/* A real file appears: every directory sync counts again. */
void alex_dirsync_cancel(void);
/* In a forked child: nothing is expected (fork handler). */
void alex_dirsync_forked(void);

/*
 * SQLite opens path (flags) to sync it: when that is the directory of a
 * database whose sync is expected, a descriptor kept for it is handed out
 * (no system call), as a ROLE_DIR description the caller puts in the fd
 * table, with a reference to the database in *db.  Else -1.
 */
int alex_dirsync_open(const char *path, int flags, struct pdb **db);
/* The pdb goes: its kept descriptor is closed, if it is still its. */
void alex_dirsync_free(struct pdb *db);

#endif
