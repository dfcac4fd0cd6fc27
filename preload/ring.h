/* ring.h - "has the inotify queue had anything since it was last looked
 * at?" answered by a load from memory: an io_uring poll of the queue
 * (ring.c).  Every call is made under watch.c's mutex. */
#ifndef ALEX_PRELOAD_RING_H
#define ALEX_PRELOAD_RING_H

/* A poll of queue armed on a new ring, made by the calling thread (its
 * owner).  0, or -1: none (no io_uring here, a seccomp filter,
 * ALEX_NAME_RING=0), and every look at the queue is a system call. */
int alex_ring_make(int queue);

/* 1 when the calling thread made the ring and nothing has been queued
 * since the last alex_ring_reap: the queue is as empty as it was then. */
int alex_ring_quiet(void);

/* The signals taken, before the caller looks at the queue itself (what is
 * queued after is signalled again).  0, or 1 when the poll has ended (or
 * its owner thread has): dropped, to be made again by the caller before
 * it looks. */
int alex_ring_reap(void);

/* The ring let go (the queue was lost, or this is a fork()ed child). */
void alex_ring_drop(void);

/* In a fork()ed child, before anything else: no thread here made it. */
void alex_ring_forked(void);

#endif
