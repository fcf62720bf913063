/*
 * allocator/internal.h - the built-in allocator's types and fast-path helpers.
 *
 * Private to allocator/. The public API is include/allocrr/alloc.h.
 *
 * Glossary (memory is carved top-down in this order):
 *   segment  4 MiB of address space aligned to 4 MiB, mapped from the OS. Its
 *            first 64 KiB slice holds the segment header (this struct plus the
 *            page table), the other 63 slices are handed out as spans. A pointer's
 *            segment is found by masking: ptr & ~(ARR__SEG_SIZE - 1).
 *   slice    64 KiB unit of a segment; bitmaps in the segment say which slices
 *            are free and which free ones are known to be zero (purged/fresh).
 *   span     a run of slices given to one page.
 *   page     metadata (struct arr__page, out of line in the segment header) for a
 *            span that holds blocks of one size class and is owned by one heap.
 *            Found from a pointer by masking: the descriptor of its slice,
 *            minus that descriptor's head_off (0 for a span's first slice).
 *   block    one object; free blocks hold the free-list link in their first
 *            word, live blocks carry no header at all.
 *   heap     per-thread set of pages, one list per size class plus a list of
 *            full pages. Only the owning thread touches a heap's lists; other
 *            threads free into a page with one atomic push (thread_free) or, when
 *            the page is full, into the heap's atomic `delayed` list.
 *            With several threads a heap also keeps a few empty spans for
 *            its next span takes (span cache, heap.c).
 *   pool     the process-wide set of segments, under one lock: spans come from it
 *            and empty pages go back to it, so memory freed in one size class
 *            serves another. Free dirty slices are purged (MADV_DONTNEED) once
 *            `purge_delay` allocator operations have passed.
 *   span heap  blocks above span_min bytes (to the largest class), and those
 *            of the sparse classes of 2-8 KiB (heap.c): carved at 256-byte
 *            granularity from segments of their own shared by all sizes and
 *            threads, free neighbours coalesced (spanheap.c).
 *   huge     a block above the largest class (or mmap_threshold): its own
 *            4 MiB-aligned mapping with a one-page header, resized with mremap.
 *
 * Contract: functions returning pointers return NULL on failure and never set
 * errno themselves, except where noted; the public entry points in api.c set
 * errno the way glibc does. Nothing here calls libc's malloc.
 */
#ifndef ARR_ALLOCATOR_INTERNAL_H
#define ARR_ALLOCATOR_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <pthread.h>

#include "allocrr/compiler.h"

/*
 * Invariants, mimalloc style. ARR_DEBUG (set by CMake's ALLOCRR_ALLOC_DEBUG):
 *   0  off: the macros compile to nothing (Release);
 *   1  ARR__ASSERT: cheap checks of one value or one link;
 *   2  ARR__ASSERT_EXPENSIVE too: the walks (arr__page_is_valid,
 *      arr__heap_is_valid, arr__pool_is_valid) where the page-finding
 *      heuristics change state (the sanitizer build and the *-debug targets).
 * A failed check writes "file:line: assertion failed: cond" to fd 2 with
 * write(2) (no malloc: we are malloc) and aborts.
 */
#ifndef ARR_DEBUG
#define ARR_DEBUG 0
#endif
/* On functions no small program runs (reports of misuse, aborts): a section
 * of their own, which the linker lays out after the hot text (ARR_HOT). GCC's
 * `cold` alone puts them in .text.unlikely, laid out first, inside the hot
 * text's fault-around window (docs/allocator.md, "What it costs a program
 * that barely allocates"; allocator.fixedcost_hottext). */
#define ARR_COLD __attribute__((cold, noinline, section(".text.arr_cold")))
ARR_COLD __attribute__((noreturn)) void arr__assert_fail(const char *file, int line, const char *cond);
#if ARR_DEBUG >= 1
#define ARR__ASSERT(c) (ARR_LIKELY(c) ? (void)0 : arr__assert_fail(__FILE__, __LINE__, #c))
#else
#define ARR__ASSERT(c) ((void)0)
#endif
/* A fork child inherits the heaps of the threads that vanished at the fork
 * as they were, possibly in the middle of an operation (a block popped but
 * not yet counted, a span cached but not yet summed): harmless (a block or a
 * span is lost, or kept counted), but the walks would report it. Set in such
 * a child, it turns them off there. */
