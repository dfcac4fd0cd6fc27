/*
 * record.h - in the test build (libalex-test.so), what SQLite itself
 * changes on disk is recorded beside what the engine does (io_test.h:
 * ALEX_TEST_RECORD): its WAL, and the database file in WAL mode.  Its
 * in-memory journal never reaches the disk.  In the shipped library these
 * are empty statements.
 */
#ifndef ALEX_PRELOAD_RECORD_H
#define ALEX_PRELOAD_RECORD_H

#include "state.h"

#ifdef ALEX_TESTING
#include "io_test.h"

/* Is o a file SQLite writes on disk itself? */
static inline int alex_rec_wanted(const struct ofd *o)
{
	return o && (o->role == ROLE_WAL || (o->role == ROLE_DB && alex_pdb_direct(o->db)));
}

/*
 * SQLite's super-journals (multidb.c) are plain files, never ours, but
 * their removal commits a transaction across databases: the test build
 * records them too, by descriptor (record.c).
 */
int alex_rec_super_name(const char *path);
void alex_rec_watch(int fd, int on);
int alex_rec_watched(int fd);

#define ALEX_REC(kind, o, fd, off, len, data, path)                                              \
	do {                                                                                     \
		if (alex_rec_wanted(o) || (!(o) && alex_rec_watched(fd)))                        \
			alex_test_record((kind), (fd), 0, (off), (len), (data), (path), NULL);   \
	} while (0)
#define ALEX_REC_PATH(kind, path, path2) alex_test_record((kind), -1, 0, 0, 0, NULL, (path), (path2))
#define ALEX_REC_FD(kind, fd, off, len, data, path)                                              \
	alex_test_record((kind), (fd), 0, (off), (len), (data), (path), NULL)
#define ALEX_REC_WATCH(fd, path)                                                                 \
	do {                                                                                     \
		if (alex_rec_super_name(path)) {                                                 \
			alex_rec_watch((fd), 1);                                                 \
			alex_test_record(ALEX_TR_NAME, (fd), 0, 0, 0, NULL, (path), NULL);       \
		}                                                                                \
	} while (0)
#define ALEX_REC_UNWATCH(fd) alex_rec_watch((fd), 0)
#else
#define ALEX_REC(kind, o, fd, off, len, data, path) ((void)0)
#define ALEX_REC_WATCH(fd, path) ((void)0)
#define ALEX_REC_UNWATCH(fd) ((void)0)
#define alex_rec_super_name(path) 0
#define ALEX_REC_PATH(kind, path, path2) ((void)0)
#define ALEX_REC_FD(kind, fd, off, len, data, path) ((void)0)
#endif

#endif
