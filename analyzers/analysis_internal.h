/*
 * analysis_internal.h - the analyzers' shared core (perf's struct perf_tool
 * idea): one time-ordered pass over a trace, one live-block model, and a
 * table of callbacks per analyzer fed with what each event means.
 *
 * Glossary
 *   core      struct an_core: the pass. It owns the live set (address ->
 *             struct an_block), the threads, and the counters every
 *             analysis shares (calls, live bytes, peak). Analyzers never
 *             keep a copy of the live set.
 *   analyzer  struct an_ops + its state: callbacks for the semantic
 *             events below, and end(), which writes its section.
 *   evno      an event's position in the merged stream, 0-based: the line
 *             of `allocrr dump` minus one. Lifetimes in events and event
 *             phases use it.
 *
 * Semantic callbacks, in the order the core calls them for one event:
 *   call     every allocation call, before its effects (counts, sizes)
 *   failed   a call that returned NULL/an error; old = the block it was
 *            asked to resize when that block stays live (else NULL)
 *   release  a block leaves the live set (free, or the old block of a
 *            realloc - moved or in place, ev->op says which); temporary:
 *            freed before its thread's next allocation (never for realloc)
 *   resize   the old block of a successful realloc (before release)
 *   cross_free  a release by another thread than the allocating one
 *            (before release)
 *   alloc    a block enters the live set (after the core's counters move)
 *   other    rss samples, marks, thread start/exit, fork, exec
 * An analyzer uses only the callbacks it sets, and of those only the ones
 * wants() (optional, called after begin) returns: an unused callback costs
 * nothing per event. The four that follow every allocation and free
 * (sizes, lifetimes, live, zeroing) set none: the core calls their
 * per-event functions directly, inlined (hot.h), in the same order.
 * A block's flags are shared: each ARR__BLK_* bit has one owner.
 *
 * Contract: callbacks do not fail; an analyzer that cannot grow a table
 * sets core->oom = ARR_ENOMEM and the pass stops after that event. end()
 * returns 0 or a negative code. Memory: the live set plus fixed tables.
 */
#ifndef ARR_ANALYSIS_INTERNAL_H
#define ARR_ANALYSIS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "allocrr/analysis.h"
#include "allocrr/doc.h"
#include "allocrr/ptrmap.h"
#include "allocrr/trace.h"

/* Block flags, one owner each. */
#define ARR__BLK_FAILED_REALLOC 0x01 /* core: a realloc of it failed, it stayed live */
#define ARR__BLK_MMAPPED 0x02        /* zeroing: glibc's model would have mmapped it */
#define ARR__BLK_REUSED 0x04         /* zeroing: its range overlaps one allocated before (sites reads it) */

/* 32 bytes with its key: two slots a cache line. Limits: times up to 2^51
 * ns (26 days), 2^40 events, 2^24 threads (later ones share the last). */
struct an_block {
	uint64_t size;        /* requested bytes */
	uint64_t t : 51;      /* allocation time, ns */
	uint64_t op : 5;      /* the call that made it */
	uint64_t flags : 8;   /* ARR__BLK_* */
	uint64_t evno : 40;   /* allocation event number */
	uint64_t thread : 24; /* index in core->threads */
};
#define ARR__MAX_THREADS (1u << 24)
#define ARR__MAX_T ((1ull << 51) - 1)
_Static_assert(sizeof(struct an_block) == 24, "a live slot is 32 bytes");

/* Open addressing, linear probing, backward-shift deletion: the live set.
 * Key and block share a slot, so a lookup costs one cache miss, not two. */
struct an_slot {
	uint64_t key; /* 0: empty */
	struct an_block b;
};
struct an_live {
	struct an_slot *slots;
	size_t mask, count;
	size_t limit; /* grow before an insertion from this count up */
};

struct an_thread {
	uint32_t tid;
	uint64_t last_alloc; /* address of its latest allocation: a free of it is temporary */
	uint64_t calls, allocs, alloc_bytes, frees;
};

struct an_core;

#define ARR__CB_CALL 0x01
#define ARR__CB_FAILED 0x02
#define ARR__CB_RELEASE 0x04
#define ARR__CB_RESIZE 0x08
#define ARR__CB_CROSS 0x10
#define ARR__CB_ALLOC 0x20
#define ARR__CB_OTHER 0x40

struct an_ops {
	unsigned id; /* ARR_AN_* */
	size_t state_size;
	int (*begin)(struct an_core *c, void *st);
	unsigned (*wants)(struct an_core *c, void *st);
	void (*call)(struct an_core *c, void *st, const struct arr_event *ev);
	void (*failed)(struct an_core *c, void *st, const struct arr_event *ev, struct an_block *old);
	void (*release)(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev,
			int temporary);
	void (*resize)(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev);
	void (*cross_free)(struct an_core *c, void *st, struct an_block *b, uint32_t free_thread);
	void (*alloc)(struct an_core *c, void *st, uint64_t addr, struct an_block *b, const struct arr_event *ev);
	void (*other)(struct an_core *c, void *st, const struct arr_event *ev);
	int (*end)(struct an_core *c, void *st, struct arr_doc *section);
	void (*fini)(void *st);
};

