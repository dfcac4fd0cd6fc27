/*
 * state.h - what libalex.so knows about the files it tracks.  The modules
 * that act on it declare their functions in headers of their own
 * (fdtable.h, pdb.h, serve.h, journal.h, multidb.h, dirsync.h).
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

#include "mutex.h"
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "alex.h"

enum alex_role { ROLE_NONE = 0, ROLE_DB, ROLE_JOURNAL, ROLE_WAL, ROLE_SHM, ROLE_DIR, ROLE_TEMP };

/*
 * A descriptor a pdb keeps open across SQLite's opens and closes of a file
 * that needs no kernel file of its own each time: SQLite's open hands it
 * out (held), its close gives it back (alex_pdb_kept_back).  Under the
 * pdb's mu.
 */
struct alex_kept {
	int fd;              /* or -1 */
	int held;            /* SQLite has it open now */
};

/* A descriptor of ALEX's own, checked by fstat only when the hooks met its
 * number (pdb.h: alex_kept_still) */
struct alex_kept_check {
	unsigned epoch;      /* alex_kept_epoch when it was known ours ... */
	unsigned uses;       /* ... and uses since */
};

/* A database's rollback journal, in memory (journal.c; under the pdb's mu). */
struct alex_jmem {
	int exists;          /* by name (atomic: alex_journal_find reads it
				without the lock) */
	uint8_t *data;       /* its bytes: size of them, in cap mapped */
	uint64_t size;
	size_t cap;
	struct alex_kept kept; /* its descriptor */
	dev_t fd_dev;        /* kept.fd's file, to know it is still ours */
	ino_t fd_ino;
	struct alex_kept_check fd_check;
};

/* locks.c's model of a process's locks on SQLite's lock bytes: each of
 * PENDING, RESERVED and the SHARED range unlocked, F_RDLCK or F_WRLCK;
 * unknown after a call it cannot follow.  gen counts the closes that drop
 * them all (POSIX: any descriptor of the file closed). */
struct alex_held {
	short pending, reserved, shared;
	int unknown;
	unsigned gen;
	int span; /* 1: in a span under the span lock: the kernel holds a
		     write lock over all of SQLite's bytes, and the regions
		     above are what SQLite was told; 2: SQLite holds nothing
		     and the write lock lingers; 3: the span's own description
		     holds what SQLite was told, and SQLite's calls are made
		     there (span.c) */
};

