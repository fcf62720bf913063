/*
 * allocator/spanheap.c - the span heap: blocks above span_min bytes (and up
 * to the largest class), and those of the sparse classes of 2-8 KiB, carved
 * at 256-byte granularity from segments shared by every such size and every
 * thread, with coalescing and best fit.
 *
 * Why: a segregated fit holds, for each class, pages for the most blocks it
 * ever held at once, so a program holds the sum of the classes' peaks where a
 * coalescing heap (glibc) holds the peak of their sum. Above ~8 KiB a page
 * holds a handful of blocks, and ~50 classes of a handful each was the bulk
 * of the builtin's excess over glibc's peak RSS (docs/notes/
 * 2026-12-01-allocator-rss.md). Here a freed block's bytes serve any size at
 * once: tcmalloc's page heap, glibc's coalescing of free neighbours.
 *
 * Layout (struct arr__spanseg, a 4 MiB segment of kind 2): the segment header
 * with its 64 page descriptors, all flagged ARR__PF_SPAN so that free() and
 * friends leave their fast paths and come here; then, per 256-byte unit, a tag
 * (nonzero only at a span's first and last unit: length, state, START on the
 * first unit of a block in use, and the request's slack for the statistics)
 * and a node (bin and decay-list links of a free span, kept out of line so a
 * purged span is never touched); per OS page a clean bit (known zero, not
 * resident). Blocks carry no header.
 *
 * Free spans: one bin per length up to 512 units (128 KiB), then 32 bins per
 * doubling up to 4096 units (the largest block, 1 MiB), one for longer ones,
 * LIFO within a bin (the last freed is the most likely resident); malloc
 * takes the best fit (in a bin of several lengths, the shortest that fits)
 * and carves from its low end. A freed block is merged with free neighbours
 * at once.
 *
 * Purging (a decay): a free span that may be resident sits on the `lru` list
 * (oldest first) with the span-heap op count of its last free. Every
 * TICK_OPS operations, spans free for more than `span_decay` operations are
 * given back (MADV_DONTNEED of their resident OS pages, up to PURGE_BATCH in
 * one system call where the kernel allows), oldest first, unless what waits
 * is no more than a small cache (CACHE_UNITS). Memory the program takes back
 * within the decay is never purged: the idle budget's fault storm on the
 * `large` working set (a freed block purged, faulted in by the next malloc)
 * cannot happen. Purges run outside the lock: the spans are marked BUSY
 * (neither allocated nor merged) meanwhile. The trim (below) is the other
 * way out: an arena left holding far more resident memory than live blocks
 * gives back its oldest free spans at once (those free for an eighth of the
 * decay; all of them when it holds nearly nothing live).
 *
 * Everything here runs under the lock of the block's arena (below; not
 * arr__lock: the pool's users never wait for it), a futex word of its own
 * (struct span_lock).
 */
/* Scalar code: -O3's SLP vectorizer packed the arena's counter updates into
 * SSE loads, shuffles and stores, 25 instructions where five adds do. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-slp-vectorize")
#endif
#include <errno.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "internal.h"

/* short names for internal.h's ARR__SP_* */
#define UNIT_SHIFT ARR__SP_UNIT_SHIFT
#define UNITS_PER_OSPAGE ARR__SP_UNITS_PER_OSPAGE
#define UNITS ARR__SP_UNITS
#define UNIT ARR__SP_UNIT
#define OSPAGES ARR__SP_OSPAGES
#define MAX_UNITS ARR__SP_MAX_UNITS
#define NBINS ARR__SP_NBINS
#define BIN_WORDS ARR__SP_BIN_WORDS
#define T_LEN ARR__SP_T_LEN
#define T_FREE ARR__SP_T_FREE
#define T_USED ARR__SP_T_USED
#define T_BUSY ARR__SP_T_BUSY
#define T_STATE ARR__SP_T_STATE
#define T_START ARR__SP_T_START
#define T_DIRTY ARR__SP_T_DIRTY
#define T_SLACK_SHIFT ARR__SP_T_SLACK_SHIFT
#define T_SLOT_SHIFT ARR__SP_T_SLOT_SHIFT
#define T_SLOT_MASK ARR__SP_T_SLOT_MASK
#define HDR_UNITS ARR__SP_HDR_UNITS
#define FIRST_UNIT ARR__SP_FIRST_UNIT
#define DATA_UNITS ARR__SP_DATA_UNITS
#define EXACT_UNITS ARR__SP_EXACT_UNITS
#define LONGER_BIN 0 /* (no span is 0 units long) */

/* The summary of the bin mask: best fit's scan for the first non-empty bin
 * from a length on read up to 65 words one by one (28 instructions a
 * malloc on a `large` replay); two words say which are not 0. */
#define MASK_WORDS ((BIN_WORDS + 63) / 64)

/* Purge batches: a tick looks every TICK_OPS operations. */
#define TICK_OPS 64
#define PURGE_BATCH 16
/* Free resident memory kept whatever its age. */
#define CACHE_UNITS (((size_t)128 << 10) >> UNIT_SHIFT)

/*
 * An arena: a span heap of its own (lock, segments, bins, decay list,
 * counters). A thread's span-heap mallocs go to its heap's arena
 * (arr__heap.span_arena modulo the `span_arenas` option: 0, shared, until
 * the thread finds its lock taken often, see contended()); a free goes to
 * the arena of the block's segment
 * (struct arr__spanseg.arena), under that arena's lock, whichever thread
 * frees. A heap left by an exited thread is the next new thread's, with its
 * arena; meanwhile every heap tick purges the expired spans of every arena
 * (arr__span_tick), so an idle arena's memory decays as the busy ones'.
 * With one arena (span_arenas=1) every thread shares one lock: 16 % of a
 * 2-thread `large` replay's profile, and with sparse classes on, threads
 * working at once in 2-8 KiB blocks queued on it (docs/allocator.md).
 */
/*
 * An arena's lock: a futex word, 0 free, 1 held, 2 held with sleepers
 * (Drepper's "Futexes are tricky", mutex 3). Not pthread_mutex_t: its lock,
 * trylock and unlock were 9 % of a serial `large` replay's instructions
 * (the mutex type's dispatch, owner and count bookkeeping) where this takes
 * one compare-and-swap and one exchange. A lock found taken is retried a
 * while before its taker sleeps: a critical section is a few hundred
 * instructions, shorter than a futex round trip.
 */
struct span_lock {
	_Atomic uint32_t w;
};

#define LOCK_SPINS 64

/*
 * While no other thread exists (glibc's __libc_single_threaded, which its
 * own malloc reads the same way: false from the first pthread_create on),
 * the lock is taken and given with plain stores, not a compare-and-swap and
 * an exchange: a sparse block's malloc and free, both in the span heap, 99
 * -> 76 ns a pair (bench-alloc-micro calloc 4096), a serial replay of the
 * `large` working set 8 % faster. Out of line (one copy of the test, not one
 * at each of the lock's sites: inlined, they took 4.9 KiB of hot text);
 * with threads, a call more around the atomic
 * (docs/notes/2026-12-06-rodata.md).
 */
