/* alex-bench's statistics, diskstats parser, command line, directory trees,
 * child processes and the short workload's pure parts on known inputs. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "options.h"
#include "read.h"
#include "run.h"

Test(stats, known_percentiles)
{
	double v[100];
	struct bench_summary s;

	for (int i = 0; i < 100; i++)
		v[i] = 100 - i; /* 100..1, unsorted */
	bench_summarize(v, 100, &s);
	cr_expect_eq(s.n, 100);
	cr_expect_float_eq(s.mean, 50.5, 1e-9);
	cr_expect_float_eq(s.p50, 50, 1e-9);
	cr_expect_float_eq(s.p95, 95, 1e-9);
	cr_expect_float_eq(s.p99, 99, 1e-9);
	cr_expect_float_eq(s.max, 100, 1e-9);
	cr_expect_float_eq(s.std, 29.011491975882016, 1e-9);
}

Test(stats, small_and_empty)
{
	double one[1] = { 7 }, none[1];
	struct bench_summary s;

	bench_summarize(one, 1, &s);
	cr_expect_float_eq(s.p99, 7, 1e-9);
	cr_expect_float_eq(s.std, 0, 1e-9);
	bench_summarize(none, 0, &s);
	cr_expect_eq(s.n, 0);
	double odd[3] = { 3, 1, 2 }, even[4] = { 4, 1, 3, 2 };
	cr_expect_float_eq(bench_median(odd, 3), 2, 1e-9);
	cr_expect_float_eq(bench_median(even, 4), 2.5, 1e-9);
}

/* Captured from kernels with 20 fields (5.5+), 18 (4.18-5.4) and 14. */
static const char *sample =
	"   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	" 254       0 vda 24567 6144 1812345 9876 345678 123456 98765432 54321 0 123456 67890 12 0 96 5 4321 777\n"
	" 254       1 vda1 24000 6000 1800000 9800 345000 123000 98700000 54000 0 123000 67800 11 0 88 4 4300 700\n"
	" 253       0 dm-0 1000 0 8000 100 2000 0 16000 200 0 300 300 7 0 56 1\n"
	"   8       0 sda 11 0 22 1 33 0 44 2 0 3 3\n";

Test(diskstats, whole_disk_partition_and_dm)
{
	struct bench_disk d;

	cr_assert_eq(bench_diskstats_parse(sample, 254, 0, &d), 0);
	cr_expect_eq(d.writes, 345678);
	cr_expect_eq(d.sectors_written, 98765432);
	cr_expect_eq(d.discards, 12);
	cr_expect_eq(d.flushes, 4321);
	cr_assert_eq(bench_diskstats_parse(sample, 254, 1, &d), 0);
	cr_expect_eq(d.sectors_written, 98700000);
	cr_expect_eq(d.flushes, 4300);
	cr_assert_eq(bench_diskstats_parse(sample, 253, 0, &d), 0);
	cr_expect_eq(d.sectors_written, 16000);
	cr_expect_eq(d.discards, 7);
	cr_expect_eq(d.flushes, 0, "18-field kernels have no flush counts");
	cr_assert_eq(bench_diskstats_parse(sample, 8, 0, &d), 0);
	cr_expect_eq(d.sectors_written, 44);
	cr_expect_eq(d.discards, 0);
	cr_expect_eq(bench_diskstats_parse(sample, 9, 9, &d), -1);
}

/* ---- the command line ----------------------------------------------------- */

