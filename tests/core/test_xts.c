/* AES-256-XTS through our wrapper: NIST's XTSGenAES256 vectors (CAVS 11.0,
 * the IEEE 1619 construction), with the tweak both as 16 given bytes and
 * as a data unit sequence number built by alex_xts_tweak; round trips;
 * and the key file's rules. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xts.h"

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	for (; s[0] && s[1]; s += 2)
		sscanf(s, "%2hhx", &out[n++]);
	return n;
}

struct vec {
	int enc;
	const char *key, *tweak; /* tweak: 32 hex digits, or NULL and dusn */
	uint64_t dusn;
	const char *pt, *ct;
};

static const struct vec vecs[] = {
	/* tweak-128hexstr, [ENCRYPT] COUNT 1 and 2, 101 */
	{ 1, "1ea661c58d943a0e4801e42f4b0947149e7f9f8e3e68d0c7505210bd311a0e7cd6e13ffdf2418d8d1911c004cda58da3d619b7e2b9141e58318eea392cf41b08",
	  "adf8d92627464ad2f0428e84a9f87564", 0,
	  "2eedea52cd8215e1acc647e810bbc3642e87287f8d2e57e36c0a24fbc12a202e",
	  "cbaad0e2f6cea3f50b37f934d46a9b130b9d54f07e34f36af793e86f73c6d7db" },
	{ 1, "e149be00177d76b7c1d85bcbb6b5054ee10b9f51cd73f59e0840628b9e7d854e2e1c0ab0537186a2a7c314bbc5eb23b6876a26bcdbf9e6b758d1cae053c2f278",
	  "0ea18818fab95289b1caab4e61349501", 0,
	  "f5f101d8e3a7681b1ddb21bd2826b24e32990bca49b39291b5369a9bca277d75",
	  "5bf2479393cc673306fbb15e72600598e33d4d8a470727ce098730fd80afa959" },
	{ 1, "266c336b3b01489f3267f52835fd92f674374b88b4e1ebd2d36a5f457581d9d042c3eef7b0b7e5137b086496b4d9e6ac658d7196a23f23f036172fdb8faee527",
	  "06b209a7a22f486ecbfadb0f3137ba42", 0,
	  "ca7d65ef8d3dfad345b61ccddca1ad81de830b9e86c7b426d76cb7db766852d981c6b21409399d78f42cc0b33a7bbb06",
	  "c73256870cc2f4dd57acc74b5456dbd776912a128bc1f77d72cdebbf270044b7a43ceed29025e1e8be211fa3c3ed002d" },
	/* tweak-128hexstr, [DECRYPT] COUNT 1 */
	{ 0, "d6c4cf73c639e025654dd3232fe3aa7138f21bc8922271b4a6c0af999100b6b5e380ec7ec8da88e6816cd7f4f26e7ac0f86e4caac3be55234ebcd4347cda2fa5",
	  "041f41fa30b78898040b5e0ecba27d2b", 0,
	  "b8f33dd38c138daca227728e19b62c4ad5ad516ee2c3af3431097ff281956d7d",
	  "d083f37a6160ac25c3229800ae0721d94bf6a9ff2f73a418544e6c787cbcd34a" },
	/* tweak-dataunitseqno, [ENCRYPT] COUNT 1, 2, 101; [DECRYPT] 384 bits */
	{ 1, "ef010ca1a3663e32534349bc0bae62232a1573348568fb9ef41768a7674f507a727f98755397d0e0aa32f830338cc7a926c773f09e57b357cd156afbca46e1a0",
	  NULL, 187,
	  "ed98e01770a853b49db9e6aaf88f0a41b9b56e91a5a2b11d40529254f5523e75",
	  "ca20c55e8dc149687d2541de39c3df6300bb5a163c10ced3666b1357db8bd39d" },
	{ 1, "c4e6b37e1075969d41a7601aa105dd41b18200a028da1f79f55c4d2db478c4e98d9ed491cfe52f31ecb7cbb4891eb779e057392b3b27c19cbe9b4875c8c31c22",
	  NULL, 223,
	  "87ede402d0561359799a41be042ced9a8e15639165ef1a4d2f6785c394d61e5f",
	  "a51037198f3f9fe5d05bef52363acec40e86e3abb834180348d2e08627733e65" },
	{ 1, "f6db5326ea996b16ca0d439b5a0106e3a34ed343db489faad06979009399b03b3cd9ef23332d46414216531d9885a5a30b1964523992f42748202b80a4190d45",
	  NULL, 245,
	  "bf6a09f93f94d6bdc8c5f5e158916c3371a540e46644f79414d84dda1339397ce90ebb768deeb88ecd2be175a396bb85",
	  "b11a252c5776c439ea7baeaae7830418e574b2248cc8b524b7fd0cc8e1ecffa9812f45ae313e3e1f44127b27fb08a613" },
	{ 0, "80d30916dd6ae8c4d5ace125960bdaa24386b40ca1af84b270df26a6f0b5aa87d7ee30380d48f5291700317dea6a73ab7b81d395dc5437a7af53f977909e162a",
	  NULL, 131,
	  "868291be4ddf6e3366225c90f4ea13791514c32c35e700d3fb1ee0238ddd747ba84ae505b343dc379d2b427af586dbbc",
	  "d97a069f48d53d98a20ff37dff8e12c04adf05e0d947892c5265d3853e71b0933aacba7ba7863e98175045c7bf5b95f8" },
};

