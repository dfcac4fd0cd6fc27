/*
 * log_xts.c - the log's encrypted parts (log_xts.h).
 */
#include <string.h>

#include "log_xts.h"

/* The cipher of the log named uuid: derived once per log from the key,
 * as the key's encryption of the uuid repeated (a domain of its own). */
static int cipher(struct alex_db *db, const uint8_t uuid[16], struct alex_xts **out)
{
	uint8_t raw[ALEX_KEY_BYTES], t[16];
	struct alex_key *k;
	char why[128];
	int err;

	if (db->log_xts && memcmp(db->log_xts_uuid, uuid, 16) == 0) {
		*out = db->log_xts;
		return 0;
	}
	alex_log_xts_free(db);
	for (unsigned i = 0; i < sizeof raw; i += 16)
		memcpy(raw + i, uuid, 16);
	alex_xts_tweak(t, ALEX_XTS_LOGKEY, 0, 0, 0);
	if ((err = alex_xts_crypt(db->xts, 1, t, raw, raw, sizeof raw)))
		return err;
	if (memcmp(raw, raw + 32, 32) == 0)
		raw[0] ^= 1; /* XTS refuses equal halves; 2^-256 */
	err = alex_key_from(raw, &k, why, sizeof why);
	explicit_bzero(raw, sizeof raw);
	if (err)
		return ALEX_ENOMEM;
	err = alex_xts_new(k, &db->log_xts);
	alex_key_free(k); /* the contexts hold their schedules */
	if (err)
		return ALEX_ENOMEM;
	memcpy(db->log_xts_uuid, uuid, 16);
	*out = db->log_xts;
	return 0;
}

int alex_log_xts_block(struct alex_db *db, int enc, uint8_t *p, uint32_t n, uint64_t off,
		       uint64_t epoch, uint64_t txn)
{
	struct alex_xts *x;
	uint8_t t[16];
	int err;

	if ((err = cipher(db, db->hdr.uuid, &x)))
		return err;
	alex_xts_tweak(t, ALEX_XTS_LOG, off, (uint32_t)epoch, (uint32_t)(txn & 0xffffff));
	return alex_xts_crypt(x, enc, t, p, p, n) ? ALEX_EBADBLOCK : 0;
}

int alex_log_xts_base(struct alex_db *db, int enc, struct alex_loghdr *h)
{
	struct alex_xts *x;
	uint8_t t[16];
	int err;

	if ((err = cipher(db, h->uuid, &x)))
		return err;
	/* the slot is written twice in an epoch, the second time with FENCED */
	alex_xts_tweak(t, ALEX_XTS_BASE, h->epoch, h->salt, h->flags | ALEX_HDR_BASE);
	return alex_xts_crypt(x, enc, t, h->base, h->base, ALEX_BASE_HDR) ? ALEX_ECORRUPT : 0;
}

void alex_log_xts_free(struct alex_db *db)
{
	alex_xts_free(db->log_xts);
	db->log_xts = NULL;
}
