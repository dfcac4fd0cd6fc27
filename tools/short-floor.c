/*
 * short-floor - the file-system calls of one short process, without the
 * process: what a one-INSERT `sqlite3` costs the disk under plain SQLite
 * (DELETE + FULL) and under ALEX, with no loader, no SQLite and no engine.
 *
 * usage: short-floor DIR [ROUNDS]
 *
 * Each round runs every variant once, in turn, in DIR (the disk to
 * measure), and prints each one's median.  The sequences are the system
 * calls that strace shows for `sqlite3 db "insert ..."` on a 32 KiB
 * database (docs/BENCHMARKS.md, ninth session), in order, with the same
 * sizes and offsets:
 *
 *   plain      SQLite's journal: made, written, fdatasync'ed, the directory
 *              synced, its header written and fdatasync'ed again; two pages
 *              of the database written and fdatasync'ed; the journal removed
 *   alex       the default mode: the log made under a name of its own,
 *              renamed into place; -alex-shm made and mapped; the directory
 *              synced; the fence written out; the record fdatasync'ed; the
 *              checkpoint's pages fdatasync'ed; unmark; both files removed
 *   alex-noshm the same without -alex-shm
 *   keep       ALEX_KEEP_LOG=1: the log and -alex-shm exist; the record
 *              overwrites the kept log's space (fence riding on its sync),
 *              then the checkpoint
 *
 * The difference between a variant here and the same variant in
 * tools/ab-short (the whole process) is CPU: the loader, SQLite, ALEX's
 * engine.  That split is how the short workload's gap is read
 * (issue 9, point 5).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WAIT_WRITE_WAIT \
	(SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)

static char buf[16384];
static int db;

static void must(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(1);
	}
}

static void put(int fd, size_t n, off_t off)
{
	must(pwrite(fd, buf, n, off) == (ssize_t)n, "pwrite");
}

static void sync_dir(void)
{
	int d = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	must(d >= 0 && fsync(d) == 0, "directory sync");
	close(d);
}

static void plain(void)
{
	int j = open("p.db-journal", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	must(j >= 0, "journal");
	put(j, 512, 0);
	put(j, 4, 512);
	put(j, 4096, 516);
	put(j, 4, 4612);
	put(j, 4, 4616);
	put(j, 4096, 4620);
	put(j, 4, 8716);
	must(fdatasync(j) == 0, "fdatasync");
	sync_dir();
	put(j, 12, 0);
	must(fdatasync(j) == 0, "fdatasync");
	put(db, 4096, 0);
	put(db, 4096, 28672);
	must(fdatasync(db) == 0, "fdatasync");
	close(j);
	must(unlink("p.db-journal") == 0, "unlink");
}

/* -alex-shm: made (and its page written) when new, else opened; mapped */
static void *shm_map(const char *path, int make)
{
	int s = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	must(s >= 0, "shm");
	if (make)
		put(s, 4096, 0);
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, s, 0);
	must(p != MAP_FAILED, "mmap");
	close(s);
	((volatile char *)p)[0]++;
	return p;
}

static void alex(int with_shm)
{
	int l = open("a.db-alex.new", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	must(l >= 0, "log");
	must(fchmod(l, 0644) == 0, "fchmod");
	put(l, 4096, 0);
	put(l, 4096, 4096);
	must(renameat2(AT_FDCWD, "a.db-alex.new", AT_FDCWD, "a.db-alex", RENAME_NOREPLACE) == 0,
	     "rename");
	void *shm = with_shm ? shm_map("a.db-alex-shm", 1) : NULL;
	sync_dir();
	put(db, 73, 19);
	must(sync_file_range(db, 19, 73, WAIT_WRITE_WAIT) == 0, "sync_file_range");
	put(l, 4096, 8192);
	must(fdatasync(l) == 0, "fdatasync");
	put(db, 4096, 0);
	put(db, 4096, 28672);
	must(fdatasync(db) == 0, "fdatasync");
	put(l, 4096, 0);
	put(db, 80, 20);
	put(db, 20, 0);
	if (shm) {
		munmap(shm, 4096);
		must(unlink("a.db-alex-shm") == 0, "unlink");
	}
	must(unlink("a.db-alex") == 0, "unlink");
	close(l);
}

static int kept_log;

static void keep(void)
{
	void *shm = shm_map("k.db-alex-shm", 0);
	put(db, 73, 19);
	must(sync_file_range(db, 19, 73, WAIT_WRITE_WAIT) == 0, "sync_file_range");
	put(kept_log, 4096, 20480);
	must(fdatasync(kept_log) == 0, "fdatasync");
	put(db, 8192, 0);
	must(fdatasync(db) == 0, "fdatasync");
	put(kept_log, 4096, 4096); /* the next epoch's header slot */
	put(db, 80, 20);
	put(db, 20, 0);
	munmap(shm, 4096);
}

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const char *name[] = { "plain", "alex", "alex-noshm", "keep" };
	enum { NV = 4 };
	int rounds = argc > 2 ? atoi(argv[2]) : 300;

	if (argc < 2 || rounds < 1) {
		fprintf(stderr, "usage: short-floor DIR [ROUNDS]\n");
		return 2;
	}
	must(chdir(argv[1]) == 0, argv[1]);
	memset(buf, 0x5a, sizeof buf);
	db = open("floor.db", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	must(db >= 0, "floor.db");
	put(db, 16384, 0);
	put(db, 16384, 16384);
	kept_log = open("k.db-alex", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	must(kept_log >= 0, "kept log");
	for (off_t o = 0; o < 65536; o += 16384)
		put(kept_log, 16384, o);
	must(fsync(db) == 0 && fsync(kept_log) == 0, "fsync");
	munmap(shm_map("k.db-alex-shm", 1), 4096);
	sync_dir();

	double *t[NV];
	for (int v = 0; v < NV; v++)
		must((t[v] = calloc((size_t)rounds, sizeof **t)) != NULL, "calloc");
	for (int r = 0; r < rounds; r++)
		for (int v = 0; v < NV; v++) {
			double a = now_us();
			switch (v) {
			case 0: plain(); break;
			case 1: alex(1); break;
			case 2: alex(0); break;
			default: keep(); break;
			}
			t[v][r] = now_us() - a;
		}
	double base = 0;
	for (int v = 0; v < NV; v++) {
		qsort(t[v], (size_t)rounds, sizeof **t, cmp);
		double m = t[v][rounds / 2];
		if (!v)
			base = m;
		printf("%-11s median %6.0f us  %+5.0f us against plain\n", name[v], m, m - base);
	}
	unlink("k.db-alex-shm");
	unlink("k.db-alex");
	unlink("floor.db");
	return 0;
}
