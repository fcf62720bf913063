/*
 * allocator/api.c - the public entry points and their fast paths.
 *
 * malloc: pop the first block of the current page of the size class.
 * free:   if the block's page belongs to this thread's heap and has no special
 *         flags, push it on the page's free list, where the next malloc of
 *         the class takes it back (LIFO) while it is still in the cache.
 * Anything else goes to heap.c. This file also owns the glibc semantics:
 * errno, overflow checks, alignment rules. Built with ARR_ALLOC_PRELOAD it
 * also exports every function under glibc's names (see the end of the file).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "allocrr/alloc.h"
#include "internal.h"

#define EXPORT __attribute__((visibility("default")))

static inline void *nomem(void)
{
	errno = ENOMEM;
	return NULL;
}

/* The same out of line, for a fast path: reached by a tail call, the call
 * to __errno_location behind errno costs that path no stack frame. */
static ARR_COLD void *nomem_tail(void) { return nomem(); }

/* Up to 64 bytes, zeroed inline with overlapping 16-byte stores (no loop, no
 * call); above, memset's vector stores win, and returning its result lets
 * calloc reach it by a tail call. Rounding up to 16 stays inside the block
 * (classes above 8 are multiples of 16). */
static inline void *zero_block(void *p, size_t size)
{
	typedef uint64_t u64x2 __attribute__((vector_size(16), aligned(8)));
	if (size > 64)
		return memset(p, 0, size);
	if (size <= 8) {
		*(uint64_t *)p = 0;
		return p;
	}
	u64x2 z = {0, 0}, *q = p, *e = (u64x2 *)((uint8_t *)p + ((size + 15) & ~(size_t)15));
	q[0] = z;
	e[-1] = z;
	if (size > 32) {
		q[1] = z;
		e[-2] = z;
	}
	return p;
}

/* The fast path shared by malloc and calloc: pop a block of size's class
 * from the thread's current page, or NULL (empty list: *pagep is that page,
 * its class's current one, for the slow path; or a huge size: *pagep is
 * &arr__page_empty). *clsp: size's class where the path computes it
 * (ARR__SMALL_TAB < size <= fast_max), else left as it was: a sparse class's
 * miss, whose page is &arr__page_empty, needs no second computation (only
 * the miss keeps it; not set on the other paths, where a 0 would cost
 * malloc's hit an instruction). */
static inline struct arr__block *fast_pop(struct arr__heap *h, size_t size, struct arr__page **pagep, unsigned *clsp)
{
	struct arr__page *page;
	if (ARR_LIKELY(size <= ARR__DIRECT_MAX)) {
		page = h->direct[(size + 7) >> 3];
		ARR__ASSERT(page == h->pages[arr__class_tab[(size + 7) >> 3]]);
	} else if (ARR_LIKELY(size <= ARR__SMALL_TAB)) {
		page = h->pages[arr__class_tab[(size + 7) >> 3]];
	} else if (size <= arr__opt.fast_max) {
		unsigned cls = arr__size_class(size);
		*clsp = cls;
		page = h->pages[cls];
	} else {
		*pagep = &arr__page_empty;
		return NULL;
	}
	*pagep = page;
	struct arr__block *b = page->free;
	/* A link overwritten after free decodes outside the page's segment.
	 * NULL, an empty list, is outside it too (no segment starts at 0,
	 * and arr__page_empty lies above 4 MiB: arr__init_slow checks), so
	 * one test takes both off the path; then NULL is the slow path. */
	if (ARR_ALLOC_HARDEN & ARR__HARDEN_LINKS) {
		if (ARR_UNLIKELY(!arr__same_segment(b, page))) {
			if (b == NULL)
				return NULL;
			arr__fatal("malloc(): corrupted free list", b);
		}
	} else if (ARR_UNLIKELY(b == NULL)) {
		return NULL;
	}
	/* The new head is the class's next block out: fetch its line now, as
	 * the load of its link is the one stall of this path when the list
	 * holds blocks freed long ago (4-thread stress replay, 9 alternating
	 * runs: −7 % time, 1.03× mimalloc; py, sqlite, cc1 −1 to −2 %). A
	 * prefetch of NULL is harmless. */
	struct arr__block *next = arr__block_next(b);
	/* A live block keeps no stale link: free's double-free test takes a
	 * link in the first word for a free block. */
	if (ARR_ALLOC_HARDEN & ARR__HARDEN_DOUBLE)
		b->link = 0;
	page->free = next;
	__builtin_prefetch(next, 1, 3);
	page->used++;
	h->waste += (int64_t)page->block_size - (int64_t)size;
	h->alloc_count++;
	return b;
}

