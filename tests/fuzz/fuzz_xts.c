/*
 * fuzz_xts - libFuzzer target for the encrypted database file's reader
 * (core/xts_io.c): whatever bytes a file holds, reads through the layer
 * return either an error or exactly what the file can hold, and a write of
 * whole pages over it reads back as written.
 *
 * Input: one control byte, then the file's stored bytes.  Bit 0 puts a
 * marker with the right key's check value over bytes 0..15 (without it,
 * mutations hardly ever reach past the marker); bit 1 a marker of another
 * key; bits 4..7 choose where the page written at the end goes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "xts_io.h"

#define check(c) do { if (!(c)) abort(); } while (0)
#define F "/f/x.db"

static struct alex_xts *x;
static uint8_t kcv[ALEX_KCV_BYTES];

static void setup(void)
{
	uint8_t raw[ALEX_KEY_BYTES];
	struct alex_key *k;
	char why[128];

	for (unsigned i = 0; i < sizeof raw; i++)
		raw[i] = (uint8_t)(i * 37 + 5);
	check(alex_key_from(raw, &k, why, sizeof why) == 0);
	check(alex_xts_new(k, &x) == 0);
	check(alex_xts_kcv(x, kcv) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[70000], page[4096], back[4096];
	struct alex_xts_io *c;
	struct alex_io mi, io;
	size_t got;
	int fd;

	if (!x)
		setup();
	if (!size || size > 65536 + 1)
		return 0;
	uint8_t ctl = data[0];
	size_t n = size - 1;
	memcpy(buf, data + 1, n);
	if ((ctl & 3) && n >= ALEX_XTS_MARKER) {
		memcpy(buf, "ALXXTS", 6);
		buf[6] = "SPZ?"[ctl >> 2 & 3];
		buf[7] = '1';
		memcpy(buf + 8, kcv, ALEX_KCV_BYTES);
		if (ctl & 2)
			buf[8] ^= 1;
	}
	alex_mem *m = alex_mem_new();
	check(alex_mem_set(m, F, buf, n) == 0);
	mi = alex_mem_io(m);
	check(alex_xts_io_new(&mi, x, F, 4096, &c) == 0);
	io = alex_xts_io(c);
	check(io.ops->open(io.ctx, F, 0, &fd) == 0);

	/* whole, then in odd pieces: never more than the file holds (its own
	 * size, or the smaller one a whole-unit file's marker gives) */
	uint64_t fsize;
	check(io.ops->size(io.ctx, fd, &fsize) == 0);
	check(fsize == n || (n == ALEX_XTS_UNIT && fsize < n));
	int err = io.ops->pread(io.ctx, fd, buf, sizeof buf, 0, &got);
	check(err == 0 || err == EIO);
	check(err || got == fsize);
	for (size_t off = 0; off < fsize; off += 777) {
		err = io.ops->pread(io.ctx, fd, buf, 1000, off, &got);
		check(err == 0 || err == EIO);
		check(err || got == (fsize - off < 1000 ? fsize - off : 1000));
	}
	/* another key's marker reads nothing */
	if ((ctl & 3) == 2 && n >= ALEX_XTS_MARKER)
		check(io.ops->pread(io.ctx, fd, buf, 100, 0, &got) == EIO);

	/* a page written at a whole-page offset reads back (the file's other
	 * units may be garbage: they are not touched) */
	uint64_t at = 4096u * (1 + (ctl >> 4));
	for (unsigned i = 0; i < sizeof page; i++)
		page[i] = (uint8_t)(i ^ ctl);
	if (io.ops->pwrite(io.ctx, fd, page, sizeof page, at) == 0) {
		check(io.ops->pread(io.ctx, fd, back, sizeof back, at, &got) == 0);
		check(got == sizeof back && memcmp(page, back, sizeof page) == 0);
	}
	alex_xts_io_free(c);
	alex_mem_free(m);
	return 0;
}
