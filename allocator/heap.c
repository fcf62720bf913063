/*
 * allocator/heap.c - thread heaps: the slow paths behind malloc and free.
 *
 * A heap is only ever touched by its owning thread, except for two atomic
 * entry points other threads use to free into it: a page's thread_free list
 * and the heap's delayed list (for pages the owner has put aside as full, so
 * that it notices they have room again without rescanning them).
 *
 * Heap structs are never unmapped: a thread that exits abandons its heap (its
 * empty pages go back to the pool, the rest stay attached), and the next
 * thread that runs out of pages adopts those pages into its own heap. Keeping
 * the structs alive means a remote free racing with an exit never touches
 * freed memory, and per-heap statistics survive their thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>
#include "internal.h"

/* glibc's, behind pthread_atfork (exported by libc.so.6 since 2.3.2) */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);
extern void *__dso_handle;

struct arr__page arr__page_empty;
struct arr__heap arr__heap_empty = {
	.direct = {[0 ... ARR__HEAP_DIRECT_N - 1] = &arr__page_empty},
	.pages = {[0 ... ARR__NCLASSES - 1] = &arr__page_empty},
	.state = ARR__HEAP_EMPTY,
};
__thread struct arr__heap *arr__tl_heap __attribute__((tls_model("initial-exec"))) = &arr__heap_empty;
__thread bool arr__span_growing __attribute__((tls_model("initial-exec")));

pthread_mutex_t arr__lock; /* both adaptive from init: locks_init() */
_Atomic int arr__abandoned_count;
_Atomic unsigned arr__active_heaps;
_Atomic unsigned arr__busy_heaps;
_Atomic unsigned arr__kept_heaps;
_Atomic int arr__init_state;
/* a big table (internal.h): written only by the frees of an exited thread's blocks, off the
 * pages every program writes */
ARR__BIG_TABLE(_Atomic int64_t arr__orphan_live[ARR__NCLASSES])

static struct arr__heap *all_heaps, *free_heaps, *abandoned_heaps;
/* Light threads ("Light threads" below): the shared heap (made at its first
 * malloc, in all_heaps), its lock, and the calls this thread made there. */
struct arr__heap *arr__shared_heap;
pthread_mutex_t arr__shared_lock;
static __thread unsigned light_calls __attribute__((tls_model("initial-exec")));
/* fresh OS pages this thread's class pages carved while free dirty slices
 * waited, not yet paid (page_extend; ARR__CARVE_DEBT_PAGES at a time) */
static __thread unsigned carve_debt __attribute__((tls_model("initial-exec")));
static uint8_t *meta_cur, *meta_end;
static pthread_key_t heap_key;
static _Atomic bool key_ok;

static bool class_list_is_valid(const struct arr__heap *h, unsigned c, bool pages_too) __attribute__((unused));
static bool span_cache_is_valid(const struct arr__heap *h) __attribute__((unused));

/* borrow(): how many classes up, and from which block size without a limit per tick */
#define BORROW_UP 4
#define BORROW_MIN 256
/* ---- page lists ---- */

/*
 * trim_barred. The bar on trimming a current page as it empties (`trimmed`
 * 2: arr__page_emptied_current, and the tick's trim of a page emptied
 * since the last one) cannot be the page's alone, since a class of two
 * pages swaps them: a program that mallocs 1 600 blocks of 64 bytes and
 * frees them all, over and over (glibc's bench-malloc-simple), fills one
 * page and part of a second, which is current when it empties, trimmed;
 * the full one empties after it, goes to the pool and comes back as the
 * next round's second page, unbarred, trimmed in its turn: 15 OS pages
 * given back and faulted in again every round with a page's bar alone
 * (docs/allocator.md, "Fast and slow paths"). So the bar is the class's
 * too: set where page_extend finds a trimmed or barred page carving again
 * past what the trim kept, given to every page the class takes from the
 * pool or the span cache (find_page). A class's bar lapses at a tick that
 * finds it with no current page or with one not emptied since the tick
 * before (the class stopped churning: its empty page waits for the tick's
 * trim of idle pages), each class for itself: bars that lapse together
 * re-trim every class at once (docs/notes/2026-12-07-tick-bar.md).
 */
static __attribute__((noinline)) void trim_bar(struct arr__page *page)
{
	page->trimmed = 2;
	page->heap->trim_barred[page->cls / 64] |= (uint64_t)1 << (page->cls % 64);
}

/* What page_trim keeps of a page it trims as it empties: its first OS page,
 * or its first block's pages */
static inline size_t trim_keep(size_t bs)
{
	return bs >= ARR__OS_PAGE ? (bs + ARR__OS_PAGE - 1) & ~(size_t)(ARR__OS_PAGE - 1) : ARR__OS_PAGE;
}

static inline bool trim_is_barred(const struct arr__heap *h, const struct arr__page *page)
{
	return page->trimmed == 2 || (h->trim_barred[page->cls / 64] >> (page->cls % 64) & 1);
}

/* The class's current page, and for a class up to ARR__DIRECT_MAX its
 * sizes' entries of direct[] (internal.h, struct arr__heap): the only writer of either. */
static void set_current(struct arr__heap *h, unsigned cls, struct arr__page *page)
{
	h->pages[cls] = page;
	/* a class up to ARR__DIRECT_MAX has one or two entries (classes.c
	 * checks): no loop, in the slow path's every page switch */
	if ((uint32_t)(arr__class_size[cls] - 1) < ARR__DIRECT_MAX) { /* (class 0, unused, has none) */
		unsigned i = arr__class_direct[cls];
		ARR__ASSERT(arr__class_direct[cls + 1] <= i + 2 && arr__class_direct[cls + 1] <= ARR__HEAP_DIRECT_N);
		h->direct[i] = page;
		if (arr__class_direct[cls + 1] > i + 1)
			h->direct[i + 1] = page;
	}
}

static void class_push_front(struct arr__heap *h, struct arr__page *page)
{
	struct arr__page *head = h->pages[page->cls];
	page->prev = NULL;
	page->next = head == &arr__page_empty ? NULL : head;
	if (page->next)
		page->next->prev = page;
	else
		h->last[page->cls] = page;
	set_current(h, page->cls, page);
}

/*
 * At the back: a page that comes back from the full list with one free
 * block is used again only after the pages ahead of it, by when it has
 * gathered more (mimalloc's queue order). Behind the current page instead,
 * the next slow path took its one block and set it full again: under the
 * 4-thread stress almost every malloc went through the slow path, and every
 * block through page_to_full and page_unfull.
 */
static void class_push_back(struct arr__heap *h, struct arr__page *page)
{
	struct arr__page *tail = h->last[page->cls];
	if (tail == NULL) {
		class_push_front(h, page);
		return;
	}
	page->next = NULL;
	page->prev = tail;
	tail->next = page;
	h->last[page->cls] = page;
}

/* Behind the current page: it does not steal the head from a page in use. */
static void class_insert_second(struct arr__heap *h, struct arr__page *page)
{
	struct arr__page *head = h->pages[page->cls];
	if (head == &arr__page_empty) {
		class_push_front(h, page);
		return;
	}
	page->prev = head;
	page->next = head->next;
	if (head->next)
		head->next->prev = page;
	else
		h->last[page->cls] = page;
	head->next = page;
}

static void class_remove(struct arr__heap *h, struct arr__page *page)
{
	if (page->prev)
		page->prev->next = page->next;
	else
		set_current(h, page->cls, page->next ? page->next : &arr__page_empty);
	if (page->next)
		page->next->prev = page->prev;
	else
		h->last[page->cls] = page->prev;
	page->next = page->prev = NULL;
}

static void full_push(struct arr__heap *h, struct arr__page *page)
{
	page->prev = NULL;
	page->next = h->full;
	if (h->full)
		h->full->prev = page;
	h->full = page;
}

static void full_remove(struct arr__heap *h, struct arr__page *page)
{
	if (page->prev)
		page->prev->next = page->next;
	else
		h->full = page->next;
	if (page->next)
		page->next->prev = page->prev;
	page->next = page->prev = NULL;
}

/* ---- thread_free state ---- */

/* Set the state bits, waiting out a remote thread in the middle of a delayed push. */
static void tf_set_state(struct arr__page *page, uintptr_t state)
{
	uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
	for (;;) {
		if ((tf & ARR__TF_MASK) == ARR__TF_FREEING) {
			sched_yield();
			tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
			continue;
		}
		if (atomic_compare_exchange_weak_explicit(&page->thread_free, &tf, (tf & ~ARR__TF_MASK) | state,
							  memory_order_acq_rel, memory_order_relaxed))
			return;
	}
}

/* In a fork child nobody else runs: a FREEING left by a vanished thread would
 * never clear, so the state is overwritten (its block is lost, not corrupted). */
static bool in_fork_child;
bool arr__fork_tore;

static void tf_force_state(struct arr__page *page, uintptr_t state)
{
	if (!in_fork_child) {
		tf_set_state(page, state);
		return;
	}
	uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
	atomic_store_explicit(&page->thread_free, (tf & ~ARR__TF_MASK) | state, memory_order_relaxed);
}

/* The remote frees tf (blocks in it) onto page->free; lowers `used`. */
ARR_HOT static __attribute__((noinline)) void page_collect_remote(struct arr__page *page, uintptr_t tf)
{
	while (!atomic_compare_exchange_weak_explicit(&page->thread_free, &tf, tf & ARR__TF_MASK, memory_order_acquire,
						      memory_order_relaxed))
		;
	struct arr__block *head = (struct arr__block *)(tf & ~ARR__TF_MASK), *tail = head, *next;
	uint32_t n = 1;
	while ((next = arr__block_next_checked(tail)) != NULL) {
		tail = next;
		n++;
	}
	arr__block_set_next(tail, page->free);
	page->free = head;
	page->used -= n;
	page->free_is_zero = 0;
	if (page->heap != NULL)
		page->heap->live_adj[page->cls] += n; /* the freeing thread subtracted them */
}

/* Move local and remote frees onto page->free (remote ones also lower
 * `used`). Inline up to the test: the slow path looks at ~3 pages a call,
 * and most have nothing to collect (the 4-thread stress replay, serial:
 * 993 K calls, ~9 instructions each out of line). */
static inline void page_collect(struct arr__page *page)
{
	if (page->local_free && !page->free) {
		page->free = page->local_free;
		page->local_free = NULL;
		page->free_is_zero = 0;
	}
	uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
	if (ARR_UNLIKELY((tf & ~ARR__TF_MASK) != 0))
		page_collect_remote(page, tf);
}

/* Carve up to about one OS page of never-used blocks onto the empty free list. */
ARR_HOT static void page_extend(struct arr__page *page)
{
	uint32_t bs = page->block_size, n = page->reserved - page->capacity;
	uint32_t max = bs >= ARR__OS_PAGE ? 1 : (uint32_t)(ARR__OS_PAGE / bs);
	if (n > max)
		n = max;
	uint8_t *p = page->start + (size_t)page->capacity * bs, *last = p + (size_t)(n - 1) * bs;
	struct arr__block *first = (struct arr__block *)p;
	/* the blocks that start in one OS page share their links' key: one
	 * shift a page, not one a block (the loop is most of the slow path) */
	while (p < last) {
		uintptr_t key = ARR__LINK_KEY(p);
		uint8_t *stop = (uint8_t *)(((uintptr_t)p | (ARR__OS_PAGE - 1)) + 1);
		if (stop > last)
			stop = last;
		for (; p < stop; p += bs)
			arr__block_set_next_key((struct arr__block *)p, (struct arr__block *)(p + bs), key);
	}
	arr__block_set_next((struct arr__block *)p, NULL);
	page->free = first;
	page->free_is_zero = (size_t)page->capacity * bs >= (size_t)page->zero_from * ARR__OS_PAGE;
	/* fresh pages while free slices wait: as much given back (pool.c
	 * arr__pool_carved_fresh), counted by the thread and paid
	 * ARR__CARVE_DEBT_PAGES at a time */
	if (ARR_UNLIKELY(page->free_is_zero) &&
	    __atomic_load_n(&arr__dirty_slices, __ATOMIC_RELAXED) > ARR__IDLE_FLOOR_SLICES &&
	    (carve_debt += (unsigned)(((size_t)n * bs + ARR__OS_PAGE - 1) / ARR__OS_PAGE)) >= ARR__CARVE_DEBT_PAGES) {
		arr__pool_carved_fresh(carve_debt);
		carve_debt = 0;
	}
	/* carving again past what page_trim kept (the first OS page, or the
	 * first block) what was trimmed as the page emptied: that trim was for
	 * nothing (see arr__page_emptied_current). The end of the carve, not
	 * its start: carves go an OS page's worth of blocks at a time, and the
	 * second one, from just below the first OS page's end, goes past it */
	if (ARR_UNLIKELY(page->trimmed != 0) && (size_t)(page->capacity + n) * bs > trim_keep(bs))
		trim_bar(page);
	page->capacity += n;
}

