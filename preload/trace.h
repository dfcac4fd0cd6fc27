/*
 * trace.h - the tracing mode (ALEX_MODE=trace, ALEX_TRACE=FILE; trace.c):
 * every call on a database's files, and in ALEX mode ALEX's own log I/O,
 * recorded in per-thread buffers and appended to FILE in chunks
 * (core/trace_format.h).  Off, it costs each hook one load of
 * alex_tracing.
 */
#ifndef ALEX_PRELOAD_TRACE_H
#define ALEX_PRELOAD_TRACE_H

#include <stdint.h>
#include <fcntl.h>
#include <time.h>

#include "io.h"
#include "trace_format.h"

/* 0: off; 1: the database files; 2: every file (ALEX_TRACE_ALL=1) */
extern int alex_tracing;
extern uint8_t *alex_trace_roles; /* fd -> enum alex_trole */
extern unsigned alex_trace_nfd;

/* The role fd is traced under, or 0. */
static inline int alex_trace_fd(int fd)
{
	if (__builtin_expect(!alex_tracing, 1))
		return 0;
	return (unsigned)fd < alex_trace_nfd ? alex_trace_roles[fd] : 0;
}

static inline uint64_t alex_trace_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One call, as the hooks and the engine's I/O see it.  start is when it
 * began; the duration is taken now.  res >= 0 is the call's result; < 0
 * makes it the current errno, negated. */
struct alex_tcall {
	uint64_t start, off, len;
	int64_t res;
	int fd;
	uint32_t page;
	uint8_t kind, role, flags, lock;
};

/* Records c (and name, when not NULL).  errno is kept. */
void alex_trace_put(struct alex_tcall *c, const char *name);

/* A read or write of n bytes at off on fd (role): labels the page. */
void alex_trace_io(int role, enum alex_tkind kind, int fd, uint64_t start, uint64_t off,
		   uint64_t n, int64_t res, const void *buf, int flags);

/* After an open of path gave fd (or failed, fd < 0): decides whether fd is
 * traced and under which role, and records the open.  flags: ALEX_TF_*. */
void alex_trace_opened(int fd, const char *path, uint64_t start, int flags);
/* The same, with the role decided by the caller. */
void alex_trace_opened_as(int fd, const char *path, uint64_t start, int flags, int role);
/* The role a call by name on path is traced under, or 0. */
int alex_trace_path_role(const char *path);
void alex_trace_closed(int fd);
/* newfd became a copy of oldfd: its role follows; event: record the dup
 * call (fcntl's F_DUPFD is recorded as the fcntl it is) */
void alex_trace_dup(int oldfd, int newfd, int event);
/* fcntl: the lock call decoded (role is fd's). */
void alex_trace_fcntl(int role, int fd, int cmd, const void *arg, uint64_t start, int res,
		      int flags);

/* From the constructor, after the configuration: opens the buffers, checks
 * that the file can be written, records the process's start. */
void alex_trace_init(void);
/* Writes every buffer out: before exec; at exit, after which each event
 * is written as it comes (destructors of other libraries still run). */
void alex_trace_flush_all(void);
void alex_trace_exit(void);

/*
 * The hooks' wrappers: call is evaluated as it would be untraced; when fd
 * (or path) is traced, the call is timed and recorded.  flags is evaluated
 * before the call (whether ALEX will answer it), only when traced.
 */
#define ALEX_TRACED_IO(fd, kind, off, n, buf, flags, call)                                        \
	({                                                                                        \
		int tr_ = alex_trace_fd(fd), tf_ = tr_ ? (flags) : 0;                             \
		uint64_t t0_ = tr_ ? alex_trace_now() : 0;                                        \
		__typeof__(call) r_ = (call);                                                     \
		if (tr_)                                                                          \
			alex_trace_io(tr_, (kind), (fd), t0_, (uint64_t)(off), (uint64_t)(n),     \
				      (int64_t)r_, (buf), tf_);                                   \
		r_;                                                                               \
	})
#define ALEX_TRACED_PATH(path, kind, flags, call)                                                 \
	({                                                                                        \
		int tr_ = alex_tracing ? alex_trace_path_role(path) : 0, tf_ = tr_ ? (flags) : 0; \
		uint64_t t0_ = tr_ ? alex_trace_now() : 0;                                        \
		__typeof__(call) r_ = (call);                                                     \
		if (tr_)                                                                          \
			alex_trace_named(tr_, (kind), t0_, (int64_t)r_, (path), tf_);             \
		r_;                                                                               \
	})

/* A call of ALEX's own outside the engine (the in-memory journal's
 * descriptors, the lock taken at the last close); start is 0 when tracing
 * was off as it began. */
void alex_trace_own(int role, enum alex_tkind kind, int fd, uint64_t start, uint64_t off,
		    int64_t res, const struct flock *l);
#define ALEX_TRACE_T0() (alex_tracing ? alex_trace_now() : 0)

/* A call by name (stat, access, unlink, rename) on path. */
void alex_trace_named(int role, enum alex_tkind kind, uint64_t start, int64_t res,
		      const char *path, int flags);

/* The engine's I/O (trace_io.c), recorded as ALEX's own calls. */
const struct alex_io *alex_trace_wrap_io(const struct alex_io *inner);

#endif
