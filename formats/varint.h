/*
 * varint.h - LEB128 unsigned varints and zigzag signed mapping, inline.
 *
 * Contract: put functions write at most ARR_VARINT_MAX bytes and return the
 * advanced pointer; the caller guarantees room. get functions never read past
 * `end`; on a malformed or cut varint they return NULL.
 */
#ifndef ARR_VARINT_H
#define ARR_VARINT_H

#include <stdint.h>

#define ARR_VARINT_MAX 10

static inline uint8_t *arr__put_uvarint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t arr__zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline int64_t arr__unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static inline const uint8_t *arr__get_uvarint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
	if (p < end && *p < 0x80) { /* the common one-byte case */
		*out = *p;
		return p + 1;
	}
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (p >= end)
			return 0;
		uint8_t b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return p;
		}
	}
	return 0;
}

#endif