ARR_HOT static __attribute__((noinline)) bool lock_try(struct span_lock *l)
{
	if (__libc_single_threaded) {
		if (atomic_load_explicit(&l->w, memory_order_relaxed) != 0)
			return false;
		atomic_store_explicit(&l->w, 1, memory_order_relaxed);
		return true;
	}
	uint32_t z = 0;
	return atomic_compare_exchange_strong_explicit(&l->w, &z, 1, memory_order_acquire, memory_order_relaxed);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static __attribute__((noinline, cold)) void lock_wait(struct span_lock *l)
{
	for (unsigned k = 0; k < LOCK_SPINS; k++) {
		cpu_relax();
		if (atomic_load_explicit(&l->w, memory_order_relaxed) == 0 && lock_try(l))
			return;
	}
	/* 2 from here on: whoever holds it wakes a sleeper at its unlock */
	while (atomic_exchange_explicit(&l->w, 2, memory_order_acquire) != 0)
		syscall(SYS_futex, &l->w, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

ARR_HOT static __attribute__((noinline)) void lock_take(struct span_lock *l)
{
	if (!lock_try(l))
		lock_wait(l);
}

ARR_HOT static __attribute__((noinline)) void lock_give(struct span_lock *l)
{
	if (__libc_single_threaded) {
		atomic_store_explicit(&l->w, 0, memory_order_relaxed);
		return;
	}
	if (atomic_exchange_explicit(&l->w, 0, memory_order_release) == 2)
		syscall(SYS_futex, &l->w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

struct arr__span_arena {
	struct span_lock lock;
	struct arr__spanseg *segs;
	unsigned nsegs;
	uint64_t bin_mask[BIN_WORDS];
	uint64_t bin_words[MASK_WORDS]; /* which bin_mask words are not 0 */
	/* lru_tailp: the link a node appended goes in, the last node's lnext
	 * or &lru_head (set with the arena's first segment: arenas are all
	 * zero, in .bss) */
	struct arr__span_node *lru_head, **lru_tailp;
	uint64_t lru_units;   /* units of spans on the lru */
	uint64_t resident;    /* data OS pages not known clean (Σ of the segments') */
	int64_t trim_lim;     /* a trim is due while live_units < this (trim_lim_of(resident)) */
	int64_t tick_left;    /* operations to the next tick (a countdown: at 0 the next ticks) */
	uint64_t ticks;       /* ticks so far (the debug build's walk, every 16th) */
	unsigned busy_spans;  /* purges in flight */
	unsigned trim_regret; /* the trim's bet (trim_bet_settle): the score of bets lost (read by fit_resident()) */
	/* statistics */
	/* live blocks: nmallocs - nfrees (one counter fewer on every operation) */
	uint64_t live_units, live_req, nmallocs, nfrees, purged_pages;
	/* last: the fields above, the longer spans' bin (0) and the short
	 * lengths' share the arena's first page */
	struct arr__span_node *bins[NBINS];
	/* the trim's bet (trim_bet_settle), after the bins: read and written
	 * in trims only — pages the last trim of everything gave back and
	 * resident after it (gave 0: no bet open); the op clock from which a
	 * free span counts as not reused (set by the trims of everything and
	 * the idle ones) and the span mallocs at the last idle trim */
	uint64_t trim_gave, trim_after, trim_clock, trim_mallocs;
} __attribute__((aligned(64)));

_Static_assert((ARR__SPAN_ARENAS & (ARR__SPAN_ARENAS - 1)) == 0, "arenas: a power of two");
/* All zero, so in .bss: an initialised field would put the 268 KB array in
 * .data, file-backed pages that the kernel's fault-around maps 64 KiB at a
 * time (240 KB resident in every program, `sed` included). tick_left starts
 * at 0: the first operation ticks, with nothing to purge. */
ARR__BIG_TABLE(static struct arr__span_arena arenas[ARR__SPAN_ARENAS])
/*
 * The highest arena index split() has dealt (0: only arena 0 has been
 * used). Loops over the arenas stop there: an arena no heap was dealt is
 * all zero and stays so, and where the kernel backs a read of untouched
 * .bss with a page of its own instead of the shared zero page (seen on a
 * 6.18 kernel here), the reads of the seven unused arenas' first fields at
 * every heap tick held seven pages of every program (allocator.fixedcost:
 * 11 writable pages resident against its bound of 4). Raised before the
 * arena is first locked, so a loop that reads it after sees every arena
 * in use.
 */
static _Atomic unsigned arenas_hi;
static inline unsigned arenas_used(void) { return atomic_load_explicit(&arenas_hi, memory_order_acquire) + 1; }

static inline unsigned arena_index(const struct arr__span_arena *a) { return (unsigned)(a - arenas); }

/* (masked: a corrupt header picks a wrong lock, never memory past the array;
 * ARR__SPAN_ARENAS is a power of two) */
static inline struct arr__span_arena *arena_of_seg(const struct arr__spanseg *s)
{
	struct arr__span_arena *a = &arenas[s->arena & (ARR__SPAN_ARENAS - 1)];
	/* a pointer in a register: GCC otherwise keeps the index and rebuilds
	 * each field's address from it (an imul by the arena's size at every
	 * bin, mask and counter access) */
	__asm__("" : "+r"(a));
	return a;
}

static int64_t slack_correction(uint32_t first, uint32_t last);

/* What a block's last tag says it holds past its request: the units past
 * it and the slack in its last unit, in bytes. */
static inline int64_t tag_extra(uint32_t last)
{
	return (int64_t)((last >> ARR__SP_T_XUNITS_SHIFT & ARR__SP_T_XUNITS_MAX) << UNIT_SHIFT) +
	       (last >> ARR__SP_T_XSLACK_SHIFT & ARR__SP_T_SLACK_MASK);
}
static bool arena_is_valid_locked(struct arr__span_arena *a);
static void waste_add(struct arr__heap *h, int64_t d);
static inline void resident_add(struct arr__span_arena *a, int64_t pages);

/* ---- units, tags, nodes ---- */

static inline struct arr__spanseg *seg_of(const void *p) { return (struct arr__spanseg *)arr__segment_of(p); }

static inline struct arr__spanseg *seg_of_node(const struct arr__span_node *n)
{
	return (struct arr__spanseg *)arr__segment_of(n);
}

/* ---- tag chunks (internal.h, struct arr__spanseg) ---- */

ARR_HOT __attribute__((noinline)) unsigned arr__sp_tag_chunk_new(struct arr__spanseg *s, unsigned pg)
{
	unsigned c = s->tag_free;
	if (c != 0) {
		s->tag_free = (uint16_t)s->tag_pool[c][0];
		s->tag_pool[c][0] = 0;
	} else {
		c = ++s->tag_used;
		ARR__ASSERT(c <= OSPAGES);
	}
	s->tag_chunk[pg] = (uint16_t)c;
	return c;
}

typedef uint64_t __attribute__((may_alias)) tag_words;

ARR_HOT __attribute__((noinline)) void arr__sp_tag_settle(struct arr__spanseg *s, unsigned u)
{
	unsigned pg = u / UNITS_PER_OSPAGE, c = s->tag_chunk[pg];
	if (c == 0)
		return;
	const tag_words *t = (const tag_words *)s->tag_pool[c];
	if ((t[0] | t[1] | t[2] | t[3] | t[4] | t[5] | t[6] | t[7]) != 0)
		return;
	s->tag_chunk[pg] = 0;
	s->tag_pool[c][0] = s->tag_free;
	s->tag_free = (uint16_t)c;
}

/* The node of the free span whose first tag is t, and t's slot bits (what
 * slot_bits() says of that node, without loading it). */
static inline struct arr__span_node *node_of_tag(struct arr__spanseg *s, uint32_t t)
{
	return &s->node[t >> T_SLOT_SHIFT & T_SLOT_MASK];
}
#define SLOT_BITS (T_SLOT_MASK << T_SLOT_SHIFT)

/* The node of the free span starting at u. */
static inline struct arr__span_node *node_at(struct arr__spanseg *s, unsigned u)
{
	return node_of_tag(s, arr__sp_tag(s, u));
}

/* (the node's own index: n - s->node divides by the node's size) */
static inline uint32_t slot_bits(const struct arr__spanseg *s, const struct arr__span_node *n)
{
	(void)s;
	ARR__ASSERT(n->slot == (uint32_t)(n - s->node));
	return n->slot << T_SLOT_SHIFT;
}

static struct arr__span_node *node_new(struct arr__spanseg *s, unsigned u)
{
	struct arr__span_node *n = s->slot_free;
	if (n != NULL) {
		s->slot_free = n->next;
	} else {
		n = &s->node[s->slots_used];
		n->slot = s->slots_used++;
	}
	ARR__ASSERT(s->slots_used <= ARR__SP_NODES);
	n->unit = u;
	return n;
}

static void node_release(struct arr__spanseg *s, struct arr__span_node *n)
{
	n->next = s->slot_free;
	s->slot_free = n;
}

static inline uint8_t *unit_addr(struct arr__spanseg *s, unsigned u)
{
	return (uint8_t *)s + ((size_t)u << UNIT_SHIFT);
}

/*
 * The bin of a free span of len units: its length up to EXACT_UNITS (512
 * units, 128 KiB), then COARSE_BINS bins per doubling (a bin of lengths
 * (L, L + L/32]: 16 units wide from 128 KiB, 64 below 1 MiB), then
 * LONGER_BIN, bin 0. One bin per length up to 1 MiB was 32 KiB of list
 * heads, of which cc1's replay wrote 7 pages (it frees spans of most
 * lengths); these 609 take two pages, the first shared with the arena's
 * other fields, and a program whose free spans are all shorter than
 * ~120 KiB or longer than 1 MiB writes only that one. Best fit stays exact:
 * the list of a bin of several lengths (and LONGER_BIN's) is kept in order
 * of length (bin_insert_sorted), and best_fit() takes its first span that
 * fits. Exact bins up to 256 units (the whole arena in one page) cost 1.7-2.2 %
 * more instructions on the `large` replays, for one page less
 * (docs/notes/2026-12-04-spanmeta.md).
 */
static inline unsigned bin_of(unsigned len)
{
	if (len <= EXACT_UNITS)
		return len;
	if (len > MAX_UNITS)
		return LONGER_BIN;
	unsigned m = len - 1, k = 31 - (unsigned)__builtin_clz(m); /* EXACT_SHIFT <= k < MAX_SHIFT */
	return EXACT_UNITS + 1 + ((k - ARR__SP_EXACT_SHIFT) << ARR__SP_COARSE_SHIFT) +
	       ((m >> (k - ARR__SP_COARSE_SHIFT)) & (ARR__SP_COARSE_BINS - 1));
}

/* A span's two boundary tags; the last carries only its length, state and
 * dirty bit (START and the slack are the first's). */
ARR_HOT static __attribute__((noinline)) void set_tags(struct arr__spanseg *s, unsigned u, unsigned len, uint32_t state)
{
	arr__sp_tag_set(s, u + len - 1, len | (state & (T_STATE | T_DIRTY)));
	arr__sp_tag_set(s, u, len | state);
}

/* The length of the free span of node n. */
static inline unsigned node_len(const struct arr__span_node *n) { return arr__sp_tag(seg_of_node(n), n->unit) & T_LEN; }

static inline void bin_link(struct arr__span_arena *a, struct arr__span_node *n, struct arr__span_node **pp, unsigned b)
{
	n->pprev = pp;
	n->next = *pp;
	if (n->next)
		n->next->pprev = &n->next;
	*pp = n;
	uint64_t *w = &a->bin_mask[b / 64];
	if (*w == 0)
		a->bin_words[b / 64 / 64] |= (uint64_t)1 << (b / 64 % 64);
	*w |= (uint64_t)1 << (b % 64);
}

/* bin_insert() of a span longer than EXACT_UNITS: in its bin's list in
 * order of length, before the first as long (so LIFO among equal lengths,
 * as in an exact bin). Out of line: the exact bins' inserts (most) keep
 * their few instructions. */
ARR_HOT static __attribute__((noinline)) void bin_insert_sorted(struct arr__span_arena *a, struct arr__span_node *n,
								unsigned len)
{
	unsigned b = bin_of(len);
	struct arr__span_node **pp = &a->bins[b], *q;
	while ((q = *pp) != NULL && node_len(q) < len)
		pp = &q->next;
	bin_link(a, n, pp, b);
}

/* Put the free span of node n (len units; its tags set) in its bin. */
static inline __attribute__((always_inline)) void bin_insert(struct arr__span_arena *a, struct arr__span_node *n,
							     unsigned len)
{
	if (len > EXACT_UNITS) {
		bin_insert_sorted(a, n, len);
		return;
	}
	bin_link(a, n, &a->bins[len], len);
}

static void bin_remove(struct arr__span_arena *a, struct arr__span_node *n)
{
	/* The link to n (pprev) is the bin's head or the previous node's next:
	 * no test for the head. A bin empties only when n was its last node, a
	 * head with no next: then pprev is inside bins[] and says the bin, so
	 * neither the bin of the length nor the head is looked up. */
	struct arr__span_node *next = n->next, **pp = n->pprev;
	*pp = next;
	if (next != NULL) {
		next->pprev = pp;
		return;
	}
	uintptr_t off = (uintptr_t)pp - (uintptr_t)a->bins;
	if (off >= sizeof a->bins)
		return; /* not the head: the bin keeps the nodes before n */
	unsigned b = (unsigned)(off / sizeof a->bins[0]);
	if ((a->bin_mask[b / 64] &= ~((uint64_t)1 << (b % 64))) == 0)
		a->bin_words[b / 64 / 64] &= ~((uint64_t)1 << (b / 64 % 64));
}

/* (links as the bins': lpprev is the link to the node, so neither the
 * head nor the tail is a case of its own) */
static void lru_append(struct arr__span_arena *a, struct arr__span_node *n, unsigned len)
{
	ARR__ASSERT(a->lru_tailp != NULL && *a->lru_tailp == NULL);
	n->lnext = NULL;
	n->lpprev = a->lru_tailp;
	*a->lru_tailp = n;
	a->lru_tailp = &n->lnext;
	a->lru_units += len;
}

static void lru_remove(struct arr__span_arena *a, struct arr__span_node *n, unsigned len)
{
	struct arr__span_node *next = n->lnext, **pp = n->lpprev;
	*pp = next;
	if (next != NULL)
		next->lpprev = pp;
	else
		a->lru_tailp = pp;
	a->lru_units -= len;
}

/* Take the free span at u (len units) out of the bins and the lru; its
 * node goes back to the free slots. */
static void free_unlink(struct arr__span_arena *a, struct arr__spanseg *s, unsigned u, unsigned len)
{
	struct arr__span_node *n = node_at(s, u);
	bin_remove(a, n);
	if (arr__sp_tag(s, u) & T_DIRTY)
		lru_remove(a, n, len);
	node_release(s, n);
}

/* OS pages wholly inside units [u, u + len): [*lo, *hi). */
static void inner_pages(unsigned u, unsigned len, unsigned *lo, unsigned *hi)
{
	*lo = (u + UNITS_PER_OSPAGE - 1) / UNITS_PER_OSPAGE;
	*hi = (u + len) / UNITS_PER_OSPAGE;
	if (*hi < *lo)
		*hi = *lo;
}

/* Bits [lo, hi) of a bitmap, word at a time (a 1 MiB block spans 256 OS
 * pages: bit by bit, these loops were a third of arr__span_alloc's time).
 * The first and last words of the range take a mask, the ones between are
 * whole. */
static inline uint64_t mask_from(unsigned lo) { return ~(uint64_t)0 << (lo % 64); }
static inline uint64_t mask_upto(unsigned hi) { return ~(uint64_t)0 >> (63 - (hi - 1) % 64); } /* bits < hi */

/* A word's set bits. Most words a carve looks at are 0 (reused memory has
 * no clean page): the count skipped for them (when it was libgcc's call, 5 %
 * of a serial `large` replay's instructions before this test). */
static inline unsigned pop(uint64_t x) { return x ? (unsigned)arr__popcount64(x) : 0; }

ARR_HOT static unsigned bits_count(const uint64_t *map, unsigned lo, unsigned hi)
{
	if (hi <= lo)
		return 0;
	unsigned wl = lo / 64, wh = (hi - 1) / 64;
	if (wl == wh)
		return pop(map[wl] & mask_from(lo) & mask_upto(hi));
	unsigned n = pop(map[wl] & mask_from(lo)) + pop(map[wh] & mask_upto(hi));
	for (unsigned w = wl + 1; w < wh; w++)
		n += pop(map[w]);
	return n;
}

/* OS pages touched by units [u, u + len): [*lo, *hi). */
static inline void touched_pages(unsigned u, unsigned len, unsigned *lo, unsigned *hi)
{
	*lo = u / UNITS_PER_OSPAGE;
	*hi = (u + len + UNITS_PER_OSPAGE - 1) / UNITS_PER_OSPAGE;
}

/* Does any OS page touched by units [u, u + len) lack a resident copy
 * (known zero)? */
static inline __attribute__((always_inline)) bool range_any_clean(const struct arr__spanseg *s, unsigned u,
								  unsigned len)
{
	unsigned lo, hi;
	touched_pages(u, len, &lo, &hi);
	unsigned wl = lo / 64, wh = (hi - 1) / 64;
	if (wl == wh)
		return (s->clean[wl] & mask_from(lo) & mask_upto(hi)) != 0;
	uint64_t any = (s->clean[wl] & mask_from(lo)) | (s->clean[wh] & mask_upto(hi));
	for (unsigned w = wl + 1; w < wh; w++)
		any |= s->clean[w];
	return any != 0;
}

/* The OS pages touched by units [u, u + len) become dirty (a block is
 * written there); returns how many of them were known zero (now resident). */
ARR_HOT static __attribute__((noinline)) unsigned range_take_clean(struct arr__spanseg *s, unsigned u, unsigned len)
{
	unsigned lo, hi, n = 0;
	touched_pages(u, len, &lo, &hi);
	unsigned wl = lo / 64, wh = (hi - 1) / 64;
	for (unsigned w = wl; w <= wh; w++) {
		uint64_t m = (w == wl ? mask_from(lo) : ~(uint64_t)0) & (w == wh ? mask_upto(hi) : ~(uint64_t)0);
		uint64_t c = s->clean[w] & m;
		if (c != 0) {
			n += pop(c);
			s->clean[w] &= ~m;
		}
	}
	return n;
}

/* Most carves reuse resident memory, with no clean page to take: a loop
 * without the count's call (libgcc's popcount), which made the inlined
 * loop save and reload a dozen registers around it (carve: 205
 * instructions a call on a serial `large` replay). */
static inline unsigned range_take(struct arr__spanseg *s, unsigned u, unsigned len)
{
	return range_any_clean(s, u, len) ? range_take_clean(s, u, len) : 0;
}

static unsigned dirty_pages(const struct arr__spanseg *s, unsigned lo, unsigned hi)
{
	return hi > lo ? hi - lo - bits_count(s->clean, lo, hi) : 0;
}

/* Before a calloc's carve takes them: which OS pages the block touches are
 * known zero (n = 0 if none: all of it is cleared, no bit to read). */
static inline void zero_snapshot(const struct arr__spanseg *s, unsigned u, unsigned len, struct arr__span_zeroed *z)
{
	z->n = 0;
	if (!range_any_clean(s, u, len))
		return;
	unsigned lo, hi;
	touched_pages(u, len, &lo, &hi);
	ARR__ASSERT(hi - lo <= 64 * sizeof z->clean / sizeof z->clean[0]);
	memset(z->clean, 0, sizeof z->clean);
	for (unsigned k = lo; k < hi; k++)
		if (s->clean[k / 64] >> (k % 64) & 1)
			z->clean[(k - lo) / 64] |= (uint64_t)1 << ((k - lo) % 64);
	z->n = hi - lo;
}

/* ---- segments ---- */

ARR_HOT static struct arr__spanseg *seg_new(struct arr__span_arena *a)
{
	struct arr__spanseg *s = arr__os_map_aligned(ARR__SEG_SIZE, ARR__SEG_SIZE);
	if (s == NULL)
		return NULL;
	s->seg.kind = 2;
	s->arena = arena_index(a);
	if (a->lru_tailp == NULL) /* the arena's first segment: its lru is empty */
		a->lru_tailp = &a->lru_head;
	for (unsigned k = 0; k < ARR__SLICES; k++) {
		s->seg.pages[k].flags = ARR__PF_SPAN;
		s->seg.pages[k].cls = ARR__NCLASSES;
	}
	for (unsigned k = FIRST_UNIT / UNITS_PER_OSPAGE; k < OSPAGES; k++)
		s->clean[k / 64] |= (uint64_t)1 << (k % 64);
	struct arr__span_node *n = node_new(s, FIRST_UNIT);
	set_tags(s, FIRST_UNIT, DATA_UNITS, T_FREE | slot_bits(s, n));
	bin_insert(a, n, DATA_UNITS);
	s->next = a->segs;
	a->segs = s;
	a->nsegs++;
	arr__segmap_set(s, true);
	return s;
}

/* Under the lock: the segment s is wholly free and clean; unmap it. */
static void seg_drop(struct arr__span_arena *a, struct arr__spanseg *s)
{
	/* a resident page here would stay in a->resident after the unmap */
	ARR__ASSERT(dirty_pages(s, FIRST_UNIT / UNITS_PER_OSPAGE, OSPAGES) == 0);
	bin_remove(a, node_at(s, FIRST_UNIT));
	for (struct arr__spanseg **pp = &a->segs; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	a->nsegs--;
	arr__segmap_set(s, false);
	arr__os_unmap(s, ARR__SEG_SIZE);
}

/* ---- decay ---- */

/* Op-clock ticks a free span stays resident: purge_delay for each thread
 * holding a heap (the clock sums their operations); < 0: never. */
static long long decay_ops(void)
{
	long long d = arr__purge_delay_now(); /* shorter while the program is young */
	return d > 0 ? d * arr__purge_scale() : d;
}

/* Does a freed span go at once (purge_delay 0: nothing kept)? What every
 * span-heap free asks; decay_ops() reads the op clock and divides twice
 * (a tenth of a span free's instructions) to say the same: the young
 * program's delay is never below ARR__YOUNG_MIN, so the decay is 0 only
 * when purge_delay is. */
static inline bool decay_at_once(void)
{
	bool now = arr__opt.purge_delay == 0;
	ARR__ASSERT(now == (decay_ops() == 0));
	return now;
}

struct busy {
	struct arr__spanseg *s;
	unsigned u, len;
};

/* What a purge takes from the lru's head: the spans whose decay expired,
 * every dirty one, or the oldest until `goal` OS pages are collected (the
 * trim): of those free for TRIM_AGE_DIV-th of the decay (PURGE_TRIM) or
 * any (PURGE_TRIM_ALL; see trim_goal()); or the oldest until `goal` pages
 * while more than grow_keep() units wait (PURGE_GROW, arr__span_purge_for_growth). */
enum purge_why { PURGE_EXPIRED, PURGE_ALL, PURGE_TRIM, PURGE_TRIM_ALL, PURGE_TRIM_IDLE, PURGE_GROW };
#define TRIM_AGE_DIV 8

/* The free resident units a growth purge leaves on the lru (its youngest):
 * an eighth of the live blocks' plus the decay's small cache. */
#define GROW_KEEP_DIV 8
static inline uint64_t grow_keep(const struct arr__span_arena *a)
{
	return a->live_units / GROW_KEEP_DIV + CACHE_UNITS;
}

/* Under the lock: mark up to PURGE_BATCH spans BUSY, out of the bins and
 * the lru, and their resident page runs in iov. Returns the number of
 * spans. */
ARR_HOT static unsigned purge_collect(struct arr__span_arena *a, enum purge_why why, uint64_t goal, struct busy *out,
				      struct iovec *iov, unsigned *niov)
{
	long long decay = decay_ops();
	uint64_t now = arr__pool_clock(), pages = 0, due_at;
	bool due = arr__purge_limit(now, arr__purge_scale(), &due_at);
	unsigned n = 0;
	*niov = 0;
	if (decay < 0 && why != PURGE_ALL)
		return 0;
	while (a->lru_head && n < PURGE_BATCH && *niov < PURGE_BATCH) {
		struct arr__span_node *nd = a->lru_head;
		if (why == PURGE_EXPIRED &&
		    (a->lru_units <= (decay == 0 ? 0 : CACHE_UNITS) || !due || nd->stamp > due_at))
			break;
		if ((why == PURGE_TRIM || why == PURGE_TRIM_ALL || why == PURGE_TRIM_IDLE) && pages >= goal)
			break;
		if (why == PURGE_TRIM && decay > 0 && now - nd->stamp < (uint64_t)decay / TRIM_AGE_DIV)
			break;
		if (why == PURGE_TRIM_IDLE && nd->stamp >= a->trim_clock)
			break;
		if (why == PURGE_GROW && (pages >= goal || a->lru_units <= grow_keep(a)))
			break;
		struct arr__spanseg *s = seg_of_node(nd);
		unsigned u = nd->unit, len = arr__sp_tag(s, u) & T_LEN;
		free_unlink(a, s, u, len);
		set_tags(s, u, len, T_BUSY);
		unsigned lo, hi;
		inner_pages(u, len, &lo, &hi);
		/* only the runs not known clean: madvise of absent pages still
		 * walks the page tables */
		for (unsigned k = lo; k < hi && *niov < PURGE_BATCH;) {
			if (s->clean[k / 64] >> (k % 64) & 1) {
				k++;
				continue;
			}
			unsigned j = k;
			while (j < hi && !(s->clean[j / 64] >> (j % 64) & 1))
				j++;
			iov[(*niov)++] =
				(struct iovec){(uint8_t *)s + (size_t)k * ARR__OS_PAGE, (size_t)(j - k) * ARR__OS_PAGE};
			a->purged_pages += j - k;
			pages += j - k;
			k = j;
		}
		out[n++] = (struct busy){s, u, len};
		a->busy_spans++;
	}
	return n;
}

/* Under the lock: insert the free span [u, u + len), merged with its free
 * neighbours. `dirty`: freed now (resident; on the lru with the clock's
 * stamp). Not dirty (just purged): merged into a dirty neighbour, it takes
 * that one's place and stamp on the lru (the younger one's if both are).
 * Returns the merged span's start. */
ARR_HOT static unsigned free_insert(struct arr__span_arena *a, struct arr__spanseg *s, unsigned u, unsigned len,
				    bool dirty)
{
	struct arr__span_node *keep = NULL;
	bool was_dirty = dirty;
	unsigned ends[2] = {u > FIRST_UNIT ? u - 1 : UNITS, u + len}, zeroed[4], nz = 0;
	for (int side = 0; side < 2; side++) {
		unsigned e = ends[side];
		if (e >= UNITS || (arr__sp_tag(s, e) & T_STATE) != T_FREE)
			continue;
		unsigned nl = arr__sp_tag(s, e) & T_LEN, nu = side == 0 ? e + 1 - nl : e;
		struct arr__span_node *n = node_at(s, nu);
		bool nd = arr__sp_tag(s, nu) & T_DIRTY;
		bin_remove(a, n);
		if (nd && !dirty && (keep == NULL || n->stamp > keep->stamp)) {
			if (keep != NULL) {
				lru_remove(a, keep, 0);
				node_release(s, keep);
			}
			keep = n;
			a->lru_units -= nl; /* in its place; counted again below */
		} else {
			if (nd)
				lru_remove(a, n, nl);
			node_release(s, n);
		}
		was_dirty |= nd;
		/* the boundaries merged away */
		arr__sp_tag_set(s, nu, 0);
		arr__sp_tag_set(s, nu + nl - 1, 0);
		zeroed[nz++] = nu;
		zeroed[nz++] = nu + nl - 1;
		if (side == 0) {
			u = nu;
			len += nl;
			ends[1] = u + len;
		} else {
			len += nl;
		}
	}
	struct arr__span_node *n = keep ? keep : node_new(s, u);
	n->unit = u;
	set_tags(s, u, len, T_FREE | (was_dirty ? T_DIRTY : 0) | slot_bits(s, n));
	for (unsigned k = 0; k < nz; k++)
		arr__sp_tag_settle(s, zeroed[k]);
	bin_insert(a, n, len);
	if (keep != NULL) {
		a->lru_units += len;
	} else if (was_dirty) {
		n->stamp = arr__pool_clock();
		lru_append(a, n, len);
	}
	return u;
}

/* Under the lock: free_insert() for a block just freed (dirty), merged with
 * its free neighbours. The merged span reuses a merged neighbour's node
 * (no slot released and taken again) and goes to the lru's tail with the
 * clock's stamp, as free_insert() would put it: that one's general path
 * (the lru place a purged span inherits) was a sixth of a `large`
 * replay's instructions. The block's own tags (at u, u + len - 1) are
 * zeroed only where a merge makes them inner ones: otherwise the free
 * span's tags overwrite them. */
ARR_HOT static __attribute__((noinline)) void free_coalesce(struct arr__span_arena *a, struct arr__spanseg *s,
							    unsigned u, unsigned len)
{
	struct arr__span_node *n = NULL;
	uint32_t slot = 0; /* n's slot bits, from its tag */
	unsigned e = u + len, left = 0;
	if (u > FIRST_UNIT) {
		uint32_t lt = arr__sp_tag(s, u - 1);
		if ((lt & T_STATE) == T_FREE) {
			unsigned nl = lt & T_LEN, nu = u - nl;
			uint32_t ft = arr__sp_tag(s, nu);
			n = node_of_tag(s, ft);
			slot = ft & SLOT_BITS;
			bin_remove(a, n);
			if (lt & T_DIRTY)
				lru_remove(a, n, nl);
			/* the boundary merged away: the neighbour's last, the block's first */
			arr__sp_tag_set(s, u - 1, 0);
			arr__sp_tag_set(s, u, 0);
			left = u;
			u = nu;
			len += nl;
		}
	}
	if (e < UNITS) {
		uint32_t rt = arr__sp_tag(s, e);
		if ((rt & T_STATE) == T_FREE) {
			unsigned nl = rt & T_LEN;
			struct arr__span_node *r = node_of_tag(s, rt);
			bin_remove(a, r);
			if (rt & T_DIRTY)
				lru_remove(a, r, nl);
			arr__sp_tag_set(s, e - 1, 0);
			arr__sp_tag_set(s, e, 0);
			len += nl;
			if (n == NULL) {
				n = r;
				slot = rt & SLOT_BITS;
			} else {
				node_release(s, r);
			}
		}
	}
	if (n == NULL) {
		n = node_new(s, u);
		slot = slot_bits(s, n);
	}
	ARR__ASSERT(slot == slot_bits(s, n));
	n->unit = u;
	set_tags(s, u, len, T_FREE | T_DIRTY | slot);
	/* the pages of the boundaries merged away may have no tag left (two
	 * units side by side: one page unless the second starts one) */
	if (left != 0) {
		arr__sp_tag_settle(s, left - 1);
		if (left % UNITS_PER_OSPAGE == 0)
			arr__sp_tag_settle(s, left);
	}
	if (e < u + len) {
		arr__sp_tag_settle(s, e - 1);
		if (e % UNITS_PER_OSPAGE == 0)
			arr__sp_tag_settle(s, e);
	}
	bin_insert(a, n, len);
	n->stamp = arr__pool_clock();
	lru_append(a, n, len);
}

/*
 * Under the lock: the span [u, u + len) just purged (its pages marked
 * clean, its tags still a busy or used span's) back among the free spans,
 * merged with its free neighbours; returns the merged span's start.
 * Resident pages are looked for over the merged span, not this one: an OS
 * page this span shared with a clean neighbour lay inside neither, so
 * neither purge took it, and it is inside now. Two purges at once make
 * that so: this span busy, its neighbour freed and purged by another thread
 * before this one relocks. Off the lru, nothing would purge such a page,
 * and the segment's unmap would leave it counted in a->resident.
 */
ARR_HOT static __attribute__((noinline)) unsigned insert_purged(struct arr__span_arena *a, struct arr__spanseg *s,
								unsigned u, unsigned len)
{
	arr__sp_tag_set(s, u, 0);
	arr__sp_tag_set(s, u + len - 1, 0);
	unsigned m = free_insert(a, s, u, len, false), ml, mh, mlen = arr__sp_tag(s, m) & T_LEN;
	arr__sp_tag_settle(s, u);
	arr__sp_tag_settle(s, u + len - 1);
	inner_pages(m, mlen, &ml, &mh);
	if (!(arr__sp_tag(s, m) & T_DIRTY) && dirty_pages(s, ml, mh) != 0) {
		/* not all purged (batch full, or a shared page): waits on the
		 * lru again */
		*arr__sp_tag_ref(s, m) |= T_DIRTY;
		*arr__sp_tag_ref(s, m + mlen - 1) |= T_DIRTY;
		node_at(s, m)->stamp = arr__pool_clock();
		lru_append(a, node_at(s, m), mlen);
	}
	return m;
}

/* Without the lock: purge, then put the spans back free and clean. */
ARR_HOT static void purge_finish(struct arr__span_arena *a, struct busy *b, unsigned n, struct iovec *iov,
				 unsigned niov)
{
	arr__os_purge_many(iov, niov);
	lock_take(&a->lock);
	for (unsigned k = 0; k < n; k++) {
		struct arr__spanseg *s = b[k].s;
		unsigned lo, hi;
		inner_pages(b[k].u, b[k].len, &lo, &hi);
		/* the batch may have stopped inside this span: mark only what the
		 * iovecs covered */
		for (unsigned i = 0; i < niov; i++) {
			uint8_t *p = iov[i].iov_base;
			if (seg_of(p) != s)
				continue;
			unsigned pa = (unsigned)((p - (uint8_t *)s) / ARR__OS_PAGE);
			unsigned e = pa + (unsigned)(iov[i].iov_len / ARR__OS_PAGE);
			if (pa < lo || e > hi)
				continue;
			resident_add(a, -(int64_t)((e - pa) - bits_count(s->clean, pa, e)));
			for (unsigned j = pa; j < e; j++)
				s->clean[j / 64] |= (uint64_t)1 << (j % 64);
		}
		unsigned u = insert_purged(a, s, b[k].u, b[k].len);
		a->busy_spans--;
		if (u == FIRST_UNIT && (arr__sp_tag(s, u) & T_LEN) == DATA_UNITS && !(arr__sp_tag(s, u) & T_DIRTY) &&
		    a->nsegs > 1)
			seg_drop(a, s);
	}
	ARR__ASSERT_EXPENSIVE(arena_is_valid_locked(a));
	lock_give(&a->lock);
}

/* Called with the lock held; releases it. */
ARR_HOT static void unlock_and_purge(struct arr__span_arena *a)
{
	struct busy b[PURGE_BATCH];
	struct iovec iov[PURGE_BATCH];
	unsigned niov, n = purge_collect(a, PURGE_EXPIRED, 0, b, iov, &niov);
	lock_give(&a->lock);
	if (n)
		purge_finish(a, b, n, iov, niov);
}

/*
 * The trim: an arena whose resident pages exceed TRIM_RATIO x its live
 * blocks' plus TRIM_FLOOR purges its oldest free spans, long before their
 * decay, down to half of that (glibc trims its heap's top the same way, at
 * the free that crosses its threshold). The decay alone never fires in a
 * program that frees most of what it held and then stops calling malloc
 * (it counts operations), nor within n threads x 4 x purge_delay summed
 * operations: a 2-thread replay ended holding its 27 MB peak for 5 KB
 * live. The ratio is a loose one on purpose: a working set of 1 KiB-1 MiB
 * blocks replaced at random (mtwork `large`) swings its live bytes 3:1
 * with resident memory flat, and a trim at 2x purged what the next malloc
 * faulted in again (t1 private large steady: 91 k page faults against 5 k;
 * docs/notes/2026-12-01-allocator-rss-6.md); at 8x + 4 MiB it fires only
 * where a program has freed most of its memory.
 *
 * Only spans free for TRIM_AGE_DIV-th of the decay are trimmed, unless the
 * arena holds more than TRIM_ALL_RATIO x its live pages (+ the floor): the
 * program has let go of nearly everything, and then all of it goes at
 * once. Why: a working set that shrinks and grows again (mtwork's waves)
 * crossed 8x in every trough, and the trim purged what the next rise
 * faulted in again: twice the page faults of the same replay without it,
 * for the same peak (t4 shared large wave 112 k faults, 35 k with the age
 * bound; CPU 479 -> 237 ms; docs/notes/2026-12-01-allocator-time.md).
 */
#define TRIM_RATIO 8
#define TRIM_ALL_RATIO 32
#define TRIM_FLOOR_PAGES (((size_t)4 << 20) / ARR__OS_PAGE)
#define TRIM_ROUNDS 8

/* Under the lock: how many resident pages a trim should give back, 0 if
 * none is due. */
static uint64_t trim_goal(const struct arr__span_arena *a)
{
	uint64_t live = (a->live_units + UNITS_PER_OSPAGE - 1) / UNITS_PER_OSPAGE;
	if (arr__opt.purge_delay < 0 || a->resident <= TRIM_RATIO * live + TRIM_FLOOR_PAGES)
		return 0;
	return a->resident - (TRIM_RATIO / 2 * live + TRIM_FLOOR_PAGES / 2);
}

/* trim_goal() != 0, the test every free makes, as one compare: with D =
 * resident - TRIM_FLOOR_PAGES, resident > 8 ceil(live / 16) + floor iff
 * ceil(live / 16) <= ceil(D / 8) - 1 = K iff live <= 16 K, so the bound on
 * live units moves only with `resident` (a carve of fresh pages, a purge)
 * and is kept with it (resident_add()); 0 (never: live units are not
 * negative) while D <= 0. */
static inline int64_t trim_lim_of(uint64_t resident)
{
	_Static_assert(TRIM_RATIO == 8 && UNITS_PER_OSPAGE == 16, "trim_lim_of() follows trim_goal()");
	int64_t d = (int64_t)resident - (int64_t)TRIM_FLOOR_PAGES;
	return d <= 0 ? 0 : 16 * ((d + 7) / 8 - 1) + 1;
}

static inline void resident_add(struct arr__span_arena *a, int64_t pages)
{
	a->resident += (uint64_t)pages;
	a->trim_lim = trim_lim_of(a->resident);
}

static inline bool trim_due(const struct arr__span_arena *a)
{
	bool due = arr__opt.purge_delay >= 0 && (int64_t)a->live_units < a->trim_lim;
	ARR__ASSERT(due == (trim_goal(a) != 0));
	return due;
}

/*
 * The trim's bet. A trim of everything (PURGE_TRIM_ALL) gives back what a
 * program let go of, on the bet that it will not want it again soon. A
 * program that frees nearly all it holds and builds it up again, round
 * after round (mimalloc-bench's mstress: two threads fill a working set
 * and free it, 25 rounds; the bench's `refill`), loses every time, and
 * faults every round's span pages in again (glibc trims only the top of a
 * heap, so what a round frees below a live chunk stays for the next). The
 * next trim settles the bet: lost if the arena regrew by half of what the
 * trim gave back (trim_regret += 2, at most TRIM_REGRET_MAX), won
 * otherwise (-= 1). While the score is TRIM_REGRET_OFF or more, the trim
 * that would have taken everything takes, once a round (the first after
 * TRIM_ROUND_MALLOCS span mallocs), only the free spans no round has
 * reused since the last such trim (PURGE_TRIM_IDLE: on the lru since
 * before trim_clock): what this round freed waits for the next, what the
 * rounds leave unused goes, and a program that stops coming back wins
 * those bets and is trimmed whole again. Keeping every round's pages
 * instead kept their union, and the peak rose with it. The age-bounded
 * trims of a working set that shrinks without letting go (mtwork's waves,
 * whose rises take back what the troughs' trims gave) are no bets: they
 * take only what the decay's eighth says is idle already. The pages kept
 * serve the next round only if it carves them: fit_kept(), below.
 * docs/notes/2026-12-07-trim-bet.md has the measurements.
 */
#define TRIM_REGRET_OFF 4
#define TRIM_REGRET_MAX 8
#define TRIM_ROUND_MALLOCS 64

/* Under the lock: settle the last trim's bet (above). */
static void trim_bet_settle(struct arr__span_arena *a)
{
	if (a->trim_gave == 0)
		return;
	uint64_t regrew = a->resident > a->trim_after ? a->resident - a->trim_after : 0;
	unsigned r = a->trim_regret;
	if (regrew >= a->trim_gave / 2)
		r = r + 2 < TRIM_REGRET_MAX ? r + 2 : TRIM_REGRET_MAX;
	else if (r > 0)
		r--;
	a->trim_regret = r;
	a->trim_gave = a->trim_after = 0;
}

/* Called with the lock held; releases it. A purged span that merges with a
 * dirty neighbour, or takes in a resident page it shared with a clean one,
 * stays on the lru (resident drops, lru_units does not), so the rounds are
 * bounded: TRIM_ROUNDS batches at most per call. */
static void unlock_and_trim(struct arr__span_arena *a)
{
	trim_bet_settle(a);
	uint64_t gave = 0, idle_at = 0;
	for (unsigned round = 0; round < TRIM_ROUNDS; round++) {
		uint64_t goal = trim_goal(a);
		struct busy b[PURGE_BATCH];
		struct iovec iov[PURGE_BATCH];
		uint64_t live = (a->live_units + UNITS_PER_OSPAGE - 1) / UNITS_PER_OSPAGE;
		bool all = a->resident > TRIM_ALL_RATIO * live + TRIM_FLOOR_PAGES;
		enum purge_why why = !all                               ? PURGE_TRIM
				     : a->trim_regret < TRIM_REGRET_OFF ? PURGE_TRIM_ALL
									: PURGE_TRIM_IDLE;
		if (why == PURGE_TRIM_IDLE) {
			/* once a round: at the first trim after TRIM_ROUND_MALLOCS
			 * mallocs, what stayed free since the last such trim */
			if (a->nmallocs - a->trim_mallocs < TRIM_ROUND_MALLOCS)
				break;
			idle_at = arr__pool_clock();
			a->trim_mallocs = a->nmallocs;
		}
		unsigned niov, n = goal ? purge_collect(a, why, goal, b, iov, &niov) : 0;
		if (n == 0)
			break;
		uint64_t before = a->resident;
		lock_give(&a->lock);
		purge_finish(a, b, n, iov, niov);
		lock_take(&a->lock);
		if (all && a->resident < before)
			gave += before - a->resident;
	}
	if (gave != 0) { /* the bet: will the arena grow back? */
		a->trim_gave = gave;
		a->trim_after = a->resident;
	}
	if (idle_at != 0)
		a->trim_clock = idle_at; /* what is free from now on was not reused since */
	else if (gave != 0)              /* (the idle trims follow lost bets: the clock is set by then) */
		a->trim_clock = arr__pool_clock();
	lock_give(&a->lock);
}

/* Called with the lock held; releases it. Every TICK_OPS operations of
 * the span heap, and at every heap tick (arr__span_tick), not more often:
 * purges come in batches. */
ARR_HOT static __attribute__((noinline)) void unlock_and_tick_slow(struct arr__span_arena *a)
{
	a->tick_left = TICK_OPS;
	/* the walk is O(segments x units): every 16th tick, not every operation */
	if (ARR_DEBUG >= 2 && a->ticks++ % 16 == 0)
		ARR__ASSERT_EXPENSIVE(arena_is_valid_locked(a));
	unlock_and_purge(a);
}

/* `trim`: whether to test for a trim. A malloc that made no page resident
 * leaves resident memory as it was and live memory higher, so it cannot
 * make a trim due: only frees and mallocs that take fresh pages test. */
static inline __attribute__((always_inline)) void unlock_and_tick_if(struct arr__span_arena *a, bool trim)
{
	if (trim && ARR_UNLIKELY(trim_due(a))) {
		unlock_and_trim(a);
		return;
	}
	if (ARR_LIKELY(a->tick_left > 0)) {
		lock_give(&a->lock);
		return;
	}
	unlock_and_tick_slow(a);
}

static void unlock_and_tick(struct arr__span_arena *a) { unlock_and_tick_if(a, true); }

/* arr__span_resident_pages() of the arenas after the first. Out of line:
 * with span_arenas > 1 only. */
static __attribute__((noinline)) uint64_t resident_rest(void)
{
	uint64_t n = 0;
	for (unsigned k = 1, used = arenas_used(); k < used; k++)
		n += __atomic_load_n(&arenas[k].resident, __ATOMIC_RELAXED);
	return n;
}

ARR_HOT uint64_t arr__span_resident_pages(void)
{
	uint64_t n = __atomic_load_n(&arenas[0].resident, __ATOMIC_RELAXED);
	return ARR_UNLIKELY(atomic_load_explicit(&arenas_hi, memory_order_acquire) != 0) ? n + resident_rest() : n;
}

/* Every arena, the idle ones too: a thread's tick decays the memory an
 * exited thread's arena holds (a heap's ticks are its own operations). */
static void tick_arena(struct arr__span_arena *a)
{
	if (a->lru_head == NULL) /* racy: a miss waits for the next tick */
		return;
	lock_take(&a->lock);
	unlock_and_purge(a);
}

/* arr__span_tick() of the arenas after the first. Out of line: with
 * span_arenas > 1 only. */
static __attribute__((noinline)) void tick_rest(void)
{
	for (unsigned k = 1, used = arenas_used(); k < used; k++)
		tick_arena(&arenas[k]);
}

ARR_HOT void arr__span_tick(void)
{
	tick_arena(&arenas[0]);
	if (ARR_UNLIKELY(atomic_load_explicit(&arenas_hi, memory_order_acquire) != 0))
		tick_rest();
}

/* ---- the entry points ---- */

/* The first non-empty bin from b (1 <= b <= NBINS) on, then LONGER_BIN;
 * NBINS if none. */
static inline __attribute__((always_inline)) unsigned bin_next(const struct arr__span_arena *a, unsigned b)
{
	unsigned w = b / 64;
	uint64_t m = b < NBINS ? a->bin_mask[w] & (~(uint64_t)0 << (b % 64)) : 0;
	if (m == 0) {
		/* the first non-zero word after w */
		unsigned x = w + 1;
		uint64_t wm = x < BIN_WORDS ? a->bin_words[x / 64] & (~(uint64_t)0 << (x % 64)) : 0;
		for (unsigned k = x / 64 + 1; wm == 0 && k < MASK_WORDS; k++) {
			x = k * 64;
			wm = a->bin_words[k];
		}
		if (wm == 0)
			return a->bin_mask[0] & 1 ? LONGER_BIN : NBINS;
		w = (x / 64) * 64 + (unsigned)__builtin_ctzll(wm);
		m = a->bin_mask[w];
	}
	return w * 64 + (unsigned)__builtin_ctzll(m);
}

/* Spans after the best fit's first that best_fit() looks at for a resident
 * one as long. */
#define BIN_SCAN 8

/* Free spans at the lru's head that fit_kept() looks at. */
#define KEPT_SCAN 64

/*
 * Best fit would make fresh pages resident while the arena keeps what its
 * trims would have given back (trim_regret, the trim's bet): the shortest of
 * the KEPT_SCAN oldest free spans on the lru whose first need units are
 * resident, or n. Keeping the pages is only worth it if the next round
 * carves them, and best fit goes by length alone: it takes a shorter clean
 * span, or the low end of a span whose pages there were purged, while the
 * kept pages wait beside the fresh ones, and the arena's resident pages
 * grow round after round to the union of the rounds' layouts. Only then:
 * for a working set replaced at random best fit's own choice keeps the
 * peak lower (the matrix's t1 private large steady +6 % with this fit
 * always on).
 */
static __attribute__((noinline)) struct arr__span_node *fit_kept(struct arr__span_arena *a, struct arr__span_node *n,
								 unsigned need)
{
	if (a->lru_units < need || !range_any_clean(seg_of_node(n), n->unit, need))
		return n;
	struct arr__span_node *best = n;
	unsigned best_len = ~0u, k = 0;
	for (struct arr__span_node *q = a->lru_head; q != NULL && k < KEPT_SCAN; q = q->lnext, k++) {
		unsigned len = node_len(q);
		if (len >= need && len < best_len && !range_any_clean(seg_of_node(q), q->unit, need)) {
			best = q;
			best_len = len;
		}
	}
	return best;
}

/* n, the first of the shortest free spans that fit: if it is not resident
 * (a purged span put back at a bin's head would be faulted in while a dirty
 * one waits), the first resident one as long among the next BIN_SCAN of its
 * list; else, or if there is none, n, or fit_kept()'s choice while the
 * arena keeps what it would have trimmed. */
ARR_HOT static __attribute__((noinline)) struct arr__span_node *fit_resident(struct arr__span_arena *a,
									     struct arr__span_node *n, unsigned need)
{
	unsigned len = node_len(n), k = 0;
	if (!(arr__sp_tag(seg_of_node(n), n->unit) & T_DIRTY))
		for (struct arr__span_node *q = n->next; q != NULL && k < BIN_SCAN; q = q->next, k++) {
			uint32_t t = arr__sp_tag(seg_of_node(q), q->unit);
			if ((t & T_LEN) != len)
				break;
			if (t & T_DIRTY)
				return q;
		}
	if (ARR_UNLIKELY(a->trim_regret >= TRIM_REGRET_OFF))
		return fit_kept(a, n, need);
	return n;
}

/* best_fit() for more than EXACT_UNITS: the first that fits in need's
 * bin's list (in order of length), or the head of the next non-empty
 * bin's. Out of line: the mallocs of more than 128 KiB. */
ARR_HOT static __attribute__((noinline)) struct arr__span_node *best_fit_long(struct arr__span_arena *a, unsigned need)
{
	unsigned b = bin_of(need);
	struct arr__span_node *n = a->bins[b];
	while (n != NULL && node_len(n) < need)
		n = n->next;
	if (n == NULL) {
		b = bin_next(a, b + 1);
		if (b >= NBINS)
			return NULL;
		n = a->bins[b];
	}
	return n;
}

/* Under a's lock: the best fit for need units, the shortest free span of at
 * least need (the first non-empty bin from need's on; in a bin of several
 * lengths, whose list is in order of length, the first that fits), false
 * if none. */
static inline __attribute__((always_inline)) bool best_fit(struct arr__span_arena *a, unsigned need,
							   struct arr__spanseg **sp, unsigned *up)
{
	struct arr__span_node *n;
	if (ARR_LIKELY(need <= EXACT_UNITS)) {
		unsigned b = bin_next(a, need);
		if (b >= NBINS)
			return false;
		n = a->bins[b];
	} else {
		n = best_fit_long(a, need);
		if (n == NULL)
			return false;
	}
	n = fit_resident(a, n, need);
	*sp = seg_of_node(n);
	*up = n->unit;
	return true;
}

/* Would the block carved from the free span at u touch an OS page that is
 * not resident (where arr__span_alloc's carve puts it)? */
static bool carve_faults(const struct arr__spanseg *s, unsigned u, unsigned need, size_t size)
{
	unsigned len = arr__sp_tag(s, u) & T_LEN;
	unsigned at = len > need && size <= ARR__SPAN_SPARSE_MAX ? u + len - need : u;
	return range_any_clean(s, at, need);
}

/*
 * Under a's lock, its best fit would make fresh memory resident (or there
 * is none): the first other arena whose best fit is resident, locked (a
 * try: never waits, so no order between arena locks), with *sp, *up; NULL
 * if none. Without it each arena holds the peak of its own threads' free
 * memory until its decay: a 2-thread private `large` replay peaked 18 %
 * above one shared arena's, a 4-thread shared one 73 % (docs/allocator.md).
 * Only a malloc that would fault looks, so the steady state stays in its
 * arena.
 */
static __attribute__((noinline)) struct arr__span_arena *steal(struct arr__span_arena *a, unsigned need, size_t size,
							       struct arr__spanseg **sp, unsigned *up)
{
	unsigned n = arr__opt.span_arenas, self = arena_index(a), used = arenas_used();
	for (unsigned k = 1; k < n; k++) {
		if ((self + k) % n >= used)
			continue;
		struct arr__span_arena *o = &arenas[(self + k) % n];
		if (__atomic_load_n(&o->lru_units, __ATOMIC_RELAXED) == 0 || !lock_try(&o->lock))
			continue;
		if (o->lru_units != 0 && best_fit(o, need, sp, up) && !carve_faults(*sp, *up, need, size))
			return o;
		lock_give(&o->lock);
	}
	return NULL;
}

/* Under a's lock, which it releases: the block of need units for size
 * bytes from the free span at u; *zeroed (if zeroed) says what of it is
 * known zero, asked for a calloc (zero) only. */
static inline __attribute__((always_inline)) void *carve(struct arr__span_arena *a, struct arr__spanseg *s, unsigned u,
							 unsigned need, size_t size, bool zero,
							 struct arr__span_zeroed *zeroed);

/* carve() for a block of another arena (steal()): out of line, rare */
static __attribute__((noinline)) void *carve_stolen(struct arr__span_arena *a, struct arr__spanseg *s, unsigned u,
						    unsigned need, size_t size, bool zero,
						    struct arr__span_zeroed *zeroed)
{
	return carve(a, s, u, need, size, zero, zeroed);
}

/*
 * Heap h's malloc found its arena's lock taken. Every heap starts in arena 0
 * (one span heap, whose free memory every thread reuses at once); a heap
 * that keeps finding it taken (`span_split` times; 0: at its first malloc)
 * moves to an arena of its
 * own, dealt round-robin from the others. So threads that do not run at
 * once (a loaded machine, a program whose threads take turns) keep sharing
 * one heap's free memory, and only threads that would queue pay for arenas
 * of their own: each arena holds its own free memory until its decay, 7-12 %
 * more peak RSS than one on the `large` replays when every thread has one
 * from the start (docs/notes/2026-12-01-allocator-rss-4.md).
 */
static _Atomic unsigned arenas_dealt;

/* The next arena dealt round-robin from 1 to n - 1, arenas_hi raised to it
 * first. Out of line: once a thread, with span_arenas > 1 only. */
static __attribute__((noinline)) unsigned arena_deal(unsigned n)
{
	unsigned k = 1 + atomic_fetch_add_explicit(&arenas_dealt, 1, memory_order_relaxed) % (n - 1);
	unsigned hi = atomic_load_explicit(&arenas_hi, memory_order_relaxed);
	while (hi < k &&
	       !atomic_compare_exchange_weak_explicit(&arenas_hi, &hi, k, memory_order_release, memory_order_relaxed))
		;
	return k;
}

static void split(struct arr__heap *h, unsigned contended)
{
	unsigned n = arr__opt.span_arenas;
	if (h == &arr__heap_empty || n <= 1 || h->span_arena % n != 0)
		return;
	h->span_contended += contended;
	if (h->span_contended < arr__opt.span_split)
		return;
	h->span_arena = arena_deal(n);
}

static inline __attribute__((always_inline)) void *span_alloc(struct arr__heap *h, size_t size, bool zero,
							      struct arr__span_zeroed *zeroed)
{
	/* read once: the lock's acquire would load it again after it */
	unsigned narenas = arr__opt.span_arenas;
	/* (split() does nothing with one arena, the default: one test then) */
	if (ARR_UNLIKELY(narenas > 1 && arr__opt.span_split == 0))
		split(h, 0);
	/* heap h's thread's arena */
	struct arr__span_arena *a = &arenas[narenas > 1 ? h->span_arena % narenas : 0];
	__asm__("" : "+r"(a)); /* (as in arena_of_seg) */
	unsigned need = (unsigned)((size + UNIT - 1) >> UNIT_SHIFT);
	if (need == 0)
		need = 1;
	if (!lock_try(&a->lock)) {
		split(h, 1); /* from its next malloc on */
		lock_take(&a->lock);
	}
	struct arr__spanseg *s;
	unsigned u;
	bool found = best_fit(a, need, &s, &u);
	if (narenas > 1 && (!found || carve_faults(s, u, need, size))) {
		struct arr__spanseg *os;
		unsigned ou;
		struct arr__span_arena *o = steal(a, need, size, &os, &ou);
		if (o != NULL) {
			lock_give(&a->lock);
			return carve_stolen(o, os, ou, need, size, zero, zeroed);
		}
	}
	if (!found) {
		s = seg_new(a);
		if (s == NULL) {
			lock_give(&a->lock);
			return NULL;
		}
		u = FIRST_UNIT;
	}
	return carve(a, s, u, need, size, zero, zeroed);
}

/*
 * Which end of the free span [u, u + len) a block of need units is carved
 * from. By default a block of a sparse class takes the high end and a bigger
 * one the low end: small blocks carved where big ones are pin holes between
 * them. But when the default end would fault in known-zero pages that raise
 * the footprint's high-water mark while the other end has more of its pages
 * resident (freed there and waiting for their decay), the block takes the
 * other end: the case is a segment's last free span, grown at its low end by
 * big blocks and at its high end by sparse ones, which took the sparse
 * blocks' pages back when they were freed. Below the mark the fresh pages
 * raise no peak, and the default layout is kept (taking resident pages
 * there mixed big and sparse blocks: more peak on the `large` working sets,
 * docs/notes/2026-12-05-spanend.md).
 */
ARR_HOT static __attribute__((noinline)) bool carve_high(const struct arr__spanseg *s, unsigned u, unsigned len,
							 unsigned need, bool sparse)
{
	/* only the two ends' pages decide, not the whole span's (a segment's
	 * long free span has clean pages inside, which change nothing here);
	 * the default end with no clean page: the default end (the other
	 * is taken only for fewer fresh pages than the default's, below).
	 * Out of line: carve is inlined in both span-heap mallocs. */
	if (!(arr__sp_tag(s, u) & T_DIRTY) || !range_any_clean(s, sparse ? u + len - need : u, need))
		return sparse;
	unsigned lo, hi;
	touched_pages(u, need, &lo, &hi);
	unsigned fresh_low = bits_count(s->clean, lo, hi);
	touched_pages(u + len - need, need, &lo, &hi);
	unsigned fresh_high = bits_count(s->clean, lo, hi);
	if (fresh_high == fresh_low)
		return sparse;
	unsigned fresh = sparse ? fresh_high : fresh_low, other = sparse ? fresh_low : fresh_high;
	if (other > fresh || !arr__pool_would_grow(fresh))
		return sparse;
	return !sparse;
}

static inline __attribute__((always_inline)) void *carve(struct arr__span_arena *a, struct arr__spanseg *s, unsigned u,
							 unsigned need, size_t size, bool zero,
							 struct arr__span_zeroed *zeroed)
{
	uint32_t t = arr__sp_tag(s, u);
	unsigned len = t & T_LEN;
	ARR__ASSERT((t & T_STATE) == T_FREE && len >= need);
	bool dirty = t & T_DIRTY;
	/* the rest's tag: FREE, and the span's dirty bit and slot as they are */
	uint32_t rest = T_FREE | (t & (T_DIRTY | SLOT_BITS));
	struct arr__span_node *n = node_of_tag(s, t);
	ARR__ASSERT((rest & SLOT_BITS) == slot_bits(s, n));
	bin_remove(a, n);
	if (len > need && carve_high(s, u, len, need, size <= ARR__SPAN_SPARSE_MAX && !arr__span_growing)) {
		/* from the high end (carve_high), the rest keeps the low end
		 * and the node */
		unsigned rl = len - need;
		set_tags(s, u, rl, rest);
		bin_insert(a, n, rl);
		if (dirty)
			a->lru_units -= need;
		u += rl;
	} else if (len > need) {
		/* the rest stays free, with the node: same lru place and stamp */
		unsigned r = u + need, rl = len - need;
		n->unit = r;
		set_tags(s, r, rl, rest);
		bin_insert(a, n, rl);
		if (dirty)
			a->lru_units -= need;
	} else {
		if (dirty)
			lru_remove(a, n, len);
		node_release(s, n);
	}
	if (zeroed != NULL)
		zero_snapshot(s, u, need, zeroed);
	unsigned fresh = range_take(s, u, need);
	if (fresh != 0)
		resident_add(a, fresh);
	size_t usable = (size_t)need << UNIT_SHIFT;
	set_tags(s, u, need, T_USED | T_START | ((uint32_t)(usable - size) << T_SLACK_SHIFT));
	if (need > 1) /* the slack as requested now: what the span heap books */
		*arr__sp_tag_ref(s, u + need - 1) |= (uint32_t)(usable - size) << ARR__SP_T_XSLACK_SHIFT;
	a->live_units += need;
	a->live_req += size;
	a->nmallocs++;
	a->tick_left--;
	unlock_and_tick_if(a, fresh != 0);
	/* Growth: the pool's idle memory (kept huge mappings, dirty slices)
	 * cannot serve this; give back as much (as the pool does for its own). */
	if (ARR_UNLIKELY(fresh != 0))
		arr__pool_grow((size_t)fresh * ARR__OS_PAGE);
	if (zeroed != NULL) {
		unsigned npages = (u + need + UNITS_PER_OSPAGE - 1) / UNITS_PER_OSPAGE - u / UNITS_PER_OSPAGE;
		zeroed->all = zero && fresh == npages;
	}
	return unit_addr(s, u);
}

ARR_HOT void *arr__span_alloc(struct arr__heap *h, size_t size, bool zero, struct arr__span_zeroed *zeroed)
{
	return span_alloc(h, size, zero, zeroed);
}

size_t arr__calloc_fresh_min = ARR__GLIBC_MMAP_MIN;

/* calloc_clear() above the threshold: the whole pages given back, the
 * edges cleared. Out of the hot text: a small program never runs it. */
static __attribute__((noinline)) size_t calloc_give_back(uint8_t *p, size_t n)
{
	uint8_t *a = (uint8_t *)(((uintptr_t)p + ARR__OS_PAGE - 1) & ~(uintptr_t)(ARR__OS_PAGE - 1));
	uint8_t *b = (uint8_t *)((uintptr_t)(p + n) & ~(uintptr_t)(ARR__OS_PAGE - 1));
	if (b <= a) {
		memset(p, 0, n);
		return n;
	}
	memset(p, 0, (size_t)(a - p));
	memset(b, 0, (size_t)(p + n - b));
	arr__os_purge(a, (size_t)(b - a));
	return n - (size_t)(b - a);
}

/* Zero [p, p + n), resident memory of a calloc'd block of size bytes
 * (arr__calloc_fresh_min, internal.h); returns the bytes cleared with
 * memset, the rest given back. */
static inline size_t calloc_clear(uint8_t *p, size_t n, size_t size)
{
	if (size <= __atomic_load_n(&arr__calloc_fresh_min, __ATOMIC_RELAXED)) {
		memset(p, 0, n);
		return n;
	}
	return calloc_give_back(p, n);
}

/*
 * calloc of a span block not all known zero: only its bytes on the OS pages
 * that were not known zero before the carve are cleared. Its first and last
 * pages are mostly its neighbours' too, and resident: cleared whole, the
 * rest of a fresh block became resident with them (`git status` callocs a
 * 512 KB hash table beside a live block and writes little of it: 620 KB
 * resident against glibc's 88 in its replay without touches).
 */
ARR_HOT static void zero_dirty(struct arr__heap *h, uint8_t *p, size_t size, const struct arr__span_zeroed *z)
{
	if (z->n == 0) {
		size_t cleared = calloc_clear(p, size, size);
		h->calloc_zeroed += cleared;
		h->calloc_skipped += size - cleared;
		return;
	}
	uint8_t *base = (uint8_t *)((uintptr_t)p & ~(uintptr_t)(ARR__OS_PAGE - 1)), *end = p + size;
	size_t cleared = 0;
	for (unsigned i = 0; i < z->n;) {
		if (z->clean[i / 64] >> (i % 64) & 1) {
			i++;
			continue;
		}
		unsigned j = i + 1;
		while (j < z->n && !(z->clean[j / 64] >> (j % 64) & 1))
			j++;
		uint8_t *a = base + (size_t)i * ARR__OS_PAGE, *b = base + (size_t)j * ARR__OS_PAGE;
		if (a < p)
			a = p;
		if (b > end)
			b = end;
		if (b > a)
			cleared += calloc_clear(a, (size_t)(b - a), size);
		i = j;
	}
	h->calloc_zeroed += cleared;
	h->calloc_skipped += size - cleared;
}

static void cache_release(struct arr__heap *h, unsigned n);
static void sparse_release(struct arr__heap *h);

/* Every block of h's cache back to the span heap. */
static inline void cache_give_back(struct arr__heap *h)
{
	if (ARR_LIKELY(h->sc_n == 1 && arr__opt.span_cache == 0))
		sparse_release(h);
	else
		cache_release(h, h->sc_n);
}

/*
 * Would the span heap, given the cached block at u (len units) back, carve
 * the next block of len units right there? Surely when no free span
 * adjoins it: it would be the head of its length's bin, best fit's first.
 * Then the block is taken back and the arena left as the free and the
 * carve would have: the two operations counted toward its tick, the free's
 * trim test made as if the block were free (it is in use to the span heap:
 * not purged, where the free would have put it last on the decay list).
 * Otherwise, and while a realloc moves a block (it carves from the low
 * end), the block goes back: so the layout is what it would have been
 * without the cache.
 */
static inline bool sparse_cache_reuse(struct arr__spanseg *s, unsigned u, unsigned len)
{
	if (arr__span_growing)
		return false;
	struct arr__span_arena *a = arena_of_seg(s);
	lock_take(&a->lock);
	if ((u + len < UNITS && (arr__sp_tag(s, u + len) & T_STATE) == T_FREE) ||
	    (u > FIRST_UNIT && (arr__sp_tag(s, u - 1) & T_STATE) == T_FREE)) {
		lock_give(&a->lock);
		return false;
	}
	a->nfrees++;
	a->nmallocs++;
	a->tick_left -= 2;
	a->live_units -= len;
	if (ARR_UNLIKELY(trim_due(a))) {
		unlock_and_trim(a);
		lock_take(&a->lock);
	}
	a->live_units += len;
	unlock_and_tick_if(a, false);
	return true;
}

/* The takes in a row from which the cached block is taken back whether or
 * not best fit would have carved the request there (see sparse_cache_put);
 * the score (mallocs that wanted the length just freed, less those that did
 * not) from which frees are cached, and its most. */
#define SPARSE_STREAK 4
#define SPARSE_SCORE_ON 2
#define SPARSE_SCORE_MAX 8

/* The sparse cache's block for a malloc of size, if it is of the same
 * length in units and the layout allows (its slack then the request's), or
 * NULL after giving it back to the span heap (see sparse_cache_put). */
ARR_HOT static __attribute__((noinline)) uint8_t *sparse_cache_take(struct arr__heap *h, size_t size)
{
	uint8_t *p = h->sc[0].p;
	unsigned len = h->sc[0].len;
	struct arr__spanseg *s = seg_of(p);
	unsigned u = (unsigned)(((uintptr_t)p - (uintptr_t)s) >> UNIT_SHIFT);
	if (len != (unsigned)((size + UNIT - 1) >> UNIT_SHIFT)) {
		h->sc_streak = 0;
		cache_give_back(h);
		return NULL;
	}
	if (h->sc_streak < SPARSE_STREAK)
		h->sc_streak++;
	if (h->sc_streak < SPARSE_STREAK && !sparse_cache_reuse(s, u, len)) {
		cache_give_back(h);
		return NULL;
	}
	uint32_t first = arr__sp_tag(s, u), *lastp = arr__sp_tag_ref(s, u + len - 1);
	uint32_t slack = (uint32_t)(((size_t)len << UNIT_SHIFT) - size);
	/* not cached, the request's slack against the booked one */
	__atomic_store_n(lastp, (*lastp & (T_LEN | T_STATE)) | slack << ARR__SP_T_XSLACK_SHIFT, __ATOMIC_RELAXED);
	h->waste += (int64_t)slack - (int64_t)(first >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
	h->sc_n = 0;
	h->sc_units = 0;
	h->sc_req = 0;
	ARR__ASSERT_EXPENSIVE(arr__span_cache_is_valid(h));
	return p;
}

/* A span-heap malloc of size after the free of a block up to 8 KiB: did it
 * want the length just freed? (the sparse cache's score) */
static inline void sparse_observe(struct arr__heap *h, size_t size)
{
	bool same = h->sc_last == (size + UNIT - 1) >> UNIT_SHIFT;
	if (same && h->sc_score < SPARSE_SCORE_MAX)
		h->sc_score++;
	else if (!same && h->sc_score != 0)
		h->sc_score--;
	h->sc_last = 0;
}

/* A sparse class's plain malloc while a block waits in h's sparse cache
 * (heap.c arr__malloc_sparse, before its sparse test and arr__span_malloc's
 * path: the block is a span block whatever the class's state now). */
ARR_HOT void *arr__sparse_cache_try(struct arr__heap *h, size_t size)
{
	if (h->sc_n != 1 || arr__opt.span_cache != 0)
		return NULL;
	if (h->sc_last != 0)
		sparse_observe(h, size);
	uint8_t *p = sparse_cache_take(h, size);
	if (p != NULL)
		h->alloc_count++;
	return p;
}

/* arr__span_malloc() with a block cache, or for a calloc: out of line */
ARR_HOT static __attribute__((noinline)) void *span_malloc_slow(struct arr__heap *h, size_t size, bool zero)
{
	struct arr__span_zeroed z = {.all = false, .n = 0};
	uint8_t *p = NULL;
	if (arr__opt.span_cache == 0) {
		if (h->sc_last != 0)
			sparse_observe(h, size);
		if (h->sc_n == 1)
			p = sparse_cache_take(h, size); /* (freed once: dirty, z as it is) */
	}
	if (p == NULL)
		p = arr__span_cache_alloc(h, size, zero, &z);
	if (p == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	h->alloc_count++;
	if (zero) {
		if (z.all) { /* as a known-zero block of a class: each OS page written once */
			*(volatile uint8_t *)p = 0;
			arr__calloc_prefault(p, size);
			h->calloc_skipped += size;
		} else {
			zero_dirty(h, p, size, &z);
		}
	}
	return p;
}

/* (here, not in heap.c: malloc's tail call reaches the carve with no call
 * between, where heap.c's entry, the cache's and this one each saved and
 * restored the registers: ~40 instructions a malloc) */
ARR_HOT void *arr__span_malloc(struct arr__heap *h, size_t size, unsigned flags)
{
	ARR__ASSERT(h != &arr__heap_empty && (flags & ~ARR__ALLOC_ZERO) == 0);
	if (ARR_UNLIKELY(flags != 0 || h->sc_n != 0))
		return span_malloc_slow(h, size, flags & ARR__ALLOC_ZERO);
	if (h->sc_last != 0)
		sparse_observe(h, size);
	void *p = span_alloc(h, size, false, NULL);
	if (ARR_UNLIKELY(p == NULL)) {
		errno = ENOMEM;
		return NULL;
	}
	h->alloc_count++;
	return p;
}

#define FREE_INVALID "free(): invalid pointer (no span block in use there: freed already?)"

/* Set once a block has been cached, or its last tag says a request other
 * than the span heap booked (a realloc within its units, a grown block's
 * headroom); never cleared: until then no block is marked CACHED or has a
 * slack correction, and checked_unit() and the free skip the last tag. */
static _Atomic bool cache_used;

/* (a load first: the store would take the flag's line from the other CPUs at every call) */
static inline void cache_used_set(void)
{
	if (!atomic_load_explicit(&cache_used, memory_order_relaxed))
		atomic_store_explicit(&cache_used, true, memory_order_relaxed);
}

/* p's unit, a block in use's first (its tag in *tp), or fatal; the test of
 * a thread's cache (cached) is the caller's */
static inline unsigned checked_unit_tag(struct arr__spanseg *s, const void *p, const char *what, uint32_t *tp)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)s;
	unsigned u = (unsigned)(off >> UNIT_SHIFT);
	if (ARR__MISUSE((off & (UNIT - 1)) != 0 || u < FIRST_UNIT))
		arr__fatal(what, p);
	uint32_t t = arr__sp_tag(s, u);
	if (ARR__MISUSE((t & (T_STATE | T_START)) != (T_USED | T_START)))
		arr__fatal(what, p);
	*tp = t;
	return u;
}

/* free in a thread's cache: not in use either */
static inline void check_not_cached(struct arr__spanseg *s, const void *p, const char *what, unsigned u, uint32_t t)
{
	if (ARR__MISUSE((t & T_LEN) > 1 && u + (t & T_LEN) <= UNITS &&
			(arr__sp_tag(s, u + (t & T_LEN) - 1) & ARR__SP_T_CACHED)))
		arr__fatal(what, p);
}

static inline unsigned checked_unit(struct arr__spanseg *s, const void *p, const char *what)
{
	uint32_t t;
	unsigned u = checked_unit_tag(s, p, what, &t);
	if (atomic_load_explicit(&cache_used, memory_order_relaxed))
		check_not_cached(s, p, what, u, t);
	return u;
}

/* Blocks this long may raise calloc's fresh-page threshold when freed
 * (arr__calloc_fresh_note, internal.h: never below ARR__GLIBC_MMAP_MIN). */
#define FRESH_UNITS (ARR__GLIBC_MMAP_MIN >> UNIT_SHIFT)

/* Under the lock: the block in use at u goes back to the free spans. */
static inline __attribute__((always_inline)) void span_release_locked(struct arr__span_arena *a, struct arr__spanseg *s,
								      unsigned u)
{
	uint32_t t = arr__sp_tag(s, u);
	unsigned len = t & T_LEN;
	if (ARR_UNLIKELY(len >= FRESH_UNITS))
		arr__calloc_fresh_note((size_t)len << UNIT_SHIFT);
	a->live_units -= len;
	a->live_req -= ((size_t)len << UNIT_SHIFT) - (t >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
	a->nfrees++;
	a->tick_left--;
	free_coalesce(a, s, u, len);
}

/* The sparse cache's one block back to the span heap: its free, late (the
 * general cache_release, out of the hot text, is span_cache's). */
ARR_HOT static __attribute__((noinline)) void sparse_release(struct arr__heap *h)
{
	uint8_t *p = h->sc[0].p;
	struct arr__spanseg *s = seg_of(p);
	struct arr__span_arena *a = arena_of_seg(s);
	h->sc_n = 0;
	h->sc_units = 0;
	h->sc_req = 0;
	lock_take(&a->lock);
	span_release_locked(a, s, (unsigned)(((uintptr_t)p - (uintptr_t)s) >> UNIT_SHIFT));
	if (decay_at_once())
		a->tick_left = 0; /* purge_delay 0: at once, nothing kept */
	unlock_and_tick_if(a, true);
}

/* The free of p, checked under its arena's lock; returns the bytes the
 * block's holder requested (after a resize or a stay in a cache, what the
 * tags say now), after settling the holder h's slack correction. */
static inline __attribute__((always_inline)) size_t span_free_req_len(struct arr__heap *h, void *p, unsigned *lenp)
{
	struct arr__spanseg *s = seg_of(p);
	struct arr__span_arena *a = arena_of_seg(s);
	lock_take(&a->lock);
	uint32_t first;
	unsigned u = checked_unit_tag(s, p, FREE_INVALID, &first), len = first & T_LEN;
	*lenp = len;
	/* only a block that was in a cache or resized has a correction (cache_used read
	 * once: an atomic, loaded again at each use) */
	int64_t corr = 0;
	if (ARR_UNLIKELY(atomic_load_explicit(&cache_used, memory_order_relaxed))) {
		check_not_cached(s, p, FREE_INVALID, u, first);
		corr = slack_correction(first, arr__sp_tag(s, u + len - 1));
		waste_add(h, -corr);
	}
	ARR__ASSERT(corr == slack_correction(first, arr__sp_tag(s, u + len - 1)));
	size_t req =
		((size_t)len << UNIT_SHIFT) - (size_t)((int64_t)(first >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK) + corr);
	span_release_locked(a, s, u);
	if (decay_at_once())
		a->tick_left = 0; /* purge_delay 0: at once, nothing kept */
	unlock_and_tick_if(a, true);
	return req;
}

static inline __attribute__((always_inline)) size_t span_free_req(struct arr__heap *h, void *p)
{
	unsigned len;
	return span_free_req_len(h, p, &len);
}

void arr__span_free(void *p)
{
	struct arr__spanseg *s = seg_of(p);
	struct arr__span_arena *a = arena_of_seg(s);
	lock_take(&a->lock);
	unsigned u = checked_unit(s, p, FREE_INVALID);
	span_release_locked(a, s, u);
	if (decay_at_once())
		a->tick_left = 0; /* purge_delay 0: at once, nothing kept */
	unlock_and_tick_if(a, true);
}

/* Heap h's count of a sparse class's span blocks, for a block of req bytes
 * (its malloc counted it in the mallocing heap, heap.c): none below the
 * sparse classes (above the table's sizes) or above them. */
static inline void sparse_count(struct arr__heap *h, size_t req, int delta)
{
	_Static_assert(ARR__SMALL_TAB < 1025 && ARR__SPARSE_FIRST == ARR__FINE_FIRST,
		       "the sparse classes are above 1 KiB");
	if (req > ARR__SMALL_TAB && req <= ARR__SPAN_SPARSE_MAX) {
		unsigned c = arr__size_class_above(req);
		if (c >= ARR__SPARSE_FIRST && c < ARR__SPARSE_END)
			h->sparse_live[c - ARR__SPARSE_FIRST] += delta;
	}
}

/* After the free of a span block whose holder requested req bytes, by heap
 * h's thread: the sparse class's count (its malloc counted it in the
 * mallocing heap, heap.c) and the heap's tick, which counts the free. */
static inline __attribute__((always_inline)) void freed_by(struct arr__heap *h, size_t req)
{
	if (h == &arr__heap_empty)
		return;
	sparse_count(h, req, -1);
	if (arr__dec64_was_le1(&h->tick_left))
		arr__heap_tick(h);
}

/*
 * The free of a block that realloc moved out of the span heap into a huge
 * one (a buffer grown past the largest class): its pages are purged now,
 * not after the decay. The program is growing a buffer, not freeing one to
 * reuse (the next growth is the huge block's mremap), and glibc, whose old
 * block was a mapping of its own, moved its pages with mremap: kept dirty,
 * the old block stayed resident beside its copy (a perl hash's bucket array
 * grown from 1 to 2 MiB: the replay's peak 0.9 MB above glibc's). Only its
 * own whole OS pages: the block is the caller's until the free, so they are
 * purged outside the lock; the pages it shares with its neighbours stay as
 * they are, and the merged span waits on the lru if any is resident.
 */
ARR_HOT void arr__span_free_purged(struct arr__heap *h, void *p)
{
	struct arr__spanseg *s = seg_of(p);
	struct arr__span_arena *a = arena_of_seg(s);
	if (arr__opt.purge_delay < 0 || atomic_load_explicit(&cache_used, memory_order_relaxed)) {
		arr__span_free_heap(p, h);
		return;
	}
	lock_take(&a->lock);
	uint32_t first;
	unsigned u = checked_unit_tag(s, p, FREE_INVALID, &first), len = first & T_LEN, lo, hi;
	lock_give(&a->lock);
	inner_pages(u, len, &lo, &hi);
	if (hi > lo)
		arr__os_purge((uint8_t *)s + (size_t)lo * ARR__OS_PAGE, (size_t)(hi - lo) * ARR__OS_PAGE);
	lock_take(&a->lock);
	ARR__ASSERT(arr__sp_tag(s, u) == first);
	if (hi > lo) {
		resident_add(a, -(int64_t)dirty_pages(s, lo, hi));
		for (unsigned j = lo; j < hi; j++)
			s->clean[j / 64] |= (uint64_t)1 << (j % 64);
	}
	size_t req = ((size_t)len << UNIT_SHIFT) - (first >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
	a->live_units -= len;
	a->live_req -= req;
	a->nfrees++;
	a->tick_left--;
	insert_purged(a, s, u, len); /* a page it shares with a neighbour may be resident */
	unlock_and_tick_if(a, true);
	freed_by(h, req);
}

/*
 * realloc of span block p (page its descriptor) to size, in (span_lo,
 * span_hi]: when size lies within the block's last ARR__SP_T_XUNITS_MAX + 1
 * units (a buffer grown a few bytes at a time, into the room
 * arr__span_resize gave it) the block stays and only its request changes,
 * without the lock, tags cleared or pages settled: the units past the
 * request and its slack go in the last tag, the holder's to write
 * (internal.h), and the difference from what the span heap booked in the
 * heap's waste, as for a block of the sparse cache, so the statistics stay
 * exact and a free or resize settles it (docs/allocator.md, "Huge blocks
 * and realloc"). Otherwise realloc's general path, with the usable size
 * read here (one look at the tags).
 */
ARR_HOT void *arr__span_realloc(struct arr__heap *h, void *p, size_t size, struct arr__page *page)
{
	const char *what = "realloc(): invalid pointer";
	struct arr__spanseg *s = seg_of(p);
	uint32_t t;
	unsigned u = checked_unit_tag(s, p, what, &t), len = t & T_LEN;
	size_t usable = (size_t)len << UNIT_SHIFT;
	bool used = atomic_load_explicit(&cache_used, memory_order_relaxed);
	if (size > usable || size + ((size_t)(ARR__SP_T_XUNITS_MAX + 1) << UNIT_SHIFT) <= usable) {
		if (used)
			check_not_cached(s, p, what, u, t);
		return arr__realloc_known(p, size, page, usable);
	}
	unsigned need = (unsigned)((size + UNIT - 1) >> UNIT_SHIFT);
	ARR__ASSERT(size > ARR__SPAN_SPARSE_MAX && len - need <= ARR__SP_T_XUNITS_MAX);
	uint32_t *lastp = arr__sp_tag_ref(s, u + len - 1);
	uint32_t last = __atomic_load_n(lastp, __ATOMIC_RELAXED);
	if (ARR__MISUSE(used && len > 1 && (last & ARR__SP_T_CACHED)))
		arr__fatal(what, p);
	/* the units past the request's (a grown block's headroom) and its
	 * slack in the last one, as a thread's cached block carries them:
	 * usable - size in all, against what the last tag said */
	uint32_t now = (last & (T_LEN | T_STATE)) | (len - need) << ARR__SP_T_XUNITS_SHIFT |
		       (uint32_t)(((size_t)need << UNIT_SHIFT) - size) << ARR__SP_T_XSLACK_SHIFT;
	ARR__ASSERT(tag_extra(now) == (int64_t)(usable - size));
	cache_used_set();
	__atomic_store_n(lastp, now, __ATOMIC_RELAXED);
	waste_add(h, (int64_t)(usable - size) - tag_extra(last));
	return p;
}

/*
 * realloc in place (glibc does; moving costs a copy and, for a block that
 * grows step by step, a hole at each old place): a shorter block gives its
 * tail back to the free spans (merged with a free neighbour after it); a
 * longer one takes what it lacks from the low end of a free span right
 * after it, if that is long enough. False: no room, the caller moves it.
 */
ARR_HOT bool arr__span_resize(struct arr__heap *h, void *p, size_t size)
{
	if (ARR_UNLIKELY(h->sc_n != 0) && arr__opt.span_cache == 0)
		cache_give_back(h); /* the sparse cache's block: free, as without it */
	unsigned need = (unsigned)((size + UNIT - 1) >> UNIT_SHIFT);
	if (need == 0 || need > MAX_UNITS)
		return false;
	struct arr__spanseg *s = seg_of(p);
	struct arr__span_arena *a = arena_of_seg(s);
	lock_take(&a->lock);
	unsigned u = checked_unit(s, p, "realloc(): invalid pointer");
	uint32_t t = arr__sp_tag(s, u);
	unsigned len = t & T_LEN, fresh = 0, z1 = 0, z2 = 0;
	/* a block of a sparse class stays one (and a bigger one bigger): its
	 * heap counts it by the class of its request (heap.c) */
	size_t req = ((size_t)len << UNIT_SHIFT) - (size_t)((int64_t)(t >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK) +
							    slack_correction(t, arr__sp_tag(s, u + len - 1)));
	if ((req <= ARR__SPAN_SPARSE_MAX) != (size <= ARR__SPAN_SPARSE_MAX)) {
		lock_give(&a->lock);
		return false;
	}
	unsigned keep = need; /* the block's new length */
	if (need > len) {
		unsigned e = u + len;
		uint32_t et = e < UNITS ? arr__sp_tag(s, e) : 0;
		unsigned el = et & T_LEN;
		if ((et & T_STATE) != T_FREE || len + el < need) {
			lock_give(&a->lock);
			return false;
		}
		/* A block grown by a small step (at most a sixteenth: a buffer
		 * grown a few bytes a call) takes an eighth more, up to the
		 * units a block may hold past its request, so that the next
		 * reallocs stay within it (arr__span_realloc) instead of
		 * coming here for each unit. Bigger steps (a program that
		 * over-allocates itself) get what they ask. */
		if (size > ARR__SPAN_SPARSE_MAX && (need - len) * 16 <= len) {
			unsigned room = len / 8 < ARR__SP_T_XUNITS_MAX ? len / 8 : ARR__SP_T_XUNITS_MAX;
			keep = len + el < need + room ? len + el : need + room;
		}
		/* the neighbour's first keep - len units join the block; the
		 * rest stays free with the node (same lru place and stamp) */
		unsigned take = keep - len;
		bool dirty = et & T_DIRTY;
		struct arr__span_node *n = node_at(s, e);
		bin_remove(a, n);
		arr__sp_tag_set(s, e, 0);
		arr__sp_tag_set(s, e + el - 1, 0);
		z1 = e;
		z2 = e + el - 1;
		if (el > take) {
			n->unit = e + take;
			set_tags(s, e + take, el - take, T_FREE | (dirty ? T_DIRTY : 0) | slot_bits(s, n));
			bin_insert(a, n, el - take);
			if (dirty)
				a->lru_units -= take;
		} else {
			if (dirty)
				lru_remove(a, n, el);
			node_release(s, n);
		}
		fresh = range_take(s, e, take);
		if (fresh != 0)
			resident_add(a, fresh);
	}
	/* the holder's slack correction (a block from a thread's cache) ends:
	 * the tags say the new request exactly */
	waste_add(h, -slack_correction(t, arr__sp_tag(s, u + len - 1)));
	a->live_req -= ((size_t)len << UNIT_SHIFT) - (t >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
	a->live_units -= len;
	arr__sp_tag_set(s, u, 0);
	arr__sp_tag_set(s, u + len - 1, 0);
	/* booked as a block of keep units with the request's slack in the
	 * last; the headroom is the heap's waste (the last tag's extra units,
	 * as for a cached block: slack_correction) */
	uint32_t slack = (uint32_t)(((size_t)need << UNIT_SHIFT) - size);
	set_tags(s, u, keep, T_USED | T_START | slack << T_SLACK_SHIFT);
	if (keep > 1)
		*arr__sp_tag_ref(s, u + keep - 1) |=
			(keep - need) << ARR__SP_T_XUNITS_SHIFT | slack << ARR__SP_T_XSLACK_SHIFT;
	if (keep != need) {
		waste_add(h, (int64_t)(keep - need) << UNIT_SHIFT);
		cache_used_set();
	}
	a->live_units += keep;
	a->live_req += ((size_t)keep << UNIT_SHIFT) - slack;
	a->tick_left--;
	/* a sparse class's block counts in its request's class (heap.c) */
	if (h != &arr__heap_empty) {
		sparse_count(h, req, -1);
		sparse_count(h, size, +1);
	}
	if (keep < len)
		free_insert(a, s, u + keep, len - keep, true);
	arr__sp_tag_settle(s, u + len - 1);
	if (z1 != 0) {
		arr__sp_tag_settle(s, z1);
		arr__sp_tag_settle(s, z2);
	}
	unlock_and_tick(a);
	if (fresh)
		arr__pool_grow((size_t)fresh * ARR__OS_PAGE);
	return true;
}

ARR_HOT size_t arr__span_usable(const void *p)
{
	struct arr__spanseg *s = seg_of(p);
	unsigned u = checked_unit(s, p, "malloc_usable_size(): invalid pointer");
	return (size_t)(arr__sp_tag(s, u) & T_LEN) << UNIT_SHIFT;
}

/*
 * The footprint grows by `pages` the span heap cannot serve (a huge block
 * mapped, a pool segment: pool.c purge_for_growth): its free resident spans
 * go first, oldest first, as much as the growth, keeping the youngest
 * grow_keep() units of each arena. Without it they waited for the decay,
 * counted in operations, which a program of few large calls never reaches:
 * python3's json round trip (8 686 calls) held 14 MiB of freed span blocks
 * while it mapped its dict tables and its 13 MB string, peak 1.19x glibc's
 * (docs/notes/2026-12-02-span-purge.md). Not for the span heap's own growth
 * (arr__pool_grow): a free span that did not fit this block is a hole the
 * next ones fill, and purging it costs a page fault each time.
 */
ARR_HOT uint64_t arr__span_purge_for_growth(uint64_t pages)
{
	uint64_t done = 0;
	if (arr__opt.purge_delay <= 0) /* 0: nothing waits; < 0: never purged */
		return 0;
	for (unsigned k = 0, used = arenas_used(); k < used && done < pages; k++) {
		struct arr__span_arena *a = &arenas[k];
		if (__atomic_load_n(&a->lru_units, __ATOMIC_RELAXED) == 0) /* racy: a miss waits for its decay */
			continue;
		lock_take(&a->lock);
		for (unsigned round = 0; round < TRIM_ROUNDS && done < pages; round++) {
			struct busy b[PURGE_BATCH];
			struct iovec iov[PURGE_BATCH];
			unsigned niov, n = purge_collect(a, PURGE_GROW, pages - done, b, iov, &niov);
			lock_give(&a->lock);
			if (n == 0)
				goto next;
			for (unsigned i = 0; i < niov; i++)
				done += iov[i].iov_len / ARR__OS_PAGE;
			purge_finish(a, b, n, iov, niov);
			lock_take(&a->lock);
		}
		lock_give(&a->lock);
	next:;
	}
	return done;
}

size_t arr__span_purge_all(void)
{
	size_t bytes = 0;
	for (unsigned k = 0, used = arenas_used(); k < used; k++) {
		struct arr__span_arena *a = &arenas[k];
		for (;;) {
			struct busy b[PURGE_BATCH];
			struct iovec iov[PURGE_BATCH];
			unsigned niov;
			lock_take(&a->lock);
			unsigned n = purge_collect(a, PURGE_ALL, 0, b, iov, &niov);
			lock_give(&a->lock);
			if (n == 0)
				break;
			for (unsigned i = 0; i < niov; i++)
				bytes += iov[i].iov_len;
			purge_finish(a, b, n, iov, niov);
		}
	}
	return bytes;
}

void arr__span_stats(struct arr__span_stats *out)
{
	memset(out, 0, sizeof *out);
	for (unsigned k = 0, used = arenas_used(); k < used; k++) {
		struct arr__span_arena *a = &arenas[k];
		lock_take(&a->lock);
		for (struct arr__spanseg *s = a->segs; s; s = s->next) {
			out->mapped += ARR__SEG_SIZE;
			unsigned clean = 0;
			for (unsigned j = 0; j < OSPAGES / 64; j++)
				clean += (unsigned)arr__popcount64(s->clean[j]);
			out->resident += (size_t)FIRST_UNIT * UNIT +
					 ((size_t)(OSPAGES - FIRST_UNIT / UNITS_PER_OSPAGE) - clean) * ARR__OS_PAGE;
		}
		out->live_blocks += a->nmallocs - a->nfrees;
		out->live_usable += a->live_units << UNIT_SHIFT;
		out->live_req += a->live_req;
		out->mallocs += a->nmallocs;
		out->frees += a->nfrees;
		out->purged_pages += a->purged_pages;
		out->free_resident_units += a->lru_units;
		lock_give(&a->lock);
	}
}

/* ---- the thread's block cache ----
 *
 * With the span heap under one lock (one arena), every big malloc and free
 * of every thread took it: on the `large` working sets that was the span heap's
 * main cost (pthread_mutex_lock and unlock ~16 % of a 2-thread replay).
 * A thread's frees of span-heap blocks go to a small cache of its own
 * (ARR__SC_N blocks, at most `span_cache` bytes), its next mallocs take a
 * block from there when one fits (at least the request, at most
 * ARR__SP_T_XUNITS_MAX units more and within 1/8 of it: malloc's usable
 * size contract), and the lock is taken on a miss, or once for a batch when
 * the cache overflows (its older half goes back) or at the heap's tick
 * (what was cached before the previous tick goes back, so a cached block
 * waits at most two ticks before it joins the span heap's coalescing and
 * decay). To the span heap a cached block is in use (its tags, its live
 * counters); its last tag's CACHED mark makes a second free of it a
 * double free. mimalloc's thread-local free lists and tcmalloc's thread
 * caches are the same idea for small blocks.
 */

_Atomic int64_t arr__span_orphan_waste;

/* The block's slack now minus the slack the span heap booked for it. */
static int64_t slack_correction(uint32_t first, uint32_t last)
{
	return tag_extra(last) - (int64_t)(first >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
}

static void waste_add(struct arr__heap *h, int64_t d)
{
	if (d == 0)
		return;
	if (h == &arr__heap_empty)
		atomic_fetch_add_explicit(&arr__span_orphan_waste, d, memory_order_relaxed);
	else
		h->waste += d;
}

/* Give back the oldest n entries of h's cache, under one lock. */
static void cache_release(struct arr__heap *h, unsigned n)
{
	if (n == 0)
		return;
	/* the blocks may be of several arenas (remote frees): one lock per run
	 * of one arena's */
	struct arr__span_arena *a = NULL;
	for (unsigned k = 0; k < n; k++) {
		struct arr__spanseg *s = seg_of(h->sc[k].p);
		if (arena_of_seg(s) != a) {
			if (a != NULL) {
				if (decay_at_once())
					a->tick_left = 0;
				unlock_and_tick(a);
			}
			a = arena_of_seg(s);
			lock_take(&a->lock);
		}
		unsigned u = (unsigned)(((uintptr_t)h->sc[k].p - (uintptr_t)s) >> UNIT_SHIFT);
		h->sc_units -= h->sc[k].len;
		h->sc_req -= ((uint64_t)h->sc[k].len << UNIT_SHIFT) -
			     (arr__sp_tag(s, u) >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
		span_release_locked(a, s, u);
	}
	h->sc_n -= n;
	memmove(h->sc, h->sc + n, h->sc_n * sizeof h->sc[0]);
	if (decay_at_once())
		a->tick_left = 0;
	unlock_and_tick(a);
	ARR__ASSERT_EXPENSIVE(arr__span_cache_is_valid(h));
}

ARR_HOT void arr__span_cache_flush(struct arr__heap *h, bool all)
{
	if (h->sc_n == 1 && arr__opt.span_cache == 0) {
		/* the sparse cache's block, if it was there at the last tick */
		if (all || h->sc[0].tick != h->sc_tick)
			sparse_release(h);
		if (!all)
			h->sc_tick++;
		return;
	}
	unsigned n = 0;
	if (all)
		n = h->sc_n;
	else
		while (n < h->sc_n && h->sc[n].tick != h->sc_tick)
			n++;
	cache_release(h, n);
	if (!all)
		h->sc_tick++;
}

/* arr__span_cache_alloc() from a cache holding blocks */
static __attribute__((noinline)) void *cache_alloc(struct arr__heap *h, size_t size, bool zero,
						   struct arr__span_zeroed *zeroed)
{
	unsigned need = (unsigned)((size + UNIT - 1) >> UNIT_SHIFT), best = ARR__SC_N;
	uint32_t best_len = UINT32_MAX;
	/* best fit, the newest of equals (likeliest in the cache) */
	for (unsigned k = h->sc_n; k-- > 0;) {
		uint32_t len = h->sc[k].len;
		if (len >= need && len < best_len && len - need <= ARR__SP_T_XUNITS_MAX &&
		    (((size_t)len << UNIT_SHIFT) - size) * 8 <= size) {
			best = k;
			best_len = len;
			if (len == need)
				break;
		}
	}
	if (best == ARR__SC_N)
		return arr__span_alloc(h, size, zero, zeroed);
	uint8_t *p = h->sc[best].p;
	struct arr__spanseg *s = seg_of(p);
	unsigned u = (unsigned)(((uintptr_t)p - (uintptr_t)s) >> UNIT_SHIFT);
	uint32_t first = arr__sp_tag(s, u), *lastp = arr__sp_tag_ref(s, u + best_len - 1);
	uint32_t last = (*lastp & (T_LEN | T_STATE)) | (best_len - need) << ARR__SP_T_XUNITS_SHIFT |
			(uint32_t)(((size_t)need << UNIT_SHIFT) - size) << ARR__SP_T_XSLACK_SHIFT;
	__atomic_store_n(lastp, last, __ATOMIC_RELAXED);
	h->waste += slack_correction(first, last);
	h->sc_units -= best_len;
	h->sc_req -= ((uint64_t)best_len << UNIT_SHIFT) - (first >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
	h->sc_n--;
	memmove(h->sc + best, h->sc + best + 1, (h->sc_n - best) * sizeof h->sc[0]);
	ARR__ASSERT_EXPENSIVE(arr__span_cache_is_valid(h));
	if (zeroed) {
		zeroed->all = false; /* freed once: dirty */
		zeroed->n = 0;
	}
	(void)zero;
	return p;
}

/* (the cache's search out of line: without a cache this is a jump) */
void *arr__span_cache_alloc(struct arr__heap *h, size_t size, bool zero, struct arr__span_zeroed *zeroed)
{
	if (h->sc_n == 0) /* no cache (the default), or an empty one */
		return arr__span_alloc(h, size, zero, zeroed);
	return cache_alloc(h, size, zero, zeroed);
}

/*
 * The sparse block cache (the default; `sparse_cache`; not with a
 * `span_cache` or `purge_delay` 0): a thread keeps the span block of at
 * most SPARSE_CACHE_UNITS it freed last, marked CACHED, for its next
 * span-heap malloc, which takes it back if it wants the same length in
 * units and the layout allows (sparse_cache_take): without the carve and
 * the coalescing, ~450 instructions a pair, for a program that mallocs and
 * frees 1-8 KiB buffers a few at a time, as perl's line reads do. Any other
 * span-heap malloc gives it back first, as do the thread's next span-heap
 * free, a realloc in place and its heap's tick after next; so a block
 * waits while no span-heap call of its thread runs. Only while the
 * thread's mallocs have lately wanted the length just freed (sc_score,
 * counted whether or not a block waits): elsewhere a free costs one store
 * more and the next malloc a compare (docs/allocator.md).
 */
#define SPARSE_CACHE_UNITS (ARR__SPAN_SPARSE_MAX >> UNIT_SHIFT)

ARR_HOT static __attribute__((noinline)) size_t sparse_cache_put(struct arr__heap *h, void *p)
{
	if (h->sc_n != 0) /* (freed first, as without the cache) */
		cache_give_back(h);
	struct arr__spanseg *s = seg_of(p);
	uint32_t first;
	unsigned u = checked_unit_tag(s, p, FREE_INVALID, &first), len = first & T_LEN;
	if (len > SPARSE_CACHE_UNITS || len < 2 || arr__opt.purge_delay == 0)
		return SIZE_MAX; /* the caller frees it */
	h->sc_last = (uint8_t)len;
	uint32_t *lastp = arr__sp_tag_ref(s, u + len - 1), last = __atomic_load_n(lastp, __ATOMIC_RELAXED);
	if (ARR__MISUSE(last & ARR__SP_T_CACHED))
		arr__fatal(FREE_INVALID, p);
	int64_t corr = slack_correction(first, last);
	uint32_t booked = first >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK;
	h->waste -= corr;
	cache_used_set();
	/* marked cached, its slack back to the booked one (no correction) */
	__atomic_store_n(lastp, (last & (T_LEN | T_STATE)) | ARR__SP_T_CACHED | booked << ARR__SP_T_XSLACK_SHIFT,
			 __ATOMIC_RELAXED);
	h->sc[0] = (struct arr__span_cached){(uint8_t *)p, len, h->sc_tick};
	h->sc_n = 1;
	h->sc_units = len;
	h->sc_req = ((uint64_t)len << UNIT_SHIFT) - booked;
	ARR__ASSERT_EXPENSIVE(arr__span_cache_is_valid(h));
	return h->sc_req - (uint64_t)corr;
}

/* free() of a span block p by heap h's thread (api.c's heap_free, at its
 * first test after the fast path): the free, the sparse class's count, the
 * heap's tick (arr__free_generic's span case, without the calls between) */
ARR_HOT void arr__span_free_heap(void *p, struct arr__heap *h)
{
	size_t req;
	if (ARR_UNLIKELY(arr__opt.span_cache != 0)) {
		req = arr__span_cache_free(h, p);
	} else if (ARR_UNLIKELY(h->sc_n != 0 || h->sc_score >= SPARSE_SCORE_ON) && arr__opt.sparse_cache &&
		   (req = sparse_cache_put(h, p)) != SIZE_MAX) {
		/* cached */
	} else {
		/* (the score counts for a real heap's blocks up to 8 KiB) */
		unsigned len;
		req = span_free_req_len(h, p, &len);
		if (len <= SPARSE_CACHE_UNITS && h != &arr__heap_empty)
			h->sc_last = (uint8_t)len;
	}
	freed_by(h, req);
}

size_t arr__span_cache_free(struct arr__heap *h, void *p)
{
	size_t limit = arr__opt.span_cache;
	/* no cache (the default): one check of the block, under the lock */
	if (limit == 0 || h == &arr__heap_empty || arr__opt.purge_delay == 0)
		return span_free_req(h, p);
	struct arr__spanseg *s = seg_of(p);
	unsigned u = checked_unit(s, p, FREE_INVALID);
	uint32_t first = arr__sp_tag(s, u), len = first & T_LEN;
	uint32_t *lastp = arr__sp_tag_ref(s, u + len - 1), last = __atomic_load_n(lastp, __ATOMIC_RELAXED);
	int64_t corr = slack_correction(first, last);
	size_t req =
		((size_t)len << UNIT_SHIFT) - (size_t)((int64_t)(first >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK) + corr);
	waste_add(h, -corr);
	if (len < 2 || ((size_t)len << UNIT_SHIFT) > limit / 2) {
		arr__span_free(p);
		return req;
	}
	if (h->sc_n == ARR__SC_N)
		cache_release(h, ARR__SC_N / 2);
	cache_used_set();
	/* marked cached, its slack back to the booked one (no correction) */
	__atomic_store_n(lastp,
			 (last & (T_LEN | T_STATE)) | ARR__SP_T_CACHED |
				 (first >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK) << ARR__SP_T_XSLACK_SHIFT,
			 __ATOMIC_RELAXED);
	h->sc[h->sc_n++] = (struct arr__span_cached){(uint8_t *)p, len, h->sc_tick};
	h->sc_units += len;
	h->sc_req += ((uint64_t)len << UNIT_SHIFT) - (first >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
	if ((h->sc_units << UNIT_SHIFT) > limit) {
		/* the oldest, until at most half the bound is left */
		unsigned n = 0;
		uint64_t units = h->sc_units;
		while (n < h->sc_n && (units << UNIT_SHIFT) > limit / 2)
			units -= h->sc[n++].len;
		cache_release(h, n);
	}
	ARR__ASSERT_EXPENSIVE(arr__span_cache_is_valid(h));
	return req;
}

bool arr__span_cache_is_valid(const struct arr__heap *h)
{
	ARR__CHECK(h->sc_n <= ARR__SC_N);
	/* the sparse cache's counters (a length in units, a streak, a score) */
	ARR__CHECK(h->sc_last <= SPARSE_CACHE_UNITS && h->sc_streak <= SPARSE_STREAK &&
		   h->sc_score <= SPARSE_SCORE_MAX);
	uint64_t units = 0, req = 0;
	for (unsigned k = 0; k < h->sc_n; k++) {
		const uint8_t *p = h->sc[k].p;
		ARR__CHECK(arr__segment_known(p) && arr__segment_of(p)->kind == 2);
		const struct arr__spanseg *s = seg_of(p);
		uintptr_t off = (uintptr_t)p - (uintptr_t)s;
		unsigned u = (unsigned)(off >> UNIT_SHIFT);
		ARR__CHECK((off & (UNIT - 1)) == 0 && u >= FIRST_UNIT);
		uint32_t t = arr__sp_tag(s, u), len = t & T_LEN;
		/* in use to the span heap, of its length, marked cached */
		ARR__CHECK((t & (T_STATE | T_START)) == (T_USED | T_START) && len == h->sc[k].len && len > 1);
		ARR__CHECK(arr__sp_tag(s, u + len - 1) & ARR__SP_T_CACHED);
		ARR__CHECK(k == 0 || h->sc[k - 1].tick <= h->sc[k].tick);
		for (unsigned j = 0; j < k; j++)
			ARR__CHECK(h->sc[j].p != p);
		units += len;
		req += ((uint64_t)len << UNIT_SHIFT) - (t >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
	}
	ARR__CHECK(units == h->sc_units && req == h->sc_req);
	return true;
}

/* ---- fork ---- */

/* The arenas in use when the fork began (arenas_used()): the parent gives
 * back the locks it took. One dealt after that is locked by its thread
 * only, which the child does not have: the child resets every arena's
 * lock up to arenas_used() as it reads it (raised before any lock of a new
 * arena). */
static unsigned fork_used;

void arr__span_fork_prepare(void)
{
	/* arena 0's lock first: a second fork's prepare waits there until the
	 * first one's parent handler has read fork_used and given it back */
	lock_take(&arenas[0].lock);
	unsigned used = arenas_used();
	for (unsigned k = 1; k < used; k++)
		lock_take(&arenas[k].lock);
	fork_used = used;
}

void arr__span_fork_parent(void)
{
	for (unsigned k = fork_used; k-- > 0;)
		lock_give(&arenas[k].lock);
}

/* Spans a vanished thread was purging stay BUSY: address space, not memory. */
void arr__span_fork_child(void)
{
	for (unsigned k = 0, used = arenas_used(); k < used; k++)
		atomic_store_explicit(&arenas[k].lock.w, 0, memory_order_relaxed);
}

/* ---- invariants (beside struct arr__spanseg above; internal.h) ---- */

/* The tag chunks, between operations: chunk 0 is never written; a page's
 * chunk is one handed out, no other page's, with a tag that is not zero;
 * the released ones are all zero but for their link; every chunk handed
 * out is one or the other. */
static bool tag_chunks_valid(const struct arr__spanseg *s)
{
	uint8_t seen[OSPAGES + 1];
	ARR__CHECK(s->tag_used <= OSPAGES);
	memset(seen, 0, sizeof seen);
	for (unsigned k = 0; k < UNITS_PER_OSPAGE; k++)
		ARR__CHECK(s->tag_pool[0][k] == 0);
	unsigned held = 0, released = 0;
	for (unsigned pg = 0; pg < OSPAGES; pg++) {
		unsigned c = s->tag_chunk[pg];
		uint32_t any = 0;
		if (c == 0)
			continue;
		ARR__CHECK(c <= s->tag_used && !seen[c]);
		seen[c] = 1;
		for (unsigned k = 0; k < UNITS_PER_OSPAGE; k++)
			any |= s->tag_pool[c][k];
		ARR__CHECK(any != 0);
		held++;
	}
	for (unsigned c = s->tag_free; c != 0; c = s->tag_pool[c][0]) {
		ARR__CHECK(c <= s->tag_used && !seen[c] && ++released <= s->tag_used);
		seen[c] = 1;
		for (unsigned k = 1; k < UNITS_PER_OSPAGE; k++)
			ARR__CHECK(s->tag_pool[c][k] == 0);
	}
	ARR__CHECK(held + released == s->tag_used);
	return true;
}

static bool arena_is_valid_locked(struct arr__span_arena *a)
{
	uint64_t used = 0, nused = 0, req = 0, dirty = 0, nfree = 0, busy = 0, resident = 0;
	unsigned nseg = 0;
	ARR__CHECK(arena_index(a) < ARR__SPAN_ARENAS);
	for (struct arr__spanseg *s = a->segs; s; s = s->next) {
		/* the arena holds only its segments (so its bins and lru, below,
		 * only their spans) */
		ARR__CHECK(s->seg.kind == 2 && arr__segment_known(s) && s->arena == arena_index(a));
		ARR__CHECK(++nseg <= a->nsegs);
		for (unsigned k = 0; k < ARR__SLICES; k++)
			ARR__CHECK(s->seg.pages[k].flags == ARR__PF_SPAN && s->seg.pages[k].head_off == 0);
		ARR__CHECK(tag_chunks_valid(s));
		for (unsigned u = 0; u < FIRST_UNIT; u++)
			ARR__CHECK(arr__sp_tag(s, u) == 0);
		resident += OSPAGES - FIRST_UNIT / UNITS_PER_OSPAGE - bits_count(s->clean, 0, OSPAGES);
		/* spans tile the data units; tags only at their ends */
		uint32_t prev_state = 0;
		unsigned u = FIRST_UNIT;
		while (u < UNITS) {
			uint32_t t = arr__sp_tag(s, u), st = t & T_STATE;
			unsigned len = t & T_LEN;
			ARR__CHECK(st != 0 && len >= 1 && u + len <= UNITS);
			uint32_t e = arr__sp_tag(s, u + len - 1);
			ARR__CHECK((e & T_LEN) == len && (e & T_STATE) == st);
			ARR__CHECK(!(e & ARR__SP_T_CACHED) || (st == T_USED && len > 1));
			ARR__CHECK(len == 1 || !(e & T_START));
			for (unsigned k = u + 1; k + 1 < u + len; k++)
				ARR__CHECK(arr__sp_tag(s, k) == 0);
			if (st == T_USED) {
				ARR__CHECK(t & T_START);
				ARR__CHECK(len <= MAX_UNITS);
				used += len;
				nused++;
				req += ((uint64_t)len << UNIT_SHIFT) - (t >> T_SLACK_SHIFT & ARR__SP_T_SLACK_MASK);
			} else if (st == T_FREE) {
				ARR__CHECK(prev_state != T_FREE); /* coalesced */
				ARR__CHECK(!(t & T_START) && (t & T_DIRTY) == (e & T_DIRTY));
				ARR__CHECK((t >> T_SLOT_SHIFT & T_SLOT_MASK) < s->slots_used);
				ARR__CHECK(node_at((struct arr__spanseg *)s, u)->unit == u);
				ARR__CHECK(node_at((struct arr__spanseg *)s, u)->slot ==
					   (t >> T_SLOT_SHIFT & T_SLOT_MASK));
				nfree++;
				if (t & T_DIRTY)
					dirty += len;
				/* off the lru, nothing would purge them: a free span
				 * not marked dirty holds no resident page of its own
				 * (its end pages are shared with its neighbours) */
				unsigned lo, hi;
				inner_pages(u, len, &lo, &hi);
				ARR__CHECK((t & T_DIRTY) || dirty_pages(s, lo, hi) == 0);
			} else {
				ARR__CHECK(st == T_BUSY);
				busy++;
			}
			prev_state = st;
			u += len;
		}
		ARR__CHECK(u == UNITS);
	}
	/* bins: every node the start of a free span of the bin's length, as
	 * many as there are free spans (so each is in its bin); the mask says
	 * which bins are not empty */
	uint64_t inbins = 0;
	for (unsigned b = 0; b < NBINS; b++) {
		ARR__CHECK((a->bins[b] != NULL) == (a->bin_mask[b / 64] >> (b % 64) & 1));
		ARR__CHECK((a->bin_mask[b / 64] != 0) == (a->bin_words[b / 64 / 64] >> (b / 64 % 64) & 1));
		const struct arr__span_node *prev = NULL;
		for (const struct arr__span_node *n = a->bins[b]; n; prev = n, n = n->next) {
			const struct arr__spanseg *s = seg_of_node(n);
			ARR__CHECK(s->arena == arena_index(a));
			ARR__CHECK(n->unit >= FIRST_UNIT && n->unit < UNITS);
			uint32_t t = arr__sp_tag(s, n->unit);
			ARR__CHECK((t & T_STATE) == T_FREE && bin_of(t & T_LEN) == b);
			/* a list of several lengths in order of length (best_fit) */
			ARR__CHECK(prev == NULL || node_len(prev) <= (t & T_LEN));
			ARR__CHECK(&s->node[t >> T_SLOT_SHIFT & T_SLOT_MASK] == n);
			ARR__CHECK(n->pprev == (prev ? &((struct arr__span_node *)prev)->next : &a->bins[b]));
			ARR__CHECK(++inbins <= nfree);
		}
	}
	ARR__CHECK(inbins == nfree);
	/* the lru: the dirty free spans, oldest first */
	uint64_t lu = 0;
	const struct arr__span_node *prev = NULL;
	for (const struct arr__span_node *n = a->lru_head; n; prev = n, n = n->lnext) {
		const struct arr__spanseg *s = seg_of_node(n);
		uint32_t t = arr__sp_tag(s, n->unit);
		ARR__CHECK(s->arena == arena_index(a));
		ARR__CHECK((t & T_STATE) == T_FREE && (t & T_DIRTY));
		ARR__CHECK(n->lpprev == (prev ? &((struct arr__span_node *)prev)->lnext : &a->lru_head));
		ARR__CHECK(prev == NULL || prev->stamp <= n->stamp);
		lu += t & T_LEN;
		ARR__CHECK(lu <= dirty);
	}
	ARR__CHECK(a->lru_tailp == NULL
			   ? a->nsegs == 0 && prev == NULL
			   : a->lru_tailp == (prev ? &((struct arr__span_node *)prev)->lnext : &a->lru_head));
	ARR__CHECK(nseg == a->nsegs);
	ARR__CHECK(lu == dirty && lu == a->lru_units);
	ARR__CHECK(used == a->live_units && nused == a->nmallocs - a->nfrees && req == a->live_req);
	ARR__CHECK(busy == a->busy_spans);
	ARR__CHECK(resident == a->resident);
	ARR__CHECK(a->trim_lim == trim_lim_of(a->resident));
	ARR__CHECK(a->trim_regret <= TRIM_REGRET_MAX && (a->trim_gave != 0 || a->trim_after == 0));
	ARR__CHECK(a->trim_mallocs <= a->nmallocs && a->trim_clock <= arr__pool_clock());
	return true;
}

bool arr__spanheap_is_valid(void)
{
	unsigned used = arenas_used();
	ARR__CHECK(used <= ARR__SPAN_ARENAS);
	for (unsigned k = 0; k < ARR__SPAN_ARENAS; k++) {
		lock_take(&arenas[k].lock);
		arena_is_valid_locked(&arenas[k]);
		/* past the highest dealt (arenas_hi): never used, what the loops
		 * that stop there skip */
		ARR__CHECK(k < used || (arenas[k].nsegs == 0 && arenas[k].nmallocs == 0 && arenas[k].lru_head == NULL));
		lock_give(&arenas[k].lock);
	}
	return true;
}
