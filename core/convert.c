/*
 * convert.c - a database file rewritten whole under another key, or in
 * clear (convert.h).
 *
 * Why a new file and a rename, not the units rewritten in place: a power
 * cut in the middle of an in-place pass would leave a file part in one
 * form and part in the other, with nothing in it to say where the border
 * lies.  The new file is complete and durable before its name replaces
 * the old one, and a rename is atomic: whatever the disk keeps of the
 * unsynced writes, path names either the old inode, untouched (only read),
 * or the new one, synced before the rename.  The directory is synced last
 * so that the rename itself is not lost with a journal's last transaction.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "format.h"
#include "xts_io.h"


/* One side of the copy: io itself for a file in clear, else the
 * encrypted file's layer over it for path. */
static int side_new(const struct alex_io *io, struct alex_xts *x, const char *path,
		    struct alex_xts_io **layer, struct alex_io *out)
{
	int err;

	*layer = NULL;
	if (!x) {
		*out = *io;
		return 0;
	}
	if ((err = alex_xts_io_new(io, x, path, ALEX_CONVERT_CHUNK, layer)))
		return err;
	*out = alex_xts_io(*layer);
	return 0;
}

/* Is the file's first stored bytes (got of them) what from says it is? */
static int check_stored(const uint8_t *head, size_t got, struct alex_xts *from, char *why,
			size_t whycap)
{
	uint8_t kcv[ALEX_KCV_BYTES] = { 0 };
	int err;

	if (from) {
		if ((err = alex_xts_kcv(from, kcv))) {
			snprintf(why, whycap, "cannot compute the key's check value: %s",
				 strerror(err));
			return err;
		}
		switch (alex_xts_probe(head, got, kcv)) {
		case ALEX_XTS_OURS:
			return 0;
		case ALEX_XTS_OTHER:
			snprintf(why, whycap, "encrypted with another key");
			return EINVAL;
		default:
			snprintf(why, whycap, got >= 16 && memcmp(head, ALEX_SQLITE_MAGIC, 16) == 0 ?
					      "not encrypted (an SQLite database in clear)" :
					      "not encrypted by ALEX, nor an SQLite database");
			return EINVAL;
		}
	}
	/* any key's marker, whatever its check value */
	if (alex_xts_probe(head, got, kcv) != ALEX_XTS_NOT) {
		snprintf(why, whycap, "encrypted already");
		return EINVAL;
	}
	return 0;
}

/* Is the plaintext's beginning (n bytes) a database that can be copied? */
static int check_plain(const uint8_t *p, size_t n, char *why, size_t whycap)
{
	if (n >= 16 && memcmp(p, ALEX_SQLITE_MAGIC, 16) == 0)
		return 0;
	if (n >= 16 && memcmp(p, ALEX_PLACEHOLDER, 16) == 0)
		snprintf(why, whycap, "ALEX's log holds pages not yet in it (alex checkpoint first)");
	else
		snprintf(why, whycap, "not an SQLite database");
	return EINVAL;
}

struct conv {
	const struct alex_io *io;
	const char *path;
	char *tmp;
	struct alex_io rd, wr;    /* the source's side, the new file's */
	int raw, src, dst;        /* descriptors, -1 when not open */
	uint8_t *buf;             /* ALEX_CONVERT_CHUNK bytes */
};

/* Copies the whole file (size bytes as the source's side reads it) to
 * the new one and makes it durable with the original's permissions. */
static int copy(struct conv *c, uint64_t size, const struct alex_finfo *fi, char *why,
		size_t whycap)
{
	uint64_t off = 0;
	size_t got;
	int err;

	for (;;) {
		if ((err = c->rd.ops->pread(c->rd.ctx, c->src, c->buf, ALEX_CONVERT_CHUNK, off,
					    &got))) {
			snprintf(why, whycap, "cannot read it at byte %llu: %s",
				 (unsigned long long)off, strerror(err));
			return err;
		}
		if (!got)
			break;
		if (off == 0 && (err = check_plain(c->buf, got, why, whycap)))
			return err;
		if ((err = c->wr.ops->pwrite(c->wr.ctx, c->dst, c->buf, got, off))) {
			snprintf(why, whycap, "cannot write %s: %s", c->tmp, strerror(err));
			return err;
		}
		off += got;
	}
	if (off != size) {
		snprintf(why, whycap, "changed while being converted (%llu bytes, then %llu)",
			 (unsigned long long)size, (unsigned long long)off);
		return EAGAIN;
	}
	/* the mode before the sync, so that a file system whose fdatasync
	 * commits its metadata journal carries it too */
	if ((err = c->wr.ops->own(c->wr.ctx, c->dst, fi))) {
		snprintf(why, whycap, "cannot give %s the database's permissions: %s", c->tmp,
			 strerror(err));
		return err;
	}
	if ((err = c->wr.ops->fdatasync(c->wr.ctx, c->dst))) {
		snprintf(why, whycap, "cannot sync %s: %s", c->tmp, strerror(err));
		return err;
	}
	return 0;
}

/* The checks, the copy and the rename; c's descriptors are closed by the
 * caller, after. */
