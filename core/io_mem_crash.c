/*
 * io_mem_crash.c - crash images of the in-memory files (io_mem.c): every
 * change since a file's last fdatasync kept as an undo record, undone all,
 * in part (a torn write), or as any subset in any order (a disk cache that
 * reorders).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io_mem_impl.h"

static void apply_undo(struct mfile *f, const struct undo *u, uint64_t from)
{
	/* restore old bytes [off+from, off+len) that still lie within the file */
	if (u->old && from < u->len) {
		uint64_t end = u->off + u->len;
		if (end > f->size)
			end = f->size;
		if (u->off + from < end)
			memcpy(f->data + u->off + from, u->old + from, end - u->off - from);
	}
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static alex_mem *crash(const alex_mem *m, enum alex_crash how, uint64_t seed, int64_t cut_at);

alex_mem *alex_mem_crash(const alex_mem *m, enum alex_crash how, uint64_t seed)
{
	return crash(m, how, seed, -1);
}

alex_mem *alex_mem_crash_cut(const alex_mem *m, uint64_t cut)
{
	return crash(m, ALEX_CRASH_TEAR, 0, (int64_t)cut);
}

/* Puts file d back to its state at its last fdatasync. */
static int undo_all(struct mfile *d, const struct mfile *s)
{
	for (size_t k = s->nundo; k-- > 0;) {
		const struct undo *u = &s->undo[k];
		/* bytes past the shorter size were zeroed */
		if (u->old_size > d->size && alex_mem_reserve(d, u->old_size))
			return ENOMEM;
		alex_mem_set_size(d, u->old_size > d->size ? d->size : u->old_size);
		d->size = u->old_size;
		apply_undo(d, u, 0);
	}
	return 0;
}

/*
 * From the synced state, replays each unsynced change of s with what a
 * reordering disk may have kept of it: nothing, all of it, or any subset
 * of its 512-byte sectors.  A size change is kept or lost as a whole; a
 * write that is lost does not extend the file.
 */
static int redo_subset(struct mfile *d, const struct mfile *s, uint64_t *rng)
{
	for (size_t k = 0; k < s->nundo; k++) {
		const struct undo *u = &s->undo[k];
		uint64_t r = splitmix(rng) % 8;
		if (r < 3)
			continue; /* lost */
		if (!u->is_write) {
			if (alex_mem_reserve(d, u->new_size))
				return ENOMEM;
			alex_mem_set_size(d, u->new_size > d->size ? d->size : u->new_size);
			d->size = u->new_size;
			continue;
		}
		if (alex_mem_reserve(d, u->off + u->wlen))
			return ENOMEM;
		uint64_t first = u->off & ~511ull, kept_end = 0;
		for (uint64_t sec = first; sec < u->off + u->wlen; sec += 512) {
			uint64_t a = sec < u->off ? u->off : sec;
			uint64_t b = sec + 512 < u->off + u->wlen ? sec + 512 : u->off + u->wlen;
			if (r < 6 || splitmix(rng) % 2) { /* whole write, or this sector */
				memcpy(d->data + a, u->neu + (a - u->off), b - a);
				kept_end = b;
			}
		}
		if (kept_end > d->size)
			d->size = u->off + u->wlen; /* what was not kept reads as zeros */
	}
	return 0;
}

static alex_mem *crash(const alex_mem *m, enum alex_crash how, uint64_t seed, int64_t cut_at)
{
	alex_mem *c = alex_mem_new();
	size_t torn = 0; /* an index: adding a file moves c->files */
	const struct undo *tu = NULL;
	uint64_t rng = seed;

	int dirs_lost = (how & ALEX_CRASH_DIRS_LOST) != 0;

	how &= ~ALEX_CRASH_DIRS_LOST;
	if (!c)
		return NULL;
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct mfile *s = &m->files[i];
		const char *name = dirs_lost ? s->dname : s->name;
		int j = alex_mem_add_file(c, name ? name : "");
		if (j < 0 || alex_mem_reserve(&c->files[j], s->size) ||
		    (name && !(c->files[j].dname = strdup(name)))) {
			alex_mem_free(c);
			return NULL;
		}
		if (!name) { /* keep handle numbers aligned; the file is dead */
			free(c->files[j].name);
			c->files[j].name = NULL;
		}
		struct mfile *d = &c->files[j];
		d->mode = s->mode;
		if (s->size)
			memcpy(d->data, s->data, s->size);
		d->size = s->size;
		if ((how == ALEX_CRASH_LOSE || how == ALEX_CRASH_SUBSET) &&
		    (undo_all(d, s) || (how == ALEX_CRASH_SUBSET && redo_subset(d, s, &rng)))) {
			alex_mem_free(c);
			return NULL;
		} else if (how == ALEX_CRASH_TEAR) {
			for (size_t k = 0; k < s->nundo; k++)
				if (s->undo[k].is_write && (!tu || s->undo[k].seq > tu->seq)) {
					tu = &s->undo[k];
					torn = (size_t)j;
				}
		}
	}
	if (tu && tu->wlen) {
		struct mfile *t = &c->files[torn];
		uint64_t s = seed, cut = splitmix(&s) % tu->wlen;
		if (cut_at >= 0)
			cut = (uint64_t)cut_at < tu->wlen ? (uint64_t)cut_at : tu->wlen;
		apply_undo(t, tu, cut);
		/* new bytes past the old end of file: the torn part reads as zeros */
		uint64_t z = cut > tu->len ? cut : tu->len;
		uint64_t end = tu->off + tu->wlen > t->size ? t->size : tu->off + tu->wlen;
		if (tu->off + z < end)
			memset(t->data + tu->off + z, 0, end - tu->off - z);
	}
	return c;
}