/* Out of line, so that the fast path reaches it by a tail call and needs no
 * stack frame of its own. size first: malloc's argument stays in its
 * register (h first cost malloc a move), and arr__malloc_refill and
 * arr__malloc_sparse take the same order (h first cost this path three
 * moves a call). page, cls: the fast path's (fast_pop). */
static inline __attribute__((always_inline)) void *alloc_slow_body(size_t size, struct arr__heap *h, unsigned cls,
								   unsigned flags, struct arr__page *page)
{
	/* A class page's size (not huge, not the span heap's) whose current
	 * page the fast path found empty, of a class that is not sparse now
	 * (none of the sparse ones, or one marked dense): straight to the page
	 * search, with the page's class. Through arr__malloc_slow, 60-90
	 * instructions of tests (init, huge, span, sparse twice, the class
	 * again) came first: 290 K calls in the 4-thread stress replay, serial,
	 * 322 K in sqlite's (its 1032-byte page cache, a dense class). */
	if (ARR_LIKELY(size <= arr__opt.refill_max)) {
		if (page != &arr__page_empty) {
			cls = page->cls;
			unsigned sk = cls - ARR__SPARSE_FIRST; /* wraps below the sparse classes */
			if (sk >= ARR__SPARSE_END - ARR__SPARSE_FIRST || (h->dense >> sk & 1))
				return arr__malloc_refill(size, h, cls, flags);
		} else if (size <= ARR__SMALL_TAB) {
			/* a class with no page yet, or one that borrows (sqlite's
			 * 1 KiB requests: 300 K slow-path calls); never sparse */
			if (h != &arr__heap_empty)
				return arr__malloc_refill(size, h, arr__class_tab[(size + 7) >> 3], flags);
		}
		/* A class that may be sparse (above ARR__SMALL_TAB, not dense;
		 * with h the empty heap, none), its class known (fast_pop
		 * computed it: size <= span_min <= fast_max): the sparse
		 * classes' front, without arr__malloc_slow's class computed
		 * again and its tests (init, the heap, the sizes): 56
		 * instructions a call where they made 89 (sqlite.atr's serial
		 * replay: 115 K calls). */
		if (h != &arr__heap_empty && size <= arr__opt.span_min && !(flags & ARR__ALLOC_EXACT))
			return arr__malloc_sparse(size, h, cls, flags);
	}
	/* Span-heap sizes straight there: through arr__malloc_slow, ~100
	 * instructions of class and sparse-class tests came before the span
	 * heap's own work (serial `large` replay). Such a request never takes
	 * a block of a current page of its class (pages of aligned requests).
	 * A tail call: it sets errno itself. */
	if (size > arr__opt.span_lo && size <= arr__opt.span_hi && h != &arr__heap_empty &&
	    (flags & ~ARR__ALLOC_ZERO) == 0)
		return arr__span_malloc(h, size, flags);
	if (ARR_UNLIKELY(size > PTRDIFF_MAX))
		return nomem();
	return arr__malloc_slow(h, size, flags); /* a tail call: it sets errno */
}

ARR_HOT static __attribute__((noinline)) void *alloc_slow(size_t size, struct arr__heap *h, unsigned cls,
							  unsigned flags, struct arr__page *page)
{
	return alloc_slow_body(size, h, cls, flags, page);
}

/* malloc's own copy (flags 0): the span heap's test without the flags' */
ARR_HOT static __attribute__((noinline)) void *alloc_slow_plain(size_t size, struct arr__heap *h, unsigned cls,
								struct arr__page *page)
{
	return alloc_slow_body(size, h, cls, 0, page);
}