/* Set the page aside as full; false if remote frees arrived meanwhile (page usable). */
static bool page_to_full(struct arr__heap *h, struct arr__page *page)
{
	uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
	for (;;) {
		if (tf & ~ARR__TF_MASK) {
			page_collect(page);
			return false;
		}
		if (atomic_compare_exchange_weak_explicit(&page->thread_free, &tf, ARR__TF_DELAYED,
							  memory_order_acq_rel, memory_order_relaxed))
			break;
	}
	class_remove(h, page);
	page->flags |= ARR__PF_FULL;
	full_push(h, page);
	ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page));
	return true;
}

static void page_unfull(struct arr__heap *h, struct arr__page *page)
{
	tf_set_state(page, ARR__TF_NORMAL);
	page->flags &= (uint8_t)~ARR__PF_FULL;
	page->requeued = 0;
	full_remove(h, page);
	class_push_back(h, page);
	ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page));
}

/*
 * An empty current page whose class made no free during a whole tick: give
 * back what it carved beyond its first carve and carve again from the front.
 * Kept as it was, its blocks stay resident where no other class and no purge
 * reaches them (cc1: ~40 such pages, 1.3 MB at its peak); released to the
 * pool instead, it was taken again by the next malloc of the class,
 * once per tick, and the churn cost more than it saved. Trimming in place
 * keeps the page, so a class that comes back costs page faults only for what
 * it really uses again. A page still idle FULL_TRIM_TICKS ticks later gives
 * back its first carve too (`all`): cc1 keeps ~30 such pages of one
 * block of up to 53 KB or one OS page each, 0.39 MB at its peak.
 */
#define FULL_TRIM_TICKS 6
static bool page_trim(struct arr__page *page, bool all)
{
	size_t bs = page->block_size;
	size_t keep = trim_keep(bs);
	if (all)
		keep = 0;
	size_t touched = (size_t)page->capacity * bs;
	if (touched < (size_t)page->zero_from * ARR__OS_PAGE)
		touched = (size_t)page->zero_from * ARR__OS_PAGE;
	touched = (touched + ARR__OS_PAGE - 1) & ~(ARR__OS_PAGE - 1);
	if (touched <= keep || arr__opt.purge_delay < 0)
		return false;
	arr__pool_purge_range(page->start + keep, touched - keep);
	page->free = page->local_free = NULL;
	page->free_is_zero = 0;
	page->capacity = 0;
	page->holes = 0;
	page->zero_from = (uint16_t)(keep / ARR__OS_PAGE);
	return true;
}

/*
 * A few empty spans (up to SPAN_CACHE_SLICES slices) kept by the thread,
 * multi-threaded only: the classes of 4 to 64 KiB hold 1 to 16 blocks per
 * span, so in the 4-thread stress replay a span went to the pool and back
 * (two trips through its lock) every ~100 operations, and the lock is
 * contended there. A cached span is taken again by the next class of the
 * same span length, without the lock; one that waited a whole tick goes to
 * the pool (so its slices can be purged or used by another thread).
 * Single-threaded the lock is free, and a span kept out of the pool could
 * only cost footprint.
 */
#define SPAN_CACHE_SLICES 16 /* at most 1 MiB per thread */

static void span_cache_put(struct arr__heap *h, struct arr__page *page)
{
	if (h->span_cached + page->slices <= SPAN_CACHE_SLICES && arr__purge_scale() > 1 && arr__opt.purge_delay != 0 &&
	    h->state != ARR__HEAP_SHARED) {
		page->idle = 0;
		page->next = h->span_cache;
		h->span_cache = page;
		h->span_cached += page->slices;
		ARR__ASSERT_EXPENSIVE(span_cache_is_valid(h));
		return;
	}
	arr__pool_give(h, page);
}

static struct arr__page *span_cache_take(struct arr__heap *h, unsigned cls)
{
	unsigned n = arr__class_slices[cls];
	for (struct arr__page **pp = &h->span_cache, *page; (page = *pp) != NULL; pp = &page->next) {
		if (page->slices != n)
			continue;
		*pp = page->next;
		h->span_cached -= page->slices;
		/* what the previous class touched may be resident */
		size_t touched = (size_t)page->capacity * page->block_size;
		size_t zero_from = (touched + ARR__OS_PAGE - 1) / ARR__OS_PAGE;
		if (zero_from < page->zero_from)
			zero_from = page->zero_from;
		arr__page_init(page, h, cls, zero_from);
		ARR__ASSERT_EXPENSIVE(span_cache_is_valid(h));
		return page;
	}
	return NULL;
}

/* Spans cached since the previous tick (or all) go to the pool. */
static void span_cache_flush(struct arr__heap *h, bool all)
{
	for (struct arr__page **pp = &h->span_cache, *page; (page = *pp) != NULL;) {
		if (!all && page->idle++ == 0) {
			pp = &page->next;
			continue;
		}
		*pp = page->next;
		h->span_cached -= page->slices;
		arr__pool_give(h, page);
	}
	ARR__ASSERT_EXPENSIVE(span_cache_is_valid(h));
}

/* ---- invariants (internal.h, beside struct arr__heap) ---- */

/* The class list of c: doubly linked, ending at last[c], pages of c and h. */
static bool class_list_is_valid(const struct arr__heap *h, unsigned c, bool pages_too)
{
	const struct arr__page *page = h->pages[c], *prev = NULL;
	ARR__CHECK((page == &arr__page_empty) == (h->last[c] == NULL));
	if (page == &arr__page_empty)
		return true;
	for (unsigned n = 0; page; prev = page, page = page->next) {
		ARR__CHECK(++n <= (1u << 24)); /* a cycle */
		ARR__CHECK(page->prev == prev);
		ARR__CHECK(page->cls == c && page->heap == h);
		ARR__CHECK((page->flags & (ARR__PF_FULL | ARR__PF_HUGE)) == 0);
		if (pages_too)
			arr__page_is_valid(page);
	}
	ARR__CHECK(h->last[c] == prev);
	return true;
}

static bool span_cache_is_valid(const struct arr__heap *h)
{
	unsigned slices = 0;
	for (const struct arr__page *page = h->span_cache; page; page = page->next) {
		ARR__CHECK(page->used == 0 && page->heap == h);
		ARR__CHECK(page->slices >= 1);
		slices += page->slices;
		ARR__CHECK(slices <= SPAN_CACHE_SLICES);
	}
	ARR__CHECK(slices == h->span_cached);
	return true;
}

bool arr__heap_is_valid(const struct arr__heap *h)
{
	if (h == &arr__heap_empty)
		return true;
	ARR__CHECK(h->state == ARR__HEAP_ACTIVE || h->state == ARR__HEAP_ABANDONED || h->state == ARR__HEAP_SHARED);
	/* 0 only in a fresh heap (its first free ticks); never wrapped */
	ARR__CHECK(h->tick_left <= h->tick_len && h->tick_len <= ARR__TICK_OPS);
	/* the adoption clocks (reap_one) lie in the past */
	ARR__CHECK(h->born_clock <= arr__pool_clock() &&
		   (h->state != ARR__HEAP_ABANDONED || h->abandon_clock <= arr__pool_clock()));
	/* a trim bar is a class's (and none was set in the future) */
	ARR__CHECK(h->trim_barred[ARR__NCLASSES / 64] >> (ARR__NCLASSES % 64) == 0 && !(h->trim_barred[0] & 1));
	for (unsigned c = 0; c < ARR__NCLASSES; c++)
		class_list_is_valid(h, c, true);
	arr__heap_direct_is_valid(h);
	const struct arr__page *prev = NULL;
	for (const struct arr__page *page = h->full; page; prev = page, page = page->next) {
		ARR__CHECK(page->prev == prev);
		ARR__CHECK((page->flags & ARR__PF_FULL) && page->heap == h);
		arr__page_is_valid(page);
	}
	span_cache_is_valid(h);
	arr__span_cache_is_valid(h);
	for (unsigned c = 0; c < ARR__NCLASSES; c++)
		ARR__CHECK(h->borrows[c] <= (arr__class_size[c] < BORROW_MIN ? ARR__SMALL_BORROWS : 0));
	/* the delayed list: blocks of pages of h (a snapshot: pushes only add
	 * at the head; the page may have left the full list since, but keeps
	 * the block counted in `used`) */
	const struct arr__block *b = atomic_load_explicit(&h->delayed, memory_order_acquire);
	for (unsigned n = 0; b; b = arr__block_next(b)) {
		ARR__CHECK(++n <= (1u << 24));
		ARR__CHECK(arr__segment_known(b));
		const struct arr__page *page = arr__page_of(b);
		ARR__CHECK(page->heap == h && page->used > 0);
	}
	return true;
}

void arr__heap_release_cached(struct arr__heap *h)
{
	if (h != &arr__heap_empty) {
		span_cache_flush(h, true);
		arr__span_cache_flush(h, true);
	}
}

/*
 * The current page of its class just emptied (and stays current, for
 * malloc/free pairs). Single-threaded, if it carved more than two OS pages,
 * it is trimmed now rather than at the next tick, at most once a tick
 * (`trimmed` 1, cleared by the tick): a burst of blocks freed between two
 * ticks otherwise stays resident until the tick, and cc1's peak fell in
 * such a window. But a page carved again past its first OS page before
 * the tick (page_extend) had its trim for nothing, and is not trimmed so
 * again (`trimmed` 2) until a tick finds it not emptied since the one
 * before: a program that mallocs a thousand small blocks and frees them
 * all, over and over, gave back every class's pages at each round and
 * faulted them in at the next. Nor does a thread that took over the heap
 * of one that exited, for its first ARR__TRIM_NOW_AGE frees: the next
 * thread would carve again from the pool what waited resident there. A
 * heap of its own trims at once: a paced 2-thread replay's peak depends on
 * its first trims (figures: docs/allocator.md, "Fast and slow paths";
 * docs/notes/2026-12-07-huge-churn.md). With several
 * threads a purge costs an IPI, and the tick's trim waits instead.
 */
ARR_HOT void arr__page_emptied_current(struct arr__page *page)
{
	if (!arr__page_trim_now(page))
		return;
	page->trimmed = 1;
	page_trim(page, false);
}

/*
 * The program is about to grow by a huge block: single-threaded, every empty
 * current page gives back all it carved first (what a tick does to a page
 * idle for FULL_TRIM_TICKS more ticks), as the pool gives back dirty slices
 * (purge_for_growth). Growth is where a peak is made, and an empty page's
 * carve is memory nobody holds: cc1's replay peaks right after its last
 * huge blocks, 22 840 → 22 436 KB (−0.4 MB), 6 % fewer page faults (a page
 * emptied, trimmed and carved again costs fewer faults than one kept while
 * its neighbours grow); py −130 KB; sqlite the same. Several threads: not
 * (a purge is an IPI to every CPU; their ticks trim instead).
 */
ARR_HOT void arr__heap_trim_for_growth(struct arr__heap *h)
{
	if (h == &arr__heap_empty || arr__purge_scale() > 1 || arr__opt.purge_delay < 0)
		return;
	for (unsigned c = 0; c < ARR__NCLASSES; c++) {
		struct arr__page *page = h->pages[c];
		if (page != &arr__page_empty && page->used == 0 && page->reserved > 1)
			page_trim(page, true);
	}
}

ARR_HOT void arr__page_emptied(struct arr__heap *h, struct arr__page *page)
{
	page->idle = 0;
	if (h->pages[page->cls] == page && page->reserved > 1)
		return; /* kept as the current page: malloc/free pairs stay on the fast path */
	class_remove(h, page);
	span_cache_put(h, page);
}

