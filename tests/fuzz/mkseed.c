/* mkseed - writes seed inputs for a fuzz target into DIR.
 *   recover  real logs made by the engine (spills, compressed, raw and
 *            delta blocks, truncations), minus their header, behind a
 *            control byte
 *   decode   the records of such logs one by one, some compressed, some not,
 *            their header slots, and blocks for the codec round trip
 *   config   typical ALEX_* settings, good and bad
 *   trace    trace files (trace_format.h) of a few processes and threads,
 *            clean, damaged and truncated, behind fuzz_trace's control byte
 * Records come from the real encoder, so the seeds follow the format as it
 * is, not as a copy of it here would remember it.  `mkseed DIR` is recover. */
#include <stdio.h>
#include <string.h>

#include "alex.h"
#include "bytes.h"
#include "crc32c.h"
#include "format.h"
#include "io.h"
#include "trace_format.h"

#include <lz4.h>

static int put(const char *dir, const char *name, int n, const void *a, size_t alen,
	       const void *b, size_t blen)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s-%d", dir, name, n);
	FILE *f = fopen(path, "wb");
	if (!f)
		return 1;
	fwrite(a, 1, alen, f);
	fwrite(b, 1, blen, f);
	return fclose(f) != 0;
}

/* A log of a few transactions; which varies their shape, compress is the
 * engine's mode (so some records hold only raw blocks). */
static alex_mem *make_log(int which, enum alex_compress compress)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config cfg;
	alex_db *db;
	uint8_t b[ALEX_BLOCK];

	alex_config_default(&cfg);
	cfg.compress = compress;
	cfg.memory_bytes = 64u << 10;
	cfg.prealloc_bytes = 16u << 10;
	cfg.checkpoint_on_close = 0;
	if (which % 2) { /* a file with pages: blocks no record holds go as
			    deltas of the file's (format 9) */
		static uint8_t file[24 * ALEX_BLOCK];
		for (size_t i = 0; i < sizeof file; i++)
			file[i] = (uint8_t)('a' + (i / 97) % 26);
		memcpy(file, "SQLite format 3", 16);
		file[18] = file[19] = 1;
		memset(file + 72, 0, 20);
		memcpy(file + 92, file + 24, 4);
		alex_mem_set(m, "/s.db", file, sizeof file);
	}
	if (alex_open("/s.db", &cfg, &io, &db)) {
		alex_mem_free(m);
		return NULL;
	}
	for (int t = 0; t < 4 + which * 3; t++) {
		for (int k = 0; k < 1 + (t * 7 + which) % 12; k++) {
			memset(b, 'a' + t, sizeof b);
			if ((t + k) % 3 == 0)
				for (size_t i = 0; i < sizeof b; i++)
					b[i] = (uint8_t)(i * 2654435761u >> (t % 8));
			/* noise LZ4 cannot shrink: raw blocks beside compressed ones */
			uint32_t x = (uint32_t)(t * 131 + k + 1);
			if ((t + k) % 4 == 1)
				for (size_t i = 0; i < sizeof b; i++) {
					x ^= x << 13, x ^= x >> 17, x ^= x << 5;
					b[i] = (uint8_t)x;
				}
			alex_write(db, (enum alex_file)(k % 3 == 2 ? 1 : 0), b,
				   k % 4 ? sizeof b : 1000, (uint64_t)(k * 3 + t) * 4096 + (k % 4 ? 0 : 77));
		}
		if (t % 5 == 4)
			alex_truncate(db, ALEX_FILE_DB, 20000);
		/* some commits are one database's part of a transaction across
		 * several, whose super-journal is gone or was never there */
		if (t % 4 == 3) {
			alex_commit_cond(db, "/s.db-mj0123ABCD");
			alex_resolve(db);
		} else {
			alex_commit(db);
		}
	}
	/* a block changed a few bytes at a time: chains of DELTA blocks */
	memset(b, 'z', sizeof b);
	for (int t = 0; t < 6 + which * 3; t++) {
		b[(t * 373 + which) % sizeof b] = (uint8_t)t;
		alex_write(db, ALEX_FILE_DB, b, sizeof b, 4096);
		alex_commit(db);
	}
	alex_close(db);
	return m;
}