/* cls is set only where fast_pop computes it, and read only there
 * (alloc_slow_body): GCC cannot tell. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
static inline void *heap_alloc_flags(size_t size, unsigned flags)
{
	struct arr__heap *h = arr__tl_heap;
	struct arr__page *page;
	unsigned cls;
	struct arr__block *b = fast_pop(h, size, &page, &cls);
	if (ARR_LIKELY(b != NULL))
		return b;
	if (__builtin_constant_p(flags) && flags == 0)
		return alloc_slow_plain(size, h, cls, page);
	return alloc_slow(size, h, cls, flags, page);
}

static inline void *heap_alloc(size_t size) { return heap_alloc_flags(size, 0); }

ARR_HOT EXPORT void *arr_malloc(size_t size) { return heap_alloc(size); }

/* calloc has its own fast path, a leaf that saves no registers: pop, then
 * zero only what the page does not already know to be zero. An empty list or
 * a huge size takes the generic path. */
ARR_HOT EXPORT void *arr_calloc(size_t count, size_t size)
{
	size_t total = size;
	/* calloc(1, n) is common: no multiply (3 cycles) before the class lookup */
	if (count != 1 && ARR_UNLIKELY(__builtin_mul_overflow(count, size, &total)))
		return nomem_tail();
	struct arr__heap *h = arr__tl_heap;
	struct arr__page *page;
	unsigned cls;
	struct arr__block *b = fast_pop(h, total, &page, &cls);
	if (ARR_LIKELY(b != NULL)) {
		if (page->free_is_zero) {
			b->link = 0;
			h->calloc_skipped += total;
			arr__calloc_prefault(b, total);
			return b;
		}
		h->calloc_zeroed += total;
		return zero_block(b, total);
	}
	return alloc_slow(total, h, cls, ARR__ALLOC_ZERO, page);
}
#pragma GCC diagnostic pop

/* free_emptied's calls, then the countdown: out of line, so that its
 * common case (below) calls nothing but the tick and saves no register */
ARR_HOT static __attribute__((noinline)) void free_emptied_give(struct arr__heap *h, struct arr__page *page,
								bool current)
{
	if (current)
		arr__page_emptied_current(page);
	else
		arr__page_emptied(h, page);
	if (arr__dec64_was_le1(&h->tick_left))
		arr__heap_tick(h);
}

/* An emptied current page is kept (unless it holds a single block); `idle`
 * = 0 tells the next tick it was in use. Also where a free that left the
 * page fewer than no blocks out (a double free whose link was overwritten
 * since) is caught, off the fast path. The common case, a current page kept
 * with nothing to trim (sqlite's serial replay: 341 K frees), without a
 * frame (the calls' one cost it a push, a pop and a move). */
ARR_HOT static __attribute__((noinline)) void free_emptied(struct arr__block *b, struct arr__page *page,
							   struct arr__heap *h)
{
	if (ARR__MISUSE(page->used != 0))
		arr__fatal("free(): double free", b);
	page->idle = 0;
	if (h->pages[page->cls] != page || page->reserved == 1) {
		free_emptied_give(h, page, false);
		return;
	}
	if (ARR_UNLIKELY(arr__page_trim_now(page))) {
		free_emptied_give(h, page, true);
		return;
	}
	if (arr__dec64_was_le1(&h->tick_left))
		arr__heap_tick(h);
}

/* A block of this thread's page goes back onto its free list. */
static inline void free_push(struct arr__heap *h, struct arr__page *page, struct arr__block *b, size_t req)
{
	/* Straight onto `free`, not `local_free` (mimalloc's split): a block
	 * freed is the next one of its class handed out, still in the cache
	 * (replays: cc1 −10 %, sqlite −8 %, py −4 % time). */
	arr__block_set_next(b, page->free);
	page->free = b;
	/* Stores are what this path waits on (each free's first is to a cold
	 * block, and the ones after it queue behind it): a plain free counts
	 * no bytes. (free_is_zero is clear: heap_free.) */
	ARR__ASSERT(!page->free_is_zero);
	if (req)
		h->waste -= (int64_t)page->block_size - (int64_t)req;
	/* counted by the tick's countdown (arr__heap_frees);
	 * the rare cases are tail calls: the fast path needs no frame; one
	 * test for an emptied page and for one that had no block out (a
	 * double free whose link was overwritten since: `used` wraps) */
	if (ARR_UNLIKELY(arr__dec32_was_le1(&page->used)))
		free_emptied(b, page, h);
	else if (ARR_UNLIKELY(arr__dec64_was_le1(&h->tick_left)))
		arr__heap_tick(h);
}

