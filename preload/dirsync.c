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

/* How many databases expect their directory's sync (state.h): the fast
 * path's one load.  Each db->skip_dirsync flips by atomic exchange and
 * moves the count with it, so that expect (under db->mu) and take/cancel
 * (under the registry) never lose one another's change. */
int alex_dirsync_count;

void alex_dirsync_expect(struct pdb *db)
{
	if (!__atomic_exchange_n(&db->skip_dirsync, 1, __ATOMIC_ACQ_REL))
		__atomic_add_fetch(&alex_dirsync_count, 1, __ATOMIC_ACQ_REL);
}

struct take {
	dev_t dev;
	ino_t ino;
	int hit;
};

static void take_one(struct pdb *db, void *arg)
{
	struct take *t = arg;

	if (db->dir_dev == t->dev && db->dir_ino == t->ino && alex_dirsync_clear(db))
		t->hit = 1;
}

int alex_dirsync_take(int fd)
{
	struct stat st;

	if (!__atomic_load_n(&alex_dirsync_count, __ATOMIC_ACQUIRE))
		return 0;
	if (REAL(fstat)(fd, &st) != 0 || !S_ISDIR(st.st_mode))
		return 0;
	struct take t = { st.st_dev, st.st_ino, 0 };
	alex_pdb_scan(take_one, &t);
	return t.hit;
}

static void cancel_one(struct pdb *db, void *arg)
{
	(void)arg;
	alex_dirsync_clear(db);
}

void alex_dirsync_cancel(void)
{
	if (!__atomic_load_n(&alex_dirsync_count, __ATOMIC_ACQUIRE))
		return;
	alex_pdb_scan(cancel_one, NULL);
}

void alex_dirsync_forked(void)
{
	/* runs before the pdbs forget theirs (alex_serve_forget, which clears
	 * the flags without counting): the child starts from none */
	alex_dirsync_count = 0;
}
