/*
 * report.c - what alex-bench prints and writes: every run in CSV as it
 * ends (a benchmark cut short keeps what it measured), per workload the
 * Markdown tables of medians, ranges and operation types once all its
 * modes have run, and the plots (plot.c) at the end.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"

#define MAXRESULTS (BENCH_NWORKLOADS * BENCH_MAXMODES)

/* The rows of one mode's tables, kept until its workload's tables print. */
enum row { ROW_MEDIANS, ROW_RANGES, ROW_OPTYPES, ROW_SHORT, NROWS };

struct bench_report {
	const struct bench_opts *o;
	FILE *csv, *opcsv;
	char csvpath[PATH_MAX], oppath[PATH_MAX];
	struct bench_result res[MAXRESULTS]; /* every mode of every workload */
	size_t nres, first; /* res[first..nres): the current workload's */
	char rows[BENCH_MAXMODES][NROWS][4096];
	int any_failed;
};

enum col { C_OPS, C_MEAN, C_STD, C_P50, C_P95, C_P99, C_MAX, C_SYNCS, C_TRACED, C_WCHAR,
	   C_DEV, C_DEVOP, C_FLUSH, C_DISCARD, C_WAF, C_RSS, NCOLS };
static const char *const col_head[NCOLS] = {
	"ops/s", "mean us", "std us", "p50 us", "p95 us", "p99 us", "max us", "syncs",
	"syncs (strace)", "write-call MB", "device MB", "device B/op", "flushes", "discards", "WAF",
	"RSS MB" };
static const char *const col_fmt[NCOLS] = { "%.0f", "%.1f", "%.1f", "%.1f", "%.1f", "%.1f",
					    "%.0f", "%.0f", "%.0f", "%.2f", "%.2f", "%.0f",
					    "%.0f", "%.0f", "%.2f", "%.1f" };

static double col_value(const struct bench_run *r, enum col c)
{
	switch (c) {
	case C_OPS: return r->ops_s;
	case C_MEAN: return r->lat.mean;
	case C_STD: return r->lat.std;
	case C_P50: return r->lat.p50;
	case C_P95: return r->lat.p95;
	case C_P99: return r->lat.p99;
	case C_MAX: return r->lat.max;
	case C_SYNCS: return r->syncs;
	case C_TRACED: return r->traced_syncs;
	case C_WCHAR: return (double)r->wchar / 1e6;
	case C_DEV: return r->waf < 0 ? -1 : (double)r->dev_bytes / 1e6;
	/* the final checkpoint's and sync's bytes included, as in WAF */
	case C_DEVOP: return r->waf < 0 || !r->ops ? -1 : (double)r->dev_bytes / (double)r->ops;
	case C_FLUSH: return r->waf < 0 ? -1 : (double)r->flushes;
	case C_DISCARD: return r->waf < 0 ? -1 : (double)r->discards;
	case C_WAF: return r->waf;
	case C_RSS: return (double)r->rss_kb / 1024;
	default: return -1;
	}
}

/* The medians of a column, what the plots draw of it; NULL: not drawn. */
static double *col_result(struct bench_result *o, enum col c)
{
	switch (c) {
	case C_OPS: return &o->ops_s;
	case C_P50: return &o->p50;
	case C_P95: return &o->p95;
	case C_P99: return &o->p99;
	case C_MAX: return &o->max;
	case C_SYNCS: return &o->syncs;
	case C_TRACED: return &o->traced_syncs;
	case C_WAF: return &o->waf;
	default: return NULL;
	}
}

struct spread {
	double med, min, max;
};

static struct spread spread_of(double *v, int n)
{
	struct spread s;
	s.med = bench_median(v, (size_t)n); /* sorts v */
	s.min = v[0];
	s.max = v[n - 1];
	return s;
}

static void cell(char *buf, size_t cap, enum col c, double v)
{
	if (v < 0)
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, col_fmt[c], v);
}

static void table_head(const char *first)
{
	printf("| %s |", first);
	for (int c = 0; c < NCOLS; c++)
		printf(" %s |", col_head[c]);
	printf("\n|---|");
	for (int c = 0; c < NCOLS; c++)
		printf("---|");
	printf("\n");
}

