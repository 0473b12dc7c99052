/* sha1: the digests EVALSHA names scripts by, on FIPS 180 vectors and at every padding
 * boundary (55/56 bytes: the length still fits the last block or needs another). */
#include <stdlib.h>

#include "check.h"
#include "scripts.h"
#include "sha1.h"

static const char *
digest_of(const char *s, size_t len)
{
	static char out[SHA1_HEX_SIZE];

	sha1_hex(s, len, out);
	return out;
}

static const char *
digest_of_repeated(char c, size_t n)
{
	char *buf = malloc(n + 1);
	const char *d;

	memset(buf, c, n);
	d = digest_of(buf, n);
	free(buf);
	return d;
}

int
main(void)
{
	CHECK_STR(digest_of("", 0), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	CHECK_STR(digest_of("abc", 3), "a9993e364706816aba3e25717850c26c9cd0d89d");
	CHECK_STR(digest_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56),
		  "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	CHECK_STR(digest_of_repeated('a', 1000000), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	CHECK_STR(digest_of_repeated('x', 55), "cef734ba81a024479e09eb5a75b6ddae62e6abf1");
	CHECK_STR(digest_of_repeated('x', 56), "901305367c259952f4e7af8323f480d59f81335b");
	CHECK_STR(digest_of_repeated('x', 63), "0ddc4e0cccd9a12850deb5abb0853a4425559fec");
	CHECK_STR(digest_of_repeated('x', 64), "bb2fa3ee7afb9f54c6dfb5d021f14b1ffe40c163");
	CHECK_STR(digest_of_repeated('x', 65), "78c741ddc482e4cdf8c474a0876347a0905b6233");
	CHECK_STR(digest_of_repeated('x', 119), "4300320394f7ee239bcdce7d3b8bcee173a0cd5c");
	CHECK_STR(digest_of_repeated('x', 120), "ceb2821639c4b6dcb10bce0e522ca2e608ce056d");
	/* The scripts' digests, computed when the build ran, are those of their texts. */
	scripts_init();
	CHECK(scripts_count() >= 10);
	for (size_t i = 0; i < scripts_count(); i++)
		CHECK_STR(scripts_get(i)->sha,
			  digest_of(scripts_get(i)->text, strlen(scripts_get(i)->text)));
	CHECK(scripts_get(scripts_count()) == NULL);
	return check_done("sha1");
}
