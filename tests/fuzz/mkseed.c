/* mkseed - writes seed inputs for fuzz_recover: real logs made by the
 * engine (spills, compressed and raw blocks, truncations), minus their
 * header, behind a control byte. */
#include <stdio.h>
#include <string.h>

#include "alex.h"
#include "format.h"
#include "io.h"

static int seed(const char *dir, int which)
{
	alex_mem *m = alex_mem_new();
	struct alex_io io = alex_mem_io(m);
	struct alex_config cfg;
	alex_db *db;
	uint8_t b[ALEX_BLOCK];
	char path[4096];

	alex_config_default(&cfg);
	cfg.memory_bytes = 64u << 10;
	cfg.prealloc_bytes = 16u << 10;
	cfg.checkpoint_on_close = 0;
	if (alex_open("/s.db", &cfg, &io, &db))
		return 1;
	for (int t = 0; t < 4 + which * 3; t++) {
		for (int k = 0; k < 1 + (t * 7 + which) % 12; k++) {
			memset(b, 'a' + t, sizeof b);
			if ((t + k) % 3 == 0)
				for (size_t i = 0; i < sizeof b; i++)
					b[i] = (uint8_t)(i * 2654435761u >> (t % 8));
			alex_write(db, (enum alex_file)(k % 3 == 2 ? 1 : 0), b,
				   k % 4 ? sizeof b : 1000, (uint64_t)(k * 3 + t) * 4096 + (k % 4 ? 0 : 77));
		}
		if (t % 5 == 4)
			alex_truncate(db, ALEX_FILE_DB, 20000);
		alex_commit(db);
	}
	alex_close(db);
	size_t len;
	const uint8_t *log = alex_mem_get(m, "/s.db-alex", &len);
	snprintf(path, sizeof path, "%s/seed-%d", dir, which);
	FILE *f = fopen(path, "wb");
	if (!f)
		return 1;
	uint8_t ctl = (uint8_t)(which % 8);
	fwrite(&ctl, 1, 1, f);
	/* the records, without the (random-salted) header: repair() re-chains */
	fwrite(log + ALEX_LOG_DATA, 1, len > ALEX_LOG_DATA + 65536 ? 65536 : len - ALEX_LOG_DATA, f);
	fclose(f);
	alex_mem_free(m);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseed DIR\n");
		return 2;
	}
	for (int i = 0; i < 8; i++)
		if (seed(argv[1], i)) {
			fprintf(stderr, "mkseed: could not make seed %d\n", i);
			return 1;
		}
	return 0;
}
