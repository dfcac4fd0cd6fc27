/*
 * inspect_map_impl.h - shared by inspect_map.c (the chain and the map) and
 * inspect_slots.c (the header slots and the fence) only: the log as they
 * read it, and the only ways they open, read and close a file.
 */
#ifndef ALEX_INSPECT_MAP_IMPL_H
#define ALEX_INSPECT_MAP_IMPL_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "db.h"
#include "inspect_map.h"
#include "io.h"

struct rd {
	int fd;
	uint8_t *buf; /* a whole record */
	size_t cap;
};

/*
 * Files are opened, locks asked about and descriptors closed by system
 * call, not through libc: should libalex.so be preloaded into this process
 * (an LD_PRELOAD left in the environment), a libc open of the database
 * would give it an engine, whose close would checkpoint.  -1 with errno.
 */
static inline int open_ro(const char *path)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	return fd < 0 ? -1 : (int)fd;
}

static inline void close_fd(int fd)
{
	if (fd >= 0)
		syscall(SYS_close, fd);
}

/* pread, whole or up to the end of the file: the POSIX backend's own,
 * itself a system call. */
static inline int read_at(int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
	return alex_io_posix.ops->pread(alex_io_posix.ctx, fd, buf, n, off, got);
}

/*
 * inspect_slots.c, called in this order: the database file's sizes and
 * mark, the header slots (r->buf holds ALEX_BLOCK + ALEX_HDR_SLOT_USED
 * bytes), the newer epoch a damaged slot may have lost (only once
 * lm->cur >= 0), and whether that epoch's records count.
 */
int alex_lm_read_base(const char *db_path, struct alex_logmap *lm, struct alex_db *db);
int alex_lm_read_slots(struct rd *r, struct alex_logmap *lm);
int alex_lm_adopt(struct rd *r, struct alex_logmap *lm, uint64_t off);
enum alex_epoch_state alex_lm_epoch_state(struct alex_logmap *lm, struct alex_db *db);

#endif
