/* watch.h - a stat of a database by its name, answered from memory while
 * inotify has seen nothing that could change it (watch.c). */
#ifndef ALEX_PRELOAD_WATCH_H
#define ALEX_PRELOAD_WATCH_H

#include <sys/stat.h>

struct pdb;

/* A stat of db by its canonical name: 1 with *st filled (the kernel's
 * answer, as kept or taken now), 0 when the caller must ask the kernel.
 * errno is left as it was. */
int alex_watch_stat(struct pdb *db, struct stat64 *st);

/* Every kept answer forgotten: the process's credentials or root changed
 * (hooks_cred.c).  No lock: a vfork()ed child may call it. */
void alex_watch_forget(void);

/* The hooks met number fd closed or reused (pdb.h, alex_kept_met): if it
 * was the queue's, the queue is lost -- an fstat cannot tell (every inotify
 * instance has the same inode: the program's own may have the number now).
 * No lock: a close hook calls it. */
void alex_watch_met(int fd);

/* pthread_atfork handlers: the child's copy of the descriptor shares the
 * parent's queue and is not read (init.c). */
void alex_watch_atfork(void);

#endif
