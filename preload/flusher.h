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
/* After a commit (serve.c), want from alex_sync_wanted: ALEX_WANT_NOW, a
 * sync is due (half a window unsynced), not at the thread's next tick;
 * ALEX_WANT_CLOCK, a window's clock started, for a thread that is asleep. */
void alex_flusher_kick(int want);

#endif