static int seed_recover(const char *dir, int which)
{
	alex_mem *m = make_log(which, ALEX_COMPRESS_AUTO);
	size_t len;

	if (!m)
		return 1;
	const uint8_t *log = alex_mem_get(m, "/s.db-alex", &len);
	uint8_t ctl = (uint8_t)(which % 8);
	/* the records, without the (random-salted) header: repair() re-chains */
	int err = put(dir, "seed", which, &ctl, 1, log + ALEX_LOG_DATA,
		      len > ALEX_LOG_DATA + 65536 ? 65536 : len - ALEX_LOG_DATA);
	/* the same records as a staging log over an engine with no log (bit
	 * 3), re-chained (bit 0) */
	ctl |= 9;
	if (!err)
		err = put(dir, "stage", which, &ctl, 1, log + ALEX_LOG_DATA,
			  len > ALEX_LOG_DATA + 65536 ? 65536 : len - ALEX_LOG_DATA);
	alex_mem_free(m);
	return err;
}

/* Every valid record of a log, behind fuzz_decode's control byte: half of
 * them as written, half to be repaired (their chain fields then change). */
static int seed_decode(const char *dir, int which)
{
	alex_mem *m = make_log(which, (enum alex_compress)(which % 3));
	struct alex_loghdr h, h2;
	struct alex_rec r;
	size_t len;
	int err = 0;

	if (!m)
		return 1;
	const uint8_t *log = alex_mem_get(m, "/s.db-alex", &len);
	int ok0 = alex_loghdr_decode(log, &h) == 0;
	int ok1 = alex_loghdr_decode(log + ALEX_BLOCK, &h2) == 0;
	if (!ok0 && !ok1) {
		alex_mem_free(m);
		return 1;
	}
	if (!ok0 || (ok1 && h2.epoch > h.epoch))
		h = h2;
	uint8_t ctl = 8;
	for (int s = 0; !err && s < 2; s++)
		err = put(dir, "slot", which * 2 + s, &ctl, 1, log + s * ALEX_BLOCK,
			  ALEX_HDR_SLOT_USED);
	uint64_t off = ALEX_LOG_DATA, lsn = h.start_lsn;
	uint32_t prev = h.salt;
	for (int k = 0; !err && k < 8; k++) {
		if (alex_rec_decode(log + off, len - off, h.epoch, lsn, prev, &r) != ALEX_STOP_NONE ||
		    alex_rec_check_body(log + off, &r) != ALEX_STOP_NONE)
			break;
		ctl = (uint8_t)(k % 2);
		if (r.rec_len <= 65536)
			err = put(dir, "decode", which * 8 + k, &ctl, 1, log + off, r.rec_len);
		off += r.rec_len;
		lsn++;
		prev = r.hdr_crc;
	}
	alex_mem_free(m);
	return err;
}

/* fuzz_decode's codec input: pct, mode, one block of data. */
static int seed_codec(const char *dir, int which)
{
	uint8_t in[3 + ALEX_BLOCK];

	in[0] = 0x80;
	in[1] = (uint8_t)(which * 13);   /* saving %, taken mod 91 */
	in[2] = (uint8_t)(which % 3);    /* auto, lz4, off */
	for (size_t i = 0; i < ALEX_BLOCK; i++)
		switch (which % 4) {
		case 0: in[3 + i] = 0; break;
		case 1: in[3 + i] = "CREATE TABLE t(a, b);"[i % 21]; break;
		case 2: in[3 + i] = (uint8_t)((i * 2654435761u) >> 13); break;
		default: in[3 + i] = i < 2048 ? (uint8_t)(i / 16) : (uint8_t)(i * i >> 7);
		}
	return put(dir, "codec", which, in, sizeof in, NULL, 0);
}

/* fuzz_config's input: NAME=value fields separated by NUL bytes ('\n' here
 * for readability); a NAME alone unsets it. */
