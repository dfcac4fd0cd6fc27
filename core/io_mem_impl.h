/* io_mem_impl.h - the in-memory files' state, shared by io_mem.c (the
 * files) and io_mem_crash.c (their crash images) only. */
#ifndef ALEX_IO_MEM_IMPL_H
#define ALEX_IO_MEM_IMPL_H

#include "io.h"

struct undo {
	uint64_t seq;      /* global order, to find the newest write */
	uint64_t off, len; /* bytes that were replaced ... */
	uint64_t wlen;     /* length of the write (len counts only old bytes) */
	uint8_t *old;      /* ... and what they held (NULL: nothing) */
	uint8_t *neu;      /* what the write put there (wlen bytes) */
	uint64_t old_size; /* file size before the change */
	uint64_t new_size; /* and after it */
	int is_write;
	int out;           /* written out: durable at the next sync of any file */
};

struct mfile {
	char *name;
	char *dname;  /* its name as of its directory's last sync (NULL: none) */
	uint8_t *data;
	uint64_t size, cap;
	uint32_t mode;
	struct undo *undo;
	size_t nundo, capundo;
};

struct alex_mem {
	struct mfile *files;
	size_t nfiles, capfiles;
	uint64_t ops, seq;
	uint64_t fail_index;
	unsigned fail_mask;
	int fail_err;
	int untracked; /* no undo records: faster, but no crash images */
	uint64_t limit; /* largest file size; past it EFBIG, like a filesystem */
	uint64_t disk;  /* all live files together; past it ENOSPC (0: none) */
	void (*hook)(void *, uint64_t, enum alex_mem_op, int);
	void *hook_arg;
	/* the engines' change counters (shm.c), by name; a region outlives
	 * its name (unlink) while engines still use it, as a mapping does */
	struct mshm {
		char *name;
		void *region;
	} *shm;
	size_t nshm;
	uint64_t uncounted; /* writes to a counted log with no change under way */
};

/* A new file at path (empty): its index, or -1. */
int alex_mem_add_file(alex_mem *m, const char *path);
/* Room for size bytes in f.  0 or ENOMEM. */
int alex_mem_reserve(struct mfile *f, uint64_t size);
/* Sets f's size; bytes past the old end read as zeros. */
void alex_mem_set_size(struct mfile *f, uint64_t size);

#endif
