/*
 * io_test_record.c - the call recorder of the power-cut campaigns
 * (ALEX_TEST_RECORD): every write, sync, truncate and name change on the
 * files a test watches, appended to one file as struct alex_trace_rec
 * (io_test.h), so that tests/preload/cutfs can rebuild the directory as a
 * power cut before any call could have left it.  FOR TESTS ONLY.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "io_test.h"

static int trace_fd = -1; /* ALEX_TEST_RECORD, opened once, O_APPEND */

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path;
}

void alex_test_record(enum alex_trace_kind kind, int fd, uint64_t ino, uint64_t off,
		      uint64_t len, const void *data, const char *path, const char *path2)
{
	struct alex_trace_rec r = { ALEX_TRACE_MAGIC, kind, ino, off, len, 0, 0, 0 };
	struct iovec v[4];
	struct timespec ts;
	int n = 0, saved = errno;

	if (trace_fd < 0)
		return;
	if (!ino && fd >= 0) {
		struct stat st;
		if (syscall(SYS_fstat, fd, &st) == 0)
			r.ino = (uint64_t)st.st_ino;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	r.t_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	r.pid = (uint32_t)getpid();
	path = base_name(path);
	path2 = base_name(path2);
	size_t p1 = path ? strlen(path) : 0, p2 = path2 ? strlen(path2) + 1 : 0;
	r.plen = (uint32_t)(p1 + p2);
	v[n++] = (struct iovec){ &r, sizeof r };
	if (p1)
		v[n++] = (struct iovec){ (void *)path, p1 };
	if (p2) {
		/* "from\0to": the NUL that ends from, then to without one */
		v[n++] = (struct iovec){ "", 1 };
		v[n++] = (struct iovec){ (void *)path2, p2 - 1 };
	}
	if (kind == ALEX_TR_WRITE && len) {
		/* one append for the whole record, so processes never interleave */
		size_t total = sizeof r + r.plen + len;
		uint8_t *b = malloc(total);
		if (!b)
			goto out;
		size_t at = 0;
		for (int i = 0; i < n; i++) {
			memcpy(b + at, v[i].iov_base, v[i].iov_len);
			at += v[i].iov_len;
		}
		memcpy(b + at, data, len);
		if (syscall(SYS_write, trace_fd, b, total) < 0)
			at = 0;
		free(b);
		goto out;
	}
	if (syscall(SYS_writev, trace_fd, v, n) < 0)
		n = 0;
out:
	errno = saved;
}

void alex_test_record_open(const char *path)
{
	if (path[0] && trace_fd < 0)
		trace_fd = (int)syscall(SYS_openat, AT_FDCWD, path,
					O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}