static const char *const configs[] = {
	"",
	"ALEX_SYNC=normal\nALEX_SYNC_MS=250\nALEX_EXTENT_KB=4096",
	"ALEX_SYNC=full\nALEX_COMPRESS=lz4\nALEX_MEMORY_KB=65536",
	"ALEX_SYNC=off\nALEX_COMPRESS=off\nALEX_CHECKPOINT_ON_CLOSE=0",
	"ALEX_MODE=off\nALEX_LOG=debug",
	"ALEX_MODE=alex\nALEX_LOG=error\nALEX_STATS=/tmp/alex-%p.json",
	"ALEX_MATCH=*.db,*.sqlite,*.sqlite3",
	"ALEX_MATCH=app.db\nALEX_CHECKPOINT_MB=1\nALEX_PREALLOC_MB=1024",
	"ALEX_MATCH=a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p",
	"ALEX_MEMORY_KB=64\nALEX_CHECKPOINT_MB=65536\nALEX_EXTENT_KB=1048576",
	"ALEX_SYNC_MS=60000\nALEX_EXTENT_KB=4\nALEX_PREALLOC_MB=1",
	"ALEX_MEMORY_KB= 65536",   /* blanks first: left open by the docs */
	"ALEX_TEST_POWERCUT=0",
	"ALEX_TEST_POWERCUT=17:tear:42\nALEX_TEST_REPORT=/tmp/cuts",
	"ALEX_TEST_POWERCUT=3:keep\nALEX_TEST_FAULT=ckptwrite:1",
	"ALEX_TEST_FAULT=logsync:3:enospc",
	/* bad ones: every one must set the flag */
	"ALEX_SYNC=FULL",
	"ALEX_SYNC_MS=0",
	"ALEX_MEMORY_KB=16M",
	"ALEX_MEMORY_KB=-64",
	"ALEX_CHECKPOINT_MB=+1",
	"ALEX_PREALLOC_MB=99999999999999999999999",
	"ALEX_MATCH=a,,b",
	"ALEX_MATCH=dir/x.db",
	"ALEX_MATCH=x.db,",
	"ALEX_MATCH=",
	"ALEX_STATS=",
	"ALEX_KEY_FILE=/etc/key",
	"ALEX_DIRECT=1\nALEX_TRACE=",
	"ALEX_SYNC=normal\nALEX_SYNC",
	"ALEX_TEST_POWERCUT=5:melt",
	"ALEX_TEST_FAULT=grow:0\nALEX_TEST_REPORT=",
	"ALEX_TEST_FAULT=disk:1:eio",
};

static int seed_config(const char *dir, int which)
{
	char buf[256];
	size_t n = strlen(configs[which]);

	if (n > sizeof buf)
		return 1;
	memcpy(buf, configs[which], n);
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = 0;
	return put(dir, "config", which, buf, n, NULL, 0);
}

/* ---- trace files --------------------------------------------------------- */

/* A trace file under construction: chunks as preload/trace.c writes them.
 * Unlike the log seeds these are made here, after trace_format.h: the
 * writer lives in libalex.so, not in the core library. */
struct tfile {
	uint8_t buf[64 * 1024];
	size_t len, chunk; /* chunk: where the open chunk's header is */
	uint32_t nev;
	int ver;           /* the format version of the chunks begun now */
	/* a version 2 chunk's packing: previous start and fd, name slots */
	uint64_t last_start;
	int32_t last_fd;
	unsigned nnames;
	const char *names[ALEX_TRACE_NAME_REFS];
};

static void chunk_begin(struct tfile *t, uint32_t pid, uint32_t tid, uint32_t dropped)
{
	uint8_t *h = t->buf + t->len;

	memset(h, 0, ALEX_TRACE_HDR);
	alex_put32(h, ALEX_TRACE_FILE_MAGIC);
	h[4] = (uint8_t)t->ver;
	h[6] = ALEX_TRACE_HDR; /* h[7]: flags, set by chunk_end */
	alex_put32(h + 8, pid);
	alex_put32(h + 12, tid);
	alex_put32(h + 24, dropped);
	t->chunk = t->len;
	t->len += ALEX_TRACE_HDR;
	t->nev = 0;
	t->last_start = 0;
	t->last_fd = -1;
	t->nnames = 0;
}

/* Closes the open chunk; with lz4, compressed when that is smaller, as
 * version 1 writers did (a reader takes it in either version). */
static void chunk_end(struct tfile *t, int lz4)
{
	static char z[LZ4_COMPRESSBOUND(sizeof t->buf)];
	uint8_t *h = t->buf + t->chunk;
	uint32_t stored = (uint32_t)(t->len - t->chunk - ALEX_TRACE_HDR);
	int zlen = lz4 ? LZ4_compress_default((const char *)h + ALEX_TRACE_HDR, z, (int)stored,
					      (int)sizeof z)
		       : 0;

	if (zlen > 0 && (uint32_t)zlen < stored) {
		memcpy(h + ALEX_TRACE_HDR, z, (size_t)zlen);
		stored = (uint32_t)zlen;
		h[7] = ALEX_TRACE_LZ4;
		t->len = t->chunk + ALEX_TRACE_HDR + stored;
	}
	alex_put32(h + 16, stored);
	alex_put32(h + 20, t->nev);
	alex_put32(h + 28, 0);
	alex_put32(h + 28, alex_crc32c(0, h, ALEX_TRACE_HDR + stored));
}