static struct alex_xts *xts_of(const uint8_t raw[ALEX_KEY_BYTES], struct alex_key **k)
{
	struct alex_xts *x;
	char why[160];

	cr_assert_eq(alex_key_from(raw, k, why, sizeof why), 0, "%s", why);
	cr_assert_eq(alex_xts_new(*k, &x), 0);
	return x;
}

Test(xts, nist_vectors)
{
	for (size_t i = 0; i < sizeof vecs / sizeof *vecs; i++) {
		const struct vec *v = &vecs[i];
		uint8_t raw[64], t[16], pt[64], ct[64], out[64];
		struct alex_key *k;

		cr_assert_eq(unhex(v->key, raw), 64);
		if (v->tweak)
			unhex(v->tweak, t);
		else
			alex_xts_tweak(t, ALEX_XTS_DB, v->dusn, 0, 0); /* IEEE 1619: the
									   number, LE */
		size_t n = unhex(v->pt, pt);
		cr_assert_eq(unhex(v->ct, ct), n);
		struct alex_xts *x = xts_of(raw, &k);
		cr_assert_eq(alex_xts_crypt(x, v->enc, t, v->enc ? pt : ct, out, n), 0);
		cr_expect_eq(memcmp(out, v->enc ? ct : pt, n), 0, "vector %zu", i);
		/* and back, in place */
		cr_assert_eq(alex_xts_crypt(x, !v->enc, t, out, out, n), 0);
		cr_expect_eq(memcmp(out, v->enc ? pt : ct, n), 0, "vector %zu back", i);
		alex_xts_free(x);
		alex_key_free(k);
	}
}