Test(options, parse_long)
{
	long v = 7;

	cr_expect_eq(bench_parse_long("200", 1, 1000000, &v), 0);
	cr_expect_eq(v, 200);
	cr_expect_eq(bench_parse_long("1", 1, 1000000, &v), 0);
	cr_expect_eq(bench_parse_long("1000000", 1, 1000000, &v), 0);
	cr_expect_eq(v, 1000000);
	const char *bad[] = { "", "0", "-5", "1000001", "12x", "x12", " 12", "12 ", "+12", "1e3",
			      "99999999999999999999999", NULL };
	for (int i = 0; bad[i]; i++) {
		v = 7;
		cr_expect_eq(bench_parse_long(bad[i], 1, 1000000, &v), -1, "\"%s\" accepted", bad[i]);
		cr_expect_eq(v, 7, "\"%s\" changed the value", bad[i]);
	}
	cr_expect_eq(bench_parse_long(NULL, 1, 2, &v), -1);
	cr_expect_eq(bench_parse_long("-3", -5, 5, &v), 0);
	cr_expect_eq(v, -3);
}

Test(options, parse_u64)
{
	uint64_t v = 7;

	cr_expect_eq(bench_parse_u64("0", &v), 0);
	cr_expect_eq(v, 0);
	cr_expect_eq(bench_parse_u64("18446744073709551615", &v), 0);
	cr_expect_eq(v, UINT64_MAX);
	const char *bad[] = { "", "-1", "-0", "18446744073709551616", "1x", " 1", "+1", "0x10", NULL };
	for (int i = 0; bad[i]; i++) {
		v = 7;
		cr_expect_eq(bench_parse_u64(bad[i], &v), -1, "\"%s\" accepted", bad[i]);
		cr_expect_eq(v, 7, "\"%s\" changed the value", bad[i]);
	}
}

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

Test(options, defaults_and_values)
{
	static struct bench_opts o;
	char *none[] = { "alex-bench", NULL };

	cr_assert_eq(bench_opts_parse(ARGC(none), none, &o), BENCH_OPTS_RUN);
	cr_expect_eq(o.runs, 5);
	cr_expect_eq(o.ops, 5000);
	cr_expect_eq(o.seed, 42);
	cr_expect_eq(o.nw, 2);
	cr_expect_eq(o.nm, 9, "all: every built-in mode but alex-keep (no short)");
	cr_expect(o.probe && o.plots && !o.strace);

	char *some[] = { "alex-bench", "--runs", "100", "--ops", "1", "--seed", "18446744073709551615",
			 "--mode", "wal,alex:ALEX_SYNC=normal;ALEX_KEEP_LOG=1", "--workload", "large",
			 "--no-plots", "--strace", "--dir", "d", NULL };
	cr_assert_eq(bench_opts_parse(ARGC(some), some, &o), BENCH_OPTS_RUN);
	cr_expect_eq(o.runs, 100);
	cr_expect_eq(o.ops, 1);
	cr_expect_eq(o.seed, UINT64_MAX);
	cr_expect_eq(o.nw, 1);
	cr_expect_str_eq(o.wl[0], "large");
	cr_assert_eq(o.nm, 2);
	cr_expect_str_eq(o.modes[0].name, "wal");
	cr_expect_null(o.modes[0].alex);
	cr_expect_str_eq(o.modes[1].name, "alex:ALEX_SYNC=normal;ALEX_KEEP_LOG=1");
	cr_expect_str_eq(o.modes[1].alex, "ALEX_SYNC=normal;ALEX_KEEP_LOG=1");
	cr_expect(!o.plots && o.strace && o.probe);
	cr_expect_str_eq(o.dir, "d");
}

static void quiet(void)
{
	cr_redirect_stdout();
	cr_redirect_stderr();
}

/* A bad value: one line naming the option, the value and the range. */
Test(options, bad_value_one_line, .init = cr_redirect_stderr)
{
	static struct bench_opts o;
	char *argv[] = { "alex-bench", "--ops", "10", "--runs", "abc", NULL };

	cr_expect_eq(bench_opts_parse(ARGC(argv), argv, &o), 2);
	fflush(stderr);
	cr_expect_stderr_eq_str("alex-bench: --runs: 'abc' is not a number between 1 and 100\n");
}