static uint8_t *leb(uint8_t *p, uint64_t v)
{
	do {
		*p = (uint8_t)(v & 0x7f);
		v >>= 7;
		*p++ |= v ? 0x80 : 0;
	} while (v);
	return p;
}

static uint64_t zig(int64_t v)
{
	return v < 0 ? ((uint64_t)~v << 1) | 1 : (uint64_t)v << 1;
}

/* The event packed as version 2 (trace_format.h).  Its start goes back
 * now and then, as when an engine call inside the program's call ends
 * first. */
static void event_v2(struct tfile *t, uint64_t clock, enum alex_tkind kind,
		     enum alex_trole role, int fd, uint64_t off, uint64_t len, int64_t res,
		     uint32_t page, uint8_t flags, uint8_t lock, const char *name)
{
	uint8_t *e = t->buf + t->len, *p = e + 3, w = 0;
	int ref = -1;

	if (name) {
		len = strlen(name);
		for (unsigned i = 0; i < t->nnames && i < ALEX_TRACE_NAME_REFS; i++)
			if (strcmp(t->names[i], name) == 0)
				ref = (int)i;
	}
	if (t->nev % 5 == 4)
		clock = t->last_start - 700;
	e[0] = (uint8_t)kind;
	e[1] = (uint8_t)(role << 4 | flags | (name ? ALEX_TF_NAME : 0));
	p = leb(p, zig((int64_t)(clock - t->last_start)));
	t->last_start = clock;
	p = leb(p, 800 + t->nev * 3);
	if (fd == t->last_fd)
		w |= ALEX_TP_SAMEFD;
	else
		p = leb(p, zig(fd));
	t->last_fd = fd;
	if (off)
		w |= ALEX_TP_OFF, p = leb(p, off);
	if (ref >= 0)
		w |= ALEX_TP_REF, *p++ = (uint8_t)ref;
	else if (len)
		w |= ALEX_TP_LEN, p = leb(p, len);
	if (len && res == (int64_t)len)
		w |= ALEX_TP_RESLEN;
	else if (res)
		w |= ALEX_TP_RES, p = leb(p, zig(res));
	if (page)
		w |= ALEX_TP_PAGE, p = leb(p, page);
	if (lock)
		w |= ALEX_TP_LOCK, *p++ = lock;
	if (name && ref < 0) {
		t->names[t->nnames++ % ALEX_TRACE_NAME_REFS] = name;
		memcpy(p, name, len);
		p += len;
	}
	e[2] = w;
	t->len = (size_t)(p - t->buf);
	t->nev++;
}

static void event(struct tfile *t, enum alex_tkind kind, enum alex_trole role, int fd,
		  uint64_t off, uint64_t len, int64_t res, uint32_t page, uint8_t flags,
		  uint8_t lock, const char *name)
{
	uint8_t *e = t->buf + t->len;
	size_t nlen = name ? strlen(name) : 0, need = ALEX_TRACE_EVENT + ((nlen + 7) & ~(size_t)7);
	static uint64_t clock = 1000000;

	clock += 1234 + (uint64_t)t->nev * 17;
	if (t->ver == 2) {
		event_v2(t, clock, kind, role, fd, off, len, res, page, flags, lock, name);
		return;
	}
	memset(e, 0, need);
	alex_put64(e, clock);
	alex_put64(e + 8, off);
	alex_put64(e + 16, name ? nlen : len);
	alex_put64(e + 24, (uint64_t)res);
	alex_put32(e + 32, 800 + t->nev * 3);
	alex_put32(e + 36, (uint32_t)fd);
	alex_put32(e + 40, page);
	e[44] = (uint8_t)kind;
	e[45] = (uint8_t)role;
	e[46] = (uint8_t)(flags | (name ? ALEX_TF_NAME : 0));
	e[47] = lock;
	if (name)
		memcpy(e + ALEX_TRACE_EVENT, name, nlen);
	t->len += need;
	t->nev++;
}

