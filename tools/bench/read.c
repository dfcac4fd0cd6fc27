/*
 * read.c - what a run leaves behind, read back: the worker's one line on
 * its stdout, its latency file, strace's summary of a traced run and the
 * stats file libalex.so writes at exit.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read.h"

static int read_text(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

int bench_read_worker(const char *out, int is_short, struct bench_run *r, int *have_disk)
{
	char res[256], ok[16] = "";
	unsigned long long wc = 0, dev = 0, fl = 0, dis = 0;
	int nf = read_text(out, res, sizeof res) ? 0
		 : sscanf(res, "%ld %lf %15s %llu %d %llu %llu %llu", &r->ops, &r->secs, ok, &wc,
			  &r->files_left, &dev, &fl, &dis);

	if (nf < 4 || strcmp(ok, "ok") != 0)
		return -1;
	if (is_short) {
		*have_disk = nf == 8;
		r->dev_bytes = dev;
		r->flushes = fl;
		r->discards = dis;
	}
	r->wchar = wc;
	return 0;
}

void bench_read_latencies(const char *latfile, struct bench_run *r)
{
	FILE *f = fopen(latfile, "r");
	size_t cap = 1024, n = 0, nop[BENCH_MAXOPS] = { 0 }, capop[BENCH_MAXOPS] = { 0 };
	double *v = malloc(cap * sizeof *v), *vop[BENCH_MAXOPS] = { 0 };
	char line[64];

	if (!f || !v || !fgets(line, sizeof line, f)) /* header */
		goto out;
	while (fgets(line, sizeof line, f)) {
		char *comma = strchr(line, ',');
		if (!comma)
			continue;
		*comma = 0;
		double x = strtod(comma + 1, NULL);
		int t;
		for (t = 0; t < BENCH_MAXOPS && strcmp(line, bench_op_names[t]); t++)
			;
		if (n == cap && !(v = realloc(v, (cap *= 2) * sizeof *v)))
			goto out;
		v[n++] = x;
		if (t == BENCH_MAXOPS)
			continue;
		if (nop[t] == capop[t] &&
		    !(vop[t] = realloc(vop[t], (capop[t] = capop[t] ? 2 * capop[t] : 1024) *
						       sizeof *vop[t])))
			goto out;
		vop[t][nop[t]++] = x;
	}
	bench_summarize(v, n, &r->lat);
	for (int t = 0; t < BENCH_MAXOPS; t++)
		bench_summarize(vop[t], nop[t], &r->op[t]);
	r->sorted = v;
	r->nsorted = n;
	v = NULL;
out:
	if (f)
		fclose(f);
	free(v);
	for (int t = 0; t < BENCH_MAXOPS; t++)
		free(vop[t]);
}

double bench_read_strace(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];
	double n = 0;

	while (f && fgets(line, sizeof line, f)) {
		double pct, secs, usecs, calls;
		char name[64];
		/* "% time seconds usecs/call calls [errors] syscall" */
		if (sscanf(line, "%lf %lf %lf %lf %63s", &pct, &secs, &usecs, &calls, name) == 5 &&
		    (strstr(line, "fdatasync") || strstr(line, " fsync")))
			n += calls;
	}
	if (f)
		fclose(f);
	return f ? n : -1;
}

double bench_read_syncs(const char *path)
{
	static char json[8192];
	static const char key[] = "\"log_syncs\": ";
	const char *p;

	if (read_text(path, json, sizeof json))
		return -1;
	p = strstr(json, key);
	return p ? strtod(p + strlen(key), NULL) : -1;
}