/* A block of one of h's own pages comes back (stats already counted). */
static void free_local(struct arr__heap *h, struct arr__page *page, struct arr__block *b)
{
	if (ARR__MISUSE(b == page->local_free || b == page->free || page->used == 0))
		arr__fatal("free(): double free", b);
	if (page->flags & ARR__PF_FULL)
		page_unfull(h, page);
	arr__block_set_next(b, page->local_free);
	page->local_free = b;
	if (--page->used == 0)
		arr__page_emptied(h, page);
}

static void process_delayed(struct arr__heap *h)
{
	struct arr__block *b = atomic_exchange_explicit(&h->delayed, NULL, memory_order_acquire);
	while (b) {
		/* blocks of many pages: no same-segment test, but each must be ours */
		if (ARR__MISUSE(!arr__segment_known(b)))
			arr__fatal("corrupted delayed free list", b);
		struct arr__block *next = arr__block_next(b);
		struct arr__page *page = arr__page_of(b);
		h->live_adj[page->cls]++; /* remote-freed: the freeing thread subtracted it */
		free_local(h, page, b);
		b = next;
	}
}

static void remote_free(struct arr__page *page, struct arr__block *b)
{
	uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed), ntf;
	bool delayed;
	do {
		delayed = (tf & ARR__TF_MASK) == ARR__TF_DELAYED;
		if (delayed) {
			ntf = (tf & ~ARR__TF_MASK) | ARR__TF_FREEING;
		} else {
			arr__block_set_next(b, (struct arr__block *)(tf & ~ARR__TF_MASK));
			ntf = (uintptr_t)b | (tf & ARR__TF_MASK);
		}
	} while (!atomic_compare_exchange_weak_explicit(&page->thread_free, &tf, ntf, memory_order_acq_rel,
							memory_order_relaxed));
	if (!delayed)
		return;
	/* While FREEING, the owner cannot change page->heap or reuse the page. */
	struct arr__heap *owner = page->heap;
	struct arr__block *d = atomic_load_explicit(&owner->delayed, memory_order_relaxed);
	do {
		arr__block_set_next(b, d);
	} while (!atomic_compare_exchange_weak_explicit(&owner->delayed, &d, b, memory_order_release,
							memory_order_relaxed));
	tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&page->thread_free, &tf, (tf & ~ARR__TF_MASK) | ARR__TF_NORMAL,
						      memory_order_release, memory_order_relaxed))
		;
}

/* Is b on one of the page's lists? A list longer than the page is a cycle. */
static bool on_list(const struct arr__page *page, const struct arr__block *list, const struct arr__block *b)
{
	uint32_t n = 0;
	for (; list; list = arr__block_next_checked(list)) {
		if (list == b)
			return true;
		if (++n > page->capacity)
			arr__fatal("corrupted free list (a cycle)", list);
	}
	return false;
}

void arr__free_check_double(const struct arr__page *page, const struct arr__block *b)
{
	const struct arr__block *tf =
		(const struct arr__block *)(atomic_load_explicit(&page->thread_free, memory_order_acquire) &
					    ~ARR__TF_MASK);
	if (page->used == 0 || on_list(page, page->free, b) || on_list(page, page->local_free, b) ||
	    on_list(page, tf, b))
		arr__fatal("free(): double free", b);
}

/* Everything the fast path does not see: the page must be in use and p a
 * block of it (an aligned page's blocks may be freed by an interior
 * pointer: the aligned one handed out). */
static struct arr__block *checked_block(struct arr__page *page, void *p)
{
	if (ARR__MISUSE(page->heap == NULL || page->cls == 0 || page->cls >= ARR__NCLASSES))
		arr__fatal("free(): invalid pointer (no block in use there: freed already?)", p);
	size_t off = (size_t)((uint8_t *)p - page->start);
	if (ARR__MISUSE((uint8_t *)p < page->start || off >= (size_t)page->capacity * page->block_size))
		arr__fatal("free(): invalid pointer (no block in use there: freed already?)", p);
	if (ARR__MISUSE(!(page->flags & ARR__PF_ALIGNED) && off % page->block_size != 0))
		arr__fatal("free(): invalid pointer (not the start of a block)", p);
	return arr__block_start(page, p);
}

ARR_HOT void arr__free_generic(void *p, struct arr__page *page, struct arr__heap *h, size_t req)
{
	if (page->flags & ARR__PF_SPAN) {
		arr__span_free_heap(p, h);
		return;
	}
	if (page->flags & ARR__PF_HUGE) {
		if (ARR__MISUSE(p != page->start))
			arr__fatal("free(): invalid pointer (inside a huge block)", p);
		ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page));
		arr__huge_free(page);
		return;
	}
	struct arr__block *b = checked_block(page, p);
	if (ARR__MISUSE(page->used == 0))
		arr__fatal("free(): double free", p);
	unsigned cls = page->cls;
	if (h != &arr__heap_empty) {
		if (page->heap != h)
			h->live_adj[cls]--; /* until the owner collects it */
		if (req)
			h->waste -= (int64_t)page->block_size - (int64_t)req;
		/* counted by the countdown, or, at its last free, in
		 * free_count: the next fast free ticks */
		if (h->tick_left > 1)
			h->tick_left--;
		else
			h->free_count++;
	} else {
		atomic_fetch_sub_explicit(&arr__orphan_live[cls], 1, memory_order_relaxed);
	}
	if (page->heap == h)
		free_local(h, page, b);
	else
		remote_free(page, b);
}

/* ---- adopting the pages of exited threads ---- */

/* A kept page its class's blocks go back to (a thread took its heap, or
 * adopted it): the resident tail past what they reached given back (a slice
 * that came resident from an earlier owner of another class). Not at the
 * exit: a page another heap takes instead (kept_take, for any class) is
 * carved anew and uses that tail. */
/* The OS pages of page's span its carved blocks reach. */
static inline size_t carved_os_pages(const struct arr__page *page)
{
	return ((size_t)page->capacity * page->block_size + ARR__OS_PAGE - 1) / ARR__OS_PAGE;
}

__attribute__((noinline)) static void kept_trim_tail(struct arr__page *page)
{
	size_t carved = carved_os_pages(page);
	if (page->zero_from > carved) {
		arr__pool_purge_range(page->start + carved * ARR__OS_PAGE, (page->zero_from - carved) * ARR__OS_PAGE);
		page->zero_from = (uint16_t)carved;
	}
}

/*
 * An abandoned heap's pages, adopted: the resident tails past what their
 * blocks reached (slices that came resident from an earlier owner, of
 * another class, that carved further) given back, as a kept page's are,
 * where the page is at most half used: its free blocks come before a carve
 * (find_page), so the tail would wait resident for nothing, where a fuller
 * page's next carve would fault it in again. Threads that hand their blocks
 * to the next and exit (`patterns handoff`, mimalloc-bench's larson) pass
 * pages and their tails from heap to heap (docs/allocator.md, "Adopted
 * pages' tails"). In batches of 16 ranges (one process_madvise where the kernel allows: with
 * threads, one TLB shootdown).
 */
struct tails {
	struct iovec iov[16];
	unsigned n;
	size_t bytes;
};

static __attribute__((noinline)) void tails_flush(struct tails *t)
{
	arr__os_purge_many(t->iov, t->n);
	arr__pool_count_purged(t->bytes);
	t->n = 0;
	t->bytes = 0;
}

static __attribute__((noinline)) void tail_add(struct tails *t, struct arr__page *page)
{
	size_t carved = carved_os_pages(page);
	if (page->zero_from <= carved || (uint64_t)page->used * 2 > page->capacity)
		return;
	size_t len = (page->zero_from - carved) * ARR__OS_PAGE;
	t->iov[t->n++] = (struct iovec){page->start + carved * ARR__OS_PAGE, len};
	t->bytes += len;
	page->zero_from = (uint16_t)carved;
	if (t->n == sizeof t->iov / sizeof *t->iov)
		tails_flush(t);
}

/* tails: an abandoned heap's (above); NULL: the shared heap's, whose empty
 * pages only are trimmed so (a light thread's own pages, carved by it) */
static inline __attribute__((always_inline)) void adopt_page(struct arr__heap *h, struct arr__page *page,
							     struct tails *tails)
{
	page->heap = h;
	page->flags &= (uint8_t)~ARR__PF_FULL;
	tf_force_state(page, ARR__TF_NORMAL);
	page_collect(page);
	if (page->used == 0) {
		/* of a class h has no page of: its current page (an exited
		 * thread's page kept for the next, "Kept pages") */
		if (h->pages[page->cls] == &arr__page_empty) {
			if (tails != NULL)
				tail_add(tails, page);
			else
				kept_trim_tail(page);
			class_push_front(h, page);
		} else
			arr__pool_give(h, page);
		return;
	}
	if (tails != NULL)
		tail_add(tails, page);
	class_insert_second(h, page);
	if (!page->free && page->capacity == page->reserved && h->pages[page->cls] != page)
		page_to_full(h, page);
}

/* Every page of heap `from` (its classes' lists and its full pages) to h;
 * their tails given back if `abandoned`. */
static inline __attribute__((always_inline)) void adopt_pages(struct arr__heap *h, struct arr__heap *from,
							      bool abandoned)
{
	struct tails t, *tails = NULL;
	if (abandoned) {
		t.n = 0;
		t.bytes = 0;
		tails = &t;
	}
	for (unsigned c = 0; c < ARR__NCLASSES; c++) {
		struct arr__page *page;
		while ((page = from->pages[c]) != &arr__page_empty) {
			class_remove(from, page);
			adopt_page(h, page, tails);
		}
	}
	struct arr__page *page;
	while ((page = from->full) != NULL) {
		full_remove(from, page);
		adopt_page(h, page, tails);
	}
	if (tails != NULL && t.n != 0)
		tails_flush(&t);
}

static void kept_clear(struct arr__heap *h);

/*
 * Who adopts an abandoned heap. Its live blocks are freed by whoever holds
 * them now, most often a thread that took over its exited owner's work (a
 * worker started for the next task, a chain's next thread), and the
 * adopter collects those frees only when it allocates. So the malloc that
 * finds no page of its class adopts the last heap abandoned only if its
 * thread is young (took its heap within REAP_YOUNG_OPS of the op clock);
 * an older thread adopts only a heap that has waited REAP_WAIT_OPS, long
 * enough for a thread started for the work to come first, short enough for
 * an older thread that frees the blocks itself while it allocates (a main
 * thread consuming its workers' results) to reuse their pages before it
 * carves many of its own. An idle thread that adopted a heap whose blocks
 * another thread frees would hold those frees, uncollected, for good. A
 * thread that starts while an abandoned heap waits takes a heap of its own
 * at once, not the light threads' shared heap (malloc_slow_inner), and
 * adopts it at its first malloc: light, it would make a page per class in
 * the shared heap first and take those pages along, one more per class
 * beside the adopted ones, generation after generation. Measurements:
 * docs/notes/2026-12-07-adoption.md.
 */
#define REAP_YOUNG_OPS ((uint64_t)16 * ARR__TICK_OPS)
#define REAP_WAIT_OPS ((uint64_t)4 * ARR__TICK_OPS)
static inline bool reap_is_young(const struct arr__heap *h)
{
	return arr__pool_clock() - h->born_clock < REAP_YOUNG_OPS;
}

/* Out of line and out of the hot text: only programs whose threads exit
 * with blocks live run it, and inlined in find_page it would not fit the
 * hot text's window (docs/allocator.md). */
static __attribute__((noinline)) bool reap_one(struct arr__heap *h)
{
	pthread_mutex_lock(&arr__lock);
	struct arr__heap **pp = &abandoned_heaps, *a;
	if (!reap_is_young(h)) {
		/* an older thread: only a heap abandoned long ago */
		uint64_t now = arr__pool_clock();
		while (*pp != NULL && now - (*pp)->abandon_clock < REAP_WAIT_OPS)
			pp = &(*pp)->next_state;
	}
	a = *pp;
	if (a) {
		*pp = a->next_state;
		atomic_fetch_sub(&arr__abandoned_count, 1);
		kept_clear(a); /* its kept pages: h's from now on (adopt_page) */
	}
	pthread_mutex_unlock(&arr__lock);
	if (a == NULL)
		return false;
	adopt_pages(h, a, true);
	/* A heap torn by a fork (its thread vanished mid-operation) may keep a
	 * stale last[c]: see arr__fork_tore. */
	for (unsigned c = 0; c < ARR__NCLASSES; c++)
		ARR__ASSERT(arr__fork_tore || (a->pages[c] == &arr__page_empty && a->last[c] == NULL));
	pthread_mutex_lock(&arr__lock);
	a->state = ARR__HEAP_FREE;
	a->next_state = free_heaps;
	free_heaps = a;
	pthread_mutex_unlock(&arr__lock);
	return true;
}

