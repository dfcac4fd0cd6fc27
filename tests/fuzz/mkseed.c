/* mkseed - writes seed inputs for a fuzz target into DIR.
 *   recover  real logs made by the engine (spills, compressed and raw
 *            blocks, truncations), minus their header, behind a control byte
 *   decode   the records of such logs one by one, some compressed, some not,
 *            their header slots, and blocks for the codec round trip
 *   config   typical ALEX_* settings, good and bad
 * Records come from the real encoder, so the seeds follow the format as it
 * is, not as a copy of it here would remember it.  `mkseed DIR` is recover. */
#include <stdio.h>
#include <string.h>

#include "alex.h"
#include "format.h"
#include "io.h"

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

int main(int argc, char **argv)
{
	const char *kind = argc == 3 ? argv[1] : "recover", *dir = argv[argc - 1];
	int err = 0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: mkseed [recover|decode|config] DIR\n");
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
	} else {
		fprintf(stderr, "mkseed: unknown kind %s\n", kind);
		return 2;
	}
	if (err)
		fprintf(stderr, "mkseed: could not write the %s seeds in %s\n", kind, dir);
	return err;
}
