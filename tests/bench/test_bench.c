/* alex-bench's statistics and diskstats parser on known inputs. */
#include <criterion/criterion.h>

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