#define LK(type, name) ((uint8_t)((ALEX_TLT_##type << 6) | ALEX_TL_##name))

/* One process's start and a rollback-journal transaction. */
static void trace_journal(struct tfile *t, uint32_t pid, uint32_t tid, int lz4)
{
	chunk_begin(t, pid, tid, 0);
	event(t, ALEX_TK_PROC, ALEX_TROLE_NONE, -1, 1700000000123456789ull, 0, 1, 0, 0, 1,
	      "/usr/bin/sqlite3");
	event(t, ALEX_TK_OPENAT, ALEX_TROLE_DB, -1, 0, 0, 3, 0, 0, 0, "/tmp/t/app.db");
	event(t, ALEX_TK_FSTAT, ALEX_TROLE_DB, 3, 0, 0, 0, 0, 0, 0, NULL);
	event(t, ALEX_TK_PREAD64, ALEX_TROLE_DB, 3, 0, 100, 100, 1, 0, 0, NULL);
	event(t, ALEX_TK_FCNTL, ALEX_TROLE_DB, 3, 1073741824, 1, 0, 0, 0, LK(RD, PENDING), NULL);
	event(t, ALEX_TK_FCNTL, ALEX_TROLE_DB, 3, 1073741826, 510, 0, 0, 0, LK(RD, SHARED), NULL);
	event(t, ALEX_TK_FCNTL, ALEX_TROLE_DB, 3, 1073741824, 1, 0, 0, 0, LK(UN, PENDING), NULL);
	chunk_end(t, lz4);
	chunk_begin(t, pid, tid, 2);
	event(t, ALEX_TK_FCNTL, ALEX_TROLE_DB, 3, 1073741825, 1, 0, 0, 0, LK(WR, RESERVED), NULL);
	event(t, ALEX_TK_ACCESS, ALEX_TROLE_JOURNAL, -1, 0, 0, -2, 0, 0, 0,
	      "/tmp/t/app.db-journal");
	event(t, ALEX_TK_OPENAT, ALEX_TROLE_JOURNAL, -1, 0, 0, 4, 0, 0, 0,
	      "/tmp/t/app.db-journal");
	event(t, ALEX_TK_PWRITE64, ALEX_TROLE_JOURNAL, 4, 0, 512, 512, 0, 0, 0, NULL);
	event(t, ALEX_TK_PWRITE64, ALEX_TROLE_JOURNAL, 4, 512, 4, 4, 2, 0, 0, NULL);
	event(t, ALEX_TK_PWRITE64, ALEX_TROLE_JOURNAL, 4, 516, 4096, 4096, 0, 0, 0, NULL);
	event(t, ALEX_TK_FSYNC, ALEX_TROLE_JOURNAL, 4, 0, 0, 0, 0, 0, 0, NULL);
	event(t, ALEX_TK_FCNTL, ALEX_TROLE_DB, 3, 1073741826, 510, 0, 0, ALEX_TF_WAIT,
	      LK(WR, EXCLUSIVE), NULL);
	event(t, ALEX_TK_PWRITE64, ALEX_TROLE_DB, 3, 4096, 4096, 4096, 2, 0, 0, NULL);
	event(t, ALEX_TK_FDATASYNC, ALEX_TROLE_DB, 3, 0, 0, -5, 0, 0, 0, NULL);
	event(t, ALEX_TK_OPENAT, ALEX_TROLE_DIR, -1, 0, 0, 5, 0, 0, 0, "/tmp/t");
	event(t, ALEX_TK_FSYNC, ALEX_TROLE_DIR, 5, 0, 0, 0, 0, 0, 0, NULL);
	event(t, ALEX_TK_CLOSE, ALEX_TROLE_DIR, 5, 0, 0, 0, 0, 0, 0, NULL);
	event(t, ALEX_TK_UNLINK, ALEX_TROLE_JOURNAL, -1, 0, 0, 0, 0, 0, 0,
	      "/tmp/t/app.db-journal");
	event(t, ALEX_TK_FCNTL, ALEX_TROLE_DB, 3, 0, 0, 0, 0, 0, LK(UN, DB_ALL), NULL);
	chunk_end(t, lz4);
}

/* A WAL database under ALEX: two threads, the engine's own calls, served
 * reads, every -shm lock, a rename to a super-journal, names of every
 * length modulo 8 (and one of 4096 bytes). */
