/* SQLite's temporary files under a key (xts_file.c), over the memory
 * backend, against a plain array: writes of any size and alignment, past
 * the end and over holes, truncations both ways (what a truncation cut off
 * must never come back), reads anywhere; the stored bytes never hold the
 * plaintext; two files with the same key and contents store different
 * bytes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "io.h"
#include "xts_file.h"

#define MAXF (96 * 1024)
static const char WORD[] = "temp-plaintext!"; /* 15 bytes: what must never be stored */

static uint8_t ref[MAXF], buf[MAXF + 1024], chunk[MAXF];

static void fill(uint8_t *p, size_t n, uint64_t *s)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)WORD[(i + *s) % 15];
	*s += 7;
}

/* The stored file holds no 15-byte run of the plaintext's pattern. */
static void no_plaintext(const struct alex_io *mi, int fd)
{
	static uint8_t st[MAXF + 1024];
	size_t got = 0;
	cr_assert_eq(mi->ops->pread(mi->ctx, fd, st, sizeof st, 0, &got), 0);
	cr_assert_eq(got % 512, 0, "the stored file is whole units (%zu bytes)", got);
	for (size_t i = 0; i + 15 <= got; i++)
		cr_assert(memcmp(st + i, WORD, 8) != 0 || memcmp(st + i + 8, WORD + 8, 7) != 0,
			  "plaintext stored at %zu", i);
}

/* The memory backend and a key made from seed; files made on it. */
struct rig {
	alex_mem *m;
	struct alex_io mi;
	struct alex_key *k;
	struct alex_xts *x;
};

static void rig_open(struct rig *r, uint8_t seed)
{
	r->m = alex_mem_new();
	r->mi = alex_mem_io(r->m);
	r->x = xts_for(seed, &r->k);
}

/* A new empty file at path, encrypted; its stored descriptor in *fd. */
static struct alex_xts_file *rig_file(struct rig *r, const char *path, size_t cap, int *fd)
{
	struct alex_xts_file *f;
	cr_assert_eq(r->mi.ops->open(r->mi.ctx, path, ALEX_O_CREAT, fd), 0);
	cr_assert_eq(alex_xts_file_new(&r->mi, *fd, r->k, cap, &f), 0);
	return f;
}

static void rig_close(struct rig *r)
{
	alex_xts_free(r->x);
	alex_key_free(r->k);
	alex_mem_free(r->m);
}

static void run(uint64_t seed, size_t cap, int steps)
{
	struct rig r;
	uint64_t size = 0, s = seed, pat = seed;
	int fd;

	rig_open(&r, 3);
	memset(ref, 0, sizeof ref);
	struct alex_xts_file *f = rig_file(&r, "/t/etilqs_x", cap, &fd);
	for (int i = 0; i < steps; i++) {
		unsigned op = rnd(&s) % 100;
		if (op < 55) {
			uint64_t off = rnd(&s) % MAXF, n = 1 + rnd(&s) % 9000;
			if (rnd(&s) % 3 == 0) /* page-aligned, as a temporary database */
				off &= ~1023ull, n = 1024 * (1 + rnd(&s) % 4);
			if (off + n > MAXF)
				n = MAXF - off;
			if (!n)
				continue;
			fill(chunk, n, &pat);
			cr_assert_eq(alex_xts_file_pwrite(f, chunk, n, off, NULL), 0, "step %d", i);
			memcpy(ref + off, chunk, n);
			if (off + n > size)
				size = off + n;
		} else if (op < 65) {
			uint64_t ns = rnd(&s) % MAXF;
			if (rnd(&s) % 4 == 0)
				ns = 0;
			cr_assert_eq(alex_xts_file_truncate(f, ns), 0, "step %d", i);
			if (ns < size)
				memset(ref + ns, 0, size - ns);
			size = ns;
		} else {
			uint64_t off = rnd(&s) % (MAXF + 600), n = rnd(&s) % 12000;
			size_t got = 99;
			memset(buf, 0xee, sizeof buf);
			if (n > sizeof buf)
				n = sizeof buf;
			cr_assert_eq(alex_xts_file_pread(f, buf, n, off, &got), 0, "step %d", i);
			uint64_t want = off >= size ? 0 : (size - off < n ? size - off : n);
			cr_assert_eq(got, want, "step %d: read %zu at %llu, want %llu", i, got,
				     (unsigned long long)off, (unsigned long long)want);
			/* off may lie past ref when nothing was read */
			cr_assert(!got || memcmp(buf, ref + off, got) == 0,
				  "step %d: bytes at %llu differ", i, (unsigned long long)off);
		}
		cr_assert_eq(alex_xts_file_size(f), size, "step %d", i);
		if (i % 500 == 0)
			no_plaintext(&r.mi, fd);
	}
	no_plaintext(&r.mi, fd);
	alex_xts_file_free(f);
	rig_close(&r);
}