/* The remote frees of h's class pages collected, the empty ones to the
 * pool; the others marked NEVER if `never` (an abandoned heap's: remote
 * frees to thread_free from then on). Whether any is left. */
static bool give_empty_pages(struct arr__heap *h, bool never)
{
	bool any = false;
	for (unsigned c = 0; c < ARR__NCLASSES; c++) {
		struct arr__page *page = h->pages[c], *next;
		for (; page != &arr__page_empty && page; page = next) {
			next = page->next;
			page_collect(page);
			if (page->used == 0) {
				class_remove(h, page);
				arr__pool_give(h, page);
			} else {
				if (never)
					tf_force_state(page, ARR__TF_NEVER);
				any = true;
			}
		}
	}
	return any;
}

/*
 * Kept pages. A thread that exits with every block of its class pages freed
 * (a worker that allocates, frees and returns) leaves those pages, empty, in
 * its heap, and the next thread to start takes that heap with them (glibc's
 * arenas go from an exited thread to the next the same way): its classes'
 * pages are where the same classes' blocks were, resident as far as they
 * were used, without a pool call for each. Given back to the pool, a class
 * page's slice went to any class of any thread, and its resident part grew
 * to the longest any of them carved: threads of 1 000 blocks of 16-515 B,
 * two at a time, held 2.4 MB of free slices after 30 rounds where glibc's
 * two arenas held 600 KB. And a thread that starts takes such a heap at
 * once, not the light threads' shared heap: in bursts of threads each of
 * their 64 light mallocs queued on its lock (whose holder, preempted, kept
 * the others waiting; 58 threads alive at once where glibc had 4-8).
 * The pages stay the pool's to take back: a take that finds no resident
 * free slice, the footprint's growth and the purge delay (kept since then)
 * give them to the free slices first (pool.c kept_release).
 */

/* h's kept page of class c (its current page, empty), or NULL. */
static struct arr__page *kept_page(struct arr__heap *h, unsigned c)
{
	struct arr__page *page = h->pages[c];
	return page != &arr__page_empty && page->used == 0 ? page : NULL;
}

/* At the exit of h's thread: its class pages' remote frees collected, each
 * class's current page kept if it is empty (the page a class's next block
 * comes from; a tick trims it in place when idle, where an empty page behind
 * it would stay as it is),
 * the other empty ones to the pool, the pages with blocks marked NEVER
 * (remote frees to thread_free from then on). Returns the slices kept;
 * *live says whether a class page holds a block. */
static uint32_t keep_pages(struct arr__heap *h, bool *live)
{
	uint32_t slices = 0;
	*live = false;
	for (unsigned c = 0; c < ARR__NCLASSES; c++)
		for (struct arr__page *page = h->pages[c], *next; page != &arr__page_empty && page; page = next) {
			next = page->next;
			page_collect(page);
			if (page->used != 0) {
				tf_force_state(page, ARR__TF_NEVER);
				*live = true;
				continue;
			}
			if (page != h->pages[c]) {
				class_remove(h, page);
				arr__pool_give(h, page);
				continue;
			}
			slices += page->slices;
		}
	return slices;
}

/* Under arr__lock: h (off its list, or about to be) keeps nothing more. */
static void kept_clear(struct arr__heap *h)
{
	if (h->kept != 0) {
		arr__pool_kept_locked(-(int64_t)h->kept, 0);
		h->kept = 0;
		atomic_fetch_sub_explicit(&arr__kept_heaps, 1, memory_order_relaxed);
	}
}

/* The free heaps, then the abandoned ones: where kept pages wait. */
#define FOR_KEEPING_HEAPS(h)           \
	for (int l_ = 0; l_ < 2; l_++) \
		for (struct arr__heap *h = l_ ? abandoned_heaps : free_heaps; h; h = h->next_state)

uint64_t arr__heap_release_kept_locked(uint64_t older_than, uint64_t *oldest)
{
	uint64_t given = 0;
	*oldest = UINT64_MAX;
	FOR_KEEPING_HEAPS(h)
	{
		if (h->kept == 0)
			continue;
		if (h->kept_stamp > older_than) {
			if (h->kept_stamp < *oldest)
				*oldest = h->kept_stamp;
			continue;
		}
		for (unsigned c = 0; c < ARR__NCLASSES; c++)
			for (struct arr__page *page; (page = kept_page(h, c)) != NULL;) {
				class_remove(h, page);
				arr__pool_give_locked(page, h->kept_stamp);
			}
		given += h->kept;
		h->kept = 0;
		atomic_fetch_sub_explicit(&arr__kept_heaps, 1, memory_order_relaxed);
	}
	return given;
}

/* A kept page of h `slices` long, or NULL. */
static struct arr__page *kept_as_long(struct arr__heap *h, unsigned slices)
{
	for (unsigned c = 0; c < ARR__NCLASSES; c++) {
		struct arr__page *page = kept_page(h, c);
		if (page != NULL && page->slices == slices)
			return page;
	}
	return NULL;
}

struct arr__page *arr__heap_kept_steal_locked(unsigned cls, uint64_t *stamp)
{
	/* a page of the class in any kept heap first, else one as long */
	for (int pass = 0; pass < 2; pass++)
		FOR_KEEPING_HEAPS(h)
		{
			if (h->kept == 0)
				continue;
			struct arr__page *page =
				pass == 0 ? kept_page(h, cls) : kept_as_long(h, arr__class_slices[cls]);
			if (page == NULL)
				continue;
			class_remove(h, page);
			h->kept -= page->slices;
			if (h->kept == 0)
				atomic_fetch_sub_explicit(&arr__kept_heaps, 1, memory_order_relaxed);
			*stamp = h->kept_stamp;
			return page;
		}
	return NULL;
}

uint64_t arr__heap_kept_walk_locked(void)
{
	uint64_t sum = 0;
	unsigned heaps = 0;
	FOR_KEEPING_HEAPS(h)
	{
		ARR__CHECK(h->state == (l_ ? ARR__HEAP_ABANDONED : ARR__HEAP_FREE));
		ARR__CHECK(l_ || h->full == NULL);
		uint32_t slices = 0;
		for (unsigned c = 0; c < ARR__NCLASSES; c++) {
			if (!l_) /* (an abandoned heap's pages with blocks are NEVER) */
				class_list_is_valid(h, c, true);
			/* a kept page is a class's current page; the others of an
			 * abandoned heap hold blocks, a free heap has none */
			for (const struct arr__page *page = h->pages[c]; page != &arr__page_empty && page;
			     page = page->next) {
				ARR__CHECK(page->heap == h);
				ARR__CHECK(page == h->pages[c] ? l_ || page->used == 0 : l_ && page->used != 0);
				if (page->used != 0)
					continue;
				ARR__CHECK(atomic_load_explicit(&page->thread_free, memory_order_relaxed) ==
					   ARR__TF_NORMAL);
				slices += page->slices;
			}
		}
		ARR__CHECK(slices == h->kept);
		heaps += h->kept != 0;
		sum += slices;
	}
	ARR__CHECK(heaps == atomic_load_explicit(&arr__kept_heaps, memory_order_relaxed));
	return sum;
}

