/*
 * addrmap.h - the preparation's address -> id map, inline: the live set is
 * probed two or three times per call, so a probe must be a few instructions.
 *
 * Open addressing with linear probing, keys and values side by side (one
 * cache line per probe), load factor <= 1/4 (most probes stop at the first
 * entry, so the loop's exit is predicted), backward-shift deletion (no
 * tombstones). Key 0 means empty: it is never stored and never found.
 * Contract: a pointer returned by am_probe/am_find stays valid until the
 * next am_reserve/am_put/am_del_at; am_reserve and am_put return 0 or
 * ARR_ENOMEM; am_release frees everything.
 *
 * Why not allocrr/ptrmap.h: on the preparation's pattern (each call
 * removes its freed address and probes, then fills, its returned one) this
 * map is 1.6 to 2.3 times faster (bench-maps, docs/notes/2026-12-01-
 * hashmaps.md), for twice the memory per entry; ptrmap keeps the analyzers'
 * large maps small. The preparation uses this one alone.
 */
#ifndef ARR_REPLAYER_ADDRMAP_H
#define ARR_REPLAYER_ADDRMAP_H

#include <stdint.h>
#include <stdlib.h>

#include "allocrr/error.h"

struct am_entry {
	uint64_t key, val;
};

struct addrmap {
	struct am_entry *e;
	size_t mask; /* capacity - 1, 0 when nothing is allocated */
	size_t count;
	unsigned shift; /* 64 - log2(capacity) */
};
#define ADDRMAP_INIT       \
	{                  \
		0, 0, 0, 0 \
	}

static inline size_t am_home(const struct addrmap *m, uint64_t key)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> m->shift);
}

static inline void am_release(struct addrmap *m)
{
	free(m->e);
	*m = (struct addrmap)ADDRMAP_INIT;
}

/* Make room for one more key. */
static inline int am_reserve(struct addrmap *m)
{
	if (m->mask && (m->count + 1) * 4 <= m->mask + 1)
		return 0;
	size_t cap = m->mask ? (m->mask + 1) * 2 : 1024;
	struct addrmap n = {calloc(cap, sizeof *n.e), cap - 1, m->count, 64u - (unsigned)__builtin_ctzll(cap)};
	if (!n.e)
		return ARR_ENOMEM;
	if (m->mask)
		for (size_t i = 0; i <= m->mask; i++)
			if (m->e[i].key) {
				size_t s = am_home(&n, m->e[i].key);
				while (n.e[s].key)
					s = (s + 1) & n.mask;
				n.e[s] = m->e[i];
			}
	free(m->e);
	*m = n;
	return 0;
}

/* The entry holding key, or the empty entry where it would go. Needs a
 * reserved map (am_reserve) and a non-zero key. */
static inline struct am_entry *am_probe(const struct addrmap *m, uint64_t key)
{
	size_t s = am_home(m, key);
	while (m->e[s].key && m->e[s].key != key)
		s = (s + 1) & m->mask;
	return &m->e[s];
}

/* The entry holding key, or NULL. */
static inline struct am_entry *am_find(const struct addrmap *m, uint64_t key)
{
	if (!m->count || !key)
		return NULL;
	struct am_entry *e = am_probe(m, key);
	return e->key ? e : NULL;
}

/* Fill the empty entry e (from am_probe) with key -> val. */
static inline void am_fill(struct addrmap *m, struct am_entry *e, uint64_t key, uint64_t val)
{
	e->key = key;
	e->val = val;
	m->count++;
}

/* Insert or replace (key 0 is ignored). */
static inline int am_put(struct addrmap *m, uint64_t key, uint64_t val)
{
	if (!key)
		return 0;
	int rc = am_reserve(m);
	if (rc)
		return rc;
	struct am_entry *e = am_probe(m, key);
	if (e->key)
		e->val = val;
	else
		am_fill(m, e, key, val);
	return 0;
}

/* Remove the entry e (from am_probe/am_find, holding a key). */
static inline void am_del_at(struct addrmap *m, struct am_entry *e)
{
	size_t hole = (size_t)(e - m->e);
	for (size_t j = (hole + 1) & m->mask; m->e[j].key; j = (j + 1) & m->mask) {
		size_t home = am_home(m, m->e[j].key);
		if (((j - home) & m->mask) >= ((j - hole) & m->mask)) {
			m->e[hole] = m->e[j];
			hole = j;
		}
	}
	m->e[hole].key = 0;
	m->count--;
}

/* Remove key; 1 and *val if it was present, else 0. */
static inline int am_del(struct addrmap *m, uint64_t key, uint64_t *val)
{
	struct am_entry *e = am_find(m, key);
	if (!e)
		return 0;
	*val = e->val;
	am_del_at(m, e);
	return 1;
}

#endif
