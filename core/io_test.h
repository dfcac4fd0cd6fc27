/* io_test.h - the power switch and fault injector over the real files
 * (io_test.c).  For tests only. */
#ifndef ALEX_IO_TEST_H
#define ALEX_IO_TEST_H

#include <stdint.h>

#include "io.h"

/* The exit status of a process whose power was cut. */
#define ALEX_TEST_CUT_STATUS 86

/* What a fault hits: writes of records and headers to the log, writes of
 * zeros that preallocate it, its fdatasync, and the
 * checkpoint's writes and syncs of the database. */
enum alex_test_class { ALEX_TEST_LOGWRITE, ALEX_TEST_GROW, ALEX_TEST_LOGSYNC,
		       ALEX_TEST_CKPTWRITE, ALEX_TEST_CKPTSYNC, ALEX_TEST_NCLASS };

struct alex_test_cfg {
	uint64_t cut_at;        /* cut the power at this mutating call (0: never) */
	enum alex_crash how;
	uint64_t seed;          /* where TEAR cuts the newest write */
	enum alex_test_class fault_class;
	uint64_t fault_at;      /* the Nth call of fault_class fails (0: never) */
	int fault_err;
	char report[256];       /* a line per cut or fault is appended here ("" none) */
	char record[256];       /* ALEX_TEST_RECORD: the trace file ("" none) */
};

/* The backend, configured; one per process. */
const struct alex_io *alex_test_io(const struct alex_test_cfg *cfg);

/* Mutating calls so far, in all and per class. */
void alex_test_counts(uint64_t *ops, uint64_t class_ops[ALEX_TEST_NCLASS]);

const char *alex_test_class_name(enum alex_test_class c);
int alex_test_class_parse(const char *s, enum alex_test_class *c);

/*
 * The recording (ALEX_TEST_RECORD=FILE): every change the process makes to
 * a database's files -- the engine's writes, syncs, truncations, renames
 * and unlinks of the database and its log, and SQLite's own on its WAL and
 * on the database file in WAL mode -- is appended to FILE as it succeeds,
 * one record per write(2) on an O_APPEND descriptor, so that several
 * processes record into one file in the order their calls took effect.
 * tests/preload/cutfs rebuilds from it what a disk could hold after a power
 * cut at any record, with any subset of the unsynced writes kept
 * (tests/preload/crashtest.sh).  The workload appends ACK records.
 *
 * A record: this header, then plen bytes of path (for RENAME "from\0to"),
 * then, for WRITE, len bytes of data.  Little-endian, as the host.  Paths
 * are file names without a directory: a campaign runs in one directory.
 */
#define ALEX_TRACE_MAGIC 0x31525441u /* "ATR1" */

enum alex_trace_kind {
	ALEX_TR_NAME = 1,   /* path names ino now (an open of an existing or a
			       new file; a new ino starts empty, or as the
			       file of that name in the starting directory) */
	ALEX_TR_WRITE = 2,  /* ino: len bytes at off */
	ALEX_TR_TRUNC = 3,  /* ino: its size becomes off */
	ALEX_TR_SYNC = 4,   /* ino: an fsync or fdatasync of it returned */
	ALEX_TR_RENAME = 5, /* "from\0to": to names what from named */
	ALEX_TR_UNLINK = 6, /* path names nothing */
	ALEX_TR_ACK = 7,    /* the workload: transaction off of stream len was
			       acknowledged (COMMIT returned) */
	ALEX_TR_DIRSYNC = 8, /* the directory was synced (recorded; directory
				entries count as durable at once) */
	ALEX_TR_WRITEOUT = 9 /* ino: [off, off + len), widened to whole 4096-byte
				pages, was written to the device without a
				cache flush (sync_file_range): what it held
				then is durable at the next SYNC of any file */
};

struct alex_trace_rec {
	uint32_t magic, kind;
	uint64_t ino;
	uint64_t off, len;
	uint64_t t_ns;  /* CLOCK_MONOTONIC */
	uint32_t pid, plen;
};

/* Appends one record (no-op unless ALEX_TEST_RECORD is set).  ino 0 with
 * a descriptor >= 0: the descriptor's inode. */
/* io_test_record.c: opens the record file at path (once; "" records nothing). */
void alex_test_record_open(const char *path);
void alex_test_record(enum alex_trace_kind kind, int fd, uint64_t ino, uint64_t off,
		      uint64_t len, const void *data, const char *path, const char *path2);

#endif
