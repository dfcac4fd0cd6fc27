/* io_many.h - many direct writes in flight at once (io_many.c). */
#ifndef ALEX_IO_MANY_H
#define ALEX_IO_MANY_H

#include <stddef.h>
#include <stdint.h>

struct alex_piece;

/* pwrite(2) until all of it is written: 0, errno, or ENOSPC for a write
 * that wrote nothing (io_posix.c's pwrite too). */
int alex_io_pwrite_all(int fd, const void *buf, size_t n, uint64_t off);

/* Writes every piece through dfd (opened O_DIRECT), all of them in flight
 * together where the kernel allows, waits for them all, and makes the page
 * cache of fd (the same file) show them: 0, or the first piece's errno in
 * order of the pieces (a short write: ENOSPC); EOPNOTSUPP, having written
 * nothing, where the kernel cannot tell what it caches (before 6.5). */
int alex_io_pwrite_many(int dfd, int fd, const struct alex_piece *p, size_t n);

/* The last step of that alone, after the pieces were written some other
 * way (the test backend's numbered writes). */
int alex_io_direct_settle(int fd, const struct alex_piece *p, size_t n);

#endif
