/*
 * config.h - libalex.so's settings, read once from ALEX_* environment
 * variables (man/libalex.7).  A bad value is reported once, on stderr, and
 * leaves the library refusing every tracked file (fail closed): nothing is
 * written in a mode the user did not ask for.
 */
#ifndef ALEX_PRELOAD_CONFIG_H
#define ALEX_PRELOAD_CONFIG_H

#include "alex.h"
#ifdef ALEX_TESTING
#include "io_test.h"
#endif

enum alex_mode { ALEX_MODE_ON = 0, ALEX_MODE_OFF = 1, ALEX_MODE_TRACE = 2 };
enum alex_msglevel { ALEX_MSG_ERROR = 0, ALEX_MSG_WARN, ALEX_MSG_INFO, ALEX_MSG_DEBUG };

#define ALEX_MAX_PATTERNS 16

struct alex_pconfig {
	enum alex_mode mode;
	struct alex_config engine;
	char patterns[ALEX_MAX_PATTERNS][128];
	/* a pattern "*LITERAL" (no other glob character) matches exactly the
	 * names that end in LITERAL: 1 + LITERAL's length, else 0 (fnmatch) */
	unsigned char suffix[ALEX_MAX_PATTERNS];
	int npatterns;
	char stats_path[4096];
	int trace;             /* 0 off, 1 database files, 2 every file */
	char trace_path[4096]; /* absolute */
	enum alex_msglevel loglevel;
	int stage; /* ALEX_STAGE: NORMAL's commits staged (staging.h) */
	int span_lock; /* ALEX_SPAN_LOCK: a transaction's lock calls answered
			  under one lock while the process is alone (locks.c) */
	int name_watch; /* ALEX_NAME_WATCH: stats of a database by name
			   answered while inotify sees no change (watch.c) */
	int name_ring; /* ALEX_NAME_RING: the inotify queue looked at through
			  an io_uring poll, a load instead of a call (ring.c) */
	unsigned close_wait_ms; /* ALEX_CLOSE_WAIT_MS (serve.c) */
	int bad; /* a value was invalid: refuse tracked files with EINVAL */
	int key_asked; /* ALEX_KEY_FILE is set (usable or not): SQLite's
			  temporary files are never written in clear */
#ifdef ALEX_TESTING
	/* the test build only (libalex-test.so): ALEX_TEST_* puts the
	 * engine's I/O under io_test.c */
	int test;
	struct alex_test_cfg test_cfg;
	unsigned test_merge_us; /* ALEX_TEST_MERGE_US: the flusher's merge
				   holds its locks this much longer (staging.c) */
	unsigned test_close_us; /* ALEX_TEST_CLOSE_US: the last close pauses
				   this long before its EXCLUSIVE (serve.c) */
	int test_span_alone; /* ALEX_TEST_SPAN_ALONE: every process takes the
				span lock as if it were alone (span.c) */
#endif
};

extern struct alex_pconfig alex_cfg;

/* Parses the environment into alex_cfg.  Returns 0, or -1 after printing
 * one line per bad variable. */
int alex_config_load(void);

/* Logs one line "libalex: ..." to stderr at or above the configured level. */
void alex_msg(enum alex_msglevel level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