/* A freed block whose first word decodes to a block of its own segment (or
 * to the end of a list) may be free already: look, then free it. Out of
 * line and reached by a tail call, so the fast path keeps no frame. */
static __attribute__((noinline)) void free_suspect(struct arr__block *b, struct arr__page *page, struct arr__heap *h,
						   size_t req)
{
	arr__free_check_double(page, b);
	free_push(h, page, b, req);
}

/* The flags and free_is_zero of a page, in one load: the fast path tests
 * both at once (a free into a page whose free list is known zero, the
 * first since it was carved, is rare and goes to free_known_zero). */
_Static_assert(offsetof(struct arr__page, free_is_zero) == offsetof(struct arr__page, flags) + 1,
	       "flags and free_is_zero side by side");
static inline uint16_t flags_and_zero(const struct arr__page *page)
{
	uint16_t v;
	memcpy(&v, &page->flags, sizeof v);
	return v;
}

static void free_checked_push(struct arr__heap *h, struct arr__page *page, void *p, size_t req);

/* A free into one of this thread's pages with no flags whose free list is
 * known zero: it is no longer (the block holds the program's data). */
ARR_HOT static __attribute__((noinline)) void free_known_zero(void *p, struct arr__page *page, struct arr__heap *h,
							      size_t req)
{
	page->free_is_zero = 0;
	free_checked_push(h, page, p, req);
}

/* p in one of this thread's pages with no flags: the fast path's misuse
 * tests, then the push. */
static inline void free_checked_push(struct arr__heap *h, struct arr__page *page, void *p, size_t req)
{
	struct arr__block *b = p;
	/* offset in the span: from the span's start */
	uint32_t off = (uint32_t)((uintptr_t)p - (uintptr_t)page->start);
	uint64_t magic = arr__class_magic[page->cls];
	if (ARR__MISUSE_IF(ARR__HARDEN_GRID,
			   ((uint64_t)off * magic > magic - 1) | (off >= (uint32_t)page->capacity * page->block_size)))
		arr__fatal("free(): invalid pointer (not the start of a block)", p);
	/* Double free: a free block's link decodes to another block of the
	 * segment, or to NULL at a list's end; a live block's first word (0
	 * from malloc, or program data) almost never does. */
	struct arr__block *old = arr__block_next(b);
	if (ARR__MISUSE_IF(ARR__HARDEN_DOUBLE, arr__same_segment(old, b) || old == NULL) ||
	    ARR__MISUSE(b == page->free)) {
		free_suspect(b, page, h, req);
		return;
	}
	free_push(h, page, b, req);
}

/* free past its pointer tests: p is in one of our segments, page its
 * descriptor (realloc, which has them, frees the old block here). */
static inline void heap_free_page(void *p, struct arr__page *page, size_t req)
{
	struct arr__heap *h = arr__tl_heap;
	if (ARR_LIKELY(page->heap == h && flags_and_zero(page) == 0)) {
		free_checked_push(h, page, p, req);
		return;
	}
	/* a span-heap block (>8 KiB, sparse classes) straight there: through
	 * arr__free_generic one more call saved and restored its registers */
	if (page->flags & ARR__PF_SPAN) {
		arr__span_free_heap(p, h);
		return;
	}
	if (page->heap == h && page->flags == 0) {
		free_known_zero(p, page, h, req);
		return;
	}
	arr__free_generic(p, page, h, req);
}

/* free of a pointer whose segment is not in the segment map: NULL, a block
 * aligned to a segment or more (its mapping is not a segment of the map),
 * or not ours. Out of line and reached by a tail call. */
static ARR_COLD void free_unmapped(void *p)
{
	if (p == NULL)
		return;
	if (arr__is_big_aligned(p)) {
		arr__big_aligned_free(p);
		return;
	}
	arr__fatal("free(): invalid pointer", p);
}

