/*
 * inspect_slots.c - for inspect_map.c (inspect_map_impl.h): where the
 * current epoch comes from and whether its records count.  The header
 * slots are picked as alex_log_read_header picks them, a lost newer slot
 * adopted as recovery adopts it, and the database file's fence judged by
 * protect.c itself -- on descriptors opened O_RDONLY, never written,
 * locked or synced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytes.h"
#include "inspect_map_impl.h"
#include "protect.h"

/*
 * The database file's sizes, and the mark its first bytes carry, read by
 * protect.c itself, so that the fence is judged as recovery judges it: db
 * is an engine of nothing but the database file's descriptor (O_RDONLY),
 * which is all alex_protect_probe and alex_protect_is_live look at.
 */
int alex_lm_read_base(const char *db_path, struct alex_logmap *lm, struct alex_db *db)
{
	static const char *const sfx[ALEX_NFILES] = { "", "-journal", "-wal" };
	size_t n = strlen(db_path) + 16;
	char *p = malloc(n);
	struct stat st;
	int err;

	if (!p)
		return ALEX_ENOMEM;
	for (int f = 0; f < ALEX_NFILES; f++) {
		lm->base_size[f] = UINT64_MAX;
		snprintf(p, n, "%s%s", db_path, sfx[f]);
		if (!stat(p, &st) && S_ISREG(st.st_mode))
			lm->base_size[f] = (uint64_t)st.st_size;
	}
	free(p);
	db->io = alex_io_posix;
	db->log_fd = db->base_fd[1] = db->base_fd[2] = -1;
	db->base_fd[0] = open_ro(db_path);
	uint64_t size = lm->base_size[0] == UINT64_MAX ? 0 : lm->base_size[0];
	if (db->base_fd[0] < 0)
		return 0;
	lm->base_exists = 1;
	err = alex_protect_probe(db, &size);
	lm->have_base_hdr = !err && !alex_protect_base_header(db, lm->base_hdr);
	close_fd(db->base_fd[0]);
	db->base_fd[0] = -1;
	lm->mark = db->mark;
	return err;
}

/* The header slots, picked as alex_log_read_header picks them. */
int alex_lm_read_slots(struct rd *r, struct alex_logmap *lm)
{
	size_t got;
	int rc[2], err;

	lm->cur = -1;
	if (lm->log_size == 0) {
		lm->empty = 1; /* touched, or copied: holds nothing */
		return 0;
	}
	if ((err = read_at(r->fd, r->buf, ALEX_BLOCK + ALEX_HDR_SLOT_USED, 0, &got)))
		return err;
	for (int s = 0; s < 2; s++) {
		const uint8_t *p = r->buf + s * ALEX_BLOCK;
		size_t have = got > s * ALEX_BLOCK ? got - s * ALEX_BLOCK : 0;
		if (have > ALEX_HDR_SLOT_USED)
			have = ALEX_HDR_SLOT_USED;
		rc[s] = have == ALEX_HDR_SLOT_USED ? alex_loghdr_decode(p, &lm->slot_hdr[s])
						   : ALEX_ECORRUPT;
		lm->slot[s] = !rc[s] ? ALEX_SLOT_VALID
			      : alex_all_zero(p, have) ||
					(have == ALEX_HDR_SLOT_USED && alex_loghdr_is_placeholder(p))
				? ALEX_SLOT_UNWRITTEN : ALEX_SLOT_DAMAGED;
	}
	if (rc[0] == ALEX_EVERSION || rc[1] == ALEX_EVERSION) {
		lm->hdr_err = ALEX_EVERSION; /* as recovery: the log is left alone */
		return 0;
	}
	if (rc[0] && rc[1]) {
		/* one slot never written: a log whose making was cut short */
		if (lm->slot[0] != ALEX_SLOT_DAMAGED || lm->slot[1] != ALEX_SLOT_DAMAGED)
			lm->empty = 1;
		else
			lm->hdr_err = rc[0] == ALEX_EVERSION || rc[1] == ALEX_EVERSION
					      ? ALEX_EVERSION : ALEX_ECORRUPT;
		return 0;
	}
	if (!rc[0] && !rc[1] && memcmp(lm->slot_hdr[0].uuid, lm->slot_hdr[1].uuid, 16) != 0) {
		lm->hdr_err = ALEX_ECORRUPT; /* two logs spliced together */
		return 0;
	}
	lm->cur = rc[0] ? 1 : rc[1] ? 0 : alex_loghdr_pick(&lm->slot_hdr[0], &lm->slot_hdr[1]);
	lm->hdr = lm->slot_hdr[lm->cur];
	return 0;
}

/* The other slot is damaged and may have been the newer epoch's: a first
 * record of it at off says so (recover.c: adopt_next_epoch). */
int alex_lm_adopt(struct rd *r, struct alex_logmap *lm, uint64_t off)
{
	size_t got;
	int err;

	if (lm->slot[!lm->cur] != ALEX_SLOT_DAMAGED || lm->log_size < off + ALEX_SECTOR)
		return 0;
	size_t first = alex_rec_first(lm->log_size - off);
	if ((err = read_at(r->fd, r->buf, first, off, &got)))
		return err;
	if (got == first &&
	    alex_protect_adopt(&lm->hdr, &lm->mark, r->buf, lm->log_size - off, off))
		lm->adopted = 1;
	return 0;
}

/* As alex_recover decides it. */
enum alex_epoch_state alex_lm_epoch_state(struct alex_logmap *lm, struct alex_db *db)
{
	db->hdr = lm->hdr;
	if (!(lm->hdr.flags & ALEX_HDR_FENCED))
		return ALEX_EPOCH_UNFENCED;
	if (alex_protect_foreign(db, lm->have_base_hdr ? lm->base_hdr : NULL))
		return ALEX_EPOCH_FOREIGN;
	return alex_protect_is_live(db) ? ALEX_EPOCH_LIVE : ALEX_EPOCH_APPLIED;
}