Test(options, bad_values, .init = quiet)
{
	static const char *const bad[][2] = {
		{ "--runs", "0" }, { "--runs", "101" }, { "--runs", "5x" }, { "--runs", "" },
		{ "--ops", "-1" }, { "--ops", "100000001" }, { "--payload", "1048577" },
		{ "--large-mb", "0" }, { "--probe-syncs", "1e3" }, { "--probe-mb", " 4" },
		{ "--procs", "+5" }, { "--seed", "-1" }, { "--seed", "18446744073709551616" },
		{ "--mode", "fast" }, { "--workload", "insert,insert" }, { "--workload", "," },
		{ "--mode", "" },
	};
	static struct bench_opts o;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *argv[] = { "alex-bench", (char *)bad[i][0], (char *)bad[i][1], NULL };
		cr_expect_eq(bench_opts_parse(ARGC(argv), argv, &o), 2, "%s '%s' accepted", bad[i][0],
			     bad[i][1]);
	}
	char *missing[] = { "alex-bench", "--runs", NULL }, *joined[] = { "alex-bench", "--runs=3", NULL };
	cr_expect_eq(bench_opts_parse(ARGC(missing), missing, &o), 2);
	cr_expect_eq(bench_opts_parse(ARGC(joined), joined, &o), 2);
	char *help[] = { "alex-bench", "--help", NULL };
	cr_expect_eq(bench_opts_parse(ARGC(help), help, &o), 0);
}

/* ---- directory trees and child processes ---------------------------------- */

Test(tree, make_and_remove)
{
	char top[] = "/tmp/alex-bench-tree-XXXXXX", path[300], outside[300];
	struct stat st;

	cr_assert_not_null(mkdtemp(top));
	snprintf(path, sizeof path, "%s/a//b/c/", top);
	cr_assert_eq(bench_tree_make(path), 0);
	cr_expect_eq(bench_tree_make(path), 0, "already there");
	snprintf(path, sizeof path, "%s/a/b/c/f", top);
	fclose(fopen(path, "w"));
	cr_expect_eq(bench_tree_make(path), -1, "a file of that name");
	/* a link to a file outside: the link goes, never the file */
	snprintf(outside, sizeof outside, "%s-outside", top);
	fclose(fopen(outside, "w"));
	snprintf(path, sizeof path, "%s/a/b/link", top);
	cr_assert_eq(symlink(outside, path), 0);
	snprintf(path, sizeof path, "%s/a", top);
	cr_expect_eq(bench_tree_remove(path), 0);
	cr_expect_neq(stat(path, &st), 0);
	cr_expect_eq(stat(outside, &st), 0);
	cr_expect_eq(bench_tree_remove(path), 0, "not there: no error");
	cr_expect_eq(bench_tree_remove(top), 0);
	cr_expect_neq(stat(top, &st), 0);
	unlink(outside);
}

static void slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, cap - 1, f) : 0;

	buf[n] = 0;
	if (f)
		fclose(f);
}

/* alex:VAR=VALUE modes name files: a path in a value made a run's latency
 * file a path into a directory that did not exist, and the run failed */
Test(tree, mode_name_as_file_part)
{
	char out[64];

	bench_file_part(out, sizeof out, "alex:ALEX_STATS=/tmp/st.txt;ALEX_SYNC=normal");
	cr_expect_str_eq(out, "alex_ALEX_STATS__tmp_st.txt_ALEX_SYNC_normal");
	bench_file_part(out, sizeof out, "wal-normal");
	cr_expect_str_eq(out, "wal-normal");
	bench_file_part(out, 6, "abcdefgh");
	cr_expect_str_eq(out, "abcde", "cut to fit");
}

