/*
 * staging.h - NORMAL mode's staging log in libalex.so (docs/STAGING.md).
 *
 * A database whose commits are staged has two engines: db->eng, the
 * durable one (<db>-alex, every commit synced), and db->stg above it
 * (<db>-alex-stage, never synced), where SQLite's reads and writes go.
 * The window's commits reach the device once, as one merged record of
 * db->eng; a process death loses nothing (the staging log is a file); a
 * power cut loses at most the window.  All calls hold db->mu.
 */
#ifndef ALEX_PRELOAD_STAGING_H
#define ALEX_PRELOAD_STAGING_H

#include "state.h"

struct alex_io;

/* The engine SQLite's bytes go to: the staging one, if any. */
static inline alex_db *alex_top(const struct pdb *db)
{
	return db->stg && !db->stg_direct ? db->stg : db->eng;
}

/* Before a write: where this transaction goes, decided at its first write
 * (staging.c); then alex_top says. */
void alex_staging_route(struct pdb *db);

/* After db->eng opened: the staging engine too, when this process stages
 * (ALEX_STAGE=1 in NORMAL mode) or another did (its log exists, or the
 * durable log says STAGED).  0 or an engine error. */
int alex_staging_open(struct pdb *db, const struct alex_io *io);
/* Catches up with other processes: the durable engine, then the staging
 * one, opened now if another process began to stage. */
int alex_staging_catch_up(struct pdb *db, int locked);
/* Commits the open transaction where it belongs, and ends the window
 * when it is due (a merge, inside this commit); *kick: the flusher's
 * clock must start.  at_write: a write committed as it is made (serve.c),
 * which FULL mode syncs at the next boundary (alex_commit_now). */
int alex_staging_commit(struct pdb *db, int at_write, int *kick);
/* The open transaction moved down (a commit across databases, or the
 * rollback after one), to be committed to db->eng. */
int alex_staging_move(struct pdb *db);
/* ... and committed there: the staging engine sees it at once. */
int alex_staging_moved(struct pdb *db);
/* WAL mode and `alex checkpoint` need the durable log to hold it all. */
int alex_staging_drain(struct pdb *db);
/* The flusher: is a window due with no commit to end it (*waiting: one
 * is open); then alex_staging_flush merges it when no writer is at work,
 * else makes the staging log durable. */
int alex_staging_due(struct pdb *db, int *waiting);
/* ... and when it will be (UINT64_MAX: no window open) */
uint64_t alex_staging_due_at(const struct pdb *db);
void alex_staging_flush(struct pdb *db);
/* At the last close: merged if this process can keep others out (xfd:
 * SQLite's EXCLUSIVE held), else the staging log synced; then closed. */
void alex_staging_close(struct pdb *db, int xfd);
/* A forked child: the parent's open transaction is the parent's. */
void alex_staging_forget(struct pdb *db);

#endif
