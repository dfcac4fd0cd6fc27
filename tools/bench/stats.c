/* stats.c - latency summaries for alex-bench. */
#include <math.h>
#include <stdlib.h>

#include "bench.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double rank(const double *v, size_t n, double p)
{
	size_t k = (size_t)ceil(p / 100.0 * (double)n);
	return v[k ? k - 1 : 0];
}

void bench_summarize(double *v, size_t n, struct bench_summary *s)
{
	double sum = 0, sq = 0;

	s->n = n;
	if (!n) {
		s->mean = s->std = s->p50 = s->p95 = s->p99 = s->max = 0;
		return;
	}
	qsort(v, n, sizeof *v, cmp);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	s->mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		sq += (v[i] - s->mean) * (v[i] - s->mean);
	s->std = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
	s->p50 = rank(v, n, 50);
	s->p95 = rank(v, n, 95);
	s->p99 = rank(v, n, 99);
	s->max = v[n - 1];
}

double bench_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