#define ARR__TID_CACHE 16

struct an_core {
	const struct arr_analysis_options *opt;
	const struct arr_trace_meta *meta;
	struct arr_trace *tr; /* for its stacks and modules (sites) */
	unsigned points, top;
	uint64_t end_t; /* the END record's time, 0 if unknown */
	uint64_t evno;  /* number of the event being handled */
	uint64_t t;     /* its time */
	uint64_t page_size;
	int oom;
	/* shared counters */
	uint64_t ops[ARR_OP_MAX_];
	uint64_t calls, failed, allocs, frees, temporaries, bytes_requested, unknown_frees, first_t, last_t;
	uint64_t null_frees; /* free(NULL): a call that releases nothing */
	uint64_t live_bytes, live_blocks, peak_bytes, peak_blocks, peak_t, peak_evno;
	uint64_t win_peak, win_peak_t; /* peak live bytes since a phase analyzer last reset them */
	struct an_live live;
	struct an_thread *threads;
	size_t nthreads, threads_cap;
	struct arr_ptrmap tid_index; /* tid -> index + 1 */
	uint64_t last_tid;           /* the tid of last_thread; UINT64_MAX before the first */
	uint32_t last_thread;
	struct an_thread *cur_thread; /* &threads[last_thread] */
	/* threads that take turns (the merge alternates every ~12 events when
	 * they allocate at the same time) skip tid_index: tid -> index + 1 */
	struct an_tid_cache {
		uint32_t tid, idx1;
	} tid_cache[ARR__TID_CACHE];
	/* the running histograms (hot.h), for phases to cut by differences at
	 * their boundaries; kept whenever phases is selected, else NULL */
	const struct an_sizes *sizes;
	const struct an_lifetimes *lifetimes;
};

/* The analyzers (one per file). */
extern const struct an_ops arr__an_summary, arr__an_sizes, arr__an_lifetimes, arr__an_live, arr__an_leaks,
	arr__an_threads, arr__an_rss, arr__an_zeroing, arr__an_phases, arr__an_sites;

/* Live set iteration, for end(): calls fn on every live block. */
void arr__live_each(const struct an_core *c, void (*fn)(void *ctx, uint64_t addr, const struct an_block *b), void *ctx);
/* Duration of the trace: the END record's time, or the last event's. */
uint64_t arr__duration(const struct an_core *c);

/* log2 bucket of v: 0 for 0, k for 2^(k-1) <= v < 2^k (1..64). */
static inline unsigned arr__log2_bucket(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0; }
/* A log2 histogram as [{"lo","hi","count"[,"bytes"]}...], empty buckets left out. */
void arr__doc_log2(struct arr_doc *arr, const uint64_t *count, const uint64_t *bytes, unsigned n);

/*
 * A bounded timeline: at most cap buckets of equal width over time; when
 * time runs past the last one, neighbours merge and the width doubles, so
 * any trace length fits. Each bucket keeps the min and max of a value and
 * the max of a second one, so spikes survive.
 */
struct an_bucket {
	uint64_t min0, max0, max1;
	int used;
};
struct an_timeline {
	struct an_bucket *b;
	unsigned cap;
	uint64_t width;
	uint64_t cur_lo, cur_hi; /* the last bucket written (used) covers [cur_lo, cur_hi): no division */
	unsigned cur;
};
int arr__timeline_init(struct an_timeline *tl, unsigned cap, uint64_t expected_span);
void arr__timeline_release(struct an_timeline *tl);
void arr__timeline_add_slow(struct an_timeline *tl, uint64_t t, uint64_t v0, uint64_t v1);
static inline void arr__bucket_put(struct an_bucket *b, uint64_t v0, uint64_t v1)
{
	if (!b->used) {
		*b = (struct an_bucket){v0, v0, v1, 1};
		return;
	}
	if (v0 < b->min0)
		b->min0 = v0;
	if (v0 > b->max0)
		b->max0 = v0;
	if (v1 > b->max1)
		b->max1 = v1;
}
static inline void arr__timeline_add(struct an_timeline *tl, uint64_t t, uint64_t v0, uint64_t v1)
{
	if (t >= tl->cur_lo && t < tl->cur_hi) { /* events arrive in time order: mostly the same bucket */
		/* used: the slow path put a value in it when it made it current */
		struct an_bucket *b = &tl->b[tl->cur];
		if (v0 < b->min0)
			b->min0 = v0;
		if (v0 > b->max0)
			b->max0 = v0;
		if (v1 > b->max1)
			b->max1 = v1;
	} else
		arr__timeline_add_slow(tl, t, v0, v1);
}
/* Columns t, name0_min (NULL: left out), name0_max, name1 of the used buckets. */
void arr__timeline_doc(const struct an_timeline *tl, struct arr_doc *obj, const char *name0_min, const char *name0_max,
		       const char *name1);

/* Least-squares slope accumulator (y per second over t in ns). */
struct an_slope {
	double n, st, sy, stt, sty;
	uint64_t t0;
	int started;
};
void arr__slope_add(struct an_slope *s, uint64_t t, double y);
double arr__slope_per_s(const struct an_slope *s);

#endif
