/* io_test.h - the power switch and fault injector over the real files
 * (io_test.c).  For tests only. */
#ifndef ALEX_IO_TEST_H
#define ALEX_IO_TEST_H

#include <stdint.h>

#include "io.h"

/* The exit status of a process whose power was cut. */
#define ALEX_TEST_CUT_STATUS 86

/* What a fault hits: writes of records and headers to the log, writes of
 * zeros that preallocate it (ALEX's fallocate), its fdatasync, and the
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
};

/* The backend, configured; one per process. */
const struct alex_io *alex_test_io(const struct alex_test_cfg *cfg);

/* Mutating calls so far, in all and per class. */
void alex_test_counts(uint64_t *ops, uint64_t class_ops[ALEX_TEST_NCLASS]);

const char *alex_test_class_name(enum alex_test_class c);
int alex_test_class_parse(const char *s, enum alex_test_class *c);

#endif
