/*
 * client.h - what the campaign clients (powercut.c, attach.c) share: a
 * seeded mixer, sqlite3_exec with its error said, and the ACK record that
 * tells a recorded trace (ALEX_TEST_RECORD) which commits were
 * acknowledged, so that cutfs knows which came before a cut.
 */
#ifndef ALEX_TEST_CLIENT_H
#define ALEX_TEST_CLIENT_H

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "io_test.h" /* the trace's ACK record */

static inline uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline int exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
	if (rc != SQLITE_OK)
		fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, sql,
			err ? err : sqlite3_errmsg(db));
	sqlite3_free(err);
	return rc;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* stream's transaction i was acknowledged. */
static inline void trace_ack(int stream, int i)
{
	static int fd = -2;
	if (fd == -2) {
		const char *t = getenv("ALEX_TEST_RECORD");
		fd = t ? open(t, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
	}
	if (fd < 0)
		return;
	struct alex_trace_rec r = { ALEX_TRACE_MAGIC, ALEX_TR_ACK, 0, (uint64_t)i, (uint64_t)stream,
				    now_ns(), (uint32_t)getpid(), 0 };
	if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
		fd = -1;
}

#endif