Test(xts_file, random_operations_match_plain)
{
	for (uint64_t seed = 1; seed <= 12; seed++)
		run(seed, seed % 3 == 0 ? 4096 : seed % 3 == 1 ? 8192 : 65536, 2500);
}

/* a truncation into a unit, then growth over it: the cut bytes read as
 * zeros (they are stored so, not only hidden by the size) */
Test(xts_file, cut_bytes_never_come_back)
{
	struct rig rg;
	uint8_t w[2000], r[2000];
	size_t got;
	int fd;

	rig_open(&rg, 4);
	struct alex_xts_file *f = rig_file(&rg, "/t/a", 4096, &fd);
	memset(w, 'q', sizeof w);
	cr_assert_eq(alex_xts_file_pwrite(f, w, sizeof w, 0, NULL), 0);
	cr_assert_eq(alex_xts_file_truncate(f, 700), 0);
	cr_assert_eq(alex_xts_file_pwrite(f, "z", 1, 1999, NULL), 0);
	cr_assert_eq(alex_xts_file_pread(f, r, sizeof r, 0, &got), 0);
	cr_assert_eq(got, 2000);
	for (int i = 700; i < 1999; i++)
		cr_assert_eq(r[i], 0, "byte %d came back", i);
	cr_assert_eq(r[699], 'q');
	cr_assert_eq(r[1999], 'z');
	/* grown by ftruncate instead */
	cr_assert_eq(alex_xts_file_truncate(f, 300), 0);
	cr_assert_eq(alex_xts_file_truncate(f, 2000), 0);
	cr_assert_eq(alex_xts_file_pread(f, r, sizeof r, 0, &got), 0);
	for (int i = 300; i < 2000; i++)
		cr_assert_eq(r[i], 0, "byte %d came back", i);
	alex_xts_file_free(f);
	rig_close(&rg);
}

/* Two files, one key, the same bytes at the same place: different stored
 * bytes (each file draws its own tweaks). */
Test(xts_file, two_files_store_differently)
{
	struct rig r;
	struct alex_xts_file *f[2];
	uint8_t w[4096], st[2][4096];
	size_t got;
	int fd[2];

	rig_open(&r, 5);
	memset(w, 'p', sizeof w);
	for (int i = 0; i < 2; i++) {
		f[i] = rig_file(&r, i ? "/t/b" : "/t/a", 4096, &fd[i]);
		cr_assert_eq(alex_xts_file_pwrite(f[i], w, sizeof w, 0, NULL), 0);
		cr_assert_eq(r.mi.ops->pread(r.mi.ctx, fd[i], st[i], sizeof st[i], 0, &got), 0);
		cr_assert_eq(got, sizeof st[i]);
	}
	for (int u = 0; u < 8; u++)
		cr_assert(memcmp(st[0] + u * 512, st[1] + u * 512, 512) != 0, "unit %d", u);
	for (int i = 0; i < 2; i++)
		alex_xts_file_free(f[i]);
	rig_close(&r);
}

/* A full disk: the write gives the bytes it did as a short count, the size
 * says the same, and once there is room again growing the file shows
 * zeros past them, never the failed piece. */
Test(xts_file, a_full_disk_gives_a_short_count)
{
	struct rig rg;
	static uint8_t w[1 << 20], r[1 << 20];
	size_t done = 7, got;
	int fd;

	rig_open(&rg, 6);
	struct alex_xts_file *f = rig_file(&rg, "/t/a", 8192, &fd);
	memset(w, 'w', sizeof w);
	cr_assert_eq(alex_xts_file_pwrite(f, w, 300, 0, NULL), 0);
	alex_mem_disk(rg.m, 200 * 1024);
	cr_assert_eq(alex_xts_file_pwrite(f, w, sizeof w, 300, &done), ENOSPC);
	cr_assert(done > 0 && done < sizeof w, "done %zu", done);
	cr_assert_eq(alex_xts_file_size(f), 300 + done);
	alex_mem_disk(rg.m, 0);
	cr_assert_eq(alex_xts_file_truncate(f, sizeof r), 0);
	cr_assert_eq(alex_xts_file_pread(f, r, sizeof r, 0, &got), 0);
	cr_assert_eq(got, sizeof r);
	for (size_t i = 0; i < sizeof r; i++)
		cr_assert_eq(r[i], i < 300 + done ? 'w' : 0, "byte %zu", i);
	alex_xts_file_free(f);
	rig_close(&rg);
}