/* Return what can be returned and hand the rest to whoever adopts it. */
static void heap_abandon(struct arr__heap *h)
{
	span_cache_flush(h, true);
	arr__span_cache_flush(h, true);
	/* No new delayed frees after this; then drain the ones in flight. */
	for (struct arr__page *page = h->full; page; page = page->next)
		tf_force_state(page, ARR__TF_NEVER);
	process_delayed(h);
	bool any;
	uint32_t keep = keep_pages(h, &any);
	for (struct arr__page *page = h->full, *next; page; page = next) {
		next = page->next;
		page_collect(page);
		if (page->used == 0) {
			full_remove(h, page);
			arr__pool_give(h, page);
		} else {
			any = true;
		}
	}
	arr__pool_tick(h);
	pthread_mutex_lock(&arr__lock);
	atomic_fetch_sub_explicit(&arr__active_heaps, 1, memory_order_relaxed);
	if (h->census_busy) {
		h->census_busy = false;
		atomic_fetch_sub_explicit(&arr__busy_heaps, 1, memory_order_relaxed);
	}
	if (any) {
		h->abandon_clock = arr__pool_clock();
		h->state = ARR__HEAP_ABANDONED;
		h->next_state = abandoned_heaps;
		abandoned_heaps = h;
		atomic_fetch_add(&arr__abandoned_count, 1);
	} else {
		h->state = ARR__HEAP_FREE;
		h->next_state = free_heaps;
		free_heaps = h;
	}
	if (keep != 0) {
		h->kept = keep;
		h->kept_stamp = arr__pool_clock();
		arr__pool_kept_locked(keep, h->kept_stamp);
		atomic_fetch_add_explicit(&arr__kept_heaps, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&arr__lock);
}

static void heap_thread_done(void *arg)
{
	(void)arg;
	struct arr__heap *h = arr__tl_heap;
	if (h == &arr__heap_empty)
		return;
	arr__tl_heap = &arr__heap_empty;
	heap_abandon(h);
}

/* ---- the census of busy heaps ---- */

/*
 * How many threads allocate, for everything that costs more with threads
 * running at once (a purge's TLB-shootdown IPI, the span heap's lock, a
 * delay counted in summed operations): counted as heaps holding a heap,
 * a main thread that waits for its one worker made a program "two-threaded"
 * for good, and a replay three (the engine's own thread holds the heap it
 * prepared the workload with): `mtwork 1 private mixed wave` replayed with
 * its sparse classes dense and purges at 12 x the delay. Busy instead: a new
 * heap counts at once (threads that start are about to allocate); every
 * ARR__CENSUS_OPS of the op clock, at a pool call, three kinds of heap stop
 * counting: one that has made no call since the newest heap started and
 * fewer than CENSUS_FAST_MAX between the two newest heaps' starts (a main
 * thread that started its workers and waits; the engine's thread, which made
 * none since the recorded main thread's stream started), at the first census;
 * one that made fewer than CENSUS_FAST_MAX calls in all and fewer than
 * CENSUS_MIN_OPS since the previous census, at once too (a main thread that
 * made its few calls after its worker's heap started: a replay starts its
 * threads in any order, so the newest heap may be the waiting one, and while
 * it counts the worker's 1-8 KiB blocks take class pages that they then
 * hold); and one that made fewer
 * than CENSUS_MIN_OPS calls at each census while the op clock advanced
 * CENSUS_IDLE_OPS (16 censuses' worth, counted on the clock because the clock
 * is synced at pool calls only, which a thread working in the span heap makes
 * every few thousand operations). A worker that waits for the others for a
 * while is not idle: demoted because it made no call since a newer worker
 * started (its first worker waiting at the replay's pace for the second to
 * catch up), a paced 2-thread replay flapped between one and two busy
 * threads (sparse classes on and off: t2 private mixed steady 15.7 ->
 * 14.4-17.6 MB). A heap that calls the pool counts again at once.
 * A heap's counters are its owner's, read here without its cooperation (as
 * the statistics do): a census is a sample.
 */
#define CENSUS_MIN_OPS 8
#define CENSUS_IDLE_OPS (16 * ARR__CENSUS_OPS)
#define CENSUS_FAST_MAX 256
static uint64_t census_next;

/* Under arr__lock: a new thread's heap counts; the operations the others
 * made so far (a main thread's start-up) are not counted at the next census. */
static void census_join(struct arr__heap *h)
{
	for (struct arr__heap *o = all_heaps; o; o = o->next_all)
		if (o->state == ARR__HEAP_ACTIVE) {
			uint64_t ops = arr__heap_ops(o);
			o->census_join_calls = ops - o->census_join_ops;
			o->census_ops = o->census_join_ops = ops;
		}
	h->census_active = arr__pool_clock();
	if (!h->census_busy) {
		h->census_busy = true;
		atomic_fetch_add_explicit(&arr__busy_heaps, 1, memory_order_relaxed);
	}
}

ARR_HOT void arr__heap_census(struct arr__heap *h, uint64_t clock)
{
	if (h == NULL || h == &arr__heap_empty || h->state != ARR__HEAP_ACTIVE)
		return;
	if (!h->census_busy) {
		h->census_busy = true;
		h->census_active = clock;
		atomic_fetch_add_explicit(&arr__busy_heaps, 1, memory_order_relaxed);
	}
	if (clock < census_next)
		return;
	census_next = clock + ARR__CENSUS_OPS;
	unsigned busy = 0;
	for (struct arr__heap *o = all_heaps; o; o = o->next_all) {
		if (o->state != ARR__HEAP_ACTIVE)
			continue;
		uint64_t ops = __atomic_load_n(&o->alloc_count, __ATOMIC_RELAXED) + arr__heap_frees(o);
		bool active = o == h || ops - o->census_ops >= CENSUS_MIN_OPS;
		if (active)
			o->census_active = clock;
		/* started and waits: no call since the newest heap started and
		 * few before, or few in all and almost none since the last census */
		bool waits = (ops == o->census_join_ops && o->census_join_calls < CENSUS_FAST_MAX) ||
			     (ops - o->census_ops < CENSUS_MIN_OPS && ops < CENSUS_FAST_MAX);
		o->census_busy = active || (!waits && clock - o->census_active < CENSUS_IDLE_OPS);
		o->census_ops = ops;
		busy += o->census_busy;
	}
	atomic_store_explicit(&arr__busy_heaps, busy, memory_order_relaxed);
}

bool arr__census_is_valid_locked(void)
{
	unsigned busy = 0;
	for (const struct arr__heap *o = all_heaps; o; o = o->next_all) {
		ARR__CHECK(!o->census_busy || o->state == ARR__HEAP_ACTIVE);
		busy += o->census_busy;
	}
	ARR__CHECK(busy == atomic_load_explicit(&arr__busy_heaps, memory_order_relaxed));
	return true;
}

/* ---- heap creation and the malloc slow path ---- */

static void *meta_alloc(size_t size)
{
	size = (size + 63) & ~(size_t)63;
	if ((size_t)(meta_end - meta_cur) < size) {
		size_t chunk = size > ((size_t)64 << 10) ? size : ((size_t)64 << 10);
		uint8_t *m = arr__os_map(chunk);
		if (m == NULL)
			return NULL;
		meta_cur = m;
		meta_end = m + chunk;
	}
	void *p = meta_cur;
	meta_cur += size;
	return p;
}

ARR_HOT struct arr__heap *arr__heap_thread_init(void)
{
	arr__ensure_init();
	struct arr__heap *h = arr__tl_heap;
	if (h != &arr__heap_empty)
		return h;
	pthread_mutex_lock(&arr__lock);
	struct arr__heap **pp = &free_heaps;
	if (atomic_load_explicit(&arr__kept_heaps, memory_order_relaxed) != 0)
		for (struct arr__heap **q = &free_heaps; *q; q = &(*q)->next_state)
			if ((*q)->kept != 0) { /* one with kept pages first */
				pp = q;
				break;
			}
	h = *pp;
	bool reused = h != NULL;
	bool inherit = false;
	if (h) {
		*pp = h->next_state;
		inherit = h->kept != 0;
		kept_clear(h);
	} else {
		h = meta_alloc(sizeof *h); /* zeroed: fresh mmap */
		if (h == NULL) {
			pthread_mutex_unlock(&arr__lock);
			return NULL;
		}
		for (unsigned c = 0; c < ARR__NCLASSES; c++)
			set_current(h, c, &arr__page_empty);
		h->next_all = all_heaps;
		all_heaps = h;
	}
	h->state = ARR__HEAP_ACTIVE;
	h->full = NULL;
	h->born_frees = arr__heap_frees(h) - (reused ? 0 : ARR__TRIM_NOW_AGE);
	h->born_clock = arr__pool_clock();
	memset(h->borrows, 0, sizeof h->borrows); /* a reused heap's: a new thread borrows anew */
	atomic_fetch_add_explicit(&arr__active_heaps, 1, memory_order_relaxed);
	census_join(h);
	pthread_mutex_unlock(&arr__lock);
	if (inherit)
		for (unsigned c = 0; c < ARR__NCLASSES; c++)
			if (h->pages[c] != &arr__page_empty)
				kept_trim_tail(h->pages[c]);
	arr__tl_heap = h;
	if (atomic_load(&key_ok))
		pthread_setspecific(heap_key, h);
	return h;
}

/*
 * Holes: a page that is not its class's current page, holds live
 * blocks and has seen no malloc or free for a while gives back the OS pages
 * of its span whose blocks are all free. The blocks that start in such an
 * OS page leave the free list (their link word is gone with the page); they
 * come back, zero, when the page has no other free block left
 * (page_unhole). At cc1's peak ~330 KB lie in such OS pages, in pages of
 * ~100 classes that a burst left sparse (2 967 free 32-byte blocks around
 * 233 live ones in two pages, 12 free 9 216-byte blocks around one).
 * One-slice spans only (16 OS pages: a 16-bit mask).
 */
#define PUNCH_MAX_BLOCKS (ARR__SLICE_SIZE / 8)

static void page_unhole(struct arr__page *page)
{
	uint32_t bs = page->block_size;
	struct arr__block *head = page->free;
	for (uint32_t i = page->capacity; i-- > 0;) {
		size_t off = (size_t)i * bs;
		if (page->holes >> (off / ARR__OS_PAGE) & 1) {
			struct arr__block *b = (struct arr__block *)(page->start + off);
			arr__block_set_next(b, head);
			head = b;
		}
	}
	page->free = head;
	page->free_is_zero = 0;
	page->holes = 0;
}

/* Purge the OS pages of `page` whose blocks are all free; adds their ranges
 * to iov (flushed by the caller). Returns the new iov count. */
static unsigned page_punch(struct arr__page *page, struct iovec *iov, unsigned niov, unsigned max)
{
	uint32_t bs = page->block_size, cap = page->capacity;
	uint64_t isfree[PUNCH_MAX_BLOCKS / 64];
	if (page->slices != 1 || cap == 0 || cap > PUNCH_MAX_BLOCKS || niov == max)
		return niov;
	/* only a page at least a quarter free can have a wholly free OS page
	 * worth the walk of its free list */
	size_t carved = (size_t)cap * bs, freeb = (size_t)(cap - page->used) * bs;
	if (freeb < 2 * ARR__OS_PAGE || freeb * 4 < carved)
		return niov;
	memset(isfree, 0, ((cap + 63) / 64) * sizeof isfree[0]);
	for (int l = 0; l < 2; l++)
		for (struct arr__block *b = l ? page->local_free : page->free; b; b = arr__block_next_checked(b)) {
			size_t i = (size_t)((uint8_t *)b - page->start) / bs;
			isfree[i / 64] |= (uint64_t)1 << (i % 64);
		}
	unsigned npages = (unsigned)((carved + ARR__OS_PAGE - 1) / ARR__OS_PAGE);
	uint16_t punch = 0;
	for (unsigned k = 0; k < npages; k++) {
		if (page->holes >> k & 1)
			continue;
		size_t lo = (size_t)k * ARR__OS_PAGE, hi = lo + ARR__OS_PAGE;
		size_t b0 = lo / bs, b1 = ((hi < carved ? hi : carved) - 1) / bs;
		bool all = true;
		for (size_t i = b0; i <= b1 && all; i++)
			all = isfree[i / 64] >> (i % 64) & 1;
		if (all)
			punch |= (uint16_t)(1u << k);
	}
	if (punch == 0)
		return niov;
	/* the free blocks that start in a punched OS page leave the lists */
	struct arr__block *keep = NULL, *tail = NULL;
	for (int l = 0; l < 2; l++)
		for (struct arr__block *b = l ? page->local_free : page->free, *next; b; b = next) {
			next = arr__block_next(b);
			size_t off = (size_t)((uint8_t *)b - page->start);
			if (punch >> (off / ARR__OS_PAGE) & 1)
				continue;
			if (tail == NULL)
				keep = b;
			else
				arr__block_set_next(tail, b);
			tail = b;
		}
	if (tail != NULL)
		arr__block_set_next(tail, NULL);
	page->free = keep;
	page->local_free = NULL;
	page->free_is_zero = 0;
	page->holes |= punch;
	for (unsigned k = 0; k < npages && niov < max; k++) {
		if (!(punch >> k & 1))
			continue;
		unsigned j = k;
		while (j + 1 < npages && (punch >> (j + 1) & 1))
			j++;
		iov[niov++] =
			(struct iovec){page->start + (size_t)k * ARR__OS_PAGE, (size_t)(j - k + 1) * ARR__OS_PAGE};
		k = j;
	}
	return niov;
}

/*
 * Up to PUNCH_VISITS (4) pages a tick, classes in turn from where the previous
 * tick stopped (py's heap holds ~1 800 pages: looking at all of them every
 * tick tripled its replay time, 16 a tick cost it 4 %), other than the
 * current pages: one found unchanged (same `free` head and `used`) `after`
 * visits in a row is idle, and gives back its wholly free OS pages.
 */
#define PUNCH_VISITS 4
ARR_HOT static void heap_punch_idle(struct arr__heap *h, unsigned after)
{
	enum { MAXV = 32 };
	struct iovec iov[MAXV];
	unsigned niov = 0, visits = 0, c = h->punch_cls;
	for (unsigned n = 0; n < ARR__NCLASSES && visits < PUNCH_VISITS; n++, c = c + 1 == ARR__NCLASSES ? 0 : c + 1) {
		struct arr__page *page = h->pages[c];
		if (page == &arr__page_empty)
			continue;
		for (page = page->next; page && visits < PUNCH_VISITS; page = page->next) {
			visits++;
			if (page->used == 0 || page->flags != 0)
				continue;
			if (page->free != page->seen_free || page->used != page->seen_used) {
				page->seen_free = page->free;
				page->seen_used = page->used;
				page->seen_ticks = 0;
				continue;
			}
			if (page->seen_ticks == UINT8_MAX || ++page->seen_ticks != after)
				continue;
			niov = page_punch(page, iov, niov, MAXV);
			page->seen_free = page->free; /* punching changed the list, not the use */
			if (niov == MAXV)
				break;
		}
		if (niov == MAXV)
			break;
	}
	h->punch_cls = c;
	if (niov) {
		size_t bytes = 0;
		for (unsigned i = 0; i < niov; i++)
			bytes += iov[i].iov_len;
		arr__os_purge_many(iov, niov);
		arr__pool_count_purged(bytes);
	}
}

ARR_HOT void arr__heap_tick(struct arr__heap *h)
{
	/* the countdown's frees into free_count (a fresh heap's wrapped
	 * tick_left: 0 - UINT64_MAX == 1), and a new one */
	h->free_count += h->tick_len - h->tick_left;
	h->tick_left = h->tick_len = ARR__TICK_OPS;
	if (atomic_load_explicit(&h->delayed, memory_order_relaxed))
		process_delayed(h);
	/* Empty current pages (the free fast path keeps them, uncounted, so
	 * every class is looked at). One that was emptied since the last tick
	 * (`idle` 0) is in use by malloc/free pairs. One that was not is
	 * idle: trimmed (see page_trim) once it has been idle for as many
	 * ticks as there are threads. Single-threaded that is every idle tick;
	 * with several threads a purge is a TLB-shootdown IPI to the other
	 * CPUs and a page fault when the class comes back: in the 4-thread
	 * stress replay, 717 trims of pages of the large classes (a block every
	 * ~3000 ops each) were mostly carved again. Single-threaded a page in
	 * use is trimmed too: pairs rarely need more than the first
	 * carve back, and a page fault costs no IPI there (cc1: 140 KB less at
	 * its peak for 6 % more page faults; py and sqlite unchanged) — unless
	 * its class is barred (trim_barred): a page carved again past what such
	 * a trim kept before the next tick was trimmed for nothing. */
	unsigned trim_after = arr__purge_mult();
	if (h->span_cache)
		span_cache_flush(h, false);
	if (h->sc_n)
		arr__span_cache_flush(h, false);
	/* a dense class whose pages have all gone back is sparse again */
	for (uint64_t d = h->dense; d; d &= d - 1) {
		unsigned k = (unsigned)__builtin_ctzll(d);
		if (h->pages[ARR__SPARSE_FIRST + k] == &arr__page_empty)
			h->dense &= ~((uint64_t)1 << k);
	}
	for (unsigned c = 0; c < ARR__NCLASSES; c++) {
		struct arr__page *page = h->pages[c];
		if (page == &arr__page_empty || page->idle != 0) /* the class's bar lapses (trim_barred) */
			h->trim_barred[c / 64] &= ~((uint64_t)1 << (c % 64));
		if (page == &arr__page_empty)
			continue;
		/* a trim for nothing (2) stays barred while the page churns */
		if (page->trimmed == 1 || page->idle != 0)
			page->trimmed = 0;
		if (page->used != 0)
			continue;
		if (page->local_free) {
			struct arr__block *t = page->local_free, *n;
			while ((n = arr__block_next_checked(t)) != NULL)
				t = n;
			arr__block_set_next(t, page->free);
			page->free = page->local_free;
			page->local_free = NULL;
			page->free_is_zero = 0;
			page->idle = 0;
		}
		bool in_use = page->idle == 0; /* emptied since the last tick */
		if (page->idle == 0) {
			page->idle = 1;
			if (trim_after > 1)
				continue;
		}
		page_collect(page);
		if (page->used != 0)
			continue;
		if (page->idle >= trim_after && c - ARR__SPARSE_FIRST < ARR__SPARSE_END - ARR__SPARSE_FIRST &&
		    (h->dense >> (c - ARR__SPARSE_FIRST) & 1) && page->next == NULL && page->reserved > 1) {
			/* a dense class's last page, idle: back to the pool, and the
			 * class is sparse again (its next blocks from the span heap) */
			h->dense &= ~((uint64_t)1 << (c - ARR__SPARSE_FIRST));
			class_remove(h, page);
			span_cache_put(h, page);
			continue;
		}
		if (page->idle >= trim_after && !(in_use && trim_is_barred(h, page))) {
			if (page_trim(page, page->idle >= trim_after + FULL_TRIM_TICKS) && in_use)
				page->trimmed = 1; /* carved again before the next tick: barred */
		}
		if (page->idle < UINT8_MAX)
			page->idle++;
	}
	if (arr__opt.purge_delay >= 0)
		heap_punch_idle(h, trim_after);
	ARR__ASSERT_EXPENSIVE(arr__heap_is_valid(h));
	memset(h->borrows, 0, sizeof h->borrows); /* after the check: it sees the tick's borrows */
	arr__pool_tick(h);
	/* the light threads' heap, idle: its empty pages back to the pool */
	struct arr__heap *shared = __atomic_load_n(&arr__shared_heap, __ATOMIC_RELAXED);
	if (ARR_UNLIKELY(shared != NULL) && h != shared)
		arr__shared_release(false);
}

/*
 * Pages shared by neighbouring classes, the cheap way: rather than carve
 * fresh memory (or take a span) for a class, hand out a free block ready in
 * the current page of one of the next BORROW_UP classes. The block stays in
 * its page and class (free finds it by address), so nothing else changes;
 * it costs at most four classes of rounding (≤ 50 %) while it lives. A
 * segregated fit holds a high-water mark of blocks per class; a program that
 * uses a few blocks each of many mid-size classes at different times (cc1:
 * ~100 classes of 256 B to 64 KiB) then holds the sum of those marks, where
 * glibc holds the peak of their sum. Only from BORROW_MIN bytes: below, a
 * page's first carve is one OS page of many blocks, and borrowing would only
 * send the class to the slow path more often.
 */

static struct arr__page *borrow(struct arr__heap *h, unsigned cls, size_t max_block)
{
	for (unsigned c = cls + 1; c <= cls + BORROW_UP && c < ARR__NCLASSES; c++) {
		struct arr__page *page = h->pages[c];
		if (arr__class_size[c] > max_block)
			break;
		if (page == &arr__page_empty || page->reserved == 1)
			continue;
		if (!page->free && page->local_free) {
			page->free = page->local_free;
			page->local_free = NULL;
			page->free_is_zero = 0;
		}
		if (page->free) {
			ARR__ASSERT(h->pages[c] == page && page->cls == c);
			ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page));
			return page;
		}
	}
	return NULL;
}

