/* ring.h - "has the inotify queue had anything since it was last looked
 * at?" answered by a load from memory: an io_uring poll of the queue
 * (ring.c).  Every call is made under watch.c's mutex. */
#ifndef ALEX_PRELOAD_RING_H
#define ALEX_PRELOAD_RING_H

/* The queue is now this descriptor: a ring made for it by the calling
 * thread (its owner), or the ring's poll moved to it at the owner's next
 * look.  Nothing, where io_uring cannot be had (an older kernel, a seccomp
 * filter, ALEX_NAME_RING=0): every look is then a system call. */
void alex_ring_queue(int queue);

/* The queue is gone (watch.c lost it): never quiet until the owner's next
 * look with the new one. */
void alex_ring_retire(void);

/* 1 when the calling thread owns the ring and nothing has been queued
 * since its last alex_ring_look: the queue is as it was then. */
int alex_ring_quiet(void);

/* Before a look at the queue by system call: the owner takes the ring's
 * signals (what is queued after is signalled again) and arms a poll that
 * ended, or one on a new queue, first; a ring whose owner exited is
 * replaced by one of this thread's.  errno is left as it was. */
void alex_ring_look(int queue);

/* In a fork()ed child, before anything else: no thread here made it. */
void alex_ring_forked(void);

#endif