static inline void heap_free(void *p, size_t req)
{
	/* Checked free (allocator/internal.h, ARR_ALLOC_HARDEN): the
	 * pointer's segment must be one of ours before its descriptor is
	 * read; with the grid bit, the fast path also wants a carved block's
	 * start (the generic path always does). NULL and the blocks aligned
	 * to a segment or more lie in no segment of the map, so the one test
	 * sends them out of line too, where they are told apart (the start of
	 * a segment of the map is no block: its descriptor, the header's, or
	 * the span heap's tags refuse it). */
	if (ARR_ALLOC_HARDEN & ARR__HARDEN_FOREIGN) {
		if (ARR_UNLIKELY(!arr__segment_known(p))) {
			free_unmapped(p);
			return;
		}
	} else if (ARR_UNLIKELY(arr__is_big_aligned(p))) {
		/* one test for NULL and for blocks aligned to a segment or more */
		if (p != NULL)
			arr__big_aligned_free(p);
		return;
	}
	struct arr__page *page = arr__page_of(p);
	/* in a register once: GCC otherwise rebuilds it from seg and idx for
	 * the later fields (six instructions more) */
	__asm__("" : "+r"(page));
	heap_free_page(p, page, req);
}

ARR_HOT EXPORT void arr_free(void *p) { heap_free(p, 0); }

ARR_HOT EXPORT void arr_free_sized(void *p, size_t size) { heap_free(p, size ? size : 1); }

/* The usable size of block p of page (p not segment-aligned). */
ARR_HOT static inline size_t usable_in(const struct arr__page *page, const void *p)
{
	if (ARR_LIKELY(page->flags == 0))
		return page->block_size; /* p is a block start: no division */
	if (page->flags & ARR__PF_SPAN)
		return arr__span_usable(p);
	if (page->flags & ARR__PF_HUGE)
		return page->huge_map - (size_t)((const uint8_t *)p - (const uint8_t *)arr__segment_of(p));
	if (!(page->flags & ARR__PF_ALIGNED))
		return page->block_size; /* a full page's: p is a block start */
	const uint8_t *b = (const uint8_t *)arr__block_start(page, p);
	return page->block_size - (size_t)((const uint8_t *)p - b);
}

ARR_HOT EXPORT size_t arr_malloc_usable_size(const void *p)
{
	if (ARR_UNLIKELY(arr__is_big_aligned(p)))
		return p == NULL ? 0 : arr__big_aligned_size(p);
	if (ARR__MISUSE(!arr__segment_known(p)))
		arr__fatal("malloc_usable_size(): invalid pointer", p);
	return usable_in(arr__page_of(p), p);
}