/*
 * Freed blocks before fresh ones: the current page has none left but could
 * carve more, while the pages behind it (ones that came back from the full
 * list with blocks freed into them, ones requeued while exhausted) may hold
 * free blocks. Carved first, every page of a class ended up carved whole
 * before its free blocks were used again, so a class held its high-water
 * mark rounded up to a 64 KiB page rather than to an OS page, and the free
 * blocks of its older pages stayed resident beside the fresh ones
 * (`mtwork 1 private small steady`: 79 pages of 17 classes, 485 KB free in
 * carved pages for 4.4 MB used). Up to REUSE_SCAN pages are looked at: the
 * walk runs once per exhausted free list, and a long list that has nothing
 * ready must not cost more than the carve it precedes.
 */
#define REUSE_SCAN 8
static struct arr__page *reuse_before_carve(struct arr__heap *h, struct arr__page *cur)
{
	unsigned n = 0;
	for (struct arr__page *page = cur->next; page && n < REUSE_SCAN; page = page->next, n++) {
		page_collect(page);
		if (!page->free)
			continue;
		page->requeued = 0;
		class_remove(h, page);
		class_push_front(h, page);
		ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page));
		return page;
	}
	return NULL;
}

static struct arr__page *find_page(struct arr__heap *h, unsigned cls, size_t size, bool exact)
{
	if (atomic_load_explicit(&h->delayed, memory_order_relaxed))
		process_delayed(h);
	if (arr__heap_ops(h) - h->ops_synced >= ARR__TICK_OPS)
		arr__heap_tick(h);
	bool reaped = false;
retry:;
	struct arr__page *page = h->pages[cls], *next;
	for (; page != &arr__page_empty && page; page = next) {
		next = page->next;
		page_collect(page);
		if (!page->free && page->holes)
			page_unhole(page);
		if (!page->free && page->capacity < page->reserved) {
			struct arr__page *b;
			if (next != NULL && (b = reuse_before_carve(h, page)) != NULL)
				return b;
			/* only if the carve would touch fresh memory */
			if (!exact && page->block_size >= BORROW_MIN &&
			    (size_t)page->capacity * page->block_size >= (size_t)page->zero_from * ARR__OS_PAGE &&
			    (b = borrow(h, cls, SIZE_MAX)) != NULL)
				return b;
			page_extend(page);
		}
		if (!page->free && !page->requeued && next != NULL) {
			/* Exhausted: to the back of the list, unmarked, once. Its
			 * blocks come back on the fast path meanwhile, and by the
			 * time it is at the front again it usually has some. Set
			 * aside as full at once (mimalloc's order), every such page
			 * cost two atomic CAS (page_to_full, page_unfull, each
			 * waiting for the store buffer to drain of the fast path's
			 * cache-missing stores) and sent the owner's frees to the
			 * generic path: in the 4-thread stress replay, 30 % of the
			 * malloc slow path was that CAS. */
			page->requeued = 1;
			class_remove(h, page);
			class_push_back(h, page);
			ARR__ASSERT(h->last[cls] == page && page->next == NULL);
			ARR__ASSERT_EXPENSIVE(class_list_is_valid(h, cls, false));
			continue;
		}
		/* With several threads, the fuller of this page and the next
		 * one with free blocks becomes current (tcmalloc's span
		 * prioritisation, one step of it): the sparser page drains
		 * and goes back to the pool for any class or thread instead
		 * of keeping free blocks resident in one class of one thread.
		 * 4-thread stress replay: peak −1.8 MB, +1.5 %
		 * time; scanning 4 pages −1.1 MB more for +5 % (cold
		 * descriptors, one after the other). Only a page less than
		 * half full looks at the next (same peak, one load fewer most
		 * of the time). Single-threaded, cc1's peak rose 150 KB with
		 * it: not there. */
		if (page->free && next != NULL && page->used * 2 < page->capacity && arr__purge_scale() > 1 &&
		    next->free && next->used > page->used) {
			page = next;
			ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page));
		}
		if (page->free || !page_to_full(h, page)) {
			page->requeued = 0;
			if (h->pages[cls] != page) {
				class_remove(h, page);
				class_push_front(h, page);
			}
			ARR__ASSERT(page->free != NULL && h->pages[cls] == page);
			ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page));
			return page;
		}
	}
	if (!reaped && atomic_load_explicit(&arr__abandoned_count, memory_order_relaxed) > 0 &&
	    h->state != ARR__HEAP_SHARED) {
		reaped = true;
		if (reap_one(h)) {
			ARR__ASSERT_EXPENSIVE(arr__heap_is_valid(h));
			goto retry;
		}
	}
	if (!exact && arr__class_size[cls] >= BORROW_MIN && arr__class_size[cls] <= ARR__SLICE_SIZE &&
	    (page = borrow(h, cls, SIZE_MAX)) != NULL)
		return page;
	/* A class below BORROW_MIN with no page yet borrows too, a few times a
	 * tick, from a class at most twice the request: a small program uses
	 * a few blocks each of many small classes, and a page of its own
	 * costs each of them an OS page, most of it free (sed, make: 20
	 * classes, 3 KB of free blocks each, against glibc's one heap). A
	 * class that mallocs more than ARR__SMALL_BORROWS times a tick takes
	 * a page of its own (each borrow is a slow-path malloc). */
	if (!exact && arr__class_size[cls] < BORROW_MIN && h->borrows[cls] < ARR__SMALL_BORROWS &&
	    h->pages[cls] == &arr__page_empty && (page = borrow(h, cls, 2 * size)) != NULL) {
		h->borrows[cls]++;
		return page;
	}
	page = h->span_cache ? span_cache_take(h, cls) : NULL;
	if (page == NULL)
		page = arr__pool_take(h, cls);
	if (page == NULL)
		return NULL;
	page->trimmed = (uint8_t)((h->trim_barred[cls / 64] >> (cls % 64) & 1) << 1); /* trim_barred */
	class_push_front(h, page);
	page_extend(page);
	ARR__ASSERT(page->free != NULL && h->pages[cls] == page);
	ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page));
	return page;
}

/* page_collect without its call: the local frees, and false if there are
 * remote ones to collect (page_collect's work, out of line). */
static inline bool page_collect_local(struct arr__page *page)
{
	if (page->local_free && !page->free) {
		page->free = page->local_free;
		page->local_free = NULL;
		page->free_is_zero = 0;
	}
	return (atomic_load_explicit(&page->thread_free, memory_order_relaxed) & ~ARR__TF_MASK) == 0;
}

/*
 * find_page_quick (the two below and the borrows, put together by arr__malloc_refill):
 * find_page's common cases, without a call and with none of find_page's
 * rare branches (its loop, everything inlined, is 5.5 KB of code): in the
 * 4-thread stress replay, serial, 151 K of 290 K calls took a page with
 * free blocks behind a current page that could carve more (freed blocks
 * before fresh ones), 117 K sent an exhausted page carved whole to the back
 * and took the next, and sqlite's 1 KiB requests borrowed 300 K times.
 * Returns what find_page returns, or NULL where find_page must look (a
 * tick or delayed frees due, remote frees to collect, holes, a carve, the
 * full list, the pool): then the class's list is as find_page's loop would
 * have it at its head (a page sent to the back here is one its loop sends
 * too), so find_page, run from the start, finds what it would have found.
 */
/* find_page_quick's first tests: a tick or delayed frees due (find_page's) */
static inline bool find_page_quick_due(struct arr__heap *h)
{
	return atomic_load_explicit(&h->delayed, memory_order_relaxed) ||
	       arr__heap_ops(h) - h->ops_synced >= ARR__TICK_OPS;
}

/* class_remove then class_push_back of the class's head page, which has a
 * next: the same list, without their tests for the cases that cannot be */