extern bool arr__fork_tore;
#if ARR_DEBUG >= 2
#define ARR__ASSERT_EXPENSIVE(c) \
	(ARR_LIKELY(arr__fork_tore || (c)) ? (void)0 : arr__assert_fail(__FILE__, __LINE__, #c))
#else
#define ARR__ASSERT_EXPENSIVE(c) ((void)0)
#endif

/*
 * Misuse detected by the hardening (always on, not a debug level): a free
 * of a pointer that is not a block of ours, a double free, a corrupted free
 * list. Writes "allocrr malloc: WHAT: POINTER" to fd 2 and aborts, as glibc
 * does ("free(): invalid pointer"): the heap can no longer be trusted, and
 * malloc has no error to return.
 */
ARR_COLD __attribute__((noreturn)) void arr__fatal(const char *what, const void *p);

#define ARR__SEG_SHIFT 22
#define ARR__SEG_SIZE ((size_t)1 << ARR__SEG_SHIFT) /* 4 MiB */
#define ARR__SLICE_SHIFT 16
#define ARR__SLICE_SIZE ((size_t)1 << ARR__SLICE_SHIFT) /* 64 KiB */
#define ARR__SLICES (ARR__SEG_SIZE / ARR__SLICE_SIZE)   /* 64 */
#define ARR__OS_PAGE ((size_t)4096)

/* Size classes: 8, 16..128 step 16, then 8 classes per doubling up to 1 MiB,
 * the first eighth above 256 B, 512 B, 1, 2, 4 and 8 KiB split at 1/64, 1/32,
 * 17/256 rounded up to 16 bytes (see classes.c): 9 classes above 256, 10
 * above 512, 11 for each doubling from 1 KiB. */
#define ARR__NCLASSES 129
#define ARR__FINE_FIRST 37 /* first class above 1 KiB */
#define ARR__FINE_END 81   /* first class above 16 KiB */
#define ARR__MAX_SMALL ((size_t)1 << 20)
/* glibc's default mmap threshold, the least its dynamic one can be: a
 * huge block realloc shrinks to this or more keeps its mapping (api.c
 * arr__realloc_known), and calloc's fresh-page threshold starts here
 * (arr__calloc_fresh_min). */
#define ARR__GLIBC_MMAP_MIN ((size_t)128 << 10)
#define ARR__SMALL_TAB 1024                    /* sizes <= this are classed by table lookup */
#define ARR__DIRECT_N (ARR__SMALL_TAB / 8 + 1) /* entries of arr__class_tab */
/* Sizes up to this go through a heap's direct[] (struct arr__heap): most
 * requests (python3.atr: 98 % of its mallocs are below 128 bytes), and a
 * table of 17 entries keeps arr__heap_empty, most of the library's .data
 * (relocated, so resident), in one OS page: the whole 1 KiB (129 entries)
 * made it two, 4 KB more resident in every process (sqlite3.atr's replay:
 * peak 1 068 -> 1 072 KB). */
#define ARR__DIRECT_MAX 128
#define ARR__HEAP_DIRECT_N (ARR__DIRECT_MAX / 8 + 1)

/* Page flags: any set bit sends free() to the generic path. */
#define ARR__PF_FULL 1u    /* in the heap's full list */
#define ARR__PF_ALIGNED 2u /* may hold interior (aligned) pointers */
#define ARR__PF_HUGE 4u    /* a huge block's page */
#define ARR__PF_SPAN 8u    /* a descriptor of a span-heap segment (spanheap.c) */

/* States kept in the low bits of page->thread_free. */
enum {
	ARR__TF_NORMAL = 0,  /* remote frees push onto thread_free */
	ARR__TF_DELAYED = 1, /* page is full: remote frees go to heap->delayed */
	ARR__TF_FREEING = 2, /* a remote thread is pushing to heap->delayed */
	ARR__TF_NEVER = 3,   /* heap abandoned: always push onto thread_free */
};
#define ARR__TF_MASK ((uintptr_t)3)

/*
 * A free block's first word links it into a list (a page's free, local_free
 * or thread_free list, a heap's delayed list). With ARR_ALLOC_HARDEN the link
 * is stored encoded, next ^ (address of the link >> 12), as glibc 2.32+'s
 * safe-linking does: a word written into a freed block by a use after free
 * decodes to an address outside the block's segment (unless the writer knows
 * where the block is), and the pop that would hand it out aborts
 * (arr__block_next_checked, the fast paths' segment test). Read and write
 * links only through these helpers.
 */
struct arr__block {
	uintptr_t link;
};

/* ARR_ALLOC_HARDEN, a mask (CMake: ALLOCRR_ALLOC_HARDEN) of:
 *   ARR__HARDEN_LINKS    encoded links, checked where popped or walked
 *   ARR__HARDEN_FOREIGN  free's fast path asks the segment map before it
 *                        reads a descriptor (stack, foreign, wild pointers)
 *   ARR__HARDEN_GRID     free's fast path checks the pointer is a carved
 *                        block's start (interior pointers)
 *   ARR__HARDEN_DOUBLE   free's fast path takes a link-like first word for a
 *                        possible double free and looks (a block not at the
 *                        head of its list; needs LINKS)
 * With any bit, free also refuses the block at the head of its list and a
 * page with no block out, and the generic path checks everything. Default:
 * LINKS | FOREIGN (~2 % of a replay, docs/allocator.md); 15 is all; 0 the
 * variant that measures the cost. */
#define ARR__HARDEN_LINKS 1
#define ARR__HARDEN_FOREIGN 2
#define ARR__HARDEN_GRID 4
#define ARR__HARDEN_DOUBLE 8
#ifndef ARR_ALLOC_HARDEN
#define ARR_ALLOC_HARDEN (ARR__HARDEN_LINKS | ARR__HARDEN_FOREIGN)
#endif
#if ARR_ALLOC_HARDEN & ARR__HARDEN_LINKS
#define ARR__LINK_KEY(b) ((uintptr_t)(b) >> 12)
#else
#define ARR__LINK_KEY(b) ((uintptr_t)0)
#endif
/* A misuse test of the hardening (compiled out with ARR_ALLOC_HARDEN 0), and
 * one of a part of it. */
#define ARR__MISUSE(c) (ARR_ALLOC_HARDEN && ARR_UNLIKELY(c))
#define ARR__MISUSE_IF(part, c) ((ARR_ALLOC_HARDEN & (part)) && ARR_UNLIKELY(c))

static inline struct arr__block *arr__block_next(const struct arr__block *b)
{
	return (struct arr__block *)(b->link ^ ARR__LINK_KEY(b));
}

static inline void arr__block_set_next(struct arr__block *b, const struct arr__block *next)
{
	b->link = (uintptr_t)next ^ ARR__LINK_KEY(b);
}

/* The same, with the key ARR__LINK_KEY(b) computed by the caller: the same
 * for every block that starts in one OS page (the carve writes a page's
 * worth of links with one). */
static inline void arr__block_set_next_key(struct arr__block *b, const struct arr__block *next, uintptr_t key)
{
	ARR__ASSERT(key == ARR__LINK_KEY(b));
	b->link = (uintptr_t)next ^ key;
}

/* Two addresses in one segment (a block and its page descriptor, two blocks of a page). */
static inline bool arr__same_segment(const void *a, const void *b)
{
	return (((uintptr_t)a ^ (uintptr_t)b) >> ARR__SEG_SHIFT) == 0;
}

/*
 * Decrement *u and say whether it was at most 1 (now 0, or wrapped from 0):
 * on x86-64 one subtract whose carry and zero flags are the test, where GCC
 * emits load, subtract, store and compare for the plain C. The free fast
 * path's `used` (emptied page, or a page with no block out) and tick
 * countdown.
 */
#if defined(__x86_64__) && (defined(__clang__) ? __clang_major__ >= 11 : __GNUC__ >= 11)
static inline bool arr__dec32_was_le1(uint32_t *u)
{
	__asm__ goto("subl $1, %0\n\tjbe %l[le1]" : "+m"(*u) : : "cc" : le1);
	return false;
le1:
	return true;
}
static inline bool arr__dec64_was_le1(uint64_t *u)
{
	__asm__ goto("subq $1, %0\n\tjbe %l[le1]" : "+m"(*u) : : "cc" : le1);
	return false;
le1:
	return true;
}
#else
static inline bool arr__dec32_was_le1(uint32_t *u) { return (*u)-- <= 1; }
static inline bool arr__dec64_was_le1(uint64_t *u) { return (*u)-- <= 1; }
#endif

/* The next block of a page's list, which must lie in the same segment. */
static inline struct arr__block *arr__block_next_checked(const struct arr__block *b)
{
	struct arr__block *next = arr__block_next(b);
	if (ARR__MISUSE_IF(ARR__HARDEN_LINKS, next != NULL && !arr__same_segment(next, b)))
		arr__fatal("corrupted free list (a freed block was written to)", b);
	return next;
}

/*
 * The segments we mapped (small, huge and span-heap), one byte per 4 MiB of
 * the 47-bit user address space (32 MiB of bss, resident only where
 * segments are: one OS page covers 16 GiB of addresses): free() asks it
 * before it reads a descriptor, so that a pointer that is not ours (stack,
 * another allocator's, garbage) is refused instead of followed. A byte, not
 * a bit: the test is one load-and-compare of p >> 22 (free's fast path
 * 10 -> 7 instructions, no word index, no bit test).
 */
#define ARR__SEGMAP_SEGS ((uintptr_t)1 << (47 - ARR__SEG_SHIFT))
extern uint8_t arr__segmap[ARR__SEGMAP_SEGS];

/*
 * The big zeroed tables (the segment map, the span arenas) are defined with
 * ARR__BIG_TABLE(declaration): in a NOBITS section of their own, .lbss.arr,
 * that the linker places after .bss (x86-64's large-data .lbss; elsewhere an
 * orphan section, also after .bss), page aligned. The small globals every
 * program writes (class tables, the pool's and the heaps' counters, locks)
 * then share two pages instead of being strewn between and after 4.3 MB of
 * tables, and a table costs only the pages of it that are written
 * (tests/allocator/fixedcost.c counts them). Clang (14) makes a section named
 * by the attribute PROGBITS, 4.3 MB of zeroes in the file: its pragma for
 * zeroed data keeps NOBITS.
 */
#if defined(__clang__)
#define ARR__BIG_TABLE(decl)                                                            \
	_Pragma("clang section bss=\".lbss.arr\"") decl __attribute__((aligned(4096))); \
	_Pragma("clang section bss=\"\"")
#else
#define ARR__BIG_TABLE(decl) decl __attribute__((section(".lbss.arr"), aligned(4096)));
#endif
static inline bool arr__segment_known(const void *p)
{
	uintptr_t i = (uintptr_t)p >> ARR__SEG_SHIFT;
	return i < ARR__SEGMAP_SEGS && arr__segmap[i] != 0;
}

struct arr__heap;

/*
 * Invariants of a page of a size class (arr__page_is_valid checks them;
 * |list| is a list's length, holed = blocks that start in an OS page whose
 * bit is set in `holes`):
 *   used + |free| + |local_free| + holed == capacity <= reserved
 *       (`used` counts the blocks in thread_free and in the heap's delayed
 *       list: |thread_free| <= used)
 *   free, local_free and thread_free are disjoint; each block on them lies in
 *       [start, start + capacity * block_size) at a multiple of block_size
 *   block_size == arr__class_size[cls]; reserved == slices * 64 KiB / block_size
 *   start == segment + (this descriptor's index) * 64 KiB; head_off == 0 and
 *       the k-th slice's descriptor has head_off == ARR__HEAD_OFF(k); the span's slices are
 *       not free in the segment's free_mask
 *   in a class list: !(flags & FULL), thread_free state NORMAL;
 *   in the full list: flags & FULL, state NORMAL, DELAYED or FREEING;
 *   in an abandoned heap: state NEVER (FULL pages too)
 *   free_is_zero => every block on `free` is zero past its first word
 *   zero_from <= slices * 16 (OS pages); holes != 0 only in one-slice spans
 * Huge: flags == HUGE, heap == NULL, cls == ARR__NCLASSES, segment kind 1,
 *   start == segment + offset of the header, huge_req <= huge_map - offset.
 */
struct arr__page {
	/* hot: the fields the malloc/free fast paths touch, in the first 32
	 * bytes (descriptors are 96 bytes from a 32-byte boundary, so these
	 * never straddle two cache lines) */
	struct arr__block *free; /* blocks ready for malloc */
	struct arr__heap *heap;  /* owner; NULL for huge */
	uint32_t used;           /* blocks out (incl. remote-freed, uncollected) */
	uint8_t flags;           /* ARR__PF_* */
	uint8_t free_is_zero;    /* every block on `free` is zero past word 0 */
	uint16_t cls;
	uint32_t block_size;
	uint16_t capacity; /* blocks carved so far (a span holds at most 8192) */
	uint16_t head_off; /* in every slice's descriptor: bytes back to its span's
					* (0 in the span's own; ARR__HEAD_OFF, arr__page_of) */
	uint16_t reserved; /* blocks that fit in the span (<= 8192) */
	uint8_t trimmed;   /* current page trimmed as it emptied, since the last tick (1);
			    * carved again after such a trim, not to be trimmed so (2) */
	uint8_t slices;    /* span length */
	uint8_t idle;      /* 0: emptied since the last tick; else 1 + idle ticks */
	uint8_t pad_;
	uint16_t zero_from;            /* OS pages from here to the span's end are known zero
					* (never touched since mapped or purged) */
	struct arr__block *local_free; /* blocks the owner freed on the generic path (full pages) */
	_Atomic uintptr_t thread_free; /* remote frees | ARR__TF_* */
	uint8_t *start;
	struct arr__page *next, *prev; /* heap list links */
	union {
		struct {                 /* huge blocks only */
			size_t huge_map; /* bytes mapped, header included */
			size_t huge_req; /* bytes requested */
		};
		struct {                              /* pages of a size class: holes (heap.c page_punch) */
			struct arr__block *seen_free; /* `free` and `used` at the last tick, */
			uint32_t seen_used;           /* to tell an idle page */
			uint8_t seen_ticks;           /* ticks the page has been idle */
			uint8_t requeued;             /* exhausted, sent to the back of its list once (heap.c) */
			uint16_t holes;               /* OS pages of a one-slice span purged
						       * while all their blocks were free */
		};
	};
};

/* A page's holed blocks: those that start in an OS page its `holes` marks
 * purged (the invariants above; heap.c page_punch). */
static inline uint32_t arr__page_holed(const struct arr__page *page)
{
	uint32_t holed = 0;
	if (page->holes)
		for (uint32_t i = 0; i < page->capacity; i++)
			holed += page->holes >> ((size_t)i * page->block_size / ARR__OS_PAGE) & 1;
	return holed;
}

/*
 * Invariants (arr__pool_is_valid, under arr__lock):
 *   bit 0 (the header slice) is never in free_mask; clean_mask ⊆ free_mask
 *   dirty_slices == Σ over segments |free_mask & ~clean_mask| (pool.c),
 *       and oldest_dirty <= the stamp of every free dirty slice
 *   a used slice belongs to exactly one span: pages[first].slices == n,
 *       pages[first + k].head_off == ARR__HEAD_OFF(k) (0 <= k < n)
 *   huge cache: huge_cache_n <= HUGE_CACHE_N, Σ map == huge_cache_bytes
 *       <= HUGE_CACHE_BYTES, stamps non-decreasing (oldest first)
 */
struct arr__segment {
	uint32_t kind; /* 0 small, 1 huge */
	/* huge: OS pages mapped past huge_map, the rest of a kept mapping longer
	 * than the block needed, given back lazily (pool.c, huge_slack); else 0 */
	uint32_t huge_slack;
	struct arr__heap *owner; /* the heap it was mapped for (pool.c: spans stay near their thread's) */
	uint64_t free_mask;      /* free slices */
	uint64_t clean_mask;     /* free slices known to be zero (not resident) */
	struct arr__segment *next;
	uint8_t res[ARR__SLICES]; /* free dirty slice: OS pages from its start that may be resident */
	/* 96-byte descriptors from a 32-byte boundary: the first 32 bytes of each
	 * (the fast paths' fields) lie in one cache line */
	struct arr__page pages[ARR__SLICES] __attribute__((aligned(32)));
	uint64_t stamp[ARR__SLICES]; /* op clock when the slice was freed */
};

/* Classes that may be sparse: above 1 KiB (a 256-byte span unit is then
 * within 1/4 of any request, within 1/8 above 2 KiB; the `sparse_min`
 * option raises the bound) to 8 KiB (span_min's default; a larger span_min
 * leaves the classes above 8 KiB to the span heap anyway). */
#define ARR__SPARSE_FIRST (ARR__FINE_FIRST)
#define ARR__SPARSE_END (ARR__FINE_FIRST + 33)
#define ARR__SPAN_SPARSE_MAX ((size_t)8 << 10) /* the largest of them */

/* Borrows a class below 256 bytes may make per heap tick (heap.c borrow). */
#define ARR__SMALL_BORROWS 32

/* Span-heap arenas (spanheap.c): at most this many; the `span_arenas`
 * option says how many are used. */
#define ARR__SPAN_ARENAS 8

/* Entries of a heap's span-heap block cache (spanheap.c). */
#define ARR__SC_N 16

/*
 * Invariants (arr__heap_is_valid, owner thread only):
 *   pages[c] == &arr__page_empty <=> last[c] == NULL; the list from pages[c]
 *       is doubly linked (p->next->prev == p), ends at last[c], and every
 *       page on it has cls == c, heap == this heap, no FULL or HUGE flag
 *   every page on `full` has the FULL flag and heap == this heap
 *   span_cached == Σ slices of the span_cache pages <= 16, each with used == 0
 *   borrows[c] <= ARR__SMALL_BORROWS, and 0 for classes of 256 bytes and more
 *   each block on `delayed` lies in a FULL page of this heap
 *   tick_left <= tick_len <= ARR__TICK_OPS (0, 0 before the first free)
 *   sc[0..sc_n): distinct span-heap blocks in use by the span heap with the
 *       CACHED mark, of length len; Σ len == sc_units <= span_cache bytes;
 *       Σ their booked requested bytes == sc_req; ticks non-decreasing
 */
struct arr__heap {
	/* malloc's fast path up to ARR__DIRECT_MAX bytes: the current page of
	 * the class of every size in 8-byte steps, direct[(size + 7) / 8] ==
	 * pages[arr__class_tab[(size + 7) / 8]] (mimalloc's pages_free_direct),
	 * so the path is one load to the page and the pop, without the class
	 * table's load before it. Written only with pages[c] (heap.c
	 * set_current). */
	struct arr__page *direct[ARR__HEAP_DIRECT_N];
	struct arr__page *pages[ARR__NCLASSES]; /* current page first; &arr__page_empty if none */
	struct arr__page *last[ARR__NCLASSES];  /* last page of each list; NULL if none */
	/* owner-only counters; others read them racily when summing stats */
	/* Live blocks of a class are the `used` of its pages plus the sum of
	 * these: a remote free subtracts one from the freeing thread's until the
	 * owner collects the block and lowers `used` (adding it back to its
	 * own), so neither fast path keeps a per-class count. */
	int64_t live_adj[ARR__NCLASSES];
	/* Usable minus requested bytes of the blocks allocated, less that of
	 * the blocks freed by size: requested bytes live = usable bytes live
	 * (from the pages) minus the sum of these (arr_alloc_stats_get). A
	 * plain free stores nothing for it. */
	int64_t waste;
	uint64_t ops_synced; /* alloc_count + free_count already folded into the op clock */
	uint64_t calloc_zeroed, calloc_skipped;
	/* alloc_count and the frees (arr__heap_frees) drive the purge clock */
	uint64_t alloc_count;
	/* The frees are counted by the tick's countdown: free_count holds
	 * those before the current one, which started at tick_len and is at
	 * tick_left, so a free's fast path counts with the one subtract that
	 * is also its tick test (arr__dec64_was_le1). 0, 0 in a fresh heap:
	 * its first free wraps tick_left and ticks. */
	uint64_t free_count, tick_len, tick_left;
	unsigned punch_cls;           /* where the next tick's look for idle pages starts (heap.c) */
	struct arr__page *full;       /* full pages */
	struct arr__page *span_cache; /* empty spans kept for the next take (see heap.c) */
	unsigned span_cached;         /* slices in span_cache */
	/* Free span-heap blocks this thread keeps for its next span-heap
	 * mallocs (spanheap.c "The thread's block cache"), oldest first. */
	struct arr__span_cached {
		uint8_t *p;
		uint32_t len;  /* units */
		uint32_t tick; /* sc_tick when it was cached */
	} sc[ARR__SC_N];
	unsigned sc_n; /* entries */
	/* The sparse block cache (spanheap.c): its takes in a row of its
	 * block's length; the length in units of the last span block up to
	 * 8 KiB freed, until the next span-heap malloc compares its own; and
	 * how often they have matched lately (the cache is used from 2). */
	uint8_t sc_streak, sc_last, sc_score;
	uint32_t sc_tick;  /* heap ticks so far */
	uint64_t sc_units; /* Σ len of the entries */
	uint64_t sc_req;   /* Σ requested bytes the span heap books for them */
	/* Sparse classes (heap.c): the classes above 2 KiB up to span_min whose
	 * blocks this thread holds few of are served by the span heap; the
	 * blocks of each it allocated there minus those freed here (a remote
	 * free counts in the freeing heap), and the classes that have become
	 * dense (a page of their own again). */
	int32_t sparse_live[ARR__SPARSE_END - ARR__SPARSE_FIRST];
	uint64_t dense; /* bit c - ARR__SPARSE_FIRST */
	/* Blocks each class below 256 bytes borrowed from a larger class's
	 * current page since the last tick, at most ARR__SMALL_BORROWS (heap.c
	 * borrow: past that the class takes a page of its own). */
	uint8_t borrows[ARR__NCLASSES];
	/* Classes whose current page was carved again after a trim as it
	 * emptied (heap.c "trim_barred"): a page they take from the pool is
	 * not trimmed so; a class's bar lapses at a tick that finds it not
	 * churning. */
	uint64_t trim_barred[(ARR__NCLASSES + 63) / 64];
	unsigned span_arena;     /* its span-heap mallocs' arena, modulo span_arenas (spanheap.c) */
	unsigned span_contended; /* its span-heap mallocs that found the arena's lock taken */
	_Atomic(struct arr__block *) delayed;
	/* The census of busy heaps (heap.c arr__heap_census, under arr__lock):
	 * the heap's operations at the last census, and whether it counts. */
	uint64_t census_ops, census_join_ops; /* at the last census, at the last new heap */
	uint64_t census_join_calls;           /* made between the last two new heaps */
	uint64_t census_active;               /* op clock when it last made calls at a census */
	uint64_t born_frees;                  /* its frees when its thread took it over from an
					       * exited one (one of its own: ARR__TRIM_NOW_AGE fewer) */
	uint64_t born_clock;                  /* op clock when its thread took it (heap.c reap_one) */
	uint64_t abandon_clock;               /* ARR__HEAP_ABANDONED: op clock at its thread's exit */
	bool census_busy;
	int state; /* ARR__HEAP_* */
	/* ARR__HEAP_FREE: slices of the empty class pages its exited thread left
	 * in it, kept for the next thread (heap.c "Kept pages"), and since when */
	uint32_t kept;
	uint64_t kept_stamp;
	struct arr__heap *next_all;   /* every heap ever made (never unmapped) */
	struct arr__heap *next_state; /* abandoned or free list */
};

/* ARR__HEAP_SHARED: the light threads' heap (heap.c "Light threads"),
 * touched only under its lock, never abandoned, never counted busy. */
enum { ARR__HEAP_ACTIVE, ARR__HEAP_ABANDONED, ARR__HEAP_FREE, ARR__HEAP_EMPTY, ARR__HEAP_SHARED };

/* ---- globals ---- */
extern struct arr__page arr__page_empty;
extern struct arr__heap arr__heap_empty;
extern __thread struct arr__heap *arr__tl_heap __attribute__((tls_model("initial-exec")));
extern uint8_t arr__class_tab[ARR__DIRECT_N];
/* The entries of arr__class_tab of class c < ARR__FINE_FIRST:
 * [arr__class_direct[c], arr__class_direct[c + 1]) (those below
 * ARR__HEAP_DIRECT_N are its entries of a heap's direct[] too). */
extern uint8_t arr__class_direct[ARR__FINE_FIRST + 1];
extern uint32_t arr__class_size[ARR__NCLASSES];
extern uint8_t arr__class_slices[ARR__NCLASSES];
/* Live span-heap blocks of a sparse class at which it turns dense whatever
 * `sparse` says: ARR__SPARSE_WASTE over the excess of its blocks' span
 * rounding over the class's block (classes.c; UINT32_MAX: no excess). */
#ifndef ARR__SPARSE_WASTE
#define ARR__SPARSE_WASTE ((size_t)16 << 10)
#endif
extern uint32_t arr__class_sparse_cap[ARR__SPARSE_END - ARR__SPARSE_FIRST]; /* by sparse class */
/* ceil(2^64 / block size): off is a multiple of the block size iff
 * off * magic <= magic - 1 (mod 2^64), for any 32-bit off (Lemire et al.) */
extern uint64_t arr__class_magic[ARR__NCLASSES];

struct arr__options {
	long long purge_delay; /* ops; 0 = immediately, < 0 = never */
	unsigned young;        /* the young delay is a thread's ops / this (arr__purge_limit); 0: off */
	unsigned aged;         /* the full delay is at least a thread's ops / this (arr__purge_limit); 0: off */
	size_t mmap_threshold; /* larger requests are mapped directly */
	unsigned idle_ratio;   /* free dirty slices kept ≤ used slices / this (0, default: no bound) */
	size_t span_min;       /* larger requests (to ARR__MAX_SMALL) go to the span heap; 0: none */
	size_t span_cache;     /* bytes of free span-heap blocks a thread keeps for itself; 0: none */
	unsigned span_arenas;  /* span-heap arenas, 1..ARR__SPAN_ARENAS (spanheap.c) */
	unsigned span_split;   /* contended span-heap mallocs before a thread takes an arena of its own */
	unsigned sparse;       /* a class above 1 KiB is sparse (from the span heap) while a thread
				* holds fewer of its blocks than this many pages' worth (heap.c); 0: none */
	unsigned sparse_thr;   /* ... while at most this many threads hold a heap (sparse_threads); 0: any */
	size_t sparse_min;     /* ... and whose blocks are larger than this (1024 .. 8192) */
	unsigned sparse_cache; /* a thread keeps the span block up to 8 KiB it freed last (spanheap.c); 0: off */
	unsigned light;        /* slow-path mallocs a thread makes from the shared heap before it
				* takes a heap of its own (heap.c "Light threads"); 0: none */
	/* Derived from the above by arr__options_derive(), never set alone:
	 * a plain request above span_lo up to span_hi goes straight to the
	 * span heap (api.c alloc_slow: no class page, no sparse bookkeeping);
	 * malloc's fast path looks up a class page up to fast_max only. */
	size_t span_lo;  /* max(span_min, ARR__SPAN_SPARSE_MAX), or SIZE_MAX with no span heap */
	size_t span_hi;  /* min(ARR__MAX_SMALL, mmap_threshold) */
	size_t fast_max; /* min(span_lo, mmap_threshold) */
	/* the largest request whose slow path may be arr__malloc_refill (if
	 * its class is not sparse; api.c alloc_slow): min(ARR__MAX_SMALL,
	 * mmap_threshold, span_min if not 0) */
	size_t refill_max;
};
extern struct arr__options arr__opt;
void arr__options_derive(void);

/* Global lock for the pool and the heap lists. */
extern pthread_mutex_t arr__lock;
/* The shared heap's (heap.c "Light threads"); lock order: it, then arr__lock. */
extern pthread_mutex_t arr__shared_lock;
extern _Atomic int arr__abandoned_count;
/* Heaps of running threads (under arr__lock). */
extern _Atomic unsigned arr__active_heaps;
/* Heaps of threads that allocate (heap.c arr__heap_census): a thread that
 * holds a heap but has stopped calling malloc and free (a main thread
 * waiting for its workers) is not one. Written under arr__lock. */
extern _Atomic unsigned arr__busy_heaps;
extern _Atomic unsigned arr__kept_heaps; /* free heaps with kept pages */
/* Threads busy allocating (at least 1): the purge delay, the multi-thread
 * modes and the sparse classes' thread bound go by it. */
static inline unsigned arr__purge_scale(void)
{
	unsigned n = atomic_load_explicit(&arr__busy_heaps, memory_order_relaxed);
	return n > 1 ? n : 1;
}

/*
 * How much longer than `purge_delay` freed memory waits before it is purged,
 * and how many idle ticks before an empty current page is trimmed: 1
 * single-threaded; with n threads, n (the op clock sums every thread's
 * operations) times ARR__MT_PURGE_FACTOR. With several threads a purge is a
 * TLB-shootdown IPI to every CPU running the process, and memory purged in a
 * busy program is mostly faulted in again soon: 4-thread stress replay
 * without the factor: ~1 400 madvise calls and 33 k page faults against
 * mimalloc's 7 and 29 k; with a factor 8, 27 k faults and 8 % less time,
 * for 2 % more peak RSS (still under glibc's); 4 gives the same time for
 * 0.5 MB less.
 */
#define ARR__MT_PURGE_FACTOR 4
static inline unsigned arr__purge_mult(void)
{
	unsigned n = arr__purge_scale();
	return n > 1 ? n * ARR__MT_PURGE_FACTOR : 1;
}

/*
 * When freed memory is due for its purge: the stamp (op clock when freed)
 * at or before which it is, in *limit; false if nothing is due. `mult` is
 * the caller's scaling of purge_delay for several threads
 * (arr__purge_mult, arr__purge_scale).
 *
 * Memory freed `purge_delay` x mult operations ago is due (the full delay);
 * once half the operations each thread has run so far (option `aged`) are
 * more, that many instead, up to ARR__AGED_CAP x purge_delay: a long-running
 * program's memory is left free for longer before it is wanted again
 * (docs/allocator.md, "An old program's delay"). So is memory the program has been slow to take back while its footprint
 * grew: freed at least the young delay before the last time an allocation
 * had to take fresh memory (the growth clock, arr__pool_grow_clock). The
 * young delay is a quarter of the operations each thread has run so far
 * (the op clock over the threads holding a heap, option `young`), at least
 * ARR__YOUNG_MIN, at most purge_delay: a program that has run N operations
 * is likely to run about as many more.
 *
 * Why both. The full delay alone (100 000 operations) is longer than the
 * whole run of most small programs (cargo's 33 k calls, git log's 82 k),
 * which then never give back what a phase frees and peak at the sum of
 * their phases (cargo's replay: 2 572 KB against glibc's 1 812). A young
 * delay for all freed memory also purged what a program reuses steadily: a working set replaced one block at a time, whose
 * free spans wait a few thousand operations for a block that fits, had
 * twice the page faults (t1 private large steady 9 190 against 4 370).
 * Such a program takes no fresh memory once its working set is in place,
 * so the growth clock stops and only the full delay runs; a program that
 * grows while its freed memory waits gives that memory back before the
 * growth adds to its peak.
 */
#define ARR__YOUNG_DIV 4
#ifndef ARR__AGED_DIV
#define ARR__AGED_DIV 2
#endif
#define ARR__AGED_CAP 64
#define ARR__YOUNG_MIN 1000
uint64_t arr__pool_clock(void);
uint64_t arr__pool_grow_clock(void);
/* Would `pages` fresh OS pages taken now raise the footprint's high-water
 * mark? A hint, read without the pool lock. */
bool arr__pool_would_grow(uint64_t pages);
/* The operations each thread has run so far: the op clock over the threads
 * holding a heap (the program's age, for the young and aged delays). */
static inline uint64_t arr__thread_ops(void) { return arr__pool_clock() / arr__purge_scale(); }
/* The young delay (purge_delay itself when it is at most ARR__YOUNG_MIN,
 * or the option is off), unscaled; < 0: never. */
static inline long long arr__purge_delay_now(void)
{
	long long d = arr__opt.purge_delay;
	if (d <= ARR__YOUNG_MIN || arr__opt.young == 0)
		return d;
	uint64_t young = arr__thread_ops() / arr__opt.young;
	if (young < ARR__YOUNG_MIN)
		young = ARR__YOUNG_MIN;
	return young < (uint64_t)d ? (long long)young : d;
}
static inline bool arr__purge_limit(uint64_t now, unsigned mult, uint64_t *limit)
{
	long long d = arr__opt.purge_delay;
	*limit = 0;
	if (d < 0)
		return false;
	uint64_t full = (uint64_t)d * mult, lim = 0;
	if (arr__opt.aged != 0 && d > ARR__YOUNG_MIN) {
		uint64_t age = arr__thread_ops() / arr__opt.aged;
		if (age > (uint64_t)d * ARR__AGED_CAP)
			age = (uint64_t)d * ARR__AGED_CAP;
		if (age > (uint64_t)d)
			full = age * mult;
	}
	bool due = now >= full;
	if (due)
		lim = now - full;
	if (d > ARR__YOUNG_MIN && arr__opt.young != 0) {
		uint64_t y = (uint64_t)arr__purge_delay_now() * mult, g = arr__pool_grow_clock();
		uint64_t yl = now - y < g ? now - y : g;
		if (y < full && now >= y && (!due || yl > lim)) {
			lim = yl;
			due = true;
		}
	}
	*limit = lim;
	return due;
}

/* ---- size classes (classes.c) ---- */
/* The third split class above 2^k (k = 10..13): 17/256 above it, rounded up
 * to 16 bytes (1104, 2192, 4368, 8736). */
static inline size_t arr__split3(unsigned k)
{
	return ((size_t)1 << k) + ((((size_t)17 << (k - 8)) + 15) & ~(size_t)15);
}

/* On the functions a small program runs (its first mallocs and frees,
 * the first segments, init): the compiler puts them in .text.hot, which the
 * linker lays out first, so they share the text's first 64 KiB window of
 * the kernel's fault-around and the rest of the text is never mapped in a
 * program that needs none of it (docs/allocator.md, "What it costs a
 * program that barely allocates"; allocator.fixedcost_text). */
#define ARR_HOT __attribute__((hot))

/* On constants the hot functions read (tables, the strings they pass to
 * libc): in .data, not .rodata. The library's .rodata shares a read-only
 * mapping with .eh_frame, five pages the kernel's fault-around maps whole at
 * the first read of any of it, while .data's pages are resident anyway
 * (docs/allocator.md, "What it costs a program that barely allocates";
 * allocator.fixedcost_hottext checks that a small program's calls leave that
 * mapping untouched). Writable only because .data is: nothing writes them. */
#define ARR_HOT_DATA __attribute__((section(".data.arr_hot")))

/* Bits set in x, inline: the build has no -mpopcnt, so __builtin_popcountll
 * is a call to libgcc's __popcountdi2, linked after all of our code, outside
 * the hot text (ARR_HOT). */
static inline unsigned arr__popcount64(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* arr__size_class() of a size above ARR__SMALL_TAB */
ARR_HOT static inline unsigned arr__size_class_above(size_t size)
{
	size_t s1 = size - 1;
	unsigned k = 63u - (unsigned)__builtin_clzll(s1);
	unsigned j = (unsigned)(s1 >> (k - 3)) - 7u; /* eighth of the doubling, 1..8 */
	if (k <= 13) {
		unsigned q = (unsigned)(s1 >> (k - 6)) & 7u; /* 64ths above 2^k, 0..7 */
		unsigned r = j == 1 ? (unsigned)(q >= 1u) + (q >= 2u) + (s1 >= arr__split3(k)) : j + 2u;
		return ARR__FINE_FIRST + (k - 10u) * 11u + r;
	}
	return ARR__FINE_END + (k - 14u) * 8u + (j - 1u);
}

ARR_HOT static inline unsigned arr__size_class(size_t size)
{
	if (ARR_LIKELY(size <= ARR__SMALL_TAB))
		return arr__class_tab[(size + 7) >> 3];
	return arr__size_class_above(size);
}

/* ---- pointer -> metadata ---- */
static inline struct arr__segment *arr__segment_of(const void *p)
{
	return (struct arr__segment *)((uintptr_t)p & ~(uintptr_t)(ARR__SEG_SIZE - 1));
}

/* The head_off of the k-th slice's descriptor of a span: in bytes, so that
 * the span's descriptor is one subtract from the slice's (mimalloc's
 * slice_offset), not a multiply by the descriptor's size. */
_Static_assert(sizeof(struct arr__page) == 96, "descriptors of 96 bytes (arr__slice_desc, struct arr__segment)");
#define ARR__HEAD_OFF(k) ((uint16_t)((size_t)(k) * sizeof(struct arr__page)))

/* The descriptor of p's slice. The slice index times 32 in one shift and
 * mask, times 3 in the address's lea: the descriptor's offset without a
 * multiply. */
static inline struct arr__page *arr__slice_desc(const void *p)
{
	struct arr__segment *seg = arr__segment_of(p);
	size_t off32 = ((uintptr_t)p >> (ARR__SLICE_SHIFT - 5)) & ((size_t)(ARR__SLICES - 1) << 5);
	return (struct arr__page *)((uint8_t *)seg->pages + off32 * 3);
}

static inline struct arr__page *arr__page_of(const void *p)
{
	/* No table: the slice's own descriptor says how far back its span's
	 * is, and for a one-slice span (most) it is the span's, whose line the
	 * caller reads next anyway. */
	struct arr__page *d = arr__slice_desc(p);
	return (struct arr__page *)((uint8_t *)d - d->head_off);
}

/* Start of the block holding p (p may be an aligned interior pointer). */
static inline struct arr__block *arr__block_start(const struct arr__page *page, const void *p)
{
	size_t off = (size_t)((const uint8_t *)p - page->start);
	return (struct arr__block *)(page->start + off - off % page->block_size);
}

/* The frees of heap h (exact in its own thread; read by another, racy, and
 * off by up to a countdown while h ticks). */
static inline uint64_t arr__heap_frees(const struct arr__heap *h)
{
	uint64_t left = __atomic_load_n(&h->tick_left, __ATOMIC_RELAXED);
	return __atomic_load_n(&h->free_count, __ATOMIC_RELAXED) + __atomic_load_n(&h->tick_len, __ATOMIC_RELAXED) -
	       left;
}
static inline uint64_t arr__heap_ops(const struct arr__heap *h) { return h->alloc_count + arr__heap_frees(h); }

/*
 * calloc of a block of a size class that is known zero skips the memset but
 * writes a zero into each of its OS pages past the first (the carve wrote the
 * first). Those pages were never touched: a program that reads its calloc'd
 * block before writing it (a hash table probed, a bitmap tested) would get
 * the kernel's shared zero page on the read, then on the first write a
 * second fault that copies it and, with threads, a TLB-shootdown IPI to
 * every CPU; written first, each page costs one fault, which the program's
 * own first write would have cost anyway. Blocks above ARR__PREFAULT_MAX
 * stay untouched, as glibc leaves them (fresh heap top or a mapping of its
 * own): a large calloc is often a hash table or bitmap the program touches
 * sparsely (git log --stat callocs 512 KB and writes 36 KB of it: prefaulted,
 * 476 KB more resident than glibc), and a 256 MiB calloc costs nothing until
 * used.
 */
#define ARR__PREFAULT_MAX ((size_t)64 << 10)
static inline void arr__calloc_prefault(void *b, size_t size)
{
	if (size > ARR__OS_PAGE && size <= ARR__PREFAULT_MAX) {
		uint8_t *p = (uint8_t *)(((uintptr_t)b + ARR__OS_PAGE) & ~(uintptr_t)(ARR__OS_PAGE - 1));
		for (uint8_t *end = (uint8_t *)b + size; p < end; p += ARR__OS_PAGE)
			*(volatile uint8_t *)p = 0;
	}
}

/*
 * calloc of a span-heap block on resident memory gives its whole pages back
 * (MADV_DONTNEED: the kernel's zero pages at the next touch) instead of
 * clearing them, by glibc's rule for when a calloc gets fresh pages: a
 * request above its mmap threshold, 128 KiB, which every larger block
 * freed raises to its size in whole pages (up to 32 MiB). So a program
 * that callocs a big table and writes part of it holds what it writes, as
 * with glibc's fresh mapping, while one that callocs and frees such blocks
 * again and again has them cleared, as glibc's heap does once its
 * threshold has risen (a page fault costs ~25 times the memset of a
 * resident page here: 1.6 us against 63 ns).
 * Not a huge block's kept mapping: its pages given back were faulted in
 * again by the memset of the mapping's next reuse (docs/allocator.md,
 * "Known-zero tracking").
 */
extern size_t arr__calloc_fresh_min;
#define ARR__CALLOC_FRESH_MAX ((size_t)32 << 20)
static inline void arr__calloc_fresh_note(size_t bytes)
{
	bytes = (bytes + ARR__OS_PAGE - 1) & ~(size_t)(ARR__OS_PAGE - 1); /* as glibc's mapped chunk */
	if (bytes > __atomic_load_n(&arr__calloc_fresh_min, __ATOMIC_RELAXED) && bytes <= ARR__CALLOC_FRESH_MAX)
		__atomic_store_n(&arr__calloc_fresh_min, bytes, __ATOMIC_RELAXED);
}

/* ---- os.c: the only file that talks to the kernel ---- */
void *arr__os_map(size_t size);
void *arr__os_map_aligned(size_t size, size_t align);
void arr__os_unmap(void *p, size_t size);
void arr__os_purge(void *p, size_t size);
/* Purge n ranges, in one system call where the kernel allows. */
struct iovec;
void arr__os_purge_many(const struct iovec *iov, unsigned n);
/* The process's resident size in OS pages (/proc/self/statm), or -1. */
long arr__os_rss_pages(void);
/* Move/resize a mapping to a fresh `align`-aligned place; NULL on failure. */
void *arr__os_remap_aligned(void *p, size_t old_size, size_t new_size, size_t align);
bool arr__os_resize_in_place(void *p, size_t old_size, size_t new_size);

/* ---- classes.c ---- */
void arr__classes_init(void);

/* ---- pool.c (callers hold no lock; the pool takes arr__lock) ---- */
/* A span of `slices` for a page of class `cls`, owned by heap h; NULL if out of memory. */
struct arr__page *arr__pool_take(struct arr__heap *h, unsigned cls);
void arr__pool_give(struct arr__heap *h, struct arr__page *page);
/* Set up the descriptor of a span (page->slices set) for class cls of heap h;
 * OS pages from zero_from on are known zero. */
void arr__page_init(struct arr__page *page, struct arr__heap *h, unsigned cls, size_t zero_from);
/* Advance the op clock by the heap's unsynced ops and purge what has expired. */
void arr__pool_tick(struct arr__heap *h);
/* In a fork's child, before the vanished threads' heaps are abandoned: make
 * the block lists of every class page neither heap a nor b owns consistent
 * again (pool.c, "A fork's torn pages"). */
void arr__pool_fork_repair(const struct arr__heap *a, const struct arr__heap *b);
/* Under arr__lock (heap.c "Kept pages"): a free heap keeps `slices` of
 * empty class pages since op clock `stamp`, or hands them to its next
 * thread (-slices); and one such page back to the free slices, freed at
 * `stamp`. */
void arr__pool_kept_locked(int64_t slices, uint64_t stamp);
void arr__pool_give_locked(struct arr__page *page, uint64_t stamp);
/* Under arr__lock: the kept pages of free heaps kept since `older_than` or
 * before back to the pool; returns the slices given, and the oldest stamp
 * of those still kept (UINT64_MAX if none) in *oldest. */
uint64_t arr__heap_release_kept_locked(uint64_t older_than, uint64_t *oldest);
/* Under arr__lock, the invariant walk: the free heaps' kept slices (each
 * kept page checked). */
uint64_t arr__heap_kept_walk_locked(void);
/* Under arr__lock: a kept page of class cls out of its free heap (its kept
 * stamp in *stamp), or NULL. */
struct arr__page *arr__heap_kept_steal_locked(unsigned cls, uint64_t *stamp);
/* The op clock (summed malloc+free counts of the heaps, folded in at ticks
 * and pool calls); read without the lock. */
uint64_t arr__pool_clock(void);
/* Another part (the span heap) is about to make `bytes` of fresh memory
 * resident: give back as much of the pool's idle memory first. */
void arr__pool_grow(size_t bytes);
/* A class page carved `pages` fresh OS pages while free dirty slices wait:
 * give back as much of the oldest beyond a floor (pool.c). */
void arr__pool_carved_fresh(unsigned pages);
/* A thread pays its fresh carves this many OS pages at a time: one take of
 * the pool's lock and one purge (with threads, one TLB shootdown) for
 * 256 KiB of carves. */
#define ARR__CARVE_DEBT_PAGES (4 * ARR__SLICE_SIZE / ARR__OS_PAGE)
/* The pool's free dirty slices (under its lock; a hint without it). */
extern uint64_t arr__dirty_slices;
#define ARR__IDLE_FLOOR_SLICES 4 /* per busy thread: free dirty slices the idle purges leave (pool.c) */
/* Purge every free dirty slice now; returns bytes purged. */
size_t arr__pool_purge_all(void);
/* A huge block; with `zeroed`, a zero one, and *zeroed = the bytes cleared
 * (a reused mapping) or 0 (a fresh one). */
void *arr__huge_alloc(size_t size, size_t align, size_t *zeroed);
void arr__huge_free(struct arr__page *page);
void *arr__huge_realloc(struct arr__page *page, void *p, size_t size);
/* Blocks aligned to ARR__SEG_SIZE or more: p is segment-aligned (and not NULL). */
static inline bool arr__is_big_aligned(const void *p) { return ((uintptr_t)p & (ARR__SEG_SIZE - 1)) == 0; }
size_t arr__big_aligned_size(const void *p); /* 0 if p is not such a block */
void arr__big_aligned_free(void *p);

struct arr__pool_stats {
	uint64_t mapped, resident, purged_pages;
	uint64_t huge_live, huge_req, huge_count;
	uint64_t cls_pages[ARR__NCLASSES], cls_capacity[ARR__NCLASSES], cls_used[ARR__NCLASSES];
};
void arr__pool_stats(struct arr__pool_stats *out); /* caller holds arr__lock */
/* Give [p, p + size) of a span the caller owns back to the OS (no lock). */
void arr__pool_purge_range(void *p, size_t size);
/* Count bytes purged from spans in use elsewhere (statistics). */
void arr__pool_count_purged(size_t bytes);
extern _Atomic int64_t arr__huge_live, arr__huge_req_live, arr__huge_count;

/* The segment map's bit for seg (pool.c). */
void arr__segmap_set(const void *seg, bool on);

/* ---- spanheap.c (callers hold no lock; it takes its own) ---- */
#define ARR__SPAN_UNIT_SHIFT 8 /* 256 bytes */
/*
 * A span-heap segment, its units (256 bytes) and tags. Invariants
 * (arr__spanheap_is_valid): from ARR__SP_FIRST_UNIT to ARR__SP_UNITS the spans tile the
 * segment; tag[] is nonzero only at a span's first and last unit, both with
 * its length and state (START, the slack, only on the first); no two FREE
 * spans adjacent; DIRTY equal at both ends; a FREE span without DIRTY (off
 * the lru) has no resident OS page wholly inside it.
 */
#define ARR__SP_UNIT_SHIFT ARR__SPAN_UNIT_SHIFT
#define ARR__SP_UNIT ((size_t)1 << ARR__SP_UNIT_SHIFT)
#define ARR__SP_UNITS (ARR__SEG_SIZE >> ARR__SP_UNIT_SHIFT)           /* 16384 */
#define ARR__SP_OSPAGES (ARR__SEG_SIZE / ARR__OS_PAGE)                /* 1024 */
#define ARR__SP_UNITS_PER_OSPAGE (ARR__OS_PAGE >> ARR__SP_UNIT_SHIFT) /* 16 */
#define ARR__SP_MAX_UNITS (ARR__MAX_SMALL >> ARR__SP_UNIT_SHIFT)      /* 4096 */
/* Bins of free spans (spanheap.c bin_of): one per length up to
 * ARR__SP_EXACT_UNITS (128 KiB), then ARR__SP_COARSE_BINS per doubling up to
 * ARR__SP_MAX_UNITS; longer spans in bin 0 (no span is 0 units long). */
#define ARR__SP_EXACT_SHIFT 9
#define ARR__SP_EXACT_UNITS (1u << ARR__SP_EXACT_SHIFT) /* 512 */
#define ARR__SP_COARSE_SHIFT 5
#define ARR__SP_COARSE_BINS (1u << ARR__SP_COARSE_SHIFT) /* 32 */
#define ARR__SP_MAX_SHIFT (20 - ARR__SP_UNIT_SHIFT)      /* log2 ARR__SP_MAX_UNITS */
#define ARR__SP_NBINS \
	(ARR__SP_EXACT_UNITS + 1 + (ARR__SP_MAX_SHIFT - ARR__SP_EXACT_SHIFT) * ARR__SP_COARSE_BINS) /* 609 */
#define ARR__SP_BIN_WORDS ((ARR__SP_NBINS + 63) / 64)
_Static_assert(ARR__SP_UNITS == 16384 && ARR__SP_UNITS_PER_OSPAGE == 16 && ARR__SP_MAX_UNITS == 4096 &&
		       ARR__SP_MAX_UNITS == 1u << ARR__SP_MAX_SHIFT && ARR__SP_NBINS == 609,
	       "the figures in the comments above (and docs/allocator.md) follow the segment and unit sizes");

/* tag bits */
/* tag bits: the length (up to ARR__SP_UNITS, LEN_BITS bits), the state,
 * START, DIRTY, then the slack (in use, < 1 unit) or the node's slot (free) */
#define ARR__SP_LEN_BITS (ARR__SEG_SHIFT - ARR__SP_UNIT_SHIFT + 1)
#define ARR__SP_T_LEN ((1u << ARR__SP_LEN_BITS) - 1) /* length in units */
#define ARR__SP_T_FREE (1u << ARR__SP_LEN_BITS)
#define ARR__SP_T_USED (2u << ARR__SP_LEN_BITS)
#define ARR__SP_T_BUSY (3u << ARR__SP_LEN_BITS) /* being purged */
#define ARR__SP_T_STATE (3u << ARR__SP_LEN_BITS)
#define ARR__SP_T_START (1u << (ARR__SP_LEN_BITS + 2)) /* first unit of a block in use */
#define ARR__SP_T_DIRTY (1u << (ARR__SP_LEN_BITS + 3)) /* free and on the lru list */
#define ARR__SP_T_SLACK_SHIFT (ARR__SP_LEN_BITS + 4)   /* in use: usable - requested bytes */
#define ARR__SP_T_SLACK_MASK 0xffu                     /* (< 1 unit, as the span heap booked it) */
#define ARR__SP_T_SLOT_SHIFT (ARR__SP_LEN_BITS + 4)    /* free: its node's slot */
/* The last unit's tag of a block in use says what its holder did with it
 * (written by the holder, without the lock: the span heap reads only the
 * length and state there): the slack as requested now, in bytes below one
 * unit (XSLACK) and units past the request (XUNITS: a block of a thread's
 * cache may serve a slightly shorter request), and CACHED, free in a
 * thread's cache (a free of it is a double free). */
#define ARR__SP_T_XSLACK_SHIFT ARR__SP_T_SLACK_SHIFT
#define ARR__SP_T_XUNITS_SHIFT (ARR__SP_T_SLACK_SHIFT + 8)
#define ARR__SP_T_XUNITS_MAX 15u
#define ARR__SP_T_CACHED (1u << 31)
/* Free spans are never adjacent, so a segment has fewer than UNITS / 2. */
#define ARR__SP_SLOTS (ARR__SP_UNITS / 2)
#define ARR__SP_T_SLOT_MASK (ARR__SP_SLOTS - 1u)
/* The node array: one slot per free span, which lie in the data units
 * and never side by side, so fewer than half of them (the data start past
 * the header, whose own units hold none); 32 fewer than SLOTS end the
 * header before unit 1824, where the data start (where they start decides
 * where every block lies). */
#define ARR__SP_NODES (ARR__SP_SLOTS - 32)
_Static_assert(ARR__SP_T_SLACK_SHIFT + ARR__SPAN_UNIT_SHIFT <= 32 &&
		       ARR__SP_T_SLOT_SHIFT + ARR__SEG_SHIFT - ARR__SPAN_UNIT_SHIFT - 1 <= 32,
	       "span tags fit 32 bits");

/* A free span's node, out of line (a purged span is never touched). Slots
 * are reused LIFO, so the resident part of the node array grows with the
 * number of free spans, not with the segment. */
struct arr__span_node {
	struct arr__span_node *next, **pprev;   /* bin (pprev: the link to it); `next` links free slots */
	struct arr__span_node *lnext, **lpprev; /* lru (dirty free spans; lpprev: the link to it) */
	uint64_t stamp;                         /* op clock when freed */
	uint32_t unit;                          /* the span's first unit */
	uint32_t slot;                          /* its index in node[], for good */
};

struct arr__spanseg {
	struct arr__segment seg; /* kind 2; every descriptor ARR__PF_SPAN */
	struct arr__spanseg *next;
	struct arr__span_node *slot_free; /* released slots */
	uint32_t slots_used;              /* slots ever handed out */
	uint32_t arena;                   /* its arena (spanheap.c), for good */
	uint64_t clean[ARR__SP_OSPAGES / 64];
	/* The boundary tags, 16 for each OS page of the segment, kept in
	 * chunks of 16 (a cache line) handed out only to the pages where a tag
	 * is not zero (a span starts or ends there): tag_chunk[page] is its
	 * chunk's index in tag_pool, 0 when it has none (chunk 0 is never
	 * written: it reads as zeros). A chunk whose tags are all zero goes
	 * back after the operation that zeroed them (arr__sp_tag_settle).
	 * Chunks are handed out lowest first and reused LIFO, so the resident
	 * part of the pool follows the number of spans, not how far apart
	 * they lie (a dense array, 4 bytes a unit, has a page written wherever
	 * a span ends in the 256 KiB it covers: 15 pages for a full segment). */
	uint16_t tag_chunk[ARR__SP_OSPAGES];
	uint16_t tag_free; /* the first released chunk (its word 0 links the next), 0: none */
	uint16_t tag_used; /* chunks handed out so far: 1 .. tag_used */
	uint32_t tag_pool[ARR__SP_OSPAGES + 1][ARR__SP_UNITS_PER_OSPAGE] __attribute__((aligned(64)));
	struct arr__span_node node[ARR__SP_NODES];
};

/* A span segment's tag of unit u (0 where none is set). */
static inline uint32_t arr__sp_tag(const struct arr__spanseg *s, unsigned u)
{
	return __atomic_load_n(&s->tag_pool[s->tag_chunk[u / ARR__SP_UNITS_PER_OSPAGE]][u % ARR__SP_UNITS_PER_OSPAGE],
			       __ATOMIC_RELAXED);
}
/* A pointer to unit u's tag, which is not zero (a block in use's, a free
 * span's), for a change that leaves it not zero. */
static inline uint32_t *arr__sp_tag_ref(struct arr__spanseg *s, unsigned u)
{
	return &s->tag_pool[s->tag_chunk[u / ARR__SP_UNITS_PER_OSPAGE]][u % ARR__SP_UNITS_PER_OSPAGE];
}
/* Page pg's chunk, handed out (spanheap.c). */
unsigned arr__sp_tag_chunk_new(struct arr__spanseg *s, unsigned pg);
/* Set unit u's tag to v. A zero written may leave its page's chunk all
 * zero: the operation settles that page (arr__sp_tag_settle) once done. */
static inline void arr__sp_tag_set(struct arr__spanseg *s, unsigned u, uint32_t v)
{
	unsigned pg = u / ARR__SP_UNITS_PER_OSPAGE, c = s->tag_chunk[pg];
	if (__builtin_expect(c == 0, 0)) {
		if (v == 0)
			return;
		c = arr__sp_tag_chunk_new(s, pg);
	}
	s->tag_pool[c][u % ARR__SP_UNITS_PER_OSPAGE] = v;
}
/* Unit u's page: its chunk goes back if its tags are all zero. */
void arr__sp_tag_settle(struct arr__spanseg *s, unsigned u);

#define ARR__SP_HDR_UNITS ((sizeof(struct arr__spanseg) + ARR__SP_UNIT - 1) >> ARR__SP_UNIT_SHIFT)
/* the data starts on an OS page: header pages are never purged or counted */
#define ARR__SP_FIRST_UNIT \
	(((ARR__SP_HDR_UNITS + ARR__SP_UNITS_PER_OSPAGE - 1) / ARR__SP_UNITS_PER_OSPAGE) * ARR__SP_UNITS_PER_OSPAGE)
#define ARR__SP_DATA_UNITS (ARR__SP_UNITS - ARR__SP_FIRST_UNIT)
_Static_assert(ARR__SP_DATA_UNITS >= ARR__SP_MAX_UNITS, "a span segment holds the largest block");
_Static_assert(ARR__SP_NODES >= ARR__SP_DATA_UNITS / 2 + 1, "a node for every free span");

/* What a carve says of its block's zeros, for a calloc: `all` known zero
 * (false unless asked with zero); otherwise, when n != 0, which of the n OS
 * pages the block touches (from the one holding its first byte) were known
 * zero before the carve (bit i: page i), so that only the rest is cleared
 * (n == 0: clear it all). ARR__SP_MAX_UNITS units touch at most 257 pages. */
struct arr__span_zeroed {
	bool all;
	unsigned n;
	uint64_t clean[5];
};

/* A block of size bytes (span_min < size <= ARR__MAX_SMALL), aligned to
 * 256 bytes; *zeroed (if asked): what is known zero of it (above), only a
 * calloc asks. NULL if out of memory. */
void *arr__span_alloc(struct arr__heap *h, size_t size, bool zero, struct arr__span_zeroed *zeroed);
void arr__span_free(void *p); /* p in a span segment; aborts on misuse */
/* realloc of span block p (page its descriptor) to size bytes (span_lo <
 * size <= span_hi): p, kept, if size lies within its last
 * ARR__SP_T_XUNITS_MAX + 1 units (only its request changes), else
 * arr__realloc_known's result; aborts on misuse (spanheap.c) */
void *arr__span_realloc(struct arr__heap *h, void *p, size_t size, struct arr__page *page);
/* realloc of block p once its descriptor (NULL: segment-aligned) and usable
 * size are known (api.c) */
void *arr__realloc_known(void *p, size_t size, struct arr__page *page, size_t usable);
/* The same through heap h's block cache (h may be &arr__heap_empty); the
 * cache's entry points count the operation in h like the fast paths. */
void *arr__span_cache_alloc(struct arr__heap *h, size_t size, bool zero, struct arr__span_zeroed *zeroed);
/* Returns the block's requested size (what its holder asked for). */
size_t arr__span_cache_free(struct arr__heap *h, void *p);
/* free() of p, a block of a span segment, by heap h's thread (maybe
 * &arr__heap_empty): the free, through the cache if there is one, counted
 * in h (a sparse class's blocks, the tick's countdown) like the fast path's. */
void arr__span_free_heap(void *p, struct arr__heap *h);
/* realloc moved p into a huge block: freed with its own pages purged at once */
void arr__span_free_purged(struct arr__heap *h, void *p);
/* Give h's cached blocks back to the span heap: all, or those cached
 * before the last tick (the tick then starts a new one). */
void arr__span_cache_flush(struct arr__heap *h, bool all);
bool arr__span_cache_is_valid(const struct arr__heap *h);
/* Frees by threads with no heap of blocks served from a cache: their
 * requested-bytes correction (stats). */
extern _Atomic int64_t arr__span_orphan_waste;
size_t arr__span_usable(const void *p);
/* realloc of span-heap block p (of heap h's thread) to size bytes (to
 * ARR__MAX_SMALL) in place: true if done (shrunk, or grown into a free
 * neighbour), false if it must move. */
bool arr__span_resize(struct arr__heap *h, void *p, size_t size);
size_t arr__span_purge_all(void);        /* bytes given back */
void arr__span_tick(void);               /* purge the spans whose decay has passed */
uint64_t arr__span_resident_pages(void); /* Σ the arenas' resident data pages (racy: a hint) */
struct arr__span_stats {
	uint64_t mapped, resident, live_blocks, live_usable, live_req, mallocs, frees;
	uint64_t purged_pages, free_resident_units;
};
void arr__span_stats(struct arr__span_stats *out);
/* The footprint is about to grow by `pages` OS pages that the span heap
 * cannot serve: purge as many of its oldest free resident pages (fewer if
 * it holds no more than a few). Takes the arenas' locks (under arr__lock:
 * the span heap never takes arr__lock with one held). Returns the pages
 * purged. */
uint64_t arr__span_purge_for_growth(uint64_t pages);
void arr__span_fork_prepare(void);
void arr__span_fork_parent(void);
void arr__span_fork_child(void);

/* ---- heap.c ---- */
struct arr__heap *arr__heap_thread_init(void);
#define ARR__ALLOC_ZERO 1u  /* calloc */
#define ARR__ALLOC_EXACT 2u /* a block of size's own class (its alignment is relied on) */
/* NULL with errno ENOMEM if out of memory */
void *arr__malloc_slow(struct arr__heap *h, size_t size, unsigned flags);
/* The same for a request of class cls = arr__size_class(size) that may be
 * sparse (above ARR__SMALL_TAB, not marked dense), size <= span_min and
 * mmap_threshold, flags without ARR__ALLOC_EXACT, h initialised: the span
 * heap's block while the class is sparse, else the whole way. */
void *arr__malloc_sparse(size_t size, struct arr__heap *h, unsigned cls, unsigned flags);
/* Whether a request of size, of a class that may be sparse, goes to the span
 * heap now in heap h (as arr__malloc_sparse decides: it may mark the class
 * dense); realloc keeps such a span block where it is (arr__span_resize). */
bool arr__sparse_in_span(struct arr__heap *h, size_t size);
/* Set by realloc while it moves a block that grows (api.c): a sparse
 * class's span block is then carved from the low end of its free span, with
 * the room to grow in place after it (spanheap.c carve). */
extern __thread bool arr__span_growing __attribute__((tls_model("initial-exec")));
/* The block for size, of class cls = arr__size_class(size), from the pages
 * of an initialised heap h: malloc's slow path past its tests, for a request
 * up to arr__opt.refill_max of a class that is not sparse now (below
 * ARR__SPARSE_FIRST, or marked dense); flags ARR__ALLOC_*. NULL with errno
 * ENOMEM. */
void *arr__malloc_refill(size_t size, struct arr__heap *h, unsigned cls, unsigned flags);
/* A plain request of arr__opt.span_lo < size <= span_hi by an initialised
 * heap h: the span heap's block (what arr__malloc_slow would give, without
 * its class lookups), flags 0 or ARR__ALLOC_ZERO; NULL (errno ENOMEM) if out
 * of memory. In spanheap.c. */
void *arr__span_malloc(struct arr__heap *h, size_t size, unsigned flags);
/* The block of h's sparse cache for a plain malloc of size (sparse_cache_take)
 * or NULL (given back if it waited): spanheap.c. */
void *arr__sparse_cache_try(struct arr__heap *h, size_t size);
/* Free through the non-fast path; `req`: the size freed by arr_free_sized, or
 * 0. p first, as free's fast path has it (its tail call moves no register). */
void arr__free_generic(void *p, struct arr__page *page, struct arr__heap *h, size_t req);
/* Aborts if b is on one of page's lists (or the page has no block out). */
void arr__free_check_double(const struct arr__page *page, const struct arr__block *b);
void arr__page_emptied(struct arr__heap *h, struct arr__page *page);
/* The class's current page emptied (kept current): trim it now if
 * arr__page_trim_now (below). */
void arr__page_emptied_current(struct arr__page *page);
/* Whether arr__page_emptied_current trims: single-threaded, not yet this
 * tick, more than two OS pages carved, and, in a heap its thread took over
 * from an exited one, ARR__TRIM_NOW_AGE frees made since (heap.c). Inline,
 * so free tests it before the call: sqlite's replay empties a current page
 * 341 K times, nearly always with nothing to trim. */
/* Every ARR__TICK_OPS frees, even on the fast path: trim idle empty current pages
 * and advance the purge clock, so purges happen in a thread that never
 * needs a new page. */
#define ARR__TICK_OPS 4096
#define ARR__TRIM_NOW_MIN ((size_t)2 * ARR__OS_PAGE)
#define ARR__TRIM_NOW_AGE ((uint64_t)2 * ARR__TICK_OPS) /* two ticks' frees */
static inline bool arr__page_trim_now(const struct arr__page *page)
{
	return !page->trimmed && arr__purge_scale() <= 1 &&
	       (size_t)page->capacity * page->block_size > ARR__TRIM_NOW_MIN &&
	       arr__heap_frees(page->heap) - page->heap->born_frees >= ARR__TRIM_NOW_AGE;
}
/* Give the empty spans the heap keeps for itself back to the pool. */
void arr__heap_release_cached(struct arr__heap *h);
/* About to map a huge block or grow one: single-threaded, every empty
 * current page of h gives back what it carved. */
void arr__heap_trim_for_growth(struct arr__heap *h);
void arr__heap_tick(struct arr__heap *h);
/* Under arr__lock, at a pool tick of h: h counts as busy, and every
 * ARR__CENSUS_OPS of the op clock the busy heaps are counted anew. */
#define ARR__CENSUS_OPS 1024
void arr__heap_census(struct arr__heap *h, uint64_t clock);
void arr__init_slow(void);
void arr__heaps_sum(struct arr__heap *out); /* caller holds arr__lock */
/* Light threads (heap.c): the slow-path malloc of a thread with no heap
 * that has made fewer than arr__opt.light of them while another thread holds
 * a heap, from the shared heap under its lock; NULL (errno ENOMEM) if out of
 * memory. */
void *arr__light_malloc(size_t size, unsigned flags);
/* Extern for the tick's test (heap.c). */
extern struct arr__heap *arr__shared_heap;
/* The shared heap's empty pages back to the pool (malloc_trim, and the
 * ticks of other heaps while nobody allocates from it). */
void arr__shared_release(bool wait);
/* The shared heap's invariants (arr__heap_is_valid, its state), under its
 * lock; true without a shared heap. */
bool arr__shared_is_valid(void);
/* The segments mapped for heap `from` are `to`'s from now on (pool.c:
 * where a heap's spans are looked for first). */
void arr__pool_reown(struct arr__heap *from, struct arr__heap *to);
/* A thread that was light has taken heap h: the shared heap's pages move
 * to h, and its segments. */
void arr__light_graduate(struct arr__heap *h);
/* Slow-path mallocs this thread made from the shared heap. */
unsigned arr__light_calls(void);
extern _Atomic int arr__init_state;
extern _Atomic int64_t arr__orphan_live[ARR__NCLASSES];

static inline void arr__ensure_init(void)
{
	if (ARR_UNLIKELY(atomic_load_explicit(&arr__init_state, memory_order_acquire) != 2))
		arr__init_slow();
}

/* ---- options.c ---- */
void arr__options_from_env(void);

/* ---- check.c: invariants (ARR_DEBUG >= 2 calls them; always built) ---- */
/* Each returns true or fails an assertion naming the broken formula. */
bool arr__page_is_valid(const struct arr__page *page);
bool arr__heap_is_valid(const struct arr__heap *h);
/* direct[i] == pages[arr__class_tab[i]] for every entry (arr__heap_is_valid
 * calls it; the malloc fast path checks its own entry at ARR_DEBUG 1). */
bool arr__heap_direct_is_valid(const struct arr__heap *h);
bool arr__pool_is_valid(void);        /* takes arr__lock */
bool arr__pool_is_valid_locked(void); /* caller holds arr__lock */
/* The census (heap.c, caller holds arr__lock): arr__busy_heaps == the number
 * of ACTIVE heaps with census_busy; no other heap has it. */
bool arr__census_is_valid_locked(void);
/*
 * The span heap (spanheap.c): the spans tile each segment's data units (tags
 * only at both ends of a span, equal); no two free spans adjacent
 * (coalesced); every free span in the bin of its length, and on the lru iff
 * dirty, the lru's stamps non-decreasing and its units == lru_units; the
 * used spans' units, count and requested bytes == the live counters.
 */
bool arr__spanheap_is_valid(void);
/* Checks that abort even at ARR_DEBUG 0 (arr__page_is_valid & co. use it). */
#define ARR__CHECK(c) (ARR_LIKELY(c) ? (void)0 : arr__assert_fail(__FILE__, __LINE__, #c))

#endif