/* align: a power of two. */
ARR_HOT static void *alloc_aligned(size_t align, size_t size)
{
	if (align <= 16)
		return heap_alloc(size < 16 && align == 16 ? 16 : size);
	if (size > PTRDIFF_MAX)
		return nomem();
	if (align <= ((size_t)1 << ARR__SPAN_UNIT_SHIFT) && size > ARR__SMALL_TAB && size <= arr__opt.mmap_threshold) {
		/* A span-heap block is 256-byte aligned: a request the span heap
		 * would serve as a malloc takes its block there, coalesced with
		 * the others, not a class block (over-allocated when the class's
		 * size is no multiple of align, and the class's pages held for a
		 * few blocks): 4 096 slots of 8-3 007 bytes aligned to 32 replaced
		 * at random held 1.20x glibc's peak RSS
		 * (docs/notes/2026-12-07-huge-churn.md). */
		struct arr__heap *h = arr__tl_heap;
		if (h != &arr__heap_empty &&
		    (size > arr__opt.span_min ? arr__opt.span_min != 0 && size <= arr__opt.span_hi
					      : arr__sparse_in_span(h, size))) {
			if (size <= arr__opt.span_min)
				h->sparse_live[arr__size_class(size) - ARR__SPARSE_FIRST]++; /* as a sparse malloc */
			return arr__span_malloc(h, size, 0);
		}
	}
	if (align <= ARR__SLICE_SIZE) {
		/* A class whose block size is a multiple of align is aligned for free:
		 * pages start on 64 KiB boundaries. */
		size_t sz = size < align ? align : size;
		if (sz <= ARR__MAX_SMALL && sz <= arr__opt.mmap_threshold &&
		    arr__class_size[arr__size_class(sz)] % align == 0)
			return heap_alloc_flags(sz, ARR__ALLOC_EXACT);
		size_t need = size + align - 16;
		if (need <= ARR__MAX_SMALL && need <= arr__opt.mmap_threshold) {
			/* a block of a class (a span-heap block's descriptor is
			 * not its own, it cannot carry the flag) */
			uint8_t *p = heap_alloc_flags(need, ARR__ALLOC_EXACT);
			if (p == NULL || ((uintptr_t)p & (align - 1)) == 0)
				return p;
			arr__page_of(p)->flags |= ARR__PF_ALIGNED;
			return (void *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
		}
	}
	arr__ensure_init();
	arr__heap_trim_for_growth(arr__tl_heap);
	void *p = arr__huge_alloc(size, align, NULL);
	return p ? p : nomem();
}

/* glibc 2.36 memalign: small alignments are malloc, others round up to a power of two. */
ARR_HOT EXPORT void *arr_memalign(size_t align, size_t size)
{
	if (align <= 16)
		return alloc_aligned(align, size);
	if (align > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	if (align & (align - 1))
		align = (size_t)1 << (64 - __builtin_clzll(align));
	return alloc_aligned(align, size);
}

ARR_HOT EXPORT void *arr_aligned_alloc(size_t align, size_t size) { return arr_memalign(align, size); }

ARR_HOT EXPORT int arr_posix_memalign(void **out, size_t align, size_t size)
{
	if (align == 0 || align % sizeof(void *) != 0 || (align & (align - 1)) != 0)
		return EINVAL;
	int saved = errno;
	void *p = alloc_aligned(align, size);
	errno = saved;
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *arr_valloc(size_t size) { return alloc_aligned(ARR__OS_PAGE, size); }

EXPORT void *arr_pvalloc(size_t size)
{
	if (size > SIZE_MAX - ARR__OS_PAGE)
		return nomem();
	size_t rounded = (size + ARR__OS_PAGE - 1) & ~(ARR__OS_PAGE - 1);
	return alloc_aligned(ARR__OS_PAGE, rounded ? rounded : ARR__OS_PAGE);
}

/* realloc of p (a block, not NULL) to size (neither 0 nor past
 * PTRDIFF_MAX) once its descriptor and usable size are known: page is
 * NULL for a segment-aligned block (moved), usable its usable size. Out of
 * line, so that realloc's path to a span block's one look
 * (arr__span_realloc, which comes back here when the block does not stay
 * within its units) saves no registers. */
ARR_HOT __attribute__((noinline)) void *arr__realloc_known(void *p, size_t size, struct arr__page *page, size_t usable)
{
	if (page == NULL) {
		/* segment-aligned block: move it (realloc need not keep the alignment) */
	} else if (page->flags & ARR__PF_HUGE) {
		if (ARR__MISUSE(p != page->start))
			arr__fatal("realloc(): invalid pointer (inside a huge block)", p);
		/* Above the threshold it stays huge; so does one shrunk to
		 * 128 KiB or more, in place, as glibc's realloc of a mapped
		 * chunk is an mremap whatever the new size: a move into the
		 * span heap would copy it while the old mapping is still whole
		 * and fault the copy in (docs/allocator.md, "Huge blocks and
		 * realloc"). Below 128 KiB a page-rounded mapping and its
		 * header page cost more than a class or span block, and the
		 * copy is small. */
		if (size > arr__opt.span_hi) {
			if (size > usable)
				arr__heap_trim_for_growth(arr__tl_heap);
			void *q = arr__huge_realloc(page, p, size);
			if (q == NULL)
				return nomem();
			return q;
		}
		if (size >= ARR__GLIBC_MMAP_MIN && size < usable)
			return arr__huge_realloc(page, p, size); /* a shrink: in place (NULL, errno ENOMEM: kept) */
	} else if ((page->flags & ARR__PF_SPAN) && arr__opt.span_min != 0 &&
		   ((size > arr__opt.span_min && size <= ARR__MAX_SMALL && size <= arr__opt.mmap_threshold) ||
		    (size > usable && arr__sparse_in_span(arr__tl_heap, size)))) {
		/* still a span-heap size (a sparse class's, growing, too: a
		 * buffer grown step by step): shrunk in place, or grown into a
		 * free neighbour if there is one (the statistics say the new
		 * size) */
		if (arr__span_resize(arr__tl_heap, p, size))
			return p;
		arr__span_growing = size > usable; /* moved: with room after it */
	} else if (size <= usable && size >= usable / 2) {
		return p; /* fits, and not so much smaller that a smaller class is worth a copy */
	}
	void *q = heap_alloc(size);
	arr__span_growing = false;
	if (q == NULL)
		return NULL;
	memcpy(q, p, size < usable ? size : usable);
	/* the old block's tests and descriptor are known: not again (sqlite's
	 * replay moves 500 K blocks, each freed for ~15 instructions less) */
	if (page == NULL)
		heap_free(p, 0);
	else if (ARR_UNLIKELY((page->flags & ARR__PF_SPAN) && size > arr__opt.span_hi))
		arr__span_free_purged(arr__tl_heap, p); /* out of the span heap, into a huge block */
	else
		heap_free_page(p, page, 0);
	return q;
}

ARR_HOT EXPORT void *arr_realloc(void *p, size_t size)
{
	if (p == NULL)
		return heap_alloc(size);
	if (size == 0) { /* glibc: frees and returns NULL */
		heap_free(p, 0);
		return NULL;
	}
	if (size > PTRDIFF_MAX)
		return nomem();
	/* As in free: a block aligned to a segment or more lies in no segment
	 * of the map, so the map's test takes it off the path too (p is not
	 * NULL here); the start of a segment of the map is no block, and its
	 * descriptor (the header's, the span heap's tags, a huge block's
	 * start) refuses it. */
	if (ARR_ALLOC_HARDEN ? ARR_UNLIKELY(!arr__segment_known(p)) : ARR_UNLIKELY(arr__is_big_aligned(p))) {
		if (ARR__MISUSE(!arr__is_big_aligned(p)))
			arr__fatal("realloc(): invalid pointer", p);
		return arr__realloc_known(p, size, NULL, arr__big_aligned_size(p));
	}
	/* the descriptor read once, for the usable size and the cases */
	struct arr__page *page = arr__page_of(p);
	/* a span block's tags read once too: within its last units (a grown
	 * block's headroom) only the request changes */
	if ((page->flags & ARR__PF_SPAN) && size > arr__opt.span_lo && size <= arr__opt.span_hi)
		return arr__span_realloc(arr__tl_heap, p, size, page);
	return arr__realloc_known(p, size, page, usable_in(page, p));
}

ARR_HOT EXPORT void *arr_reallocarray(void *p, size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total))
		return nomem();
	return arr_realloc(p, total);
}

EXPORT size_t arr_alloc_purge(void)
{
	arr__ensure_init();
	arr__heap_release_cached(arr__tl_heap);
	arr__shared_release(true);
	return arr__pool_purge_all() + arr__span_purge_all();
}

/* arr_alloc_stats_get's scratch: too big for some thread stacks, guarded by
 * arr__lock. With the big tables, not in .bss: api.c links first (its text
 * must open the hot text, allocator/CMakeLists.txt), and there these 7 KB
 * pushed the class tables and counters every program writes onto a third
 * page (allocator.fixedcost). */
ARR__BIG_TABLE(static struct arr__heap stats_sum)
ARR__BIG_TABLE(static struct arr__pool_stats stats_ps)

EXPORT int arr_alloc_stats_get(struct arr_alloc_stats *out)
{
	if (out == NULL)
		return -EINVAL;
	arr__ensure_init();
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&arr__lock);
	arr__pool_stats(&stats_ps);
	arr__heaps_sum(&stats_sum);
	out->mapped = stats_ps.mapped;
	out->resident = stats_ps.resident;
	out->pages_purged = stats_ps.purged_pages;
	out->calloc_zeroed = stats_sum.calloc_zeroed;
	out->calloc_skipped = stats_sum.calloc_skipped;
	out->mallocs = stats_sum.alloc_count;
	out->frees = stats_sum.free_count;
	out->nclasses = ARR__NCLASSES - 1;
	int64_t live_req = -stats_sum.waste;
	for (unsigned c = 1; c < ARR__NCLASSES; c++) {
		struct arr_alloc_class_stats *cs = &out->classes[c - 1];
		cs->block_size = arr__class_size[c];
		int64_t live = (int64_t)stats_ps.cls_used[c] + stats_sum.live_adj[c];
		cs->live = live > 0 ? (uint64_t)live : 0;
		cs->capacity = stats_ps.cls_capacity[c];
		cs->pages = stats_ps.cls_pages[c];
		out->live_blocks += cs->live;
		out->live_usable += cs->live * cs->block_size;
	}
	live_req += (int64_t)out->live_usable;
	pthread_mutex_unlock(&arr__lock);
	/* blocks in the threads' span-heap caches: in use to the span heap, free to the program */
	live_req -= (int64_t)stats_sum.sc_req + atomic_load_explicit(&arr__span_orphan_waste, memory_order_relaxed);
	struct arr__span_stats ss;
	arr__span_stats(&ss);
	out->mapped += ss.mapped;
	out->resident += ss.resident;
	out->pages_purged += ss.purged_pages;
	out->live_blocks += ss.live_blocks - stats_sum.sc_n;
	out->live_usable += ss.live_usable - (stats_sum.sc_units << ARR__SP_UNIT_SHIFT);
	live_req += (int64_t)ss.live_req;
	out->live_blocks += stats_ps.huge_count;
	out->huge_blocks = stats_ps.huge_count;
	out->live_usable += stats_ps.huge_live;
	live_req += (int64_t)stats_ps.huge_req;
	out->live_requested = live_req > 0 ? (uint64_t)live_req : 0;
	return 0;
}

