/*
 * hot.h - the per-event work of the analyzers that follow every allocation
 * and every free (sizes, lifetimes, live, zeroing), as inline functions the
 * core's loop calls directly instead of through its callback tables.
 *
 * Why: these four run on every event of a full analysis; an indirect call
 * each (argument set-up, prologue, epilogue, the loop over the table) cost
 * more than the work itself. Their state layout lives here so core.c can
 * inline them; begin/end/fini stay in each analyzer's own file.
 *
 * Contract: same as analysis_internal.h's callbacks - called in the order
 * the core documents (resize, release before the block leaves; alloc after
 * the core's counters moved), never fail; a table that cannot grow sets
 * c->oom. Each function is the whole per-event effect of its analyzer.
 */
#ifndef ARR_ANALYZERS_HOT_H
#define ARR_ANALYZERS_HOT_H

#include "analysis_internal.h"

/* ---- live: live bytes and blocks over time ---- */

struct an_live_state {
	struct an_timeline tl;
};

/* before the block leaves: record the value after it left (a realloc that
 * allocates records its point in live_on_alloc) */
static inline void arr__live_on_release(struct an_core *c, struct an_live_state *s, const struct an_block *b,
					unsigned op, int allocates)
{
	if (op == ARR_OP_FREE || !allocates)
		arr__timeline_add(&s->tl, c->t, c->live_bytes - b->size, c->live_blocks - 1);
}

static inline void arr__live_on_alloc(struct an_core *c, struct an_live_state *s)
{
	arr__timeline_add(&s->tl, c->t, c->live_bytes, c->live_blocks);
}

/* ---- lifetimes: how long blocks live, temporary allocations, churn by size ---- */

#define ARR__SHORT_NS 1000000 /* short-lived: freed less than 1 ms after it was made */

struct an_lifetimes {
	uint64_t t_count[65], t_bytes[65], e_count[65], e_bytes[65];
	uint64_t freed, temp_count, temp_bytes, allocs;
	uint64_t c_allocs[65], c_freed[65], c_short[65], c_short_bytes[65], c_temp[65];
};

/* sc: arr__log2_bucket of the block's size, shared with sizes */
static inline void arr__lifetimes_on_alloc(struct an_lifetimes *s, unsigned sc)
{
	s->allocs++;
	s->c_allocs[sc]++;
}

static inline void arr__lifetimes_on_release(struct an_core *c, struct an_lifetimes *s, const struct an_block *b,
					     uint64_t t, int temporary)
{
	/* read once: the counters below are uint64_t too, and the compiler
	 * would load b's fields again after every store */
	const uint64_t size = b->size, ns = t - b->t, events = c->evno - b->evno;
	unsigned k = arr__log2_bucket(ns), e = arr__log2_bucket(events), sc = arr__log2_bucket(size);
	s->freed++;
	s->t_count[k]++;
	s->t_bytes[k] += size;
	s->e_count[e]++;
	s->e_bytes[e] += size;
	s->c_freed[sc]++;
	if (ns < ARR__SHORT_NS) {
		s->c_short[sc]++;
		s->c_short_bytes[sc] += size;
	}
	if (temporary) {
		s->temp_count++;
		s->temp_bytes += size;
		s->c_temp[sc]++;
	}
}

/* ---- sizes: requested sizes, the most frequent ones, realloc growth ---- */

#define ARR__SIZES_SMALL 4096        /* exact sizes below this are counted in an array, inline */
#define ARR__SIZES_MID (128u * 1024) /* ...and below this in a second one, out of line */
#define ARR__SIZES_NFACTOR 8         /* realloc growth factor buckets (sizes.c names them) */

struct an_sizes {
	uint64_t count[65], bytes[65];
	uint64_t small[ARR__SIZES_SMALL];
	/* [size - SMALL]: an array, not the map, because a map of tens of
	 * thousands of sizes missed the caches twice a lookup (stress: 61,440
	 * sizes of 4-64 KiB, 1% of the calls and 5% of the analysing thread's
	 * time); the state is calloc'ed, so untouched pages cost no memory */
	uint64_t mid[ARR__SIZES_MID - ARR__SIZES_SMALL];
	struct arr_ptrmap big; /* size -> count, from ARR__SIZES_MID up */
	uint64_t nbig;         /* distinct sizes from ARR__SIZES_SMALL up (mid and big): the cap counts these */
	uint64_t other_sizes;
	/* realloc */
	uint64_t r_count, r_grow, r_shrink, r_same, r_in_place, r_moved, r_moved_bytes, r_from_null;
	uint64_t r_factor[ARR__SIZES_NFACTOR];
	uint64_t r_delta_count[65], r_delta_bytes[65]; /* log2 of the growth in bytes */
};

