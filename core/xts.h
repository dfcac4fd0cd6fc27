/*
 * xts.h - AES-256-XTS for pages at rest: the key, and the cipher it keys.
 *
 * The cipher is OpenSSL libcrypto's (EVP aes-256-xts), loaded with dlopen
 * the first time a key is loaded, so that a process without a key never
 * maps libcrypto.  XTS encrypts a data unit of at least 16 bytes under a
 * 16-byte tweak; the same (key, tweak) must never encrypt two different
 * versions of one unit where an observer sees both (the log, alex-log(5)),
 * so every caller builds its tweak with alex_xts_tweak from a domain and
 * the numbers that make the unit's version unique.
 */
#ifndef ALEX_XTS_H
#define ALEX_XTS_H

#include <stddef.h>
#include <stdint.h>

#define ALEX_KEY_BYTES 64u   /* two AES-256 keys */
#define ALEX_XTS_MIN 16u     /* the shortest data unit XTS takes */
#define ALEX_KCV_BYTES 8u

/* What a tweak's unit belongs to; no two domains share a tweak. */
enum alex_xts_domain {
	ALEX_XTS_DB = 0,     /* a 512-byte unit of the database file: its number */
	ALEX_XTS_LOG = 1,    /* a block's stored bytes in a log record */
	ALEX_XTS_BASE = 2,   /* the database header copied into a log slot */
	ALEX_XTS_LOGKEY = 3, /* a log's own key, derived from its uuid */
	ALEX_XTS_TEMP = 4,   /* a unit of SQLite's temporary file (xts_file.h) */
	ALEX_XTS_KCV = 0xff  /* the key check value */
};

/* The key, loaded once per process; its bytes live in memory that is
 * locked where the process may, left out of core dumps, and wiped by
 * alex_key_free. */
struct alex_key;

/*
 * Loads the key file at path: exactly 64 raw bytes, or 128 hex digits
 * (a final newline allowed); owned by the process's effective user and
 * neither readable nor writable by group or others; its two halves
 * different (XTS needs two keys).  0, or an errno with a one-line reason
 * (never any key byte) in why.
 */
int alex_key_load(const char *path, struct alex_key **out, char *why, size_t whycap);
/* The same from bytes already in memory (tests, the alex tool's rekey). */
int alex_key_from(const uint8_t raw[ALEX_KEY_BYTES], struct alex_key **out, char *why,
		  size_t whycap);
void alex_key_free(struct alex_key *k);

/* One engine's cipher contexts for a key (EVP contexts are not shared
 * between threads; an engine is used under its own lock). */
struct alex_xts;
int alex_xts_new(const struct alex_key *k, struct alex_xts **out);
void alex_xts_free(struct alex_xts *x);

/* The tweak of unit `unit` (a number unique in its domain for this
 * version of the bytes) with 32 more bits of distinction in `aux`. */
static inline void alex_xts_tweak(uint8_t t[16], enum alex_xts_domain d, uint64_t unit,
				  uint32_t aux, uint32_t index)
{
	for (int i = 0; i < 8; i++)
		t[i] = (uint8_t)(unit >> (8 * i));
	for (int i = 0; i < 4; i++)
		t[8 + i] = (uint8_t)(aux >> (8 * i));
	t[12] = (uint8_t)index;
	t[13] = (uint8_t)(index >> 8);
	t[14] = (uint8_t)(index >> 16);
	t[15] = (uint8_t)d;
}

/* Encrypts (enc 1) or decrypts n >= 16 bytes from in to out (the same
 * buffer is allowed) as one data unit.  0 or EIO. */
int alex_xts_crypt(struct alex_xts *x, int enc, const uint8_t tweak[16], const void *in,
		   void *out, size_t n);

/* The key's check value: what a database stores to tell a wrong key. */
int alex_xts_kcv(struct alex_xts *x, uint8_t out[ALEX_KCV_BYTES]);

#endif
