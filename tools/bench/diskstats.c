/* diskstats.c - reading /proc/diskstats (Documentation/admin-guide/iostats). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include "bench.h"

int bench_diskstats_parse(const char *text, unsigned major, unsigned minor,
			  struct bench_disk *d)
{
	const char *line = text;

	while (line && *line) {
		/* one line at a time: sscanf would read on into the next */
		char buf[512];
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len >= sizeof buf)
			len = sizeof buf - 1;
		memcpy(buf, line, len);
		buf[len] = 0;
		unsigned ma, mi;
		char name[64];
		unsigned long long f[17] = { 0 };
		/* fields after the name: 4 for reads, 4 for writes, 3 for I/O in
		 * flight and time, then 4 for discards, 2 for flushes */
		int n = sscanf(buf, "%u %u %63s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
				     "%llu %llu %llu %llu %llu %llu %llu",
			       &ma, &mi, name, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7],
			       &f[8], &f[9], &f[10], &f[11], &f[12], &f[13], &f[14], &f[15], &f[16]);
		if (n >= 14 && ma == major && mi == minor) {
			memset(d, 0, sizeof *d);
			d->writes = f[4];
			d->sectors_written = f[6];
			if (n >= 18)
				d->discards = f[11];
			if (n >= 20)
				d->flushes = f[15];
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -1;
}

int bench_disk_now(unsigned long long dev, struct bench_disk *d)
{
	static char text[1 << 16];
	sync();
	int fd = open("/proc/diskstats", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return -1;
	text[n] = 0;
	return bench_diskstats_parse(text, major((dev_t)dev), minor((dev_t)dev), d);
}
