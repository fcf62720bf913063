/*
 * zeroing.c - the "zeroing" section, trace side: for every calloc, was its
 * memory fresh (an address range this trace never saw allocated before:
 * pages the kernel hands out zeroed, so calloc need not clear them) or
 * reused (it overlaps a block allocated, and freed, earlier: calloc must
 * clear it)? And which callocs glibc would have served with mmap (fresh
 * zero pages whatever the address), modelled as glibc does: the threshold
 * starts at 128 KiB and, when the program frees an mmapped chunk larger
 * than it, rises to that chunk's size, up to 32 MiB (seed 001). The same
 * for large malloc-family blocks, which pay the page faults but no clear.
 *
 * The set of ranges ever allocated is kept as sorted, coalesced intervals
 * (ranges closer than MERGE_GAP merge). Heaps are mostly contiguous, so it
 * stays small; should it pass MAX_IV,
 * the closest intervals are merged (gaps counted as seen, biasing towards
 * "reused"), and "gap_merged_bytes" says so, keeping memory fixed.
 *
 * Limits: an address range unmapped and mapped again (munmap then mmap at
 * the same address) is fresh to the kernel but "reused" here; the mmap
 * classification is the one to read for large blocks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hot.h"

#define MAX_IV 65536
/* Neighbouring ranges closer than this merge: the allocator's header and
 * padding sit between consecutive blocks (glibc: 8 to 23 bytes), and no
 * block fits in such a gap, so the set stays small without changing any
 * answer. The overlap test itself is exact against the stored ranges. */
#define MERGE_GAP 32
#define MMAP_THRESHOLD_START (128u * 1024)

/* an mmapped chunk's size: the request's chunk plus a header, in whole pages */
static uint64_t mmap_chunk_size(uint64_t req, uint64_t page)
{
	uint64_t nb = arr__glibc_chunk_size(req);
	page = page ? page : 4096;
	return nb > UINT64_MAX - 2 * page ? UINT64_MAX : (nb + 8 + page - 1) / page * page;
}