/* sizes from ARR__SIZES_SMALL up, out of line: rare */
void arr__sizes_count_big(struct an_core *c, struct an_sizes *s, uint64_t size);
/* the old block of a successful realloc, out of line: a realloc is a few percent of the calls */
void arr__sizes_on_resize(struct an_core *c, struct an_sizes *s, uint64_t addr, const struct an_block *b,
			  const struct arr_event *ev);

/* size: the block's; k: its arr__log2_bucket, shared with lifetimes */
static inline void arr__sizes_on_alloc(struct an_core *c, struct an_sizes *s, uint64_t size, unsigned k, unsigned op,
				       uint64_t ptr)
{
	s->count[k]++;
	s->bytes[k] += size;
	if (size < ARR__SIZES_SMALL)
		s->small[size]++;
	else
		arr__sizes_count_big(c, s, size);
	if ((op == ARR_OP_REALLOC || op == ARR_OP_REALLOCARRAY) && !ptr) {
		s->r_count++;
		s->r_from_null++;
	}
}

/* ---- zeroing: calloc (and large malloc) served from fresh or reused memory ---- */

#define ARR__MMAP_THRESHOLD_MAX (32u * 1024 * 1024)
#define ARR__LARGE_MALLOC (128u * 1024) /* malloc blocks reported from this size up */

struct an_iv {
	uint64_t lo, hi;
};

struct an_zclass {
	uint64_t calls, bytes, fresh_calls, fresh_bytes, reused_calls, reused_bytes, mmap_calls, mmap_bytes;
};

/* Hints: the interval the latest allocation fell in (checked inline), and
 * the one each thread's did, by thread index modulo ARR__ZERO_HINTS
 * (checked before the search). glibc gives each thread an arena of its
 * own, a heap far from the others: with the one hint, threads that take
 * turns missed it on nearly every switch (stress: a third of the
 * allocations searched). A hint is only a guess, checked against the
 * interval it names, so a stale one costs a search, never an answer. */
#define ARR__ZERO_HINTS 8

struct an_zeroing {
	struct an_iv *iv; /* address ranges ever allocated, sorted, disjoint */
	size_t n, cap, hint;
	size_t thint[ARR__ZERO_HINTS];
	uint64_t gap_merged, merges;
	uint64_t threshold, threshold_max_seen, threshold_raises;
	struct an_zclass calloc_, large;
};

/* Add [lo, hi) when the hint missed (thread th's hint first); 1 if it
 * overlapped a range seen before, 0 if not, -1 when out of memory. */
int arr__zeroing_add_slow(struct an_zeroing *z, uint64_t lo, uint64_t hi, unsigned th);
/* the release of a block glibc's model mmapped (rare: out of line) */
void arr__zeroing_unmapped(struct an_core *c, struct an_zeroing *z, const struct an_block *b);

/* glibc's chunk size for a request: header added, 16-byte aligned */
static inline uint64_t arr__glibc_chunk_size(uint64_t req)
{
	if (req > UINT64_MAX - 64)
		return UINT64_MAX;
	return req + 8 + 15 < 32 ? 32 : (req + 8 + 15) & ~(uint64_t)15;
}

static inline void arr__zeroing_on_alloc(struct an_core *c, struct an_zeroing *z, uint64_t addr, struct an_block *b,
					 unsigned op)
{
	const uint64_t size = b->size; /* read once: see arr__lifetimes_on_release */
	uint64_t len = size ? size : 1;
	uint64_t hi = addr + len < addr ? UINT64_MAX : addr + len;
	/* the interval written last (the heap's, mostly) already holds it */
	int reused = z->hint < z->n && z->iv[z->hint].lo <= addr && hi <= z->iv[z->hint].hi
			     ? 1
			     : arr__zeroing_add_slow(z, addr, hi, c->last_thread); /* the event's thread */
	if (reused < 0) {
		c->oom = ARR_ENOMEM;
		return;
	}
	if (reused)
		b->flags |= ARR__BLK_REUSED;
	int mmapped = arr__glibc_chunk_size(size) >= z->threshold;
	if (mmapped)
		b->flags |= ARR__BLK_MMAPPED;
	struct an_zclass *k;
	if (op == ARR_OP_CALLOC)
		k = &z->calloc_;
	else if (size >= ARR__LARGE_MALLOC)
		k = &z->large;
	else
		return;
	k->calls++;
	k->bytes += size;
	if (reused) {
		k->reused_calls++;
		k->reused_bytes += size;
	} else {
		k->fresh_calls++;
		k->fresh_bytes += size;
	}
	if (mmapped) {
		k->mmap_calls++;
		k->mmap_bytes += size;
	}
}

static inline void arr__zeroing_on_release(struct an_core *c, struct an_zeroing *z, const struct an_block *b,
					   unsigned op)
{
	/* glibc raises the threshold in free() only, not when realloc unmaps */
	if (op == ARR_OP_FREE && (b->flags & ARR__BLK_MMAPPED))
		arr__zeroing_unmapped(c, z, b);
}

#endif
