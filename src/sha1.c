/* SHA-1 as FIPS 180-4 §6.1 defines it, one message at a time. */
#include "sha1.h"

#include <stdint.h>
#include <string.h>

static uint32_t
rotl(uint32_t x, unsigned n)
{
	return x << n | x >> (32 - n);
}

static void
compress(uint32_t h[5], const unsigned char block[64])
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
		       (uint32_t)block[4 * t + 2] << 8 | block[4 * t + 3];
	for (int t = 16; t < 80; t++)
		w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
	for (int t = 0; t < 80; t++) {
		uint32_t f, k;
		if (t < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (t < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (t < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		uint32_t temp = rotl(a, 5) + f + e + k + w[t];
		e = d;
		d = c;
		c = rotl(b, 30);
		b = a;
		a = temp;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void
sha1_hex(const void *data, size_t len, char out[SHA1_HEX_SIZE])
{
	static const char digits[] = "0123456789abcdef";
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	const unsigned char *p = data;
	unsigned char tail[128] = { 0 };
	size_t full = len / 64 * 64, rest = len - full, tail_len;
	uint64_t bits = (uint64_t)len * 8;

	for (size_t off = 0; off < full; off += 64)
		compress(h, p + off);
	/* The padding: the last partial block, 0x80, zeros, and the length in bits,
	 * big-endian, filling one block or, when the length no longer fits, two. */
	memcpy(tail, p + full, rest);
	tail[rest] = 0x80;
	tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		tail[tail_len - 1 - i] = (unsigned char)(bits >> (8 * i));
	for (size_t off = 0; off < tail_len; off += 64)
		compress(h, tail + off);

	for (int i = 0; i < 20; i++) {
		unsigned char byte = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
		out[2 * i] = digits[byte >> 4];
		out[2 * i + 1] = digits[byte & 0xf];
	}
	out[40] = '\0';
}
