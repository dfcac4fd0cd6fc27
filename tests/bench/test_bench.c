/* alex-bench's statistics, diskstats parser and the short workload's pure
 * parts on known inputs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

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

/* ---- the short workload's pure parts ------------------------------------- */

Test(short_wl, parse_long)
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

Test(short_wl, sql_of_a_process)
{
	static const struct bench_mode naive = { "naive", "delete", "full", "", NULL },
					wal_normal = { "wal-normal", "wal", "normal", "", NULL },
					keep = { "alex-keep", "delete", "full", "",
						 "ALEX_SYNC=full;ALEX_KEEP_LOG=1" };
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
	static const struct bench_mode tuned = { "tuned", "wal", "normal", "pragma x=1;", NULL };
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
