/*
 * plot.c - the paper's figures, drawn by gnuplot from data files next to
 * them, so a figure can be redrawn or restyled with "gnuplot plots.gp".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Mode names may hold ':', ';' and '=' (alex:VAR=VALUE): quoted in data,
 * and kept out of file names. */
static void fname(char *buf, size_t cap, const char *kind, const char *w, const char *mode)
{
	int n = snprintf(buf, cap, "plot-%s-%s%s", kind, w, mode ? "-" : "");
	for (const char *m = mode; m && *m && n + 2 < (int)cap; m++)
		buf[n++] = (char)((*m >= 'a' && *m <= 'z') || (*m >= '0' && *m <= '9') || *m == '-'
					  ? *m : '_');
	snprintf(buf + n, cap - (size_t)n, ".dat");
}

static FILE *open_data(const char *outdir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", outdir, name);
	return fopen(path, "w");
}

static void num(FILE *f, double v)
{
	if (v < 0)
		fprintf(f, " ?");
	else
		fprintf(f, " %g", v);
}

static const char *const head =
	"# alex-bench plots: run \"gnuplot plots.gp\" in this directory to redraw\n"
	"set terminal pngcairo size 1100,620 font ',11'\n"
	"set datafile missing '?'\n"
	"set grid ytics\n"
	"set key outside right top\n"
	"set xtics rotate by -30\n"
	"set style fill solid 0.85 border -1\n";

/* A bar chart of one or more columns per mode. */
static void bars(FILE *gp, const char *png, const char *title, const char *ylabel, int logy,
		 const char *data, int ncols, const char *const *cols)
{
	fprintf(gp, "\nset output '%s'\nset title '%s'\nset ylabel '%s'\n%s\n"
		    "set style data histograms\nset style histogram clustered gap 1\nset xlabel ''\n",
		png, title, ylabel, logy ? "set logscale y; set yrange [*:*]"
					 : "unset logscale y; set yrange [0:*]");
	fprintf(gp, "plot '%s' using 2:xtic(1) title '%s'", data, cols[0]);
	for (int c = 1; c < ncols; c++)
		fprintf(gp, ", '' using %d title '%s'", c + 2, cols[c]);
	fprintf(gp, "\n");
}

/* gnuplot on OUT/plots.gp, in OUT: the script names its files relative to
 * it.  0, or -1 (reported). */
static int draw(const char *outdir)
{
	char exe[4096], *argv[] = { exe, "plots.gp", NULL };
	struct bench_spawn how = { .cwd = outdir };
	int rc;

	if (bench_find_exe("gnuplot", getenv("PATH"), exe, sizeof exe)) {
		fprintf(stderr, "alex-bench: gnuplot not found: plots not drawn "
				"(apt-get install gnuplot-nox)\n");
		return -1;
	}
	rc = bench_spawn(argv, &how, NULL);
	if (rc != 0) {
		if (rc < 0)
			fprintf(stderr, "alex-bench: gnuplot failed on %s/plots.gp (killed, or not "
					"started)\n", outdir);
		else
			fprintf(stderr, "alex-bench: gnuplot failed on %s/plots.gp (exit status %d)\n",
				outdir, rc);
		return -1;
	}
	return 0;
}

/* A workload's data files (in OUT, named by fname). */
struct data {
	char pct[512], bar[512], opt[512];
	const struct bench_result *ops; /* the mode that ran the most operation types */
	int nops; /* how many, if more than one; else 0 */
	int has_opt; /* opt was written */
};

/* One line per mode that did not fail: its percentiles, its bars (WAF,
 * syncs, ops/s) and, with several operation types, each type's p99.
 * 0, or -1. */
static int write_data(const char *outdir, const struct bench_result *r, size_t n, struct data *d)
{
	FILE *pct = open_data(outdir, d->pct), *bar = open_data(outdir, d->bar), *opt = NULL;

	if (!pct || !bar) {
		if (pct)
			fclose(pct);
		if (bar)
			fclose(bar);
		return -1;
	}
	if (d->nops && (opt = open_data(outdir, d->opt))) {
		fprintf(opt, "# mode, p99 us (median over runs) of:");
		for (int k = 0; k < d->nops; k++)
			fprintf(opt, " %s", d->ops->op[k]);
		fprintf(opt, "\n");
	}
	fprintf(pct, "# mode p50 p95 p99 max (us, %s)\n",
		r[0].per_process ? "every process of every run" : "medians over runs");
	fprintf(bar, "# mode waf alex_syncs strace_syncs ops_per_s\n");
	for (size_t j = 0; j < n; j++) {
		if (r[j].failed)
			continue;
		fprintf(pct, "\"%s\"", r[j].mode);
		num(pct, r[j].p50), num(pct, r[j].p95), num(pct, r[j].p99), num(pct, r[j].max);
		fprintf(pct, "\n");
		fprintf(bar, "\"%s\"", r[j].mode);
		num(bar, r[j].waf), num(bar, r[j].syncs), num(bar, r[j].traced_syncs);
		num(bar, r[j].ops_s);
		fprintf(bar, "\n");
		if (opt) {
			fprintf(opt, "\"%s\"", r[j].mode);
			for (int k = 0; k < d->nops; k++)
				num(opt, r[j].op_p99[k]);
			fprintf(opt, "\n");
		}
	}
	fclose(pct);
	fclose(bar);
	d->has_opt = opt != NULL;
	if (opt)
		fclose(opt);
	return 0;
}

/* The latency CDF of each mode's first run: 1000 points spread by rank,
 * and the slowest 100 exactly. */
