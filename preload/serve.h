/*
 * serve.h - the one way from the hooks into the engine (serve.c).
 *
 * Every call takes the database's struct pdb, holds its lock for exactly
 * the engine calls it makes, and answers in libc's convention: a result,
 * or -1 with errno set (alex_errno_of, errmap.h, turns an engine result
 * into one).  errno is left alone on success.  No hook touches db->eng.
 */
#ifndef ALEX_PRELOAD_SERVE_H
#define ALEX_PRELOAD_SERVE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "state.h"

/* Opens db's engine (db->path, which the registry made canonical) and says
 * what recovery found.  0 or an errno; a failure is said once, naming the
 * file and what to do. */
int alex_serve_open(struct pdb *db);
/* Where the engines' bytes go: POSIX files, or the test or tracing layer. */
const struct alex_io *alex_serve_backend(void);
/* Before the last close of db in the process, with no lock held: waits
 * (ALEX_CLOSE_WAIT_MS at most) for another process to let go of SQLite's
 * locks when the close could otherwise leave the log holding pages with no
 * engine left that may write the database (serve.c). */
void alex_serve_close_wait(struct pdb *db);
/* The last reference is gone: commits what SQLite left unsynced,
 * checkpoints if no other process uses the database, closes the engine. */
void alex_serve_close(struct pdb *db);

enum alex_serve_io {
	ALEX_SERVE_READ = 0,
	ALEX_SERVE_WRITE = 1,
	ALEX_SERVE_APPEND = 2 | ALEX_SERVE_WRITE /* at the end, whatever *pos says */
};
/* Reads or writes the buffers at *pos, which moves by the bytes done.
 * A read stops at the end of the file.  Bytes done, or -1. */
ssize_t alex_serve_io(struct pdb *db, const struct iovec *iov, int cnt, uint64_t *pos,
		      enum alex_serve_io how);
/* lseek on a description whose offset is *pos: the new offset, or -1. */
int64_t alex_serve_seek(struct pdb *db, uint64_t *pos, int64_t off, int whence);
/* The logical size of the database file (what SQLite sees). */
uint64_t alex_serve_size(struct pdb *db);
/* Does the file carry the fence (the log holds this epoch's commits)?
 * SQLite without ALEX then cannot read it (span.c: lingering). */
int alex_serve_fenced(struct pdb *db);
/* The process's first transaction on db: counted in the log's shared
 * region, where a process alone with the database looks (span.c) */
void alex_serve_arrive(struct pdb *db);
/* At a span's start, under one lock: -1 when the file is not fenced
 * (alex_serve_fenced), else 0 with the arrivals counted there in
 * *arrivals, or 1 when there is no region to trust (core/shm.h) */
int alex_serve_span_look(struct pdb *db, uint64_t *arrivals);
/* Cuts or extends the database file to size.  0 or -1. */
int alex_serve_truncate(struct pdb *db, int64_t size);
/* posix_fallocate on the database: grows it to end if it is smaller.
 * 0 or an errno (that function's convention). */
int alex_serve_extend(struct pdb *db, uint64_t end);

/* A commit boundary SQLite showed (its sync of the database); then also
 * the syncing thread asked for, or started, if the commit left work for
 * it.  0 or -1. */
int alex_serve_commit(struct pdb *db);
/* alex_serve_commit, when the engine holds an open transaction or a
 * database's part of one across several: SQLite lowering EXCLUSIVE or
 * releasing RESERVED, or finalizing its journal, which usually follow a
 * commit already made at its sync.  Nothing else then (no empty commit, no
 * look at the syncing thread: the commit that made the work asked
 * already). */
int alex_serve_commit_open(struct pdb *db);
/* SQLite finalized db's journal: its transaction is over.  0 or -1. */
int alex_serve_journal_done(struct pdb *db);
/* A write to db's in-memory journal, after it succeeded, that may name a
 * super-journal (alex_multidb_may_name_super, asked by the caller). */
void alex_serve_journal_write(struct pdb *db, const void *buf, size_t n, int64_t off);
/* SQLite is about to remove super, a super-journal: db's part of that
 * transaction is committed first, if db has one.  0 or an errno. */
int alex_serve_super_commit(struct pdb *db, const char *super);
/* SQLite took SHARED (or EXCLUSIVE straight from it): other processes'
 * commits become visible.  0 or -1. */
int alex_serve_lock_shared(struct pdb *db);
/* SQLite's SHARED lock went, or no longer keeps other writers out (WAL
 * mode): the next SHARED catches up again, and reads until then see the
 * file, not the header kept at the last catch-up (alex_base_hdr_forget). */
void alex_serve_unfresh(struct pdb *db);
/* SQLite took RESERVED: with a staging log, its engines catch up with what
 * another process's flusher merged while this one held SHARED (staging.c:
 * flusher_merge) -- nothing else can have moved.  0, or -1 with errno. */
int alex_serve_lock_reserved(struct pdb *db);
/* Waits until no engine call on db is under way (mu taken and let go). */
void alex_serve_wait(struct pdb *db);

/* SQLite opens db's -wal: empties the log first (or refuses).  0 or an
 * errno; on success the description is counted in db->wal_ofds. */
int alex_serve_wal_open(struct pdb *db);
/* The last descriptor of a -wal description is gone. */
void alex_serve_wal_closed(struct pdb *db);

/* ALEX_SYNC=normal (flusher.c): 1 when a sync of db's log is due and
 * begun, under the registry's lock; then alex_serve_sync_end, without it,
 * syncs and counts it.  *waiting: db has unsynced commits; *due_at, when
 * none began: when one will be due by time (UINT64_MAX: not by time). */
int alex_serve_sync_start(struct pdb *db, int *waiting, uint64_t *due_at);
void alex_serve_sync_end(struct pdb *db);
/* The process's image ends (exit without closing its databases, _exit,
 * exec): NORMAL's committed records are synced now, since no thread of
 * this process will (the promise is ALEX_SYNC_MS).  Best effort: a
 * database whose lock stays taken is skipped. */
void alex_serve_sync_before_end(void);
/* In a forked child: forgets the parent's open transaction and journal. */
void alex_serve_forget(struct pdb *db);
/* Adds db's engine counters to *out. */
void alex_serve_stats(struct pdb *db, struct alex_stats *out);

#endif