struct pdb {
	dev_t dev;
	ino_t ino;
	char *path;          /* canonical path of the database */
	size_t path_len;
	int path_matches;    /* path is an ALEX_MATCH name (not a symlink's
				target of another name): alex_pdb_name */
	struct stat64 name_st; /* the kernel's stat of path, kept at ... */
	uint64_t name_gen;   /* ... this generation of the watch (watch.c) */
	alex_db *eng;
	alex_db *stg;        /* the staging engine over eng, or NULL (staging.h) */
	int readonly;        /* this process may only read the file (another
				user's database it may read, a read-only
				mount): its engines read and write nothing */
	int wal_said;        /* ... and was told once that it cannot open the
				WAL over a log holding pages */
	struct alex_io_over *over; /* ... its backend */
	uint64_t stg_since;  /* this process's oldest commit in stg that is
				neither merged nor synced, or 0 */
	int stg_direct;      /* this transaction goes to eng, stg being empty:
				the file system is short of space (staging.c) */
	int stg_said;        /* ... and the user was told, once */
	alex_mutex mu;      /* serialises engine calls */
	int refs;            /* ofds and lookups holding it; atomic, taken
				under the registry lock (pdb.c) */
	struct alex_jmem j;  /* the journal, when SQLite's lives in memory */
	int j_disk;          /* SQLite's journal is a file on disk (there
				before us: passed through) until a look finds
				none: its commits are synced at SQLite's sync
				of the database (serve.c: commit_locked) */
	int bound_seen;      /* SQLite showed a transaction's end here (a sync,
				a lock let go, a journal's end): from then on a
				write with no journal live waits for the next
				one (serve.c: at_write) ... */
	int no_end;          /* ... unless a write began another transaction
				with none shown between them: until the next */
	uint64_t hi_off;     /* the highest offset a write began at since the
				last commit, if hi_set */
	int hi_set;
	mode_t mode;         /* the database's permissions and owner when it
				was opened: the journal's too */
	uid_t uid;
	gid_t gid;
	dev_t dir_dev;       /* the database's directory, for SQLite's dirsync */
	ino_t dir_ino;
	char *dir_path;      /* its name (dirsync.c) */
	struct alex_kept dir; /* a descriptor of it, for SQLite's moot syncs */
	int skip_dirsync;    /* a journal was made in memory: its dirsync is moot */
	char *super;         /* the super-journal the in-memory journal names:
				a transaction across databases (multidb.c) */
	int super_done;      /* its conditional commit is written */
	int ref_check;       /* a reference journal may be left to remove */
	int close_waited;    /* the last close waited for other processes'
				locks already (serve.c) */
	int fresh;           /* (atomic) caught up with other processes since
				this process took SHARED, and holds it still:
				in rollback mode nobody else can commit until
				it lets go, so its EXCLUSIVE and the downgrade
				after need no catch-up (hooks_fcntl.c) */
	struct alex_held held; /* the process's locks on SQLite's bytes of
				the file, as made through the hook (locks.c) */
	int presence_fd;     /* the directory's descriptor that holds this
				process's presence lock, -1 not yet, -2 none
				could be had (span.c) */
	struct alex_kept_check presence_check; /* ... still ours (pdb.h) */
	int span_alone;      /* the last presence query found no other */
	unsigned span_n;     /* spans since that query */
	uint64_t span_asked_ns; /* when it was made (monotonic) ... */
	uint64_t span_arrivals; /* ... and the log's arrivals read before it */
	int span_arrivals_ok;  /* (there was a region to read them from) */
	unsigned span_warm;  /* spans asked for, up to SPAN_WARM (span.c) */
	unsigned span_skip;  /* spans left without the span lock (refused) */
	alex_mutex span_mu; /* held while the span's state changes: by
				SQLite's lock calls, a close, the lease */
	unsigned span_gen;   /* spans begun under the span lock ... */
	unsigned span_seen;  /* ... and the one the lease saw last (span.c) */
	uint64_t span_end_ns; /* when the last span ended (monotonic) ... */
	int span_burst;      /* ... and this one began soon after: it lingers */
	int span_fd;         /* the span's own open file description of the
				file, -1 not yet, -2 none (span.c) */
	void *span_pin;      /* a mapping of it, which keeps it open */
	int maps;            /* SQLite's mappings of the file (mmap.c) */
	unsigned flusher_gen; /* (atomic) odd while the flusher holds SQLite's
				lock bytes to merge (staging.c), +2 each time:
				a lock call that met them waits (mu) */
	int forked;          /* this process is a fork of the one that opened
				the engines: it shares their descriptions */
	int committed_here;  /* a commit made by this process since its fork
				(under mu): a forked child syncs only its own
				before its end (serve.c) */
	int fork_shared;     /* a fork shares the engines' descriptions (and
				their open-file-description locks) with
				another process, parent or child (staging.c) */
	int syncing;         /* the flusher syncs the log without mu (1), or
				the staging log (2): the engine must not
				close before (mu); back to 0 with a
				futex wake (alex_serve_close waits) */
	int sync_waiters;    /* closes waiting for that (mu): no waiter, no
				wake -- a system call per sync window */
	struct alex_fence no_journal; /* fenced epochs in which this process */
	struct alex_fence no_wal;     /* found no <db>-journal, no <db>-wal on
					 disk: none can appear before they end
					 (journal.c: alex_name_known; mu) */
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

/* dirsync.c: databases whose journal's directory sync is expected, and
 * the end of one expectation (it counts; 1 if db had one).  Here so that
 * the registry can drop a closing database's without calling dirsync.c. */
extern int alex_dirsync_count;
static inline int alex_dirsync_clear(struct pdb *db)
{
	if (!__atomic_exchange_n(&db->skip_dirsync, 0, __ATOMIC_ACQ_REL))
		return 0;
	__atomic_sub_fetch(&alex_dirsync_count, 1, __ATOMIC_ACQ_REL);
	return 1;
}

struct alex_xts_file; /* core/xts_file.h */

struct ofd {
	struct pdb *db;      /* NULL for ROLE_TEMP */
	struct alex_xts_file *tmp; /* ROLE_TEMP: SQLite's temporary file under
				      a key, stored encrypted (temp.c) */
	enum alex_role role; /* ROLE_DB: served by the engine (unless direct);
				ROLE_JOURNAL: the in-memory journal, served by
				journal.c;
				ROLE_WAL: SQLite's -wal, passed through and
				counted in db->wal_ofds;
				ROLE_DIR: the database's directory, opened
				for a sync that is moot (dirsync.c);
				ROLE_TEMP: see tmp */
	uint64_t pos;        /* file offset for read/write/lseek (ROLE_DB) */
	int append;
	int elide;           /* SQLite's lock calls made fewer: which answer is
				owed, and under which of held's generations
				(locks.c) */
	unsigned elide_gen;
	int refs;            /* descriptors pointing here (atomic) */
};

#endif