static void heading(const struct bench_opts *o)
{
	int kv = o->nw > o->with_short; /* a workload other than short */

	printf("alex-bench: %ld %s, %ld-byte payload, %ld runs per mode, seed %llu; caches %s\n",
	       kv ? o->ops : o->procs, kv ? "ops" : "sqlite3 processes", o->payload, o->runs,
	       (unsigned long long)o->seed,
	       getuid() == 0 ? "dropped before each run" : "NOT dropped (not root)");
	if (o->with_short)
		printf("short: %ld processes per run of %s\n", o->procs, o->sqlite3);
	printf("\n");
	fflush(stdout);
}

/* OUT/runs.csv and OUT/optypes.csv, opened: 0, or -1 with errno. */
static int open_csv(struct bench_report *rep)
{
	const char *outdir = rep->o->outdir;

	if (snprintf(rep->csvpath, sizeof rep->csvpath, "%s/runs.csv", outdir) >=
		    (int)sizeof rep->csvpath ||
	    snprintf(rep->oppath, sizeof rep->oppath, "%s/optypes.csv", outdir) >=
		    (int)sizeof rep->oppath) {
		errno = ENAMETOOLONG;
		return -1;
	}
	rep->csv = fopen(rep->csvpath, "w");
	rep->opcsv = rep->csv ? fopen(rep->oppath, "w") : NULL;
	return rep->opcsv ? 0 : -1;
}

struct bench_report *bench_report_open(const struct bench_opts *o)
{
	struct bench_report *rep = calloc(1, sizeof *rep);

	if (!rep) {
		fprintf(stderr, "alex-bench: %s\n", strerror(errno));
		return NULL;
	}
	rep->o = o;
	if (open_csv(rep)) {
		fprintf(stderr, "alex-bench: %s: %s\n", o->outdir, strerror(errno));
		if (rep->csv)
			fclose(rep->csv);
		free(rep);
		return NULL;
	}
	fprintf(rep->csv, "workload,mode,run,status,ops,seconds,ops_per_s,mean_us,std_us,p50_us,"
			  "p95_us,p99_us,max_us,syncs,strace_syncs,write_call_bytes,device_bytes,"
			  "flushes,discards,waf,peak_rss_kb,files_left\n");
	fprintf(rep->opcsv, "workload,mode,run,op,n,mean_us,std_us,p50_us,p95_us,p99_us,max_us\n");
	heading(o);
	return rep;
}

void bench_report_probe(const struct bench_opts *o, const struct bench_probe p[BENCH_NPROBES])
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/probe.csv", o->outdir);
	FILE *csv = fopen(path, "w");

	printf("### raw device (the files' own device, no SQLite)\n\n"
	       "| probe | rate | p50 us | p99 us | max us |\n|---|---|---|---|---|\n");
	if (csv)
		fprintf(csv, "probe,rate,unit,p50_us,p99_us,max_us,error\n");
	for (int i = 0; i < BENCH_NPROBES; i++) {
		if (p[i].err)
			printf("| %s | FAILED: %s | | | |\n", p[i].name, strerror(p[i].err));
		else if (p[i].lat.n)
			printf("| %s | %.0f %s | %.0f | %.0f | %.0f |\n", p[i].name, p[i].rate,
			       p[i].unit, p[i].lat.p50, p[i].lat.p99, p[i].lat.max);
		else
			printf("| %s | %.0f %s | | | |\n", p[i].name, p[i].rate, p[i].unit);
		if (csv)
			fprintf(csv, "\"%s\",%.1f,%s,%.1f,%.1f,%.1f,%s\n", p[i].name, p[i].rate, p[i].unit,
				p[i].lat.p50, p[i].lat.p99, p[i].lat.max,
				p[i].err ? strerror(p[i].err) : "");
	}
	printf("\n%ld syncs per sync probe, %ld MiB per sequential probe\n\n", o->probe_syncs,
	       o->probe_mb);
	if (csv)
		fclose(csv);
}

