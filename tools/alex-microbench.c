/*
 * alex-microbench - what one durable single-block commit costs the engine.
 *
 * Runs N commits of one rewritten 4 KiB block (page 1, as SQLite rewrites
 * its header page every commit) through alex_write +
 * alex_commit (ALEX_SYNC_FULL) on the memory backend, where I/O costs only a
 * memcpy, and reports CPU time per commit and bytes appended to the log per
 * commit, for a compressible page (a SQLite-like leaf of 100-byte rows) and
 * an incompressible one.  Then a short run on a real file in the current
 * directory shows what the disk's fdatasync makes of it.
 *
 * Each configuration runs R times (default 5); the table shows the median
 * and the range.
 *
 * A second table is about bytes, not time: a run of one-row INSERTs as
 * SQLite makes them (page 1's change counter, the last leaf growing by a
 * row, a new leaf every 36 rows) in NORMAL mode, and the log bytes that
 * would reach the device per commit -- today every commit's record, and
 * with the staging engine of docs/STAGING.md (core/io_over.h, not yet
 * used by libalex.so) only the merged record of each window.
 *
 * usage: alex-microbench [-n commits] [-R runs] [-r real-file-commits] [-d dir]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alex.h"
#include "io.h"
#include "io_over.h"

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Commit i's version of the page: rows of a key and a 100-byte compressible
 * value (what the paper's workload writes), or noise. */
static void make_page(uint8_t *p, long i, int noise, uint64_t *s)
{
	if (noise) {
		for (int k = 0; k < 4096; k += 8) {
			uint64_t v = mix(s);
			memcpy(p + k, &v, 8);
		}
		return;
	}
	int rows = (int)(i % 36) + 1;
	memset(p, 0, 4096);
	for (int r = 0; r < rows; r++) {
		uint8_t *row = p + 4096 - (r + 1) * 110;
		snprintf((char *)row, 110, "%08ld:", (i / 36) * 36 + r);
		memset(row + 9, 'a' + (r % 26), 100);
	}
}

struct result {
	double cpu_us, wall_us;
	double bytes_per_commit;
	struct alex_stats st;
};

static int run(const char *path, const struct alex_io *io, long n, int noise, int warm,
	       struct result *res)
{
	struct alex_config cfg;
	alex_db *db;
	static uint8_t pages[72][4096];
	uint64_t s = 1;
	int rc;

	/* made before the clock starts: only the engine is timed */
	for (long i = 0; i < 72; i++)
		make_page(pages[i], i, noise, &s);

	alex_config_default(&cfg);
	cfg.checkpoint_on_close = 0;
	if ((rc = alex_open(path, &cfg, io, &db))) {
		fprintf(stderr, "alex-microbench: %s: %s\n", path, alex_strerror(rc));
		return 1;
	}
	/* Warm up untimed until the first checkpoint, so that the memory
	 * backend's file has been touched once: we time the engine in steady
	 * state, not the kernel handing the fake disk its first pages. */
	struct alex_stats w;
	for (long i = 0; warm; i++) {
		if ((rc = alex_write(db, ALEX_FILE_DB, pages[i % 72], 4096, 0)) ||
		    (rc = alex_commit(db))) {
			fprintf(stderr, "alex-microbench: warm-up: %s\n", alex_strerror(rc));
			alex_close(db);
			return 1;
		}
		alex_stats(db, &w);
		if (w.checkpoints)
			break;
	}
	struct alex_stats base;
	alex_stats(db, &base);
	double c0 = cpu_now(), w0 = wall_now();
	for (long i = 0; i < n; i++) {
		if ((rc = alex_write(db, ALEX_FILE_DB, pages[i % 72], 4096, 0)) ||
		    (rc = alex_commit(db))) {
			fprintf(stderr, "alex-microbench: commit %ld: %s\n", i, alex_strerror(rc));
			alex_close(db);
			return 1;
		}
	}
	double c1 = cpu_now(), w1 = wall_now();
	alex_stats(db, &res->st);
	res->st.syncs -= base.syncs;
	res->st.checkpoints -= base.checkpoints;
	res->st.bytes_logged -= base.bytes_logged;
	alex_close(db);
	res->cpu_us = (c1 - c0) * 1e6 / (double)n;
	res->wall_us = (w1 - w0) * 1e6 / (double)n;
	res->bytes_per_commit = (double)res->st.bytes_logged / (double)n;
	return 0;
}

