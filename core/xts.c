/*
 * xts.c - the key file and libcrypto's AES-256-XTS (xts.h).
 *
 * libcrypto is loaded on first use, not linked: every program under
 * libalex.so would otherwise pay for mapping and relocating it at start,
 * and most never set a key.  Files are read with syscall(2), as in
 * io_posix.c, so that inside libalex.so this never re-enters the hooks.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "xts.h"

static struct {
	const EVP_CIPHER *(*cipher)(void);
	EVP_CIPHER_CTX *(*ctx_new)(void);
	void (*ctx_free)(EVP_CIPHER_CTX *);
	int (*init)(EVP_CIPHER_CTX *, const EVP_CIPHER *, ENGINE *, const unsigned char *,
		    const unsigned char *, int);
	int (*update)(EVP_CIPHER_CTX *, unsigned char *, int *, const unsigned char *, int);
	int loaded;
} evp;
static pthread_once_t evp_once = PTHREAD_ONCE_INIT;

static void evp_load(void)
{
	static const char *const names[] = { "libcrypto.so.3", "libcrypto.so" };
	void *h = NULL;

	for (size_t i = 0; !h && i < sizeof names / sizeof *names; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	*(void **)&evp.cipher = dlsym(h, "EVP_aes_256_xts");
	*(void **)&evp.ctx_new = dlsym(h, "EVP_CIPHER_CTX_new");
	*(void **)&evp.ctx_free = dlsym(h, "EVP_CIPHER_CTX_free");
	*(void **)&evp.init = dlsym(h, "EVP_CipherInit_ex");
	*(void **)&evp.update = dlsym(h, "EVP_CipherUpdate");
	evp.loaded = evp.cipher && evp.ctx_new && evp.ctx_free && evp.init && evp.update;
}

struct alex_key {
	uint8_t raw[ALEX_KEY_BYTES];
};

struct alex_xts {
	EVP_CIPHER_CTX *ctx[2]; /* decrypt, encrypt */
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 64 raw bytes, or 128 hex digits and at most one newline */
static int parse(const uint8_t *in, size_t n, uint8_t out[ALEX_KEY_BYTES])
{
	if (n == ALEX_KEY_BYTES) {
		memcpy(out, in, ALEX_KEY_BYTES);
		return 0;
	}
	if (n == 2 * ALEX_KEY_BYTES + 1 && in[n - 1] == '\n')
		n--;
	if (n != 2 * ALEX_KEY_BYTES)
		return -1;
	for (size_t i = 0; i < ALEX_KEY_BYTES; i++) {
		int hi = hexval(in[2 * i]), lo = hexval(in[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int alex_key_from(const uint8_t raw[ALEX_KEY_BYTES], struct alex_key **out, char *why,
		  size_t whycap)
{
	struct alex_key *k;

	if (memcmp(raw, raw + ALEX_KEY_BYTES / 2, ALEX_KEY_BYTES / 2) == 0) {
		snprintf(why, whycap, "its two 32-byte halves are equal (XTS needs two keys)");
		return EINVAL;
	}
	pthread_once(&evp_once, evp_load);
	if (!evp.loaded) {
		snprintf(why, whycap, "libcrypto.so.3 (OpenSSL) cannot be loaded");
		return ENOSYS;
	}
	/* a page of its own: kept out of swap where allowed, out of core
	 * dumps always */
	k = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (k == MAP_FAILED) {
		snprintf(why, whycap, "no memory for the key");
		return ENOMEM;
	}
	madvise(k, 4096, MADV_DONTDUMP);
	(void)mlock(k, 4096);
	memcpy(k->raw, raw, ALEX_KEY_BYTES);
	*out = k;
	return 0;
}

int alex_key_load(const char *path, struct alex_key **out, char *why, size_t whycap)
{
	uint8_t buf[2 * ALEX_KEY_BYTES + 2], raw[ALEX_KEY_BYTES];
	struct stat st;
	size_t n = 0;
	long fd, r;
	int err;

	*out = NULL;
	do
		fd = syscall(SYS_openat, AT_FDCWD, path,
			     O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK); /* a FIFO: no hang */
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		err = errno;
		snprintf(why, whycap, "cannot open it: %s", strerror(err));
		return err;
	}
	if (syscall(SYS_fstat, (int)fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, whycap, "not a regular file");
		err = EINVAL;
		goto out;
	}
	if (st.st_uid != (uid_t)syscall(SYS_geteuid)) {
		snprintf(why, whycap, "owned by uid %u, not by this user (uid %u)",
			 (unsigned)st.st_uid, (unsigned)syscall(SYS_geteuid));
		err = EPERM;
		goto out;
	}
	if (st.st_mode & 077) {
		snprintf(why, whycap, "mode %04o lets others read or change it (chmod 600)",
			 (unsigned)(st.st_mode & 07777));
		err = EPERM;
		goto out;
	}
	while (n < sizeof buf) {
		r = syscall(SYS_read, (int)fd, buf + n, sizeof buf - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (parse(buf, n, raw)) {
		snprintf(why, whycap, "not a key: it must hold 64 raw bytes or 128 hex digits");
		err = EINVAL;
		goto out;
	}
	err = alex_key_from(raw, out, why, whycap);
out:
	explicit_bzero(buf, sizeof buf);
	explicit_bzero(raw, sizeof raw);
	syscall(SYS_close, (int)fd);
	return err;
}

void alex_key_free(struct alex_key *k)
{
	if (!k)
		return;
	explicit_bzero(k->raw, sizeof k->raw);
	munlock(k, 4096);
	munmap(k, 4096);
}

int alex_xts_new(const struct alex_key *k, struct alex_xts **out)
{
	struct alex_xts *x = calloc(1, sizeof *x);

	*out = NULL;
	if (!x)
		return ENOMEM;
	for (int enc = 0; enc < 2; enc++) {
		x->ctx[enc] = evp.ctx_new();
		if (!x->ctx[enc] || evp.init(x->ctx[enc], evp.cipher(), NULL, k->raw, NULL, enc) != 1) {
			alex_xts_free(x);
			return EIO;
		}
	}
	*out = x;
	return 0;
}

void alex_xts_free(struct alex_xts *x)
{
	if (!x)
		return;
	for (int enc = 0; enc < 2; enc++)
		if (x->ctx[enc])
			evp.ctx_free(x->ctx[enc]); /* frees (and clears) the key schedule */
	free(x);
}

int alex_xts_crypt(struct alex_xts *x, int enc, const uint8_t tweak[16], const void *in,
		   void *out, size_t n)
{
	EVP_CIPHER_CTX *c = x->ctx[!!enc];
	int len = 0;

	if (n < ALEX_XTS_MIN || n > (1u << 24))
		return EINVAL;
	/* a new tweak on the keyed context: no key schedule per unit */
	if (evp.init(c, NULL, NULL, NULL, tweak, -1) != 1 ||
	    evp.update(c, out, &len, in, (int)n) != 1 || len != (int)n)
		return EIO;
	return 0;
}

int alex_xts_kcv(struct alex_xts *x, uint8_t out[ALEX_KCV_BYTES])
{
	static const uint8_t zero[16];
	uint8_t t[16], c[16];
	int err;

	alex_xts_tweak(t, ALEX_XTS_KCV, 0, 0, 0);
	if ((err = alex_xts_crypt(x, 1, t, zero, c, sizeof c)))
		return err;
	memcpy(out, c, ALEX_KCV_BYTES);
	return 0;
}
