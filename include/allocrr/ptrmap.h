/*
 * allocrr/ptrmap.h - an open-addressing hash map from addresses to 64-bit
 * values, for the live set of a trace (address -> size, address -> id).
 *
 * Contract: keys are non-zero addresses. Memory grows with the number of
 * live entries only; deleted slots are reused (backward-shift deletion, no
 * tombstones). arr_ptrmap_put returns 0 or ARR_ENOMEM. Callers may walk
 * keys[0..mask] and vals[0..mask] (key 0: empty slot).
 *
 * Why there is a second map (replayer/addrmap.h): this one is for the
 * analyzers' maps, some as large as the live set, where memory counts: two
 * arrays at load <= 1/2 take 32 bytes per entry, half of addrmap's (load
 * <= 1/4, key and value side by side), and its arrays are simple to walk.
 * addrmap is inline with a probe-once entry API, 1.6 to 2.3 times faster on
 * the preparation's pattern (bench-maps; docs/notes/2026-12-01-hashmaps.md).
 */
#ifndef ALLOCRR_PTRMAP_H
#define ALLOCRR_PTRMAP_H

#include <stddef.h>
#include <stdint.h>

struct arr_ptrmap {
	uint64_t *keys;
	uint64_t *vals;
	size_t mask; /* capacity - 1, or 0 when empty */
	size_t count;
};
#define ARR_PTRMAP_INIT    \
	{                  \
		0, 0, 0, 0 \
	}

void arr_ptrmap_release(struct arr_ptrmap *m);
/* Insert or replace. */
int arr_ptrmap_put(struct arr_ptrmap *m, uint64_t key, uint64_t val);
/* 1 and *val if present, else 0. */
int arr_ptrmap_get(const struct arr_ptrmap *m, uint64_t key, uint64_t *val);
/* Remove; 1 and *val (if val) if it was present, else 0. */
int arr_ptrmap_del(struct arr_ptrmap *m, uint64_t key, uint64_t *val);

#endif