static void plot_cdf(FILE *gp, const char *outdir, const struct bench_result *r, size_t n)
{
	const char *w = r[0].workload;
	char data[512];
	int first = 1;

	fprintf(gp, "\n# ---- %s\nset output '%s-cdf.png'\nset title '%s: latency CDF per mode "
		    "(first run)'\nset xlabel 'latency (us)'\nset ylabel 'fraction of operations "
		    "<= x'\nset logscale x\nunset logscale y\nset style data lines\nplot",
		w, w, w);
	for (size_t j = 0; j < n; j++) {
		if (r[j].failed)
			continue;
		fname(data, sizeof data, "cdf", w, r[j].mode);
		FILE *cdf = open_data(outdir, data);
		if (!cdf || !r[j].nlat) {
			if (cdf)
				fclose(cdf);
			continue;
		}
		size_t m = r[j].nlat, tail = m > 100 ? m - 100 : 0;
		for (size_t k = 0; k < 1000 && k * (m - 1) / 999 < tail; k++)
			fprintf(cdf, "%g %g\n", r[j].lat[k * (m - 1) / 999],
				(double)(k * (m - 1) / 999 + 1) / (double)m);
		for (size_t k = tail; k < m; k++)
			fprintf(cdf, "%g %g\n", r[j].lat[k], (double)(k + 1) / (double)m);
		fclose(cdf);
		fprintf(gp, "%s '%s' using 1:2 title \"%s\"", first ? "" : ",", data, r[j].mode);
		first = 0;
	}
	fprintf(gp, "%s\nunset logscale x\n", first ? " NaN notitle" : "");
}

/* Syncs per run (per process for short): only the columns measured,
 * ALEX's count (ALEX modes) and strace's (--strace).  1 if drawn, else 0. */
static int plot_syncs(FILE *gp, const struct bench_result *r, size_t n, const struct data *d)
{
	static const char *const scols[] = { "ALEX log syncs", "fsync+fdatasync (strace)" };
	const char *w = r[0].workload;
	int own = 0, traced = 0;

	for (size_t j = 0; j < n; j++) {
		own |= !r[j].failed && r[j].syncs >= 0;
		traced |= !r[j].failed && r[j].traced_syncs >= 0;
	}
	if (!own && !traced)
		return 0;
	fprintf(gp, "\nset output '%s-syncs.png'\nset title '%s: syncs per %s'\nset ylabel 'calls'\n"
		    "unset logscale y\nset yrange [0:*]\nplot '%s' using %d:xtic(1) title '%s'",
		w, w, r[0].per_process ? "process" : "run", d->bar, own ? 3 : 4, scols[own ? 0 : 1]);
	if (own && traced)
		fprintf(gp, ", '' using 4 title '%s'", scols[1]);
	fprintf(gp, "\n");
	return 1;
}

/* Every figure of the workload of r[0..n): how many PNG files, or -1. */
static int plot_workload(FILE *gp, const char *outdir, const struct bench_result *r, size_t n)
{
	static const char *const pcols[] = { "p50", "p95", "p99", "max" };
	static const char *const wcols[] = { "WAF" };
	const char *w = r[0].workload;
	struct data d = { .ops = &r[0] };
	char png[600], title[600];
	int pngs = 3; /* the CDF, the percentiles and the WAF */

	for (size_t j = 0; j < n; j++)
		if (r[j].nops > d.ops->nops)
			d.ops = &r[j];
	d.nops = d.ops->nops > 1 ? d.ops->nops : 0;
	fname(d.pct, sizeof d.pct, "pct", w, NULL);
	fname(d.bar, sizeof d.bar, "bars", w, NULL);
	fname(d.opt, sizeof d.opt, "optype", w, NULL);
	if (write_data(outdir, r, n, &d))
		return -1;
	plot_cdf(gp, outdir, r, n);
	snprintf(png, sizeof png, "%s-percentiles.png", w);
	if (r[0].per_process) /* short */
		snprintf(title, sizeof title, "%s: wall time per process, every process of every run",
			 w);
	else
		snprintf(title, sizeof title, "%s: latency percentiles per mode (medians over runs)", w);
	bars(gp, png, title, "latency (us, log scale)", 1, d.pct, 4, pcols);
	snprintf(png, sizeof png, "%s-waf.png", w);
	snprintf(title, sizeof title, "%s: write amplification (device bytes / payload bytes)", w);
	bars(gp, png, title, "WAF", 0, d.bar, 1, wcols);
	pngs += plot_syncs(gp, r, n, &d);
	if (d.has_opt) {
		snprintf(png, sizeof png, "%s-optype-p99.png", w);
		snprintf(title, sizeof title, "%s: p99 latency per operation type", w);
		bars(gp, png, title, "p99 latency (us, log scale)", 1, d.opt, d.nops, d.ops->op);
		pngs++;
	}
	return pngs;
}

int bench_plot(const char *outdir, const struct bench_result *r, size_t n)
{
	char path[4096];
	int pngs = 0;

	snprintf(path, sizeof path, "%s/plots.gp", outdir);
	FILE *gp = fopen(path, "w");
	if (!gp)
		return -1;
	fputs(head, gp);
	/* one block per workload: r is grouped by workload */
	for (size_t i = 0, end; i < n; i = end) {
		for (end = i; end < n && strcmp(r[end].workload, r[i].workload) == 0; end++)
			;
		int k = plot_workload(gp, outdir, r + i, end - i);
		if (k < 0)
			return fclose(gp), -1;
		pngs += k;
	}
	fclose(gp);
	return draw(outdir) ? -1 : pngs;
}
