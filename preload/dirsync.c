/*
 * dirsync.c - SQLite syncs the directory after it creates a journal, so that
 * the journal's name is durable before the database is written.  A journal
 * made in memory has no name on disk: that sync is moot, and skipped.  Any
 * real file created meanwhile cancels the skip (its name must be durable).
 */
#include <sys/stat.h>

#include "dirsync.h"
#include "pdb.h"
#include "real.h"

/* any database expecting its directory's sync: the fast path's one load */
static int pending;

void alex_dirsync_expect(struct pdb *db)
{
	db->skip_dirsync = 1;
	__atomic_store_n(&pending, 1, __ATOMIC_RELEASE);
}

struct take {
	dev_t dev;
	ino_t ino;
	int hit, still;
};

static void take_one(struct pdb *db, void *arg)
{
	struct take *t = arg;

	if (db->skip_dirsync && db->dir_dev == t->dev && db->dir_ino == t->ino) {
		db->skip_dirsync = 0;
		t->hit = 1;
	}
	t->still |= db->skip_dirsync;
}

int alex_dirsync_take(int fd)
{
	struct stat st;

	if (!__atomic_load_n(&pending, __ATOMIC_ACQUIRE))
		return 0;
	if (REAL(fstat)(fd, &st) != 0 || !S_ISDIR(st.st_mode))
		return 0;
	struct take t = { st.st_dev, st.st_ino, 0, 0 };
	alex_pdb_scan(take_one, &t);
	__atomic_store_n(&pending, t.still, __ATOMIC_RELEASE);
	return t.hit;
}

static void cancel_one(struct pdb *db, void *arg)
{
	(void)arg;
	db->skip_dirsync = 0;
}

void alex_dirsync_cancel(void)
{
	if (!__atomic_load_n(&pending, __ATOMIC_ACQUIRE))
		return;
	alex_pdb_scan(cancel_one, NULL);
	__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
}

void alex_dirsync_forked(void)
{
	pending = 0; /* the pdbs forgot theirs (alex_serve_forget) */
}