#ifdef ARR_ALLOC_PRELOAD
/*
 * The drop-in: glibc's names, and the __libc_* names some programs and
 * libraries call directly, all bound to the functions above so that nothing
 * reaches glibc's heap.
 */
#define ALIAS(name) __attribute__((alias(#name), visibility("default")))
#define ALIAS_HOT(name) __attribute__((alias(#name), visibility("default"), hot))
void *malloc(size_t) ALIAS_HOT(arr_malloc);
void *calloc(size_t, size_t) ALIAS_HOT(arr_calloc);
void *realloc(void *, size_t) ALIAS_HOT(arr_realloc);
void free(void *) ALIAS_HOT(arr_free);
void cfree(void *) ALIAS_HOT(arr_free);
void free_sized(void *, size_t) ALIAS_HOT(arr_free_sized);
int posix_memalign(void **, size_t, size_t) ALIAS_HOT(arr_posix_memalign);
void *aligned_alloc(size_t, size_t) ALIAS_HOT(arr_aligned_alloc);
void *memalign(size_t, size_t) ALIAS_HOT(arr_memalign);
void *valloc(size_t) ALIAS(arr_valloc);
void *pvalloc(size_t) ALIAS(arr_pvalloc);
void *reallocarray(void *, size_t, size_t) ALIAS_HOT(arr_reallocarray);
size_t malloc_usable_size(void *) ALIAS_HOT(arr_malloc_usable_size);
void *__libc_malloc(size_t) ALIAS_HOT(arr_malloc);
void *__libc_calloc(size_t, size_t) ALIAS_HOT(arr_calloc);
void *__libc_realloc(void *, size_t) ALIAS_HOT(arr_realloc);
void __libc_free(void *) ALIAS_HOT(arr_free);
void *__libc_memalign(size_t, size_t) ALIAS_HOT(arr_memalign);
void *__libc_valloc(size_t) ALIAS(arr_valloc);
void *__libc_pvalloc(size_t) ALIAS(arr_pvalloc);
int __posix_memalign(void **, size_t, size_t) ALIAS_HOT(arr_posix_memalign);
#endif