static void trace_wal(struct tfile *t, uint32_t pid)
{
	static char longname[4097];

	chunk_begin(t, pid, pid, 0);
	event(t, ALEX_TK_PROC, ALEX_TROLE_NONE, -1, 1700000000987654321ull, 0, 4242, 0, 0, 0,
	      "python3");
	event(t, ALEX_TK_OPENAT, ALEX_TROLE_WAL, -1, 0, 0, 7, 0, 0, 0, "w.db-wal");
	event(t, ALEX_TK_OPENAT, ALEX_TROLE_SHM, -1, 0, 0, 8, 0, 0, 0, "w.db-shm");
	event(t, ALEX_TK_MMAP, ALEX_TROLE_SHM, 8, 0, 32768, 0, 0, 0, 0, NULL);
	for (int k = 0; k <= ALEX_TL_GETLK; k++)
		event(t, ALEX_TK_FCNTL, ALEX_TROLE_SHM, 8, 120 + (uint64_t)k % 9, 1, k % 5 ? 0 : -11,
		      0, (uint8_t)(k % 3 ? 0 : ALEX_TF_WAIT), (uint8_t)((k % 3) << 6 | k), NULL);
	event(t, ALEX_TK_PWRITEV, ALEX_TROLE_WAL, 7, 32, 24, 24, 5, ALEX_TF_SERVED, 0, NULL);
	event(t, ALEX_TK_WRITEV, ALEX_TROLE_WAL, 7, 56, 4096, 4096, 5, ALEX_TF_SERVED, 0, NULL);
	event(t, ALEX_TK_PWRITE64, ALEX_TROLE_LOG, 9, 8192, 8192, 8192, 0, ALEX_TF_ALEX, 0, NULL);
	event(t, ALEX_TK_FALLOCATE, ALEX_TROLE_LOG, 9, 0, 1 << 20, 0, 0, ALEX_TF_ALEX, 0, NULL);
	event(t, ALEX_TK_FDATASYNC, ALEX_TROLE_LOG, 9, 0, 0, 0, 0, ALEX_TF_ALEX, 0, NULL);
	chunk_end(t, 1);
	chunk_begin(t, pid, pid + 1, 0);
	const char *n8[] = { "a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh",
			     "" };
	for (int k = 0; k < 9; k++)
		event(t, k % 2 ? ALEX_TK_STAT : ALEX_TK_ACCESS, ALEX_TROLE_OTHER, -1, 0, 0, -2, 0, 0,
		      0, n8[k]);
	event(t, ALEX_TK_READ, ALEX_TROLE_DB, 3, 0, 4096, 4096, 1, ALEX_TF_SERVED, 0, NULL);
	event(t, ALEX_TK_READV, ALEX_TROLE_DB, 3, 4096, 8192, 8192, 0, 0, 0, NULL);
	event(t, ALEX_TK_PREADV, ALEX_TROLE_WAL, 7, 32, 24, 24, 5, 0, 0, NULL);
	event(t, ALEX_TK_LSEEK, ALEX_TROLE_DB, 3, 0, 0, 0, 0, 0, 0, NULL);
	event(t, ALEX_TK_FTRUNCATE, ALEX_TROLE_WAL, 7, 0, 0, 0, 0, 0, 0, NULL);
	event(t, ALEX_TK_FSTATFS, ALEX_TROLE_DB, 3, 0, 0, 0, 0, 0, 0, NULL);
	event(t, ALEX_TK_FCHMOD, ALEX_TROLE_WAL, 7, 0, 0, 0, 0, 0, 0, NULL);
	event(t, ALEX_TK_FCHOWN, ALEX_TROLE_WAL, 7, 0, 0, -1, 0, 0, 0, NULL);
	event(t, ALEX_TK_RENAME, ALEX_TROLE_SUPER, -1, 0, 0, 0, 0, 0, 0, "w.db-mj0123ABCD");
	event(t, ALEX_TK_WRITE, ALEX_TROLE_OTHER, 10, 0, 17, 17, 0, 0, 0, NULL);
	event(t, ALEX_TK_UNLINKAT, ALEX_TROLE_WAL, -1, 0, 0, 0, 0, 0, 0, "w.db-wal");
	event(t, ALEX_TK_FACCESSAT, ALEX_TROLE_JOURNAL, -1, 0, 0, -2, 0, 0, 0, "w.db-journal");
	chunk_end(t, 0);
	/* an empty chunk (only drops), then a long name */
	chunk_begin(t, pid, pid + 2, 7);
	chunk_end(t, 0);
	memset(longname, 'x', 4096);
	chunk_begin(t, pid, pid + 2, 0);
	event(t, ALEX_TK_OPENAT, ALEX_TROLE_OTHER, -1, 0, 0, -36, 0, 0, 0, longname);
	chunk_end(t, 1);
}