void bench_report_run(struct bench_report *rep, const char *w, const struct bench_mode *m,
		      int i, const struct bench_run *r)
{
	char left[16] = "";

	if (r->files_left >= 0)
		snprintf(left, sizeof left, "%d", r->files_left);
	fprintf(rep->csv, "%s,\"%s\",%d,%s,%ld,%.6f,%.1f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.0f,%.0f,"
			  "%llu,%llu,%llu,%llu,%.3f,%ld,%s\n",
		w, m->name, i + 1, r->failed ? "failed" : "ok", r->ops, r->secs, r->ops_s,
		r->lat.mean, r->lat.std, r->lat.p50, r->lat.p95, r->lat.p99, r->lat.max, r->syncs,
		r->traced_syncs, (unsigned long long)r->wchar, (unsigned long long)r->dev_bytes,
		(unsigned long long)r->flushes, (unsigned long long)r->discards, r->waf, r->rss_kb,
		left);
	for (int t = 0; t < BENCH_MAXOPS; t++)
		if (r->op[t].n)
			fprintf(rep->opcsv, "%s,\"%s\",%d,%s,%zu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", w,
				m->name, i + 1, bench_op_names[t], r->op[t].n, r->op[t].mean,
				r->op[t].std, r->op[t].p50, r->op[t].p95, r->op[t].p99, r->op[t].max);
	fflush(rep->csv);
}

/* Every column: its median into the medians row and the result, its
 * min-max into the ranges row. */
static void mode_columns(char rows[NROWS][4096], const char *mode, const struct bench_run *r,
			 int runs, struct bench_result *o)
{
	int l0 = snprintf(rows[ROW_MEDIANS], sizeof rows[0], "| %s |", mode);
	int l1 = snprintf(rows[ROW_RANGES], sizeof rows[0], "| %s |", mode);

	for (int c = 0; c < NCOLS; c++) {
		double v[BENCH_MAXRUNS], *dst = col_result(o, (enum col)c);
		char a[32], b[32];
		for (int i = 0; i < runs; i++)
			v[i] = col_value(&r[i], (enum col)c);
		struct spread sp = spread_of(v, runs);
		if (c == C_TRACED) /* measured in the first run only */
			sp.med = sp.min = sp.max = r[0].traced_syncs;
		cell(a, sizeof a, (enum col)c, sp.med);
		l0 += snprintf(rows[ROW_MEDIANS] + l0, sizeof rows[0] - (size_t)l0, " %s |", a);
		cell(a, sizeof a, (enum col)c, sp.min);
		cell(b, sizeof b, (enum col)c, sp.max);
		l1 += snprintf(rows[ROW_RANGES] + l1, sizeof rows[0] - (size_t)l1, " %s–%s |", a, b);
		if (dst)
			*dst = sp.med;
	}
	snprintf(rows[ROW_MEDIANS] + l0, sizeof rows[0] - (size_t)l0, "\n");
	snprintf(rows[ROW_RANGES] + l1, sizeof rows[0] - (size_t)l1, "\n");
}

/* Per operation type: p50 and p99, medians, into the per-type row and the
 * result. */
static void mode_optypes(char *row, size_t cap, const char *mode, const struct bench_run *r,
			 int runs, struct bench_result *o)
{
	int l = snprintf(row, cap, "| %s |", mode);

	for (int t = 0; t < BENCH_MAXOPS; t++) {
		double v50[BENCH_MAXRUNS], v99[BENCH_MAXRUNS];
		if (!r[0].op[t].n)
			continue;
		for (int i = 0; i < runs; i++) {
			v50[i] = r[i].op[t].p50;
			v99[i] = r[i].op[t].p99;
		}
		struct spread s50 = spread_of(v50, runs), s99 = spread_of(v99, runs);
		o->op[o->nops] = bench_op_names[t];
		o->op_p99[o->nops++] = s99.med;
		l += snprintf(row + l, cap - (size_t)l, " %zu | %.1f | %.1f (%.1f–%.1f) |", r[0].op[t].n,
			      s50.med, s99.med, s99.min, s99.max);
	}
	snprintf(row + l, cap - (size_t)l, "\n");
}

/* short: every process of every run pooled into one row of its own table;
 * the plots draw the same figures */
static void mode_short(char *row, size_t cap, const char *mode, const struct bench_run *r,
		       int runs, long procs, struct bench_result *o)
{
	struct bench_short_stats s;

	if (bench_short_pool(r, runs, procs, &s)) {
		snprintf(row, cap, "| %s | out of memory |\n", mode);
		return;
	}
	bench_short_row(row, cap, mode, &s);
	o->ops_s = s.ins_s;
	o->p50 = s.t.p50;
	o->p95 = s.t.p95;
	o->p99 = s.t.p99;
	o->max = s.t.max;
	o->traced_syncs = s.syncs;
}