/* Insert i as SQLite would write it: page 1 with its change counter (and
 * the copy at 92), the last leaf with row i added, the file grown by a
 * leaf every 36 rows. */
static int insert_row(alex_db *db, long i, uint8_t *page1, uint8_t *leaf)
{
	long blk = 1 + i / 36;
	int r = (int)(i % 36), rc;

	if (r == 0)
		memset(leaf, 0, 4096);
	uint8_t *row = leaf + 4096 - (r + 1) * 110;
	snprintf((char *)row, 110, "%08ld:", i);
	memset(row + 9, 'a' + (int)(i % 26), 100);
	leaf[3] = (uint8_t)(r + 1);
	uint32_t counter = (uint32_t)i + 1;
	for (int k = 0; k < 4; k++)
		page1[24 + k] = page1[92 + k] = (uint8_t)(counter >> (24 - 8 * k));
	page1[31] = (uint8_t)(blk + 1);
	if ((rc = alex_write(db, ALEX_FILE_DB, leaf, 4096, (uint64_t)blk * 4096)) ||
	    (rc = alex_write(db, ALEX_FILE_DB, page1, 4096, 0)))
		return rc;
	return alex_commit(db);
}

/* Log bytes per INSERT that reach the device: window 0, today's NORMAL
 * mode (every record; the window's sync writes them all); otherwise the
 * staging engine merged into the engine below every window commits. */
