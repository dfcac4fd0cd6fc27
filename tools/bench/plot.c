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

int bench_plot(const char *outdir, const struct bench_result *r, size_t n)
{
	char path[4096], data[512];
	int pngs = 0;

	snprintf(path, sizeof path, "%s/plots.gp", outdir);
	FILE *gp = fopen(path, "w");
	if (!gp)
		return -1;
	fputs(head, gp);
	for (size_t i = 0; i < n; i++) {
		const char *w = r[i].workload;
		size_t j, end;
		if (i > 0 && strcmp(r[i - 1].workload, w) == 0)
			continue; /* one block per workload: r is grouped by workload */
		for (end = i; end < n && strcmp(r[end].workload, w) == 0; end++)
			;
		FILE *pct, *bar, *opt = NULL;
		char fpct[512], fbar[512], fopt[512];
		fname(fpct, sizeof fpct, "pct", w, NULL);
		fname(fbar, sizeof fbar, "bars", w, NULL);
		fname(fopt, sizeof fopt, "optype", w, NULL);
		if (!(pct = open_data(outdir, fpct)) || !(bar = open_data(outdir, fbar)))
			return fclose(gp), -1;
		/* every mode of a workload runs the same operations; a failed one has none */
		const struct bench_result *ops = &r[i];
		for (j = i; j < end; j++)
			if (r[j].nops > ops->nops)
				ops = &r[j];
		int nops = ops->nops > 1 ? ops->nops : 0;
		if (nops && (opt = open_data(outdir, fopt))) {
			fprintf(opt, "# mode, p99 us (median over runs) of:");
			for (int k = 0; k < nops; k++)
				fprintf(opt, " %s", ops->op[k]);
			fprintf(opt, "\n");
		}
		fprintf(pct, "# mode p50 p95 p99 max (us, %s)\n",
			r[i].per_process ? "every process of every run" : "medians over runs");
		fprintf(bar, "# mode waf alex_syncs strace_syncs ops_per_s\n");
		fprintf(gp, "\n# ---- %s\nset output '%s-cdf.png'\nset title '%s: latency CDF per mode "
			    "(first run)'\nset xlabel 'latency (us)'\nset ylabel 'fraction of operations "
			    "<= x'\nset logscale x\nunset logscale y\nset style data lines\nplot",
			w, w, w);
		int first = 1;
		for (j = i; j < end; j++) {
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
				for (int k = 0; k < nops; k++)
					num(opt, r[j].op_p99[k]);
				fprintf(opt, "\n");
			}
			/* the CDF: 1000 points spread by rank, and the slowest 100 exactly */
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
		fclose(pct);
		fclose(bar);
		pngs++;

		static const char *const pcols[] = { "p50", "p95", "p99", "max" };
		static const char *const wcols[] = { "WAF" };
		static const char *const scols[] = { "ALEX log syncs", "fsync+fdatasync (strace)" };
		char png[600], title[600];
		snprintf(png, sizeof png, "%s-percentiles.png", w);
		if (r[i].per_process) /* short */
			snprintf(title, sizeof title, "%s: wall time per process, every process of "
						      "every run", w);
		else
			snprintf(title, sizeof title, "%s: latency percentiles per mode (medians over "
						      "runs)", w);
		bars(gp, png, title, "latency (us, log scale)", 1, fpct, 4, pcols);
		snprintf(png, sizeof png, "%s-waf.png", w);
		snprintf(title, sizeof title, "%s: write amplification (device bytes / payload bytes)", w);
		bars(gp, png, title, "WAF", 0, fbar, 1, wcols);
		snprintf(png, sizeof png, "%s-syncs.png", w);
		snprintf(title, sizeof title, "%s: syncs per %s", w, r[i].per_process ? "process" : "run");
		/* only the columns measured: ALEX's count (ALEX modes), strace's (--strace) */
		int own = 0, traced = 0;
		for (j = i; j < end; j++) {
			own |= !r[j].failed && r[j].syncs >= 0;
			traced |= !r[j].failed && r[j].traced_syncs >= 0;
		}
		if (own || traced) {
			fprintf(gp, "\nset output '%s'\nset title '%s'\nset ylabel 'calls'\n"
				    "unset logscale y\nset yrange [0:*]\nplot '%s' using %d:xtic(1) title '%s'",
				png, title, fbar, own ? 3 : 4, scols[own ? 0 : 1]);
			if (own && traced)
				fprintf(gp, ", '' using 4 title '%s'", scols[1]);
			fprintf(gp, "\n");
			pngs++;
		}
		pngs += 2;
		if (opt) {
			fclose(opt);
			snprintf(png, sizeof png, "%s-optype-p99.png", w);
			snprintf(title, sizeof title, "%s: p99 latency per operation type", w);
			bars(gp, png, title, "p99 latency (us, log scale)", 1, fopt, nops, ops->op);
			pngs++;
		}
	}
	fclose(gp);
	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		fprintf(stderr, "alex-bench: gnuplot not found: plots not drawn "
				"(apt-get install gnuplot-nox)\n");
		return -1;
	}
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plots.gp", outdir);
	if (system(cmd) != 0) {
		fprintf(stderr, "alex-bench: gnuplot failed on %s/plots.gp\n", outdir);
		return -1;
	}
	return pngs;
}