static int seed_trace(const char *dir)
{
	static struct tfile t;
	uint8_t ctl;
	int err = 0;

	/* 0-3: one process; 4-7: three processes and their threads, appended
	 * in turn, some chunks LZ4; each as written, repaired and recounted */
	t.len = 0;
	t.ver = ALEX_TRACE_VERSION;
	trace_journal(&t, 1000, 1000, 0);
	for (int c = 0; !err && c < 4; c++) {
		ctl = (uint8_t)c;
		err = put(dir, "trace", c, &ctl, 1, t.buf, t.len);
	}
	size_t one = t.len;
	trace_wal(&t, 2000);
	trace_journal(&t, 3000, 3001, 1);
	for (int c = 0; !err && c < 4; c++) {
		ctl = (uint8_t)c;
		err = put(dir, "trace", 4 + c, &ctl, 1, t.buf, t.len);
	}
	/* damage: a flipped byte in the second process's first (compressed)
	 * chunk, as is and with its CRC repaired; a lost header byte; a torn
	 * last chunk; an empty file */
	ctl = 0;
	t.buf[one + 60] ^= 0x10;
	err = err || put(dir, "trace", 8, &ctl, 1, t.buf, t.len);
	ctl = 1;
	err = err || put(dir, "trace", 9, &ctl, 1, t.buf, t.len);
	t.buf[one + 60] ^= 0x10;
	ctl = 0;
	err = err || put(dir, "trace", 10, &ctl, 1, t.buf, one + 2) ||
	      put(dir, "trace", 11, &ctl, 1, t.buf + one + 3, t.len - one - 3) ||
	      put(dir, "trace", 12, &ctl, 1, t.buf, t.len - 100) ||
	      put(dir, "trace", 13, &ctl, 1, NULL, 0);
	/* 14-15: version 1 (48-byte events), as earlier writers made it,
	 * then a version 2 process after it */
	t.len = 0;
	t.ver = 1;
	trace_journal(&t, 1000, 1000, 0);
	trace_wal(&t, 2000);
	ctl = 0;
	err = err || put(dir, "trace", 14, &ctl, 1, t.buf, t.len);
	t.ver = 2;
	trace_journal(&t, 3000, 3001, 1);
	err = err || put(dir, "trace", 15, &ctl, 1, t.buf, t.len);
	return err;
}

/* fuzz_xts: a marked file of a page and a half, and an empty one */
static int seed_xts(const char *dir)
{
	uint8_t b[1 + 6144];
	uint64_t s = 99;

	b[0] = 1;
	for (size_t i = 1; i < sizeof b; i++)
		b[i] = (uint8_t)((s = s * 6364136223846793005ull + 1442695040888963407ull) >> 56);
	return put(dir, "xts", 1, b, sizeof b, "", 0) || put(dir, "xts", 0, b, 1, "", 0);
}

int main(int argc, char **argv)
{
	const char *kind = argc == 3 ? argv[1] : "recover", *dir = argv[argc - 1];
	int err = 0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: mkseed [recover|decode|config|trace|xts] DIR\n");
		return 2;
	}
	if (strcmp(kind, "recover") == 0) {
		for (int i = 0; !err && i < 8; i++)
			err = seed_recover(dir, i);
	} else if (strcmp(kind, "decode") == 0) {
		for (int i = 0; !err && i < 8; i++)
			err = seed_decode(dir, i) || seed_codec(dir, i);
	} else if (strcmp(kind, "config") == 0) {
		for (size_t i = 0; !err && i < sizeof configs / sizeof *configs; i++)
			err = seed_config(dir, (int)i);
	} else if (strcmp(kind, "trace") == 0) {
		err = seed_trace(dir);
	} else if (strcmp(kind, "xts") == 0) {
		err = seed_xts(dir);
	} else {
		fprintf(stderr, "mkseed: unknown kind %s\n", kind);
		return 2;
	}
	if (err)
		fprintf(stderr, "mkseed: could not write the %s seeds in %s\n", kind, dir);
	return err;
}