void bench_report_mode(struct bench_report *rep, const char *w, const struct bench_mode *m,
		       struct bench_run *r)
{
	int runs = (int)rep->o->runs, ok = 0, is_short = strcmp(w, "short") == 0;
	char (*rows)[4096] = rep->rows[rep->nres - rep->first];
	struct bench_result *o = &rep->res[rep->nres++];

	for (int i = 0; i < runs; i++)
		ok += !r[i].failed;
	*o = (struct bench_result){ .workload = w, .mode = m->name, .failed = ok < runs,
				    .lat = r[0].sorted, .nlat = r[0].nsorted,
				    .per_process = is_short };
	if (ok < runs) { /* reported, never dropped */
		snprintf(rows[0], sizeof rows[0], "| %s | FAILED (%d of %d runs) |\n", m->name,
			 runs - ok, runs);
		for (int t = 1; t < NROWS; t++)
			memcpy(rows[t], rows[0], sizeof rows[0]);
		rep->any_failed = 1;
	} else {
		mode_columns(rows, m->name, r, runs, o);
		mode_optypes(rows[ROW_OPTYPES], sizeof rows[0], m->name, r, runs, o);
		if (is_short)
			mode_short(rows[ROW_SHORT], sizeof rows[0], m->name, r, runs, rep->o->procs, o);
		fprintf(stderr, "alex-bench: %s %s done\n", w, m->name);
	}
	for (int i = 1; i < runs; i++) /* the first run's stay, for the CDF */
		free(r[i].sorted);
}

static void print_rows(const struct bench_report *rep, enum row row)
{
	for (int k = 0; k < rep->o->nm; k++)
		fputs(rep->rows[k][row], stdout);
}

static void short_table(const struct bench_report *rep)
{
	long procs = rep->o->procs, runs = rep->o->runs;

	printf("\n### short: per process, all %ld processes of the %ld runs\n\n%s", procs * runs,
	       runs, bench_short_head);
	print_rows(rep, ROW_SHORT);
	printf("\nOne sqlite3 process per insert: ops and latencies above are processes and their\n"
	       "wall time (fork to waitpid).  files left: files beside the database in its\n"
	       "directory after the last process (ALEX's log, if kept, is one).\n");
}

/* Per operation type, when the workload has more than one: the columns
 * of the mode that ran the most types (a failed one ran none). */
static void optype_table(const struct bench_report *rep, const char *w)
{
	const struct bench_result *most = NULL;

	for (size_t j = rep->first; j < rep->nres; j++)
		if (!most || rep->res[j].nops > most->nops)
			most = &rep->res[j];
	if (!most || most->nops <= 1)
		return;
	printf("\n### %s: per operation type (medians; p99 with min–max)\n\n| mode |", w);
	for (int t = 0; t < most->nops; t++)
		printf(" %s n | %s p50 us | %s p99 us |", most->op[t], most->op[t], most->op[t]);
	printf("\n|---|");
	for (int t = 0; t < most->nops; t++)
		printf("---|---|---|");
	printf("\n");
	print_rows(rep, ROW_OPTYPES);
}

void bench_report_workload(struct bench_report *rep, const char *w)
{
	printf("### %s: medians over %ld runs\n\n", w, rep->o->runs);
	table_head("mode");
	print_rows(rep, ROW_MEDIANS);
	printf("\n### %s: min–max over %ld runs\n\n", w, rep->o->runs);
	table_head("mode");
	print_rows(rep, ROW_RANGES);
	if (strcmp(w, "short") == 0)
		short_table(rep);
	optype_table(rep, w);
	printf("\n");
	fflush(stdout);
	rep->first = rep->nres;
}

int bench_report_close(struct bench_report *rep)
{
	const char *outdir = rep->o->outdir;
	int rc = rep->any_failed;

	fclose(rep->csv);
	fclose(rep->opcsv);
	printf("syncs: ALEX's own count of log syncs (ALEX modes); syncs (strace): fsync+fdatasync\n"
	       "counted by strace -f -c in a separate run of the first (--strace); every run in %s,\n"
	       "every operation type in %s\n", rep->csvpath, rep->oppath);
	if (rep->o->plots) {
		int pngs = bench_plot(outdir, rep->res, rep->nres);
		if (pngs >= 0)
			printf("%d plots in %s (redraw: cd %s && gnuplot plots.gp)\n", pngs, outdir,
			       outdir);
		else
			rc = 1;
	}
	for (size_t j = 0; j < rep->nres; j++)
		free(rep->res[j].lat);
	free(rep);
	return rc;
}
