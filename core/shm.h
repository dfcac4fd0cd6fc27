/*
 * shm.h - the log's change counter, in memory that every engine with the
 * log open shares (shm.c): a transaction's catch-up with other processes is
 * two loads when nothing changed, not a header read, a stat and a tail
 * read.  It is a hint: a count that cannot be trusted sends the caller to
 * the log itself, and recovery never reads it.
 */
#ifndef ALEX_SHM_H
#define ALEX_SHM_H

#include <stdint.h>

struct alex_db;

/* The region, at the start of "<db>-alex-shm" (alex-log(5)). */
#define ALEX_SHM_MAGIC "ALEXSHM"  /* 8 bytes with the NUL */
#define ALEX_SHM_VERSION 1u
#define ALEX_SHM_SIZE 4096u
struct alex_shm {
	char magic[8];
	uint32_t version, size;
	uint8_t uuid[16]; /* the log it counts the changes of */
	uint64_t gen;     /* +1 after every change an engine made to the log */
	uint64_t busy;    /* engines inside a change */
	uint64_t arrivals; /* raised by a process at its first transaction on
			    * the database (libalex.so's span lock, span.c) */
};

/* Maps the counter of the log now open (a format-3 log: its every writer
 * counts), made with the database's permissions, initialised if it is not
 * this log's.  0 or an error; after an error the engine reads the log at
 * every catch-up, and a write to the log maps again or is refused: an
 * engine that cannot count its changes must not make them where others
 * skip reading the log. */
int alex_shm_attach(struct alex_db *db);
void alex_shm_detach(struct alex_db *db);

/* Has nothing changed in the log since this engine last read it whole? */
int alex_shm_unchanged(struct alex_db *db);

/* Around a whole read of the log (a catch-up): what it saw counts as
 * current only if no change was made or under way meanwhile. */
struct alex_shm_look {
	uint64_t gen, busy;
};
void alex_shm_look_begin(struct alex_db *db, struct alex_shm_look *l);
void alex_shm_look_end(struct alex_db *db, const struct alex_shm_look *l, int err);
/* Was a change made or under way since look_begin?  (Only asks.) */
int alex_shm_moved(struct alex_db *db, const struct alex_shm_look *l);

/* A process with ALEX begins to use the database: one more arrival.
 * Nothing when no region is mapped (no log open). */
void alex_shm_arrive(struct alex_db *db);
/* The arrivals counted in this log's region: 0 and *v set, or -1 when there
 * is none to trust (no region, another log's, retired). */
int alex_shm_arrivals(const struct alex_db *db, uint64_t *v);

/* Before its name is removed: no engine still mapping it believes it. */
void alex_shm_retire(struct alex_db *db);

/* Every write and truncation of the log goes through these two: each is
 * counted as a change, before and after; refused with the mapping's error
 * when it cannot be counted (above). */
int alex_log_pwrite(struct alex_db *db, int fd, const void *buf, size_t n, uint64_t off);
/* The same change of fd, its bytes written through via (the log's direct
 * descriptor, log.c). */
int alex_log_pwrite_via(struct alex_db *db, int fd, int via, const void *buf, size_t n,
			uint64_t off);
int alex_log_truncate(struct alex_db *db, int fd, uint64_t size);
/* Reserves log space without writing it (io.h: allocate); EOPNOTSUPP
 * where it cannot. */
int alex_log_allocate(struct alex_db *db, int fd, uint64_t off, uint64_t n);

#endif