static inline void class_head_to_back(struct arr__heap *h, unsigned cls, struct arr__page *page, struct arr__page *next)
{
	ARR__ASSERT(h->pages[cls] == page && page->next == next && next != NULL && page->prev == NULL);
	struct arr__page *last = h->last[cls];
	next->prev = NULL;
	page->next = NULL;
	page->prev = last;
	last->next = page;
	h->last[cls] = page;
	set_current(h, cls, next);
}

/* class_remove then class_push_front of a page of the class that is not its head */
static inline void class_to_front(struct arr__heap *h, unsigned cls, struct arr__page *p)
{
	struct arr__page *head = h->pages[cls];
	ARR__ASSERT(p->prev != NULL && head != p && head != &arr__page_empty);
	p->prev->next = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		h->last[cls] = p->prev;
	p->prev = NULL;
	p->next = head;
	head->prev = p;
	set_current(h, cls, p);
}

/* find_page_quick for a class whose list starts at page. */
static inline __attribute__((always_inline)) struct arr__page *find_page_quick_list(struct arr__heap *h, unsigned cls,
										    struct arr__page *page)
{
	for (;;) {
		ARR__ASSERT(h->pages[cls] == page);
		struct arr__page *next = page->next;
		if (!page_collect_local(page) || page->holes)
			return NULL;
		if (page->free) {
			/* find_page's choice of the fuller of two, with threads */
			if (next != NULL && page->used * 2 < page->capacity && arr__purge_scale() > 1 && next->free &&
			    next->used > page->used)
				return NULL;
			page->requeued = 0;
			return page;
		}
		if (next == NULL)
			return NULL;
		if (page->capacity < page->reserved) {
			unsigned n = 0;
			for (struct arr__page *p = next; p && n < REUSE_SCAN; p = p->next, n++) {
				if (!page_collect_local(p))
					return NULL;
				if (p->free) {
					p->requeued = 0;
					class_to_front(h, cls, p);
					ARR__ASSERT_EXPENSIVE(class_list_is_valid(h, cls, false));
					return p;
				}
			}
			return NULL; /* a borrow or a carve */
		}
		if (page->requeued)
			return NULL; /* to the full list */
		page->requeued = 1;
		class_head_to_back(h, cls, page, next);
		ARR__ASSERT_EXPENSIVE(class_list_is_valid(h, cls, false));
		page = next;
	}
}

/* A class that may be sparse is served by the span heap until this thread
 * holds a page's worth of its blocks there (then it is dense: pages of its
 * own, the fast paths); others by their pages. cls: size's class, sk: cls -
 * ARR__SPARSE_FIRST. */
static inline bool sparse_to_span(struct arr__heap *h, unsigned cls, unsigned sk)
{
	if (!(sk < ARR__SPARSE_END - ARR__SPARSE_FIRST && arr__opt.sparse && !(h->dense >> sk & 1) &&
	      arr__class_size[cls] > arr__opt.sparse_min))
		return false;
	/* live >= floor(X / size) as (live + 1) x size > X (X >= 0): the
	 * division was a fifth of this path's instructions */
	if ((int64_t)(h->sparse_live[sk] + 1) * arr__class_size[cls] >
		    (int64_t)((uint64_t)arr__opt.sparse * arr__class_slices[cls] * ARR__SLICE_SIZE) ||
	    (int64_t)h->sparse_live[sk] >= (int64_t)arr__class_sparse_cap[sk]) {
		h->dense |= (uint64_t)1 << sk;
		return false;
	}
	/* With more threads than sparse_threads busy (the census) the class
	 * takes its pages: the span heap's lock would be shared by every
	 * thread's small blocks. Not marked dense: the census may find fewer
	 * busy threads later (a replay's or a program's start-up), and then the
	 * class's next slow-path malloc is sparse again. */
	return arr__opt.sparse_thr == 0 || arr__purge_scale() <= arr__opt.sparse_thr;
}

ARR_HOT bool arr__sparse_in_span(struct arr__heap *h, size_t size)
{
	if (h == &arr__heap_empty || size > arr__opt.span_min || size <= ARR__SMALL_TAB)
		return false;
	unsigned cls = arr__size_class_above(size);
	return cls < ARR__SPARSE_END && sparse_to_span(h, cls, cls - ARR__SPARSE_FIRST);
}

static void *malloc_slow(struct arr__heap *h, size_t size, unsigned flags);

/* The sparse classes' slow path first, without the frame of the rest's
 * (malloc_slow saves six registers and a stack frame): ~100 instructions a
 * call before, on every 1-8 KiB block of the `large` replays. A request
 * this does not send to the span heap takes the whole way (which asks
 * again, to the same answer: a class marked dense here stays dense). */
ARR_HOT void *arr__malloc_sparse(size_t size, struct arr__heap *h, unsigned cls, unsigned flags)
{
	ARR__ASSERT(h != &arr__heap_empty && cls == arr__size_class(size) && size <= arr__opt.span_min &&
		    size <= arr__opt.mmap_threshold && !(flags & ARR__ALLOC_EXACT));
	unsigned sk = cls - ARR__SPARSE_FIRST;
	if (ARR_UNLIKELY(h->sc_n != 0) && flags == 0) {
		void *p = arr__sparse_cache_try(h, size);
		if (p != NULL) {
			h->sparse_live[sk]++; /* as below */
			return p;
		}
	}
	if (sparse_to_span(h, cls, sk)) {
		h->sparse_live[sk]++; /* its free counts it off (arr__span_free_heap) */
		return arr__span_malloc(h, size, flags & ARR__ALLOC_ZERO);
	}
	return malloc_slow(h, size, flags);
}

static inline __attribute__((always_inline)) void *malloc_slow_inner(struct arr__heap *h, size_t size, unsigned flags);

/* (errno here, so the front reaches the whole way by a tail call) */
ARR_HOT static __attribute__((noinline)) void *malloc_slow(struct arr__heap *h, size_t size, unsigned flags)
{
	void *p = malloc_slow_inner(h, size, flags);
	if (p == NULL)
		errno = ENOMEM;
	return p;
}

ARR_HOT void *arr__malloc_slow(struct arr__heap *h, size_t size, unsigned flags) { return malloc_slow(h, size, flags); }

static inline __attribute__((always_inline)) void *heap_malloc_in(struct arr__heap *h, size_t size, unsigned flags);

static inline __attribute__((always_inline)) void *malloc_slow_inner(struct arr__heap *h, size_t size, unsigned flags)
{
	arr__ensure_init();
	if (h == &arr__heap_empty) {
		/* a light thread (see "Light threads"): while another holds a
		 * heap, and for blocks below the sparse classes */
		if (ARR_UNLIKELY(light_calls < arr__opt.light) && size < arr__opt.sparse_min &&
		    atomic_load_explicit(&arr__active_heaps, memory_order_relaxed) != 0 &&
		    atomic_load_explicit(&arr__kept_heaps, memory_order_relaxed) == 0 &&
		    atomic_load_explicit(&arr__abandoned_count, memory_order_relaxed) == 0)
			return arr__light_malloc(size, flags);
		h = arr__heap_thread_init();
		if (h == NULL)
			return NULL;
		if (ARR_UNLIKELY(light_calls != 0))
			arr__light_graduate(h);
	}
	return heap_malloc_in(h, size, flags);
}

/* malloc_slow_inner past the heap's init: h's block for size. */
static inline __attribute__((always_inline)) void *heap_malloc_in(struct arr__heap *h, size_t size, unsigned flags)
{
	bool zero = flags & ARR__ALLOC_ZERO;
	if (size > ARR__MAX_SMALL || size > arr__opt.mmap_threshold) {
		arr__heap_trim_for_growth(h);
		size_t zeroed = 0;
		void *p = arr__huge_alloc(size, 0, zero ? &zeroed : NULL);
		if (p && zero) {
			h->calloc_zeroed += zeroed;
			h->calloc_skipped += size - zeroed; /* fresh mapping */
		}
		return p;
	}
	unsigned cls = arr__size_class(size);
	bool to_span = arr__opt.span_min != 0 && !(flags & ARR__ALLOC_EXACT);
	unsigned sk = cls - ARR__SPARSE_FIRST; /* < the number of sparse classes if cls is one */
	if (to_span && size <= arr__opt.span_min)
		to_span = sparse_to_span(h, cls, sk);
	if (to_span) {
		if (sk < ARR__SPARSE_END - ARR__SPARSE_FIRST)
			h->sparse_live[sk]++; /* its free counts it off (arr__span_free_heap) */
		return arr__span_malloc(h, size, flags & ARR__ALLOC_ZERO);
	}
	return arr__malloc_refill(size, h, cls, flags);
}

/* The pop of the slow path: the first block of page (which has one) for a
 * request of size; with ARR__ALLOC_ZERO in flags, zeroed. */
static inline __attribute__((always_inline)) void *refill_pop(struct arr__heap *h, struct arr__page *page, size_t size,
							      unsigned flags)
{
	struct arr__block *b = page->free;
	if (ARR__MISUSE_IF(ARR__HARDEN_LINKS, !arr__same_segment(b, page)))
		arr__fatal("malloc(): corrupted free list", b);
	page->free = arr__block_next(b);
	if (ARR_ALLOC_HARDEN & ARR__HARDEN_DOUBLE)
		b->link = 0; /* no stale link in a live block (free's double-free test) */
	page->used++;
	h->waste += (int64_t)page->block_size - (int64_t)size;
	h->alloc_count++;
	if (flags & ARR__ALLOC_ZERO) {
		if (page->free_is_zero) {
			b->link = 0;
			h->calloc_skipped += size;
			arr__calloc_prefault(b, size);
		} else {
			h->calloc_zeroed += size;
			return memset(b, 0, size);
		}
	}
	return b;
}

/* The whole search (find_page), where find_page_quick stopped. */
ARR_HOT static __attribute__((noinline)) void *refill_slow(size_t size, struct arr__heap *h, unsigned cls,
							   unsigned flags)
{
	struct arr__page *page = find_page(h, cls, size, flags & ARR__ALLOC_EXACT);
	if (ARR_UNLIKELY(page == NULL)) {
		errno = ENOMEM;
		return NULL;
	}
	return refill_pop(h, page, size, flags);
}

/* arr__malloc_refill for a class with no page outside the whole-class
 * borrow's sizes: a class below 256 bytes borrows a block at most twice its
 * size, ARR__SMALL_BORROWS times a tick. Out of line, so that the list's walk
 * is compiled without this borrow's registers (its count, the bound of twice
 * the size). */
ARR_HOT static __attribute__((noinline)) void *refill_borrow(size_t size, struct arr__heap *h, unsigned cls,
							     unsigned flags)
{
	struct arr__page *page;
	if (!(arr__class_size[cls] < BORROW_MIN && h->borrows[cls] < ARR__SMALL_BORROWS &&
	      (page = borrow(h, cls, 2 * size)) != NULL))
		return refill_slow(size, h, cls, flags);
	h->borrows[cls]++;
	ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page) && class_list_is_valid(h, cls, false));
	return refill_pop(h, page, size, flags);
}

ARR_HOT void *arr__malloc_refill(size_t size, struct arr__heap *h, unsigned cls, unsigned flags)
{
	ARR__ASSERT(h != &arr__heap_empty && cls == arr__size_class(size) && size <= ARR__MAX_SMALL);
	if (find_page_quick_due(h))
		return refill_slow(size, h, cls, flags);
	struct arr__page *page = h->pages[cls];
	if (page == &arr__page_empty) {
		/* find_page's tail for a class with no page: no abandoned pages
		 * to adopt, then a borrow; a class from 256 bytes borrows here,
		 * without refill_borrow's tail call and frame (sqlite's 1 KiB
		 * requests borrow on 300 K calls), the small classes there */
		if ((flags & ARR__ALLOC_EXACT) || atomic_load_explicit(&arr__abandoned_count, memory_order_relaxed) > 0)
			return refill_slow(size, h, cls, flags);
		size_t cs = arr__class_size[cls];
		if (!(cs >= BORROW_MIN && cs <= ARR__SLICE_SIZE))
			return refill_borrow(size, h, cls, flags);
		page = borrow(h, cls, SIZE_MAX);
		if (page == NULL)
			return refill_slow(size, h, cls, flags);
		return refill_pop(h, page, size, flags);
	}
	page = find_page_quick_list(h, cls, page);
	if (ARR_UNLIKELY(page == NULL))
		return refill_slow(size, h, cls, flags);
	ARR__ASSERT_EXPENSIVE(arr__page_is_valid(page) && class_list_is_valid(h, cls, false));
	return refill_pop(h, page, size, flags);
}

