/*
 * ptrmap.c - see allocrr/ptrmap.h. Linear probing, load factor <= 1/2.
 */
#include <stdlib.h>

#include "allocrr/error.h"
#include "allocrr/ptrmap.h"

static inline size_t slot_of(const struct arr_ptrmap *m, uint64_t key)
{
	return (size_t)((key >> 4) * 0x9E3779B97F4A7C15ull >> 20) & m->mask;
}

void arr_ptrmap_release(struct arr_ptrmap *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct arr_ptrmap)ARR_PTRMAP_INIT;
}

static int grow(struct arr_ptrmap *m)
{
	size_t cap = m->mask ? (m->mask + 1) * 2 : 1024;
	struct arr_ptrmap n = {calloc(cap, sizeof *n.keys), malloc(cap * sizeof *n.vals), cap - 1, 0};
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return ARR_ENOMEM;
	}
	if (m->mask)
		for (size_t i = 0; i <= m->mask; i++)
			if (m->keys[i]) {
				size_t s = slot_of(&n, m->keys[i]);
				while (n.keys[s])
					s = (s + 1) & n.mask;
				n.keys[s] = m->keys[i];
				n.vals[s] = m->vals[i];
			}
	n.count = m->count;
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

int arr_ptrmap_put(struct arr_ptrmap *m, uint64_t key, uint64_t val)
{
	if ((m->count + 1) * 2 > m->mask + 1) {
		int rc = grow(m);
		if (rc)
			return rc;
	}
	size_t s = slot_of(m, key);
	while (m->keys[s] && m->keys[s] != key)
		s = (s + 1) & m->mask;
	if (!m->keys[s]) {
		m->keys[s] = key;
		m->count++;
	}
	m->vals[s] = val;
	return 0;
}

int arr_ptrmap_get(const struct arr_ptrmap *m, uint64_t key, uint64_t *val)
{
	if (!m->mask || !key)
		return 0;
	for (size_t s = slot_of(m, key); m->keys[s]; s = (s + 1) & m->mask)
		if (m->keys[s] == key) {
			if (val)
				*val = m->vals[s];
			return 1;
		}
	return 0;
}

int arr_ptrmap_del(struct arr_ptrmap *m, uint64_t key, uint64_t *val)
{
	if (!m->mask || !key)
		return 0;
	size_t s = slot_of(m, key);
	while (m->keys[s] != key) {
		if (!m->keys[s])
			return 0;
		s = (s + 1) & m->mask;
	}
	if (val)
		*val = m->vals[s];
	/* Backward-shift: pull later members of the probe run into the hole. */
	size_t hole = s;
	for (size_t j = (s + 1) & m->mask; m->keys[j]; j = (j + 1) & m->mask) {
		size_t home = slot_of(m, m->keys[j]);
		if (((j - home) & m->mask) >= ((j - hole) & m->mask)) {
			m->keys[hole] = m->keys[j];
			m->vals[hole] = m->vals[j];
			hole = j;
		}
	}
	m->keys[hole] = 0;
	m->count--;
	return 1;
}