Test(spawn, status_output_directory_environment)
{
	char out[] = "/tmp/alex-bench-spawn-XXXXXX", buf[4096];
	int fd = mkstemp(out);

	cr_assert_geq(fd, 0);
	close(fd);
	char *t[] = { "true", NULL }, *f[] = { "false", NULL }, *no[] = { "/nonexistent/x", NULL };
	cr_expect_eq(bench_spawn(t, NULL, NULL), 0);
	cr_expect_eq(bench_spawn(f, NULL, NULL), 1);
	cr_expect_eq(bench_spawn(no, NULL, NULL), 127);
	char *pwd[] = { "pwd", NULL };
	struct bench_spawn how = { .out = out, .cwd = "/" };
	cr_expect_eq(bench_spawn(pwd, &how, NULL), 0);
	slurp(out, buf, sizeof buf);
	cr_expect_str_eq(buf, "/\n");
	char *env[] = { "ALEX_BENCH_TEST=a b;c", NULL }, *printenv[] = { "printenv", "ALEX_BENCH_TEST",
									 NULL };
	how = (struct bench_spawn){ .out = out, .env = env };
	cr_expect_eq(bench_spawn(printenv, &how, NULL), 0);
	slurp(out, buf, sizeof buf);
	cr_expect_str_eq(buf, "a b;c\n");
	cr_expect_null(getenv("ALEX_BENCH_TEST"), "set in the child only");
	how = (struct bench_spawn){ .out = "/nonexistent/out" };
	cr_expect_eq(bench_spawn(t, &how, NULL), 126);
	unlink(out);
}

/* ---- what a run leaves behind, read back ---------------------------------- */