/* ---- light threads: the shared heap ---- */

/*
 * Every thread that allocates with a heap of its own holds, in it, a page
 * (at least one resident OS page) for each class it touches, the heap's
 * metadata, and often a segment's header: ~36 KB a thread, where glibc's
 * arenas pack the blocks of every size of several threads into the same
 * pages. Programs with many threads that each allocate a little (java
 * -version: 16 of its 18 threads make 7 to 51 calls) held more than glibc.
 * So a thread starts *light*: its TLS heap stays &arr__heap_empty (whose
 * pages have no free block: the fast paths always miss, and nothing is
 * added to them), and its first arr__opt.light slow-path mallocs take their
 * block from one process-wide shared heap, a heap like any other touched
 * only under arr__shared_lock. Then the thread takes a heap of its own
 * (arr__heap_thread_init) and, with it, the shared heap's pages
 * (arr__light_graduate). The first thread to allocate (a single-threaded program's only one)
 * gets its heap at once: light only while another thread holds a heap.
 *
 * A block of the shared heap freed by any thread is a remote free
 * (thread_free, or the shared heap's `delayed` for its full pages),
 * collected when the shared heap next allocates under its lock. A light
 * thread is no busy heap (the census counts ACTIVE heaps; the shared heap is
 * ARR__HEAP_SHARED), has nothing to abandon at its exit (no key value), and
 * the shared heap adopts no abandoned pages and keeps no span cache. While
 * nobody allocates from it, the ticks of the other heaps give its empty
 * pages back to the pool (arr__shared_release), and so does malloc_trim.
 * Lock order: arr__shared_lock, then arr__lock, then the span arenas'.
 */

static struct arr__heap *shared_make(void)
{
	pthread_mutex_lock(&arr__lock);
	struct arr__heap *h = meta_alloc(sizeof *h); /* zeroed: fresh mmap */
	if (h != NULL) {
		for (unsigned c = 0; c < ARR__NCLASSES; c++)
			set_current(h, c, &arr__page_empty);
		h->state = ARR__HEAP_SHARED;
		h->next_all = all_heaps;
		all_heaps = h;
		__atomic_store_n(&arr__shared_heap, h, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&arr__lock);
	return h;
}

__attribute__((noinline)) void *arr__light_malloc(size_t size, unsigned flags)
{
	light_calls++;
	pthread_mutex_lock(&arr__shared_lock);
	struct arr__heap *h = arr__shared_heap ? arr__shared_heap : shared_make();
	void *p = h ? heap_malloc_in(h, size, flags) : NULL;
	ARR__ASSERT(h == NULL || h->state == ARR__HEAP_SHARED);
	pthread_mutex_unlock(&arr__shared_lock);
	if (p == NULL)
		errno = ENOMEM;
	return p;
}

unsigned arr__light_calls(void) { return light_calls; }

/*
 * A light thread that has just taken heap h of its own takes the shared
 * heap's pages too (as a thread adopts an abandoned heap's): they hold its
 * blocks and those of the light threads so far, and one set of partly used
 * pages per class is what light threads cost from then on. Kept in the
 * shared heap, every class the thread used there held a page in both heaps
 * (a replay's main thread is light at first, the engine's thread holding a
 * heap: gdb.atr's paced peak rose 36 KB). First every full page is made
 * NORMAL (a remote free racing it finishes its push onto the shared heap's
 * `delayed` first, tf_set_state waits for it), then the delayed blocks are
 * freed into their pages, then every page moves; after that no remote free
 * reaches the shared heap's `delayed`.
 */
__attribute__((noinline)) void arr__light_graduate(struct arr__heap *h)
{
	struct arr__heap *s = __atomic_load_n(&arr__shared_heap, __ATOMIC_ACQUIRE);
	if (s == NULL)
		return;
	pthread_mutex_lock(&arr__shared_lock);
	for (struct arr__page *page = s->full; page; page = page->next)
		tf_set_state(page, ARR__TF_NORMAL);
	process_delayed(s);
	adopt_pages(h, s, false);
	/* and the segments mapped for it: kept, the thread's next span would
	 * come from a segment of its own (several threads: pool.c find_span),
	 * one more header and its spans apart from those it just took */
	arr__pool_reown(s, h);
	ARR__ASSERT(atomic_load_explicit(&s->delayed, memory_order_relaxed) == NULL);
	ARR__ASSERT_EXPENSIVE(arr__heap_is_valid(s) && arr__heap_is_valid(h));
	pthread_mutex_unlock(&arr__shared_lock);
}

/* Under arr__shared_lock: the remote frees collected, the empty pages to the pool. */
static void shared_release_locked(struct arr__heap *h)
{
	if (atomic_load_explicit(&h->delayed, memory_order_relaxed))
		process_delayed(h);
	give_empty_pages(h, false);
	if (h->sc_n)
		arr__span_cache_flush(h, true);
	ARR__ASSERT_EXPENSIVE(arr__heap_is_valid(h));
}

/*
 * wait: malloc_trim's (release whatever is empty). Else a tick of another
 * heap: only if the shared heap made no malloc since the previous such test
 * (while light threads allocate, its own find_page collects and reuses its
 * pages), and one tick at a time. Not pthread_mutex_trylock: a call into
 * libc's text that nothing else runs, whose fault maps 64 KiB of it
 * (gdb.atr's paced peak +40 KB); the wait for the lock is one light malloc's.
 */
static uint64_t shared_seen;
static bool shared_releasing;

void arr__shared_release(bool wait)
{
	struct arr__heap *h = __atomic_load_n(&arr__shared_heap, __ATOMIC_ACQUIRE);
	if (h == NULL)
		return;
	if (!wait) {
		uint64_t n = __atomic_load_n(&h->alloc_count, __ATOMIC_RELAXED);
		if (n != __atomic_load_n(&shared_seen, __ATOMIC_RELAXED)) {
			__atomic_store_n(&shared_seen, n, __ATOMIC_RELAXED);
			return;
		}
		if (__atomic_exchange_n(&shared_releasing, true, __ATOMIC_ACQUIRE))
			return;
	}
	pthread_mutex_lock(&arr__shared_lock);
	if (wait || h->alloc_count == __atomic_load_n(&shared_seen, __ATOMIC_RELAXED))
		shared_release_locked(h);
	pthread_mutex_unlock(&arr__shared_lock);
	if (!wait)
		__atomic_store_n(&shared_releasing, false, __ATOMIC_RELEASE);
}

bool arr__shared_is_valid(void)
{
	struct arr__heap *h = __atomic_load_n(&arr__shared_heap, __ATOMIC_ACQUIRE);
	if (h == NULL)
		return true;
	pthread_mutex_lock(&arr__shared_lock);
	ARR__CHECK(h->state == ARR__HEAP_SHARED && !h->census_busy);
	ARR__CHECK(h->span_cache == NULL && h->span_cached == 0);
	arr__heap_is_valid(h);
	pthread_mutex_unlock(&arr__shared_lock);
	return true;
}

/* ---- process setup ---- */

static void fork_prepare(void)
{
	pthread_mutex_lock(&arr__shared_lock);
	pthread_mutex_lock(&arr__lock);
	arr__span_fork_prepare();
}

static void fork_parent(void)
{
	arr__span_fork_parent();
	pthread_mutex_unlock(&arr__lock);
	pthread_mutex_unlock(&arr__shared_lock);
}

/* A thread that vanished at fork may have left one of our full pages FREEING
 * (between marking it and clearing the mark, in remote_free). Nobody will
 * clear it now, and page_unfull would wait for it forever. Put it back to
 * DELAYED: if the block reached our delayed list it is processed as usual,
 * if not it is lost (the page just never empties), and the next remote free
 * into the page still tells us it has room. Only full pages can be FREEING:
 * page_unfull waits the state out before a page leaves the full list. */
static void heap_fork_reset(struct arr__heap *h)
{
	for (struct arr__page *page = h->full; page; page = page->next) {
		uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
		if ((tf & ARR__TF_MASK) == ARR__TF_FREEING)
			atomic_store_explicit(&page->thread_free, (tf & ~ARR__TF_MASK) | ARR__TF_DELAYED,
					      memory_order_relaxed);
	}
}

/*
 * The pool's lock and the shared heap's spin a little before they sleep
 * (glibc's adaptive mutexes): their critical sections are short, and a
 * thread that sleeps in futex on one gives its CPU to the next thread,
 * which may queue too, so that a burst of short-lived threads piles up,
 * each with its pages (docs/allocator.md, "Threads that exit"). Set here,
 * not by an initializer: zero-initialised, the locks stay in .bss with the
 * small globals (allocator.fixedcost). At init, before another thread can
 * allocate, and in a fork's child.
 */
static void locks_init(void)
{
	arr__lock = (pthread_mutex_t)PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
	arr__shared_lock = (pthread_mutex_t)PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
}

/* The other threads are gone: abandon their heaps, so that their empty pages
 * return to the pool and the rest is adopted by the child's threads. */
static void fork_child(void)
{
	locks_init();
	arr__span_fork_child();
	in_fork_child = true;
	struct arr__heap *self = arr__tl_heap;
	if (self != &arr__heap_empty)
		heap_fork_reset(self);
	/* the shared heap stays (the child's light threads go on with it); a
	 * release that was waiting for its lock at the fork never ends here */
	if (arr__shared_heap != NULL)
		heap_fork_reset(arr__shared_heap);
	shared_releasing = false;
	arr__pool_fork_repair(self, arr__shared_heap);
	for (struct arr__heap *h = all_heaps; h; h = h->next_all)
		if (h != self && h->state == ARR__HEAP_ACTIVE) {
			arr__fork_tore = true;
			heap_abandon(h);
		}
	in_fork_child = false;
}

ARR_HOT void arr__init_slow(void)
{
	int s = 0;
	if (atomic_compare_exchange_strong(&arr__init_state, &s, 1)) {
		locks_init();
		/* malloc's fast path takes an empty list (NULL) of the empty
		 * page for a link outside the page's segment (api.c fast_pop) */
		ARR__CHECK(!arr__same_segment(NULL, &arr__page_empty));
		arr__classes_init();
		arr__options_from_env();
		atomic_store_explicit(&arr__init_state, 2, memory_order_release);
		/* These may call malloc; the allocator is usable from here on. */
		if (pthread_key_create(&heap_key, heap_thread_done) == 0)
			atomic_store(&key_ok, true);
		/* pthread_atfork() is glibc's libc_nonshared.a code, linked after
		 * all of ours, outside the hot text (ARR_HOT): it is this call,
		 * with this object's handle (preload.c defines it for the preload). */
		__register_atfork(fork_prepare, fork_parent, fork_child, &__dso_handle);
		return;
	}
	while (atomic_load_explicit(&arr__init_state, memory_order_acquire) != 2)
		sched_yield();
}

void arr__heaps_sum(struct arr__heap *out)
{
	memset(out, 0, sizeof *out);
	for (struct arr__heap *h = all_heaps; h; h = h->next_all) {
		for (unsigned c = 0; c < ARR__NCLASSES; c++)
			out->live_adj[c] += __atomic_load_n(&h->live_adj[c], __ATOMIC_RELAXED);
		out->waste += __atomic_load_n(&h->waste, __ATOMIC_RELAXED);
		out->calloc_zeroed += __atomic_load_n(&h->calloc_zeroed, __ATOMIC_RELAXED);
		out->calloc_skipped += __atomic_load_n(&h->calloc_skipped, __ATOMIC_RELAXED);
		out->alloc_count += __atomic_load_n(&h->alloc_count, __ATOMIC_RELAXED);
		out->free_count += arr__heap_frees(h);
		out->sc_n += __atomic_load_n(&h->sc_n, __ATOMIC_RELAXED);
		out->sc_units += __atomic_load_n(&h->sc_units, __ATOMIC_RELAXED);
		out->sc_req += __atomic_load_n(&h->sc_req, __ATOMIC_RELAXED);
	}
	for (unsigned c = 0; c < ARR__NCLASSES; c++)
		out->live_adj[c] += atomic_load_explicit(&arr__orphan_live[c], memory_order_relaxed);
}