Test(xts, round_trip_any_length_and_tweaks_differ)
{
	uint8_t raw[64], t[16], a[4096], b[4096], c[4096];
	struct alex_key *k;

	for (int i = 0; i < 64; i++)
		raw[i] = (uint8_t)(i * 7 + 1);
	struct alex_xts *x = xts_of(raw, &k);
	for (size_t i = 0; i < sizeof a; i++)
		a[i] = (uint8_t)(i * 31);
	for (size_t n = 16; n <= sizeof a; n += n < 64 ? 1 : 509) {
		alex_xts_tweak(t, ALEX_XTS_LOG, n, 3, 9);
		cr_assert_eq(alex_xts_crypt(x, 1, t, a, b, n), 0);
		cr_assert_neq(memcmp(a, b, 16), 0);
		cr_assert_eq(alex_xts_crypt(x, 0, t, b, c, n), 0);
		cr_assert_eq(memcmp(a, c, n), 0, "length %zu", n);
	}
	/* the same bytes under another tweak (another unit, or another
	 * domain) give other bytes */
	alex_xts_tweak(t, ALEX_XTS_DB, 5, 0, 0);
	cr_assert_eq(alex_xts_crypt(x, 1, t, a, b, 512), 0);
	alex_xts_tweak(t, ALEX_XTS_LOG, 5, 0, 0);
	cr_assert_eq(alex_xts_crypt(x, 1, t, a, c, 512), 0);
	cr_expect_neq(memcmp(b, c, 16), 0);
	cr_expect_eq(alex_xts_crypt(x, 1, t, a, b, 15), EINVAL);
	alex_xts_free(x);
	alex_key_free(k);
}

static void put_file(const char *path, const void *data, size_t n, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, n), (ssize_t)n);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

Test(xts, key_files)
{
	char path[] = "/tmp/alex-test-key-XXXXXX", why[200];
	uint8_t raw[64], kcv1[8], kcv2[8];
	char hex[130];
	struct alex_key *k;
	struct alex_xts *x;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	for (int i = 0; i < 64; i++)
		raw[i] = (uint8_t)(0xa0 ^ i);
	for (int i = 0; i < 64; i++)
		sprintf(hex + 2 * i, "%02x", raw[i]);
	hex[128] = '\n';

	/* raw and hex forms are the same key */
	put_file(path, raw, 64, 0600);
	cr_assert_eq(alex_key_load(path, &k, why, sizeof why), 0, "%s", why);
	cr_assert_eq(alex_xts_new(k, &x), 0);
	cr_assert_eq(alex_xts_kcv(x, kcv1), 0);
	alex_xts_free(x);
	alex_key_free(k);
	put_file(path, hex, 129, 0400);
	cr_assert_eq(alex_key_load(path, &k, why, sizeof why), 0, "%s", why);
	cr_assert_eq(alex_xts_new(k, &x), 0);
	cr_assert_eq(alex_xts_kcv(x, kcv2), 0);
	cr_expect_eq(memcmp(kcv1, kcv2, 8), 0);
	alex_xts_free(x);
	alex_key_free(k);

	/* refused: others may read it; wrong sizes; not hex; equal halves;
	 * missing; and no reason ever shows a key byte */
	put_file(path, raw, 64, 0640);
	cr_expect_eq(alex_key_load(path, &k, why, sizeof why), EPERM);
	cr_expect(strstr(why, "chmod 600"), "%s", why);
	put_file(path, raw, 63, 0600);
	cr_expect_eq(alex_key_load(path, &k, why, sizeof why), EINVAL);
	put_file(path, hex, 128, 0600);
	cr_expect_eq(alex_key_load(path, &k, why, sizeof why), 0, "%s", why);
	alex_key_free(k);
	hex[5] = 'g';
	put_file(path, hex, 128, 0600);
	cr_expect_eq(alex_key_load(path, &k, why, sizeof why), EINVAL);
	cr_expect_null(strstr(why, "a0a1"), "%s", why);
	memcpy(raw + 32, raw, 32);
	put_file(path, raw, 64, 0600);
	cr_expect_eq(alex_key_load(path, &k, why, sizeof why), EINVAL);
	cr_expect(strstr(why, "halves"), "%s", why);
	unlink(path);
	cr_expect_eq(alex_key_load(path, &k, why, sizeof why), ENOENT);
	cr_expect_null(k);
	/* a FIFO in its place is refused, not waited on */
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_expect_eq(alex_key_load(path, &k, why, sizeof why), EINVAL);
	cr_expect(strstr(why, "regular"), "%s", why);
	unlink(path);
}
