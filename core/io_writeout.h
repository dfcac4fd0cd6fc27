/* io_writeout.h - a write made durable by another file's flush (io_writeout.c). */
#ifndef ALEX_IO_WRITEOUT_H
#define ALEX_IO_WRITEOUT_H

#include <stdint.h>

/* Writes [off, off + n) of fd to the device and waits, without a cache
 * flush; 0, an errno, or EOPNOTSUPP where the next fdatasync of with
 * would not make it durable (the caller must sync fd itself). */
int alex_io_write_out(int fd, uint64_t off, uint64_t n, int with);

/* An ext4 options file's text (one option a line) says data=journal. */
int alex_io_opts_journal(const char *opts);

#endif