static int convert(struct conv *c, struct alex_xts *from, char *why, size_t whycap)
{
	const struct alex_io *io = c->io;
	struct alex_finfo fi;
	uint8_t head[ALEX_XTS_MARKER];
	uint64_t avail, size;
	size_t got = 0;
	int err, yes;

	if ((err = io->ops->open(io->ctx, c->path, 0, &c->raw))) {
		c->raw = -1;
		snprintf(why, whycap, "cannot open it: %s", strerror(err));
		return err;
	}
	if ((err = io->ops->stat(io->ctx, c->raw, &fi)) ||
	    (err = io->ops->pread(io->ctx, c->raw, head, sizeof head, 0, &got))) {
		snprintf(why, whycap, "cannot read it: %s", strerror(err));
		return err;
	}
	if (fi.nlink > 1) {
		snprintf(why, whycap, "it has %u names (hard links), and the others would keep "
				      "the old bytes", fi.nlink);
		return EMLINK;
	}
	if (fi.size && (err = check_stored(head, got, from, why, whycap)))
		return err;
	if (io->ops->space(io->ctx, c->raw, &avail) == 0 && avail < fi.size) {
		snprintf(why, whycap, "a copy needs %llu bytes beside it, and the file system has "
				      "%llu", (unsigned long long)fi.size, (unsigned long long)avail);
		return ENOSPC;
	}
	/* through the source's side, which decrypts (descriptors of its own:
	 * the layer knows the database by the descriptors it opened) */
	if ((err = c->rd.ops->open(c->rd.ctx, c->path, 0, &c->src))) {
		c->src = -1;
		snprintf(why, whycap, "cannot open it: %s", strerror(err));
		return err;
	}
	/* its size as the layer reads it, which need not be the size stored */
	if ((err = c->rd.ops->size(c->rd.ctx, c->src, &size))) {
		snprintf(why, whycap, "cannot read it: %s", strerror(err));
		return err;
	}
	/* a stale new file of a conversion cut short: never written into,
	 * its bytes and mode are not this one's */
	if ((err = io->ops->exists(io->ctx, c->tmp, &yes)) ||
	    (yes && (err = io->ops->unlink(io->ctx, c->tmp)))) {
		snprintf(why, whycap, "cannot remove the stale %s: %s", c->tmp, strerror(err));
		return err;
	}
	if ((err = c->wr.ops->open(c->wr.ctx, c->tmp, ALEX_O_CREAT | ALEX_O_TRUNC, &c->dst))) {
		c->dst = -1;
		snprintf(why, whycap, "cannot create %s: %s", c->tmp, strerror(err));
		return err;
	}
	if ((err = copy(c, size, &fi, why, whycap)))
		return err;
	if ((err = io->ops->rename(io->ctx, c->tmp, c->path, 0))) {
		snprintf(why, whycap, "cannot rename %s over it: %s", c->tmp, strerror(err));
		return err;
	}
	if ((err = io->ops->sync_dir(io->ctx, c->path))) {
		/* renamed, but a power cut may still undo it: say so, and fail */
		snprintf(why, whycap, "converted, but its directory cannot be synced: %s",
			 strerror(err));
		return err;
	}
	return 0;
}

int alex_convert(const struct alex_io *io, const char *path, struct alex_xts *from,
		 struct alex_xts *to, char *why, size_t whycap)
{
	struct conv c = { .io = io, .path = path, .raw = -1, .src = -1, .dst = -1 };
	struct alex_xts_io *rl = NULL, *wl = NULL;
	size_t n = strlen(path) + sizeof ALEX_CONVERT_SUFFIX;
	int err = ENOMEM;

	snprintf(why, whycap, "out of memory");
	if (!(c.tmp = malloc(n)) || !(c.buf = malloc(ALEX_CONVERT_CHUNK)))
		goto out;
	snprintf(c.tmp, n, "%s%s", path, ALEX_CONVERT_SUFFIX);
	if ((err = side_new(io, from, path, &rl, &c.rd)) ||
	    (err = side_new(io, to, c.tmp, &wl, &c.wr))) {
		snprintf(why, whycap, "cannot set up the cipher: %s", strerror(err));
		goto out;
	}
	err = convert(&c, from, why, whycap);
	if (err && c.dst >= 0) {
		int yes = 0;
		/* a copy cut short goes (after a rename, the name is gone) */
		if (io->ops->exists(io->ctx, c.tmp, &yes) == 0 && yes)
			io->ops->unlink(io->ctx, c.tmp);
	}
	/* only now: closing a descriptor of path drops the process's locks */
	if (c.dst >= 0)
		c.wr.ops->close(c.wr.ctx, c.dst);
	if (c.src >= 0)
		c.rd.ops->close(c.rd.ctx, c.src);
	if (c.raw >= 0)
		io->ops->close(io->ctx, c.raw);
out:
	alex_xts_io_free(rl);
	alex_xts_io_free(wl);
	if (c.buf)
		explicit_bzero(c.buf, ALEX_CONVERT_CHUNK); /* the last plaintext it held */
	free(c.buf);
	free(c.tmp);
	return err;
}
