/* uring.h - an io_uring made and mapped by raw system calls (uring.c):
 * the checkpoint's direct writes (io_many.c) and the inotify queue's
 * doorbell (preload/ring.c). */
#ifndef ALEX_URING_H
#define ALEX_URING_H

#include <linux/io_uring.h>
#include <stddef.h>
#include <stdint.h>

struct alex_uring {
	int fd;
	uint8_t *sq, *cq; /* the same mapping where the kernel has one for both */
	size_t sq_len, cq_len, sqes_len;
	struct io_uring_sqe *sqes;
	unsigned *sq_tail, *sq_mask, *sq_array, *sq_flags;
	unsigned *cq_head, *cq_tail, *cq_mask, *cq_overflow;
	struct io_uring_cqe *cqes;
};

/* May the calling thread make io_uring calls?  Not under any seccomp
 * filter: one may kill the process there (systemd's SystemCallFilter= does
 * unless told otherwise), and a program may install one at any time, in
 * one thread or all, so it is asked before every call until a filter is
 * seen (one is never lifted; from then on no thread asks). */
int alex_uring_allowed(void);

/* A ring of entries, set up with p's flags (and cq_entries), mapped: 0;
 * or setup's errno, or EOPNOTSUPP (a filter, no mapping), with nothing
 * left open.  p comes back as the kernel filled it. */
int alex_uring_open(struct alex_uring *u, unsigned entries, struct io_uring_params *p);

/* The mappings gone (the descriptor is the caller's). */
void alex_uring_unmap(struct alex_uring *u);

/* The mappings and the descriptor gone. */
void alex_uring_close(struct alex_uring *u);

#endif
