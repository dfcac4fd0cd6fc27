/*
 * mmap.h - SQLite's memory mapping of a database it opened under ALEX
 * (PRAGMA mmap_size), mmap.c.
 */
#ifndef ALEX_PRELOAD_MMAP_H
#define ALEX_PRELOAD_MMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "state.h"

/* Live mappings of databases (atomic): 0 lets munmap and mremap through
 * with this one load. */
extern int alex_mmap_live;

/* mmap of a database's descriptor (fd, SQLite's): the mapping, or
 * MAP_FAILED with errno set.  Takes a reference of db for its life. */
void *alex_mmap_map(struct pdb *db, int fd, size_t len, int prot, int flags, off64_t off);
/* munmap and mremap of an address: 1 when [addr, addr + len) touches a
 * database's mapping (the answer in *ret, errno set on failure), 0 when
 * the call is not ours. */
int alex_mmap_unmap(void *addr, size_t len, int *ret);
int alex_mmap_remap(void *old, size_t old_len, size_t new_len, int flags, void **ret);

/* Registers the fork handlers; after alex_pdb_atfork, so that the table's
 * lock is taken first (the constructor calls it). */
void alex_mmap_atfork(void);

/* Under db->mu, for db's mappings, as the kernel's page cache would: */
/* the process wrote len bytes at off of the logical file */
void alex_mmap_wrote(struct pdb *db, const void *buf, size_t len, uint64_t off);
/* the logical file was cut to size */
void alex_mmap_cut(struct pdb *db, uint64_t size);
/* the engine caught up with other processes (alex_refresh): 0, or the
 * errno of a mapping that could not be laid again (it shows nothing) */
int alex_mmap_follow(struct pdb *db);
/* WAL mode begins (on): the mappings become shared mappings of the file,
 * which SQLite writes itself; or ends: private ones kept by the engine.
 * 0 or an errno. */
int alex_mmap_direct(struct pdb *db, int on);

#ifdef ALEX_TESTING
/* The test build: says on stderr where a mapping differs from the engine. */
void alex_mmap_check(struct pdb *db, const char *where);
#define ALEX_MMAP_CHECK(db, where) ((db)->maps ? alex_mmap_check(db, where) : (void)0)
#else
#define ALEX_MMAP_CHECK(db, where) ((void)0)
#endif

#endif
