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

#include "analysis_internal.h"

#define MAX_IV 65536
/* Neighbouring ranges closer than this merge: the allocator's header and
 * padding sit between consecutive blocks (glibc: 8 to 23 bytes), and no
 * block fits in such a gap, so the set stays small without changing any
 * answer. The overlap test itself is exact against the stored ranges. */
#define MERGE_GAP 32
#define MMAP_THRESHOLD_START (128u * 1024)
#define MMAP_THRESHOLD_MAX (32u * 1024 * 1024)
#define LARGE_MALLOC (128u * 1024) /* malloc blocks reported from this size up */

struct iv {
	uint64_t lo, hi;
};

struct zclass {
	uint64_t calls, bytes, fresh_calls, fresh_bytes, reused_calls, reused_bytes, mmap_calls, mmap_bytes;
};

struct zeroing {
	struct iv *iv;
	size_t n, cap, hint;
	uint64_t gap_merged, merges;
	uint64_t threshold, threshold_max_seen, threshold_raises;
	struct zclass calloc_, large;
};

/* glibc's chunk size for a request: header added, 16-byte aligned */
static inline uint64_t chunk_size(uint64_t req)
{
	if (req > UINT64_MAX - 64)
		return UINT64_MAX;
	return req + 8 + 15 < 32 ? 32 : (req + 8 + 15) & ~(uint64_t)15;
}

/* an mmapped chunk's size: the request's chunk plus a header, in whole pages */
static uint64_t mmap_chunk_size(uint64_t req, uint64_t page)
{
	uint64_t nb = chunk_size(req);
	page = page ? page : 4096;
	return nb > UINT64_MAX - 2 * page ? UINT64_MAX : (nb + 8 + page - 1) / page * page;
}

/* first interval whose hi >= lo (it may touch or overlap [lo, ...)) */
static size_t iv_lower(const struct zeroing *z, uint64_t lo)
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
static void iv_compact(struct zeroing *z)
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
}

/* Add [lo, hi) when the hint missed; 1 if it overlapped a range seen
 * before, -1: out of memory. Out of line: the hint's hit is the usual case. */
static __attribute__((noinline)) int iv_add_slow(struct zeroing *z, uint64_t lo, uint64_t hi)
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
			struct iv *n = realloc(z->iv, cap * sizeof *n);
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
	z->iv[i] = (struct iv){nlo, nhi};
	z->hint = i;
	if (z->n > MAX_IV)
		iv_compact(z);
	return overlap;
}

static int z_begin(struct an_core *c, void *st)
{
	struct zeroing *z = st;
	(void)c;
	z->threshold = MMAP_THRESHOLD_START;
	return 0;
}

static void z_alloc(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev)
{
	struct zeroing *z = st;
	uint64_t len = b->size ? b->size : 1;
	uint64_t hi = addr + len < addr ? UINT64_MAX : addr + len;
	/* the interval written last (the heap's, mostly) already holds it */
	int reused = z->hint < z->n && z->iv[z->hint].lo <= addr && hi <= z->iv[z->hint].hi ? 1
											      : iv_add_slow(z, addr, hi);
	if (reused < 0) {
		c->oom = ARR_ENOMEM;
		return;
	}
	int mmapped = chunk_size(b->size) >= z->threshold;
	if (mmapped)
		b->flags |= ARR__BLK_MMAPPED;
	struct zclass *k;
	if (ev->op == ARR_OP_CALLOC)
		k = &z->calloc_;
	else if (b->size >= LARGE_MALLOC)
		k = &z->large;
	else
		return;
	k->calls++;
	k->bytes += b->size;
	if (reused) {
		k->reused_calls++;
		k->reused_bytes += b->size;
	} else {
		k->fresh_calls++;
		k->fresh_bytes += b->size;
	}
	if (mmapped) {
		k->mmap_calls++;
		k->mmap_bytes += b->size;
	}
}

static void z_release(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev,
		      int temporary)
{
	struct zeroing *z = st;
	(void)addr, (void)temporary;
	/* glibc raises the threshold in free() only, not when realloc unmaps */
	if (ev->op != ARR_OP_FREE || !(b->flags & ARR__BLK_MMAPPED))
		return;
	uint64_t cs = mmap_chunk_size(b->size, c->page_size);
	if (cs > z->threshold && cs <= MMAP_THRESHOLD_MAX) {
		z->threshold = cs;
		z->threshold_raises++;
		if (cs > z->threshold_max_seen)
			z->threshold_max_seen = cs;
	}
}

/* calls and bytes under their prefixed names, the classes without prefix */
static void class_doc(struct arr_doc *o, const struct zclass *k, const char *pfx)
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
	struct zeroing *z = st;
	(void)c;
	class_doc(sec, &z->calloc_, "calloc_");
	struct arr_doc *lm = arr_doc_set_obj(sec, "large_malloc");
	arr_doc_set_int(lm, "min_size", LARGE_MALLOC);
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
	struct zeroing *z = st;
	free(z->iv);
}

const struct an_ops arr__an_zeroing = {
	.id = ARR_AN_ZEROING,
	.state_size = sizeof(struct zeroing),
	.begin = z_begin,
	.alloc = z_alloc,
	.release = z_release,
	.end = z_end,
	.fini = z_fini,
};