static int staged_bytes(long n, long window, double *per_commit, double *blocks_per_merge)
{
	static uint8_t page1[4096], leaf[4096];
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config cb, ca;
	struct alex_io_over *ov = NULL;
	alex_db *below = NULL, *above = NULL;
	struct alex_stats st;
	int rc;

	alex_mem_untracked(m);
	memset(page1, 0, sizeof page1);
	memcpy(page1, "SQLite format 3", 16);
	page1[18] = page1[19] = 1;
	alex_config_default(&cb);
	cb.checkpoint_on_close = 0;
	cb.db_only = 1;
	if (!window)
		cb.sync = ALEX_SYNC_NORMAL;
	if ((rc = alex_open("/stage.db", &cb, &io, &below)))
		goto out;
	if (window) {
		alex_config_default(&ca);
		alex_config_over(&ca);
		struct alex_io over_io;
		if ((rc = alex_io_over_new(below, &io, &ov)))
			goto out;
		over_io = alex_io_over(ov);
		if ((rc = alex_open("/stage.db", &ca, &over_io, &above)))
			goto out;
	}
	long merges = 0;
	for (long i = 0; i < n && !rc; i++) {
		rc = insert_row(window ? above : below, i, page1, leaf);
		if (!rc && window && (i + 1) % window == 0) {
			rc = alex_merge(above, below);
			merges++;
		}
	}
	if (!rc && window && n % window) {
		rc = alex_merge(above, below);
		merges++;
	}
	if (!rc) {
		alex_stats(below, &st);
		*per_commit = (double)st.bytes_logged / (double)n;
		*blocks_per_merge = merges ? (double)st.blocks_logged / (double)merges : 0;
	}
out:
	if (rc)
		fprintf(stderr, "alex-microbench: staged run: %s\n", alex_strerror(rc));
	alex_close(above);
	alex_io_over_free(ov);
	alex_close(below);
	alex_mem_free(m);
	return rc != 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One table row: the median run's CPU time, with min-max over the runs. */
static void row(const char *name, long n, struct result *r, int reps)
{
	double cpu[64];
	for (int i = 0; i < reps; i++)
		cpu[i] = r[i].cpu_us;
	qsort(cpu, (size_t)reps, sizeof *cpu, cmp_double);
	const struct result *m = &r[0];
	for (int i = 0; i < reps; i++)
		if (r[i].cpu_us == cpu[reps / 2])
			m = &r[i];
	char c[64];
	snprintf(c, sizeof c, "%.2f (%.2f-%.2f)", cpu[reps / 2], cpu[0], cpu[reps - 1]);
	printf("| %-24s | %7ld | %-18s | %10.2f | %8.0f | %7lu | %5lu |\n", name, n, c,
	       m->wall_us, m->bytes_per_commit,
	       (unsigned long)m->st.syncs, (unsigned long)m->st.checkpoints);
}

int main(int argc, char **argv)
{
	long n = 100000, nreal = 2000;
	int reps = 5;
	const char *dir = ".";
	int opt;

	while ((opt = getopt(argc, argv, "n:r:d:R:h")) != -1) {
		switch (opt) {
		case 'n': n = atol(optarg); break;
		case 'r': nreal = atol(optarg); break;
		case 'd': dir = optarg; break;
		case 'R': reps = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-n commits] [-R runs] [-r real-file-commits] [-d dir]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (n <= 0 || nreal < 0 || reps < 1 || reps > 64) {
		fprintf(stderr, "alex-microbench: counts must be positive, runs 1-64\n");
		return 2;
	}
	printf("ALEX engine micro-benchmark: single-block durable commits (ALEX_SYNC_FULL)\n\n");
	printf("| %-24s | %7s | %-18s | %10s | %8s | %7s | %5s |\n", "backend / page", "commits",
	       "cpu us/op (range)", "wall us/op", "bytes/op", "syncs", "ckpts");
	printf("|--------------------------|---------|--------------------|------------|----------|---------|-------|\n");
	static struct result r[64];
	for (int noise = 0; noise < 2; noise++) {
		for (int k = 0; k < reps; k++) {
			alex_mem *m = alex_mem_new();
			alex_mem_untracked(m);
			struct alex_io io = alex_mem_io(m);
			int bad = run("/bench.db", &io, n, noise, 1, &r[k]);
			alex_mem_free(m);
			if (bad)
				return 1;
		}
		row(noise ? "memory / incompressible" : "memory / compressible", n, r, reps);
	}
	if (nreal > 0) {
		char path[4096];
		int bad = 0, k;
		for (k = 0; k < reps && !bad; k++) {
			snprintf(path, sizeof path, "%s/alex-microbench-%d.db", dir, (int)getpid());
			bad = run(path, NULL, nreal, 0, 0, &r[k]);
			unlink(path);
			strcat(path, "-alex");
			unlink(path);
		}
		if (bad)
			return 1;
		row("file / compressible", nreal, r, reps);
	}
	long windows[] = { 0, 100, 1000, 5000 };
	printf("\nNORMAL mode's log bytes per one-row INSERT that reach the device (%ld INSERTs):\n\n",
	       n);
	printf("| %-36s | %12s | %16s |\n", "", "log bytes/op", "blocks per merge");
	printf("|--------------------------------------|--------------|------------------|\n");
	for (size_t w = 0; w < sizeof windows / sizeof *windows; w++) {
		double per = 0, blocks = 0;
		char name[64];
		if (staged_bytes(n, windows[w], &per, &blocks))
			return 1;
		if (windows[w])
			snprintf(name, sizeof name, "staged, merged every %ld commits", windows[w]);
		else
			snprintf(name, sizeof name, "today (every record)");
		if (windows[w])
			printf("| %-36s | %12.1f | %16.1f |\n", name, per, blocks);
		else
			printf("| %-36s | %12.1f | %16s |\n", name, per, "-");
	}
	printf("\ncpu us/op: engine CPU per commit, after an untimed warm-up to the first\n"
	       "checkpoint (the memory backend's I/O is a memcpy);\n"
	       "bytes/op: log bytes appended per commit (4096 = header embedded in one block).\n");
	return 0;
}