/* text into a new file under /tmp; its path into path */
static void put(char *path, const char *text)
{
	strcpy(path, "/tmp/alex-bench-read-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

Test(read, worker_line)
{
	char path[64];
	struct bench_run r = { .files_left = -1 };
	int have_disk = 1;

	put(path, "5000 1.250000 ok 863960\n");
	cr_assert_eq(bench_read_worker(path, 0, &r, &have_disk), 0);
	cr_expect_eq(r.ops, 5000);
	cr_expect_float_eq(r.secs, 1.25, 1e-9);
	cr_expect_eq(r.wchar, 863960);
	cr_expect_eq(r.files_left, -1);
	cr_expect_eq(have_disk, 1, "not short: the run's own device counts stay");
	unlink(path);
	put(path, "5 0.500000 ok 31105 1 112722 3 0\n");
	cr_assert_eq(bench_read_worker(path, 1, &r, &have_disk), 0);
	cr_expect_eq(r.files_left, 1);
	cr_expect_eq(r.dev_bytes, 112722);
	cr_expect_eq(r.flushes, 3);
	cr_expect_eq(have_disk, 1);
	unlink(path);
	put(path, "5 0.500000 ok 31105 0\n");
	cr_assert_eq(bench_read_worker(path, 1, &r, &have_disk), 0);
	cr_expect_eq(have_disk, 0, "short without /proc/diskstats counts");
	unlink(path);
	put(path, "5 0.500000 FAILED 31105 0\n");
	cr_expect_eq(bench_read_worker(path, 1, &r, &have_disk), -1);
	unlink(path);
	cr_expect_eq(bench_read_worker("/nonexistent", 0, &r, &have_disk), -1);
}

Test(read, latencies)
{
	char path[64];
	struct bench_run r = { 0 };

	put(path, "op,us\ninsert,3.0\nselect,1.0\ninsert,2.0\ncommit,10.0\nprocess,4.0\n");
	bench_read_latencies(path, &r);
	cr_assert_eq(r.nsorted, 5);
	cr_expect_float_eq(r.sorted[0], 1.0, 1e-9);
	cr_expect_float_eq(r.sorted[4], 10.0, 1e-9);
	cr_expect_float_eq(r.lat.max, 10.0, 1e-9);
	cr_expect_eq(r.op[0].n, 2, "insert");
	cr_expect_float_eq(r.op[0].p50, 2.0, 1e-9);
	cr_expect_eq(r.op[1].n, 1, "select");
	cr_expect_eq(r.op[4].n, 1, "commit");
	cr_expect_eq(r.op[2].n + r.op[3].n, 0, "a type the worker does not name counts in all only");
	free(r.sorted);
	unlink(path);
}

Test(read, strace_summary_and_stats)
{
	char path[64];

	put(path, "% time     seconds  usecs/call     calls    errors syscall\n"
		  "------ ----------- ----------- --------- --------- ----------------\n"
		  " 98.76    0.012345          61       200           fdatasync\n"
		  "  1.24    0.000155          38         4           fsync\n"
		  "------ ----------- ----------- --------- --------- ----------------\n"
		  "100.00    0.012500          61       204           total\n");
	cr_expect_float_eq(bench_read_strace(path), 204, 1e-9, "the total line is not counted again");
	unlink(path);
	put(path, "");
	cr_expect_float_eq(bench_read_strace(path), 0, 1e-9, "no sync at all");
	unlink(path);
	cr_expect_float_eq(bench_read_strace("/nonexistent"), -1, 1e-9);
	put(path, "{\n  \"log_writes\": 9,\n  \"log_syncs\": 51,\n  \"x\": 1\n}\n");
	cr_expect_float_eq(bench_read_syncs(path), 51, 1e-9);
	unlink(path);
	put(path, "{}\n");
	cr_expect_float_eq(bench_read_syncs(path), -1, 1e-9);
	unlink(path);
}

/* ---- the short workload's pure parts ------------------------------------- */

Test(short_wl, sql_of_a_process)
{
	static const struct bench_mode naive = { "naive", "delete", "full", "", NULL, NULL },
					wal_normal = { "wal-normal", "wal", "normal", "", NULL, NULL },
					keep = { "alex-keep", "delete", "full", "",
						 "ALEX_SYNC=full;ALEX_KEEP_LOG=1", NULL };
	char buf[512];

	/* SQLite's defaults: the INSERT alone, the value payload bytes long */
	int n = bench_short_sql(buf, sizeof buf, &naive, 0, 20);
	cr_assert_str_eq(buf, "insert into t(v) values('1-metadata-value-met')");
	cr_expect_eq(n, (int)strlen(buf));
	bench_short_sql(buf, sizeof buf, &keep, 41, 6);
	cr_expect_str_eq(buf, "insert into t(v) values('42-met')");
	/* a payload shorter than the process number: still exactly payload bytes */
	bench_short_sql(buf, sizeof buf, &naive, 12344, 3);
	cr_expect_str_eq(buf, "insert into t(v) values('123')");
	/* synchronous is per connection: said again in every process */
	bench_short_sql(buf, sizeof buf, &wal_normal, 0, 2);
	cr_expect_str_eq(buf, "pragma synchronous=normal; insert into t(v) values('1-')");
	static const struct bench_mode tuned = { "tuned", "wal", "normal", "pragma x=1;", NULL, NULL };
	bench_short_sql(buf, sizeof buf, &tuned, 0, 2);
	cr_expect_str_eq(buf, "pragma synchronous=normal; pragma x=1; insert into t(v) values('1-')");
	/* 100 bytes, no quote in it */
	n = bench_short_sql(buf, sizeof buf, &naive, 199, 100);
	cr_expect_eq(n, (int)strlen("insert into t(v) values('')") + 100);
	cr_expect_eq(strchr(buf + 25, '\''), buf + 125, "a quote inside the value");
	/* too small a buffer */
	cr_expect_eq(bench_short_sql(buf, 40, &naive, 0, 100), -1);
	cr_expect_eq(bench_short_sql(buf, 28, &naive, 0, 1), -1);
	cr_expect_eq(bench_short_sql(buf, 29, &naive, 0, 1), 28);
}

Test(short_wl, find_exe)
{
	char out[256], dir[] = "/tmp/alex-bench-test-XXXXXX", path[300];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/tool", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	char pathenv[600];
	snprintf(pathenv, sizeof pathenv, "/nonexistent:%s", dir);
	/* not executable: skipped, as execvp does */
	cr_expect_eq(bench_find_exe("tool", pathenv, out, sizeof out), -1);
	chmod(path, 0755);
	cr_expect_eq(bench_find_exe("tool", pathenv, out, sizeof out), 0);
	cr_expect_str_eq(out, path);
	cr_expect_eq(bench_find_exe("tool", "/nonexistent", out, sizeof out), -1);
	cr_expect_eq(bench_find_exe("tool", "", out, sizeof out), -1);
	cr_expect_eq(bench_find_exe(path, "", out, sizeof out), 0, "a path is taken as it is");
	cr_expect_eq(bench_find_exe("", pathenv, out, sizeof out), -1);
	/* a directory of that name is no program */
	snprintf(pathenv, sizeof pathenv, "/:%s", dir);
	cr_expect_eq(bench_find_exe("tmp", pathenv, out, sizeof out), -1);
	cr_expect_eq(bench_find_exe("tool", pathenv, out, 8), -1, "too long for out");
	unlink(path);
	rmdir(dir);
}

Test(short_wl, pooled_runs)
{
	double a[] = { 1000, 3000 }, b[] = { 2000, 4000 };
	struct bench_run r[2] = {
		{ .secs = 0.5, .wchar = 100, .dev_bytes = 4000, .waf = 1, .traced_syncs = 6,
		  .files_left = 0, .sorted = a, .nsorted = 2 },
		{ .secs = 1.5, .wchar = 300, .dev_bytes = 8000, .waf = 1, .traced_syncs = -1,
		  .files_left = 1, .sorted = b, .nsorted = 2 },
	};
	struct bench_short_stats s;

	cr_assert_eq(bench_short_pool(r, 2, 2, &s), 0);
	cr_expect_eq(s.procs, 4);
	cr_expect_float_eq(s.ins_s, 2, 1e-9, "4 processes in 2 seconds");
	cr_expect_eq(s.t.n, 4);
	cr_expect_float_eq(s.t.max, 4000, 1e-9);
	cr_expect_float_eq(s.syncs, 3, 1e-9, "the first run's strace count, per process");
	cr_expect_float_eq(s.dev_bytes, 3000, 1e-9);
	cr_expect_float_eq(s.wchar, 100, 1e-9);
	cr_expect_eq(s.files_min, 0);
	cr_expect_eq(s.files_max, 1);
	r[1].waf = -1;
	r[0].traced_syncs = -1;
	cr_assert_eq(bench_short_pool(r, 2, 2, &s), 0);
	cr_expect_float_eq(s.dev_bytes, -1, 1e-9, "a run without device counts: none");
	cr_expect_float_eq(s.syncs, -1, 1e-9);
}

Test(short_wl, table_row)
{
	struct bench_short_stats s = { .procs = 600, .ins_s = 123.4,
				       .t = { .p50 = 7812.5, .p95 = 15000, .p99 = 29160.4,
					      .max = 218506.5 },
				       .syncs = 3.0166, .dev_bytes = 112722.4, .wchar = 31105,
				       .files_min = 1, .files_max = 1 };
	char buf[512];

	bench_short_row(buf, sizeof buf, "alex-keep", &s);
	cr_expect_str_eq(buf, "| alex-keep | 600 | 123 | 7.81 | 15.00 | 29.16 | 218.51 | 3.02 "
			      "| 112722 | 31105 | 1 |\n");
	s.syncs = s.dev_bytes = -1;
	s.files_min = 0;
	bench_short_row(buf, sizeof buf, "alex", &s);
	cr_expect_str_eq(buf, "| alex | 600 | 123 | 7.81 | 15.00 | 29.16 | 218.51 | - | - | 31105 "
			      "| 0–1 |\n");
	s.files_min = -1;
	bench_short_row(buf, sizeof buf, "x", &s);
	cr_expect(strstr(buf, "| 31105 | - |\n") != NULL, "%s", buf);
	/* the row has the header's columns */
	int bars = 0, head_bars = 0;
	for (const char *p = buf; *p; p++)
		bars += *p == '|';
	for (const char *p = bench_short_head; *p != '\n'; p++)
		head_bars += *p == '|';
	cr_expect_eq(bars, head_bars);
}