/* first interval whose hi >= lo (it may touch or overlap [lo, ...)) */
static size_t iv_lower(const struct an_zeroing *z, uint64_t lo)
{
	size_t a = 0, b = z->n;
	while (a < b) {
		size_t m = a + (b - a) / 2;
		if (z->iv[m].hi < lo)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* keep memory fixed: merge across the smallest gaps until half the room is free */
static void iv_compact(struct an_zeroing *z)
{
	uint64_t gap = 4096;
	while (z->n > MAX_IV / 2) {
		size_t o = 0;
		for (size_t i = 1; i < z->n; i++) {
			if (z->iv[i].lo - z->iv[o].hi <= gap) {
				z->gap_merged += z->iv[i].lo - z->iv[o].hi;
				z->iv[o].hi = z->iv[i].hi;
				z->merges++;
			} else {
				z->iv[++o] = z->iv[i];
			}
		}
		z->n = o + 1;
		gap *= 4;
	}
	z->hint = 0;
	memset(z->thint, 0, sizeof z->thint);
}

static __attribute__((noinline)) int add_search(struct an_zeroing *z, uint64_t lo, uint64_t hi, size_t *th_hint)
{
	size_t i = iv_lower(z, lo > MERGE_GAP ? lo - MERGE_GAP : 0), j = i;
	int overlap = 0;
	uint64_t nlo = lo, nhi = hi;
	while (j < z->n && z->iv[j].lo <= (hi > UINT64_MAX - MERGE_GAP ? UINT64_MAX : hi + MERGE_GAP)) {
		if (z->iv[j].lo < hi && z->iv[j].hi > lo)
			overlap = 1;
		if (z->iv[j].lo < nlo)
			nlo = z->iv[j].lo;
		if (z->iv[j].hi > nhi)
			nhi = z->iv[j].hi;
		j++;
	}
	if (i == j) { /* a new interval at i */
		if (z->n == z->cap) {
			size_t cap = z->cap ? z->cap * 2 : 256;
			struct an_iv *n = realloc(z->iv, cap * sizeof *n);
			if (!n)
				return -1;
			z->iv = n;
			z->cap = cap;
		}
		memmove(&z->iv[i + 1], &z->iv[i], (z->n - i) * sizeof *z->iv);
		z->n++;
	} else if (j > i + 1) {
		memmove(&z->iv[i + 1], &z->iv[j], (z->n - j) * sizeof *z->iv);
		z->n -= j - i - 1;
	}
	z->iv[i] = (struct an_iv){nlo, nhi};
	z->hint = *th_hint = i;
	if (z->n > MAX_IV)
		iv_compact(z);
	return overlap;
}

/* the thread's hint, in a leaf function: the search's registers are saved
 * only when it runs */
int arr__zeroing_add_slow(struct an_zeroing *z, uint64_t lo, uint64_t hi, unsigned th)
{
	size_t *th_hint = &z->thint[th % ARR__ZERO_HINTS];
	if (*th_hint != z->hint && *th_hint < z->n && z->iv[*th_hint].lo <= lo && hi <= z->iv[*th_hint].hi) {
		z->hint = *th_hint; /* what the search would find and leave */
		return 1;
	}
	return add_search(z, lo, hi, th_hint);
}

static int z_begin(struct an_core *c, void *st)
{
	struct an_zeroing *z = st;
	(void)c;
	z->threshold = MMAP_THRESHOLD_START;
	return 0;
}

/* per-event work: arr__zeroing_on_alloc / _on_release in hot.h */
void arr__zeroing_unmapped(struct an_core *c, struct an_zeroing *z, const struct an_block *b)
{
	uint64_t cs = mmap_chunk_size(b->size, c->page_size);
	if (cs > z->threshold && cs <= ARR__MMAP_THRESHOLD_MAX) {
		z->threshold = cs;
		z->threshold_raises++;
		if (cs > z->threshold_max_seen)
			z->threshold_max_seen = cs;
	}
}

/* calls and bytes under their prefixed names, the classes without prefix */
static void class_doc(struct arr_doc *o, const struct an_zclass *k, const char *pfx)
{
	char key[64];
	snprintf(key, sizeof key, "%scalls", pfx);
	arr_doc_set_int(o, key, (int64_t)k->calls);
	snprintf(key, sizeof key, "%sbytes", pfx);
	arr_doc_set_int(o, key, (int64_t)k->bytes);
	arr_doc_set_int(o, "fresh_calls", (int64_t)k->fresh_calls);
	arr_doc_set_int(o, "fresh_bytes", (int64_t)k->fresh_bytes);
	arr_doc_set_int(o, "reused_calls", (int64_t)k->reused_calls);
	arr_doc_set_int(o, "reused_bytes", (int64_t)k->reused_bytes);
	arr_doc_set_int(o, "mmap_calls", (int64_t)k->mmap_calls);
	arr_doc_set_int(o, "mmap_bytes", (int64_t)k->mmap_bytes);
}

static int z_end(struct an_core *c, void *st, struct arr_doc *sec)
{
	struct an_zeroing *z = st;
	(void)c;
	class_doc(sec, &z->calloc_, "calloc_");
	struct arr_doc *lm = arr_doc_set_obj(sec, "large_malloc");
	arr_doc_set_int(lm, "min_size", ARR__LARGE_MALLOC);
	class_doc(lm, &z->large, "");
	struct arr_doc *m = arr_doc_set_obj(sec, "model");
	arr_doc_set_int(m, "mmap_threshold_final", (int64_t)z->threshold);
	arr_doc_set_int(m, "mmap_threshold_raises", (int64_t)z->threshold_raises);
	arr_doc_set_int(m, "intervals", (int64_t)z->n);
	arr_doc_set_int(m, "gap_merged_bytes", (int64_t)z->gap_merged);
	return 0;
}

static void z_fini(void *st)
{
	struct an_zeroing *z = st;
	free(z->iv);
}

const struct an_ops arr__an_zeroing = {
	.id = ARR_AN_ZEROING,
	.state_size = sizeof(struct an_zeroing),
	.begin = z_begin,
	.end = z_end,
	.fini = z_fini,
};
