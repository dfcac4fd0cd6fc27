/*
 * probe.c - what the device under the databases can do, measured in the
 * same run: the ceiling for one durable writer (4 KiB pwrite + fdatasync)
 * and sequential bandwidth with and without the page cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * n durable 4 KiB writes, one after another, into a file of n blocks that
 * was either fallocated (unwritten extents: each first write also changes
 * the extent tree) or written and synced beforehand (pure overwrite, what
 * ALEX's zero-filled log gets).
 */
static int durable_4k(const char *path, long n, int written, struct bench_probe *p)
{
	static char blk[4096];
	double *lat = malloc((size_t)n * sizeof *lat);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	int rc = -1;

	memset(blk, 'a', sizeof blk);
	if (fd < 0 || !lat)
		goto out;
	if (written) {
		for (long i = 0; i < n; i++)
			if (pwrite(fd, blk, sizeof blk, i * 4096L) != (ssize_t)sizeof blk)
				goto out;
	} else if ((errno = posix_fallocate(fd, 0, n * 4096L)) != 0) {
		goto out;
	}
	if (fsync(fd))
		goto out;
	double t0 = now_s();
	for (long i = 0; i < n; i++) {
		double a = now_s();
		if (pwrite(fd, blk, sizeof blk, i * 4096L) != (ssize_t)sizeof blk || fdatasync(fd))
			goto out;
		lat[i] = (now_s() - a) * 1e6;
	}
	p->rate = (double)n / (now_s() - t0);
	bench_summarize(lat, (size_t)n, &p->lat);
	rc = 0;
out:
	if (rc)
		p->err = errno;
	if (fd >= 0)
		close(fd);
	unlink(path);
	free(lat);
	return rc;
}

/* mb MiB in 1 MiB writes and one fdatasync at the end: MB/s. */
static int sequential(const char *path, long mb, int direct, struct bench_probe *p)
{
	void *buf = NULL;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0), 0644);
	int rc = -1;

	if (fd < 0 || posix_memalign(&buf, 4096, 1 << 20))
		goto out;
	memset(buf, 'b', 1 << 20);
	double t0 = now_s();
	for (long i = 0; i < mb; i++)
		if (write(fd, buf, 1 << 20) != 1 << 20)
			goto out;
	if (fdatasync(fd))
		goto out;
	p->rate = (double)mb * 1048576 / 1e6 / (now_s() - t0);
	rc = 0;
out:
	if (rc)
		p->err = errno ? errno : EIO;
	if (fd >= 0)
		close(fd);
	unlink(path);
	free(buf);
	return rc;
}

void bench_probe(const char *dir, long syncs, long mb, struct bench_probe out[BENCH_NPROBES])
{
	char path[4096];
	static const char *const name[BENCH_NPROBES] = {
		"4 KiB pwrite+fdatasync, fallocated file", "4 KiB pwrite+fdatasync, written file",
		"1 MiB sequential writes, page cache", "1 MiB sequential writes, O_DIRECT" };
	static const char *const unit[BENCH_NPROBES] = { "ops/s", "ops/s", "MB/s", "MB/s" };

	memset(out, 0, BENCH_NPROBES * sizeof *out);
	for (int i = 0; i < BENCH_NPROBES; i++) {
		out[i].name = name[i];
		out[i].unit = unit[i];
	}
	snprintf(path, sizeof path, "%s/probe.dat", dir);
	errno = 0;
	durable_4k(path, syncs, 0, &out[0]);
	errno = 0;
	durable_4k(path, syncs, 1, &out[1]);
	errno = 0;
	sequential(path, mb, 0, &out[2]);
	errno = 0;
	sequential(path, mb, 1, &out[3]);
}
