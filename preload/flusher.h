/* flusher.h - the background sync of ALEX_SYNC=normal (flusher.c). */
#ifndef ALEX_PRELOAD_FLUSHER_H
#define ALEX_PRELOAD_FLUSHER_H

/* Starts the thread once per process (again in a fork()ed child), if the
 * sync mode asks for it.  Called at the first commit that wants a sync. */
void alex_flusher_start(void);
/* Has this process its thread?  (serve.c syncs a commit that puts a
 * database in WAL mode itself when it has not.) */
int alex_flusher_running(void);
/* Fork handler (init.c): the child has no thread. */
void alex_flusher_forked(void);
/* A commit left half a window unsynced: the thread syncs now, not at its
 * next tick (serve.c). */
void alex_flusher_kick(void);

#endif
