/*
 * plot.c - `alex trace --plot FILE.png`: a timeline drawn by gnuplot.  The
 * top panel: each write that reached the kernel at its time and file
 * offset, one colour per file role; the bottom: syncs and bytes written,
 * cumulative.  The data go to a private temporary directory; gnuplot runs
 * as a child (no shell).
 */
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace.h"

extern char **environ;

static int data(const struct tr_model *m, const char *path)
{
	FILE *f = fopen(path, "w");
	uint64_t syncs = 0, bytes = 0;
	if (!f)
		return -1;
	/* columns: seconds, role index, offset MiB, syncs so far, MiB so far */
	for (size_t i = 0; i < m->nev; i++) {
		const struct tr_ev *v = &m->ev[i];
		if (!tr_kernel(v) || !(tr_is_write(v->e.kind) || tr_is_sync(v->e.kind)))
			continue;
		syncs += tr_is_sync(v->e.kind);
		bytes += tr_bytes(v);
		fprintf(f, "%.6f %d %.6f %llu %.6f\n", (double)(v->e.start - m->t0) / 1e9,
			tr_is_sync(v->e.kind) ? -1 : (int)v->e.role + (v->e.flags & ALEX_TF_ALEX ? 10 : 0),
			(double)v->e.off / 1048576.0, (unsigned long long)syncs, bytes / 1048576.0);
	}
	return fclose(f);
}

/* s as a gnuplot single-quoted string's inside: a quote doubled (gnuplot's
 * one escape there), control characters made '?': a file name is data,
 * never a command */
static void gp_str(char *out, size_t cap, const char *s)
{
	size_t n = 0;
	for (; *s && n + 3 < cap; s++) {
		if (*s == '\'')
			out[n++] = '\'';
		out[n++] = (unsigned char)*s < 0x20 ? '?' : *s;
	}
	out[n] = 0;
}

static int script(const char *path, const char *dat, const char *png_raw, const char *title_raw)
{
	char png[8192], title[8192];
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	gp_str(png, sizeof png, png_raw);
	gp_str(title, sizeof title, title_raw);
	fprintf(f, "set terminal pngcairo size 1200,800\nset output '%s'\n"
		   "set multiplot layout 2,1 title '%s'\nset xlabel 'seconds'\n"
		   "set ylabel 'file offset (MiB)'\nset key outside\n"
		   "plot '%s' using 1:($2==1?$3:1/0) title 'db' pt 7 ps 0.3, "
		   "'' using 1:($2==2?$3:1/0) title 'journal' pt 7 ps 0.3, "
		   "'' using 1:($2==3?$3:1/0) title 'wal' pt 7 ps 0.3, "
		   "'' using 1:($2==7||$2==17?$3:1/0) title 'alex log' pt 7 ps 0.3, "
		   "'' using 1:($2==11?$3:1/0) title 'alex checkpoint' pt 7 ps 0.3\n"
		   "set ylabel 'syncs'\nset y2label 'MiB written'\nset y2tics\n"
		   "plot '%s' using 1:4 with steps title 'syncs', '' using 1:5 axes x1y2 with steps "
		   "title 'MiB written'\nunset multiplot\n",
		png, title, dat, dat);
	return fclose(f);
}

int tr_plot(const struct tr_model *m, const char *png)
{
	char dir[] = "/tmp/alex-trace-plot.XXXXXX", dat[64], gp[64];
	int st = 1, status = 0;
	pid_t pid;

	if (!mkdtemp(dir)) {
		fprintf(stderr, "alex trace: cannot make a temporary directory: %s\n", strerror(errno));
		return 1;
	}
	snprintf(dat, sizeof dat, "%s/data", dir);
	snprintf(gp, sizeof gp, "%s/plot.gp", dir);
	const char *base = strrchr(m->path, '/');
	char *argv[] = { "gnuplot", gp, NULL };
	if (data(m, dat) || script(gp, dat, png, base ? base + 1 : m->path))
		fprintf(stderr, "alex trace: cannot write %s: %s\n", dir, strerror(errno));
	else if ((errno = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ)))
		fprintf(stderr, "alex trace: gnuplot: %s (install gnuplot for --plot)\n",
			strerror(errno));
	else if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "alex trace: gnuplot failed; %s not written\n", png);
	else
		st = 0;
	unlink(dat);
	unlink(gp);
	rmdir(dir);
	return st;
}
