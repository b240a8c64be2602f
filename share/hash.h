/*
 * share/hash.h - FNV-1a, the one non-cryptographic hash of the project:
 * chunk checksums (engine/chunk.c), folded-stack and span ids
 * (engine/export-*.c), the names of stored stacks (engine/vitals-store.c).
 * Start from PROPEL_FNV_INIT; continue a hash by passing it back in.
 */
#ifndef PROPEL_SHARE_HASH_H
#define PROPEL_SHARE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define PROPEL_FNV_INIT 0xcbf29ce484222325ull

static inline uint64_t propel_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

#endif
