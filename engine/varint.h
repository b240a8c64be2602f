/*
 * engine/varint.h - the integer encoding of the session's compressed
 * bodies (engine/chunk.c's event chunks, engine/argchunk.c's --args
 * registers): LEB128 varints, signed values zigzagged first so that a
 * small difference of either sign takes one byte.  Decoding is bounded
 * by the buffer: a body is never trusted.
 */
#ifndef PROPEL_ENGINE_VARINT_H
#define PROPEL_ENGINE_VARINT_H

#include <stdint.h>

/* bytes one varint can take */
#define VARINT_MAX 10

static inline uint64_t zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzz(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* 0 on success, -1 past the end or on an over-long varint */
static inline int get_varint_slow(const uint8_t **pp, const uint8_t *end,
				  uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	int shift = 0;

	while (p < end) {
		uint8_t b = *p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			*pp = p;
			return 0;
		}
		shift += 7;
		if (shift > 63)
			return -1;
	}
	return -1;
}

/* most varints are one byte: that case inline */
static inline int get_varint(const uint8_t **pp, const uint8_t *end,
			     uint64_t *out)
{
	if (__builtin_expect(*pp < end && **pp < 0x80, 1)) {
		*out = *(*pp)++;
		return 0;
	}
	return get_varint_slow(pp, end, out);
}

#endif
