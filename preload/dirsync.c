/*
 * dirsync.c - SQLite syncs the directory after it creates a journal, so that
 * the journal's name is durable before the database is written.  A journal
 * made in memory has no name on disk: that sync is moot, and skipped.  Any
 * real file created meanwhile cancels the skip (its name must be durable).
 *
 * The directory's open and close for that sync are skipped too: the pdb
 * keeps a descriptor of its directory, handed out when SQLite opens the
 * directory while its sync is expected and taken back at SQLite's close.
 * SQLite does nothing with it but fsync (moot) and close.  Should the
 * program close that number behind our back and the kernel reuse it,
 * SQLite's fsync and close of it still end in the hooks, and the kept
 * number is closed at the end only if it still is the directory.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dirsync.h"
#include "fdtable.h"
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
	struct ofd *o = alex_fd_get(fd);
	if (o && o->role == ROLE_DIR)
		return alex_dirsync_clear(o->db);
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

struct find_dir {
	const char *path;
	struct pdb *db;
};

static int find_one(struct pdb *db, void *arg)
{
	struct find_dir *f = arg;

	if (f->db || !__atomic_load_n(&db->skip_dirsync, __ATOMIC_ACQUIRE) || !db->dir_path ||
	    strcmp(db->dir_path, f->path) != 0)
		return 0;
	alex_mutex_lock(&db->mu);
	if (!db->dir.held) {
		if (db->dir.fd < 0)
			db->dir.fd = REAL(open)(db->dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (db->dir.fd >= 0) {
			db->dir.held = 1;
			f->db = db;
			alex_pdb_ref(db); /* while alex_pdb_each still holds one */
		}
	}
	alex_mutex_unlock(&db->mu);
	return 0;
}

int alex_dirsync_open(const char *path, int flags, struct pdb **db)
{
	struct find_dir f = { path, NULL };

	if (!__atomic_load_n(&alex_dirsync_count, __ATOMIC_ACQUIRE) || !path ||
	    (flags & (O_ACCMODE | O_CREAT | O_TRUNC)) != O_RDONLY)
		return -1;
	alex_pdb_each(find_one, &f);
	if (!f.db)
		return -1;
	*db = f.db;
	return f.db->dir.fd;
}

void alex_dirsync_free(struct pdb *db)
{
	alex_pdb_kept_close(&db->dir, db->dir_dev, db->dir_ino);
	free(db->dir_path);
	db->dir_path = NULL;
}
