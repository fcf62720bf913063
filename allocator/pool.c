/*
 * allocator/pool.c - the process-wide pool of segments, spans and huge blocks.
 *
 * Everything here runs under arr__lock; the huge-block functions take it
 * only for the cache of freed huge mappings and call the kernel outside it
 * (but for trims on reuse and drops on growth). Spans are found first-fit
 * over the segment list in creation order, so long-lived memory packs into old
 * segments and dirty (resident) slices are reused before fresh ones.
 *
 * Purging: a freed span's slices are stamped with the op clock. The clock is
 * the sum of every heap's malloc+free count, folded in whenever a heap takes
 * the lock, so under a single-threaded replay purges happen at the same
 * operation every run. Slices older than purge_delay ops are MADV_DONTNEED'd
 * and marked clean (known zero), which lets calloc skip the memset later.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/single_threaded.h>
#include "internal.h"

#define USABLE_MASK (~(uint64_t)1) /* slice 0 holds the header */

static struct arr__segment *segments;
static uint64_t op_clock;
/* free, not yet purged (read without the lock by heap.c page_extend, as a hint) */
uint64_t arr__dirty_slices;
/* fresh OS pages class pages carved while free slices waited, paid less than
 * a slice (arr__pool_carved_fresh) */
static uint64_t fresh_debt;
/* in empty class pages that free heaps keep for their next thread (heap.c
 * "Kept pages"): used to the pool, idle to the program; the oldest's stamp */
static uint64_t kept_slices, kept_oldest = UINT64_MAX;
static void kept_release(uint64_t older_than);
/* Under the lock: the kept pages whose purge delay has passed (all: every
 * one) to the free slices, where purge_collect finds them expired. */
__attribute__((noinline)) static void kept_expire(bool all)
{
	uint64_t due;
	if (all)
		kept_release(UINT64_MAX);
	else if (arr__purge_limit(op_clock, arr__purge_mult(), &due))
		kept_release(due);
}
static uint64_t used_slices; /* in spans of pages (taken, not given back) */
static uint64_t oldest_dirty = UINT64_MAX;
static uint64_t purged_pages;            /* OS pages returned */
static _Atomic uint64_t purged_in_pages; /* OS pages returned from spans in use (no lock) */
static uint64_t seg_count;

_Atomic int64_t arr__huge_live, arr__huge_req_live, arr__huge_count;
ARR__BIG_TABLE(uint8_t arr__segmap[ARR__SEGMAP_SEGS])

ARR_HOT void arr__segmap_set(const void *seg, bool on)
{
	uintptr_t i = (uintptr_t)seg >> ARR__SEG_SHIFT;
	if (i >= ARR__SEGMAP_SEGS)
		return; /* above 47 bits: never handed out as ours, so refused */
	__atomic_store_n(&arr__segmap[i], (uint8_t)on, __ATOMIC_RELAXED);
}
static _Atomic int64_t huge_mapped; /* huge mappings, the cached ones included */

/*
 * Freed huge mappings kept for reuse, under arr__lock. Mapping every huge
 * block afresh costs an mmap, a munmap (a TLB shootdown) and a page fault
 * per OS page each time: a loop of malloc(2 MiB), fill, free ran 450 us an
 * iteration against glibc's 3.6 (glibc raises its mmap threshold after the
 * first free and serves the next from its heap; mimalloc keeps freed
 * segments). A freed mapping of up to HUGE_CACHE_BLOCK waits here, resident,
 * until the purge delay has passed (the op clock, as for slices), until
 * the footprint has to grow (before a new mapping, purge_for_growth drops
 * it first; when a span takes clean slices, arr__pool_take: so it does not
 * add to a peak), or until newer ones push it out; a huge request takes
 * the best fit, trimmed to size. glibc never keeps more than its mmap
 * threshold's maximum (32 MiB) either.
 */
#define HUGE_CACHE_N 8
#define HUGE_CACHE_BLOCK ((size_t)32 << 20) /* larger ones are unmapped at once */
#define HUGE_CACHE_BYTES ((size_t)64 << 20)
struct huge_cached {
	struct arr__segment *seg;
	size_t map;
	uint64_t stamp; /* op clock when freed */
};
static struct huge_cached huge_cache[HUGE_CACHE_N]; /* oldest first */
static unsigned huge_cache_n;
static size_t huge_cache_bytes;
/*
 * The mapping length of the last huge malloc (written under arr__lock). A
 * huge block freed while a longer one is the newest has been outgrown (a
 * table resized, a buffer grown by copy: python3's dict tables, 1.9, 3.8,
 * 7.7 MB): the next request is longer still, so its pages would wait in the
 * cache for nothing, resident while the program grows by means the
 * allocator does not see (pymalloc's own mappings: drop-in python3 kept a
 * 3.8 MB table at its peak, 244.4 MB against glibc's 240.4). It is unmapped
 * at once, single-threaded only: a random mix of sizes (the 4-thread stress
 * program) unmapped half its frees so, 340 k -> 590 k page faults.
 */
static size_t huge_newest;
/*
 * Whether that rule guesses right, learnt from the program: the rule unmaps
 * a mapping (huge_dropped: its length) on the bet that no later request
 * fits it; the next huge request the cache cannot serve settles the bet:
 * lost if the dropped mapping would have fitted it (huge_regret += 2),
 * won otherwise (-= 1). The rule holds while huge_regret < HUGE_REGRET_OFF.
 * A program that grows tables or buffers by copy makes every next request
 * longer and never loses; one that churns huge blocks of random sizes
 * loses about every other bet, and its freed blocks are kept: 1-8 MB
 * buffers malloc'd and freed among small blocks took 305 k page faults
 * against glibc's 50 k, 2.8x its time (docs/notes/2026-12-07-huge-churn.md).
 */
#define HUGE_REGRET_OFF 4
#define HUGE_REGRET_MAX 8
static unsigned huge_regret;
static size_t huge_dropped;
/*
 * Live huge blocks that took a kept mapping more than 1/8 longer than they
 * need, under arr__lock, oldest first. The rest of the mapping (the
 * segment's huge_slack pages past the block's huge_map, out of its usable
 * size) is not trimmed at once but when the footprint has to grow
 * (purge_for_growth, after the kept mappings), when the purge delay has
 * passed, when the list is full (the oldest), on arr_alloc_purge(), or at
 * the block's free or realloc (then it is the block's again): trimmed at
 * once, a program that mallocs and frees huge blocks of random sizes
 * shrank its kept mappings at every reuse and faulted their pages in again
 * at the next longer request (1-16 MB callocs: 232 k page faults against
 * glibc's 10 k, 8.6x its time; docs/notes/2026-12-07-huge-churn.md).
 */
struct huge_slacked {
	struct arr__segment *seg;
	size_t own;     /* the block's huge_map (here: its descriptor is written after the lock) */
	uint64_t stamp; /* op clock when taken */
};
static struct huge_slacked huge_slack[HUGE_CACHE_N];
static unsigned huge_slack_n;
/* Slices taken out of free_mask by purge_collect and not yet back (another
 * thread is purging them outside the lock): their descriptors are stale. */
static uint64_t slices_in_flight;

/* The reads of growth outside the allocator (see ext_growth). */
#define EXT_OPS 65536
#define EXT_BYTES ((size_t)1 << 20)
#define EXT_MIN ((size_t)1 << 20)
#define EXT_WATCH 16
static uint64_t ext_ops, ext_max, rss_max, ext_rss;
static size_t ext_bytes;
static unsigned ext_watch;
static bool ext_set, ext_off;
/*
 * A fork's torn pages. fork() copies the parent's memory page by page while
 * the parent's other threads run on: a page it has copied keeps what it
 * held then, one it reaches later shows what the threads wrote meanwhile.
 * The locks the prepare handler takes keep the pool, the span arenas and
 * the shared heap whole, but a thread's own heap is its own, without a
 * lock, and the child gets a vanished thread's page descriptor from one
 * moment and its blocks from a later one: `free` naming a block that thread
 * has since handed out, its link cleared or overwritten by the program (the
 * child's next pop aborts: "corrupted free list"). Before those heaps are abandoned, the child walks every class
 * page of theirs: a list is cut before the first block that is not a
 * carved block of the page, sits in a purged hole, is already on a list, or
 * whose link the walk cannot follow (that block too: it may be in use), and
 * `used` becomes what the lists leave, so the blocks cut off count as in
 * use and the page stays out of the pool rather than hand them out twice.
 * A page whose snapshot is whole loses nothing. Bounded: one pass over the
 * blocks on the lists of the vanished threads' pages.
 */
static uint32_t fork_repair_list(struct arr__page *page, struct arr__block **head, uint64_t *seen)
{
	size_t bs = page->block_size, carved = (size_t)page->capacity * bs;
	uint32_t n = 0;
	struct arr__block *prev = NULL;
	for (struct arr__block *b = *head; b != NULL;) {
		size_t off = (size_t)((uint8_t *)b - page->start), i = off / bs;
		bool ok = (uint8_t *)b >= page->start && off < carved && off % bs == 0 &&
			  !(seen[i / 64] >> (i % 64) & 1) &&
			  (off / ARR__OS_PAGE >= 16 || !(page->holes >> (off / ARR__OS_PAGE) & 1));
		struct arr__block *next = ok ? arr__block_next(b) : NULL;
		if (ok && next != NULL) {
			size_t noff = (size_t)((uint8_t *)next - page->start);
			ok = (uint8_t *)next >= page->start && noff < carved && noff % bs == 0;
		}
		if (!ok) { /* cut here, b out: it may be in use */
			if (prev)
				arr__block_set_next(prev, NULL);
			else
				*head = NULL;
			break;
		}
		seen[i / 64] |= (uint64_t)1 << (i % 64);
		n++;
		prev = b;
		b = next;
	}
	return n;
}

static void fork_repair_page(struct arr__page *page)
{
	uint64_t seen[ARR__SLICE_SIZE / 8 / 64];
	memset(seen, 0, ((page->capacity + 63u) / 64u) * sizeof seen[0]);
	uint32_t nfree = fork_repair_list(page, &page->free, seen);
	uint32_t nlocal = fork_repair_list(page, &page->local_free, seen);
	uintptr_t tf = atomic_load_explicit(&page->thread_free, memory_order_relaxed);
	struct arr__block *tl = (struct arr__block *)(tf & ~ARR__TF_MASK);
	uint32_t nthread = fork_repair_list(page, &tl, seen);
	atomic_store_explicit(&page->thread_free, (uintptr_t)tl | (tf & ARR__TF_MASK), memory_order_relaxed);
	uint32_t holed = arr__page_holed(page);
	/* what the lists and holes leave is in use (thread_free's blocks too,
	 * until they are collected) */
	uint32_t used = page->capacity - holed - nfree - nlocal;
	if (page->used != used || nthread > used) {
		page->used = used;
		page->free_is_zero = 0;
	}
}

void arr__pool_fork_repair(const struct arr__heap *a, const struct arr__heap *b)
{
	for (struct arr__segment *seg = segments; seg; seg = seg->next) {
		uint64_t used = ~seg->free_mask & USABLE_MASK;
		while (used) {
			unsigned i = (unsigned)__builtin_ctzll(used);
			struct arr__page *page = &seg->pages[i];
			unsigned n = page->slices >= 1 && i + page->slices <= ARR__SLICES ? page->slices : 1;
			used &= n == 64 ? 0 : ~((((uint64_t)1 << n) - 1) << i);
			if (page->head_off != 0 || page->heap == NULL || page->heap == a || page->heap == b ||
			    (page->flags & (ARR__PF_HUGE | ARR__PF_SPAN)) || page->cls == 0 ||
			    page->cls >= ARR__NCLASSES || page->block_size != arr__class_size[page->cls] ||
			    page->capacity > page->reserved)
				continue;
			fork_repair_page(page);
		}
	}
}

/* ---- invariants (internal.h, beside struct arr__segment) ---- */

bool arr__pool_is_valid_locked(void)
{
	uint64_t dirty = 0;
	arr__census_is_valid_locked();
	for (struct arr__segment *seg = segments; seg; seg = seg->next) {
		ARR__CHECK(seg->kind == 0 && arr__segment_known(seg));
		ARR__CHECK((seg->free_mask & ~USABLE_MASK) == 0);
		ARR__CHECK((seg->clean_mask & ~seg->free_mask) == 0);
		uint64_t d = seg->free_mask & ~seg->clean_mask;
		dirty += (uint64_t)arr__popcount64(d);
		for (; d; d &= d - 1)
			ARR__CHECK(oldest_dirty <= seg->stamp[__builtin_ctzll(d)]);
		if (slices_in_flight)
			continue;
		/* every used slice is in exactly one span */
		uint64_t used = ~seg->free_mask & USABLE_MASK;
		while (used) {
			unsigned i = (unsigned)__builtin_ctzll(used), n = seg->pages[i].slices;
			ARR__CHECK(seg->pages[i].head_off == 0);
			ARR__CHECK(n >= 1 && i + n <= ARR__SLICES);
			uint64_t bits = (n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1)) << i;
			ARR__CHECK((used & bits) == bits);
			for (unsigned k = 0; k < n; k++)
				ARR__CHECK(seg->pages[i + k].head_off == ARR__HEAD_OFF(k));
			used &= ~bits;
		}
	}
	ARR__CHECK(dirty == arr__dirty_slices);
	ARR__CHECK(fresh_debt < ARR__SLICE_SIZE / ARR__OS_PAGE); /* whole slices paid at once */
	ARR__CHECK(arr__heap_kept_walk_locked() == kept_slices);
	ARR__CHECK((kept_slices == 0) == (kept_oldest == UINT64_MAX));
	ARR__CHECK(huge_cache_n <= HUGE_CACHE_N);
	size_t bytes = 0;
	for (unsigned k = 0; k < huge_cache_n; k++) {
		ARR__CHECK(huge_cache[k].map <= HUGE_CACHE_BLOCK && huge_cache[k].map % ARR__OS_PAGE == 0);
		ARR__CHECK(k == 0 || huge_cache[k - 1].stamp <= huge_cache[k].stamp);
		ARR__CHECK(huge_cache[k].seg->kind == 1 && huge_cache[k].seg->pages[0].flags == 0);
		bytes += huge_cache[k].map;
	}
	ARR__CHECK(bytes == huge_cache_bytes && bytes <= HUGE_CACHE_BYTES);
	/* kept mappings have no slack; a live block with slack is listed once */
	for (unsigned k = 0; k < huge_cache_n; k++)
		ARR__CHECK(huge_cache[k].seg->huge_slack == 0);
	ARR__CHECK(huge_slack_n <= HUGE_CACHE_N);
	for (unsigned k = 0; k < huge_slack_n; k++) {
		const struct arr__segment *seg = huge_slack[k].seg;
		ARR__CHECK(seg->kind == 1 && seg->huge_slack != 0 && huge_slack[k].own % ARR__OS_PAGE == 0);
		ARR__CHECK(huge_slack[k].own + (size_t)seg->huge_slack * ARR__OS_PAGE <= HUGE_CACHE_BLOCK);
		ARR__CHECK(k == 0 || (huge_slack[k - 1].stamp <= huge_slack[k].stamp && huge_slack[k - 1].seg != seg));
	}
	/* the reads of outside growth: a watch of at most EXT_WATCH reads, none
	 * before the first; calloc's fresh-page threshold whole pages, from
	 * glibc's 128 KiB to its 32 MiB */
	ARR__CHECK(ext_watch <= EXT_WATCH && (ext_set || (ext_watch == 0 && ext_max == 0)));
	size_t fresh = __atomic_load_n(&arr__calloc_fresh_min, __ATOMIC_RELAXED);
	ARR__CHECK(fresh >= ARR__GLIBC_MMAP_MIN && fresh <= ARR__CALLOC_FRESH_MAX && fresh % ARR__OS_PAGE == 0);
	return true;
}

bool arr__pool_is_valid(void)
{
	pthread_mutex_lock(&arr__lock);
	arr__pool_is_valid_locked();
	pthread_mutex_unlock(&arr__lock);
	return true;
}

/* Under the lock: take entry k out of the cache (order kept). */
static struct huge_cached huge_cache_remove(unsigned k)
{
	struct huge_cached e = huge_cache[k];
	memmove(&huge_cache[k], &huge_cache[k + 1], (huge_cache_n - k - 1) * sizeof e);
	huge_cache_n--;
	huge_cache_bytes -= e.map;
	return e;
}

/* Without the lock: unmap entries taken out of the cache. */
static void huge_cache_unmap(const struct huge_cached *e, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		arr__segmap_set(e[k].seg, false);
		arr__os_unmap(e[k].seg, e[k].map);
		atomic_fetch_sub(&huge_mapped, (int64_t)e[k].map);
	}
}

/* Under the lock: entry k out of the slack list. */
static struct huge_slacked huge_slack_remove(unsigned k)
{
	struct huge_slacked e = huge_slack[k];
	memmove(&huge_slack[k], &huge_slack[k + 1], (huge_slack_n - k - 1) * sizeof e);
	huge_slack_n--;
	return e;
}

/* Under the lock: entry k out of the slack list, its tail unmapped (under
 * the lock: a free of the block may cache the mapping, and a take grow it
 * in place over the tail's range, as soon as the lock is free). Returns the
 * bytes unmapped. */
static __attribute__((noinline)) size_t huge_slack_trim(unsigned k)
{
	struct huge_slacked e = huge_slack_remove(k);
	struct arr__segment *seg = e.seg;
	size_t own = e.own, tail = (size_t)seg->huge_slack * ARR__OS_PAGE;
	/* unmapped before the mark is cleared: a realloc of the block that reads
	 * no slack (without the lock) may grow in place over the range */
	arr__os_unmap((uint8_t *)seg + own, tail);
	__atomic_store_n(&seg->huge_slack, 0, __ATOMIC_RELEASE);
	atomic_fetch_sub(&huge_mapped, (int64_t)tail);
	return tail;
}

/* A live block's slack given back to it (its free or realloc, which saw
 * its mark): takes the lock; returns the bytes (0 if trimmed meanwhile).
 * This and the rest of the slack's code are out of the hot text (a program
 * with no huge block reused never runs them: allocator.fixedcost_hottext). */
static __attribute__((noinline)) size_t huge_slack_claim(struct arr__segment *seg)
{
	pthread_mutex_lock(&arr__lock);
	size_t tail = (size_t)seg->huge_slack * ARR__OS_PAGE;
	if (tail == 0) {
		pthread_mutex_unlock(&arr__lock);
		return 0;
	}
	unsigned k = 0;
	while (k < huge_slack_n && huge_slack[k].seg != seg)
		k++;
	ARR__ASSERT(k < huge_slack_n);
	huge_slack_remove(k);
	__atomic_store_n(&seg->huge_slack, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&arr__lock);
	return tail;
}

/* Under the lock: trim slack, oldest first, until `bytes` are gone, and
 * (expired) every one taken before the purge delay; returns what is left
 * of `bytes`. */
static __attribute__((noinline)) size_t huge_slack_shrink(size_t bytes, bool expired)
{
	uint64_t due_at = 0;
	bool due = expired && arr__purge_limit(op_clock, arr__purge_mult(), &due_at);
	while (huge_slack_n > 0 && (bytes > 0 || (due && huge_slack[0].stamp <= due_at))) {
		size_t t = huge_slack_trim(0);
		bytes = bytes > t ? bytes - t : 0;
	}
	return bytes;
}

static void clock_sync(struct arr__heap *h)
{
	if (h != NULL && h != &arr__heap_empty) {
		uint64_t ops = arr__heap_ops(h);
		/* read without the lock by the span heap */
		__atomic_store_n(&op_clock, op_clock + (ops - h->ops_synced), __ATOMIC_RELAXED);
		h->ops_synced = ops;
		arr__heap_census(h, op_clock);
	}
}

/* Lowest start of `n` consecutive set bits in m, or -1. */
static int find_run(uint64_t m, unsigned n)
{
	uint64_t r = m;
	for (unsigned i = 1; i < n && r; i++)
		r &= m >> i;
	return r ? __builtin_ctzll(r) : -1;
}

static struct arr__segment *segment_new(struct arr__heap *owner)
{
	struct arr__segment *seg = arr__os_map_aligned(ARR__SEG_SIZE, ARR__SEG_SIZE);
	if (seg == NULL)
		return NULL;
	arr__segmap_set(seg, true);
	seg->kind = 0;
	seg->owner = owner;
	seg->free_mask = USABLE_MASK;
	seg->clean_mask = USABLE_MASK;
	/* append: first-fit then prefers older segments */
	struct arr__segment **pp = &segments;
	while (*pp)
		pp = &(*pp)->next;
	seg->next = NULL;
	*pp = seg;
	seg_count++;
	return seg;
}

/*
 * Purging is done outside the lock: madvise is a syscall and, with several
 * threads, a TLB-shootdown IPI to the other CPUs, and every thread that
 * wanted the lock meanwhile slept in futex (4-thread stress replay: 1 600
 * futex calls with the purges under the lock). The expired runs are taken
 * out of the free mask first, so nobody takes them while they are purged,
 * and put back free and clean afterwards. If a fork catches a run in
 * flight, the child never gets those slices back: address space, not
 * memory, and only that much.
 */
#define PURGE_BATCH 16
struct purge_run {
	struct arr__segment *seg;
	unsigned i, n;
};

/*
 * The idle budget: free dirty slices kept beyond it are purged at once, not
 * when their delay has passed. The delay alone lets a program keep, for as
 * long as it runs, every slice a fluctuation of its demand freed (with
 * several threads it is n x 4 x purge_delay summed operations: longer than a
 * whole 1.6 M-operation 4-thread replay, so nothing expired there). Bounding
 * idle memory by a fraction of what is in use is jemalloc's old
 * lg_dirty_mult (active:dirty 8:1, option idle_ratio) rule; the floor (IDLE_FLOOR_SLICES per
 * thread holding a heap) keeps small programs and the malloc/free churn of
 * one span size purge-free.
 * Off by default (idle_ratio 0): at 8 it took 1-6 % off the peaks of the
 * synthetic working sets, but a working set of 1 KiB-1 MiB blocks replaced
 * at random then purged slices it took back at once: 258 k page faults
 * against 6 k, 16 times the time. A budget that counts only slices idle for
 * a while (a fraction of the delay) should keep the gain without the churn;
 * not measured yet.
 */
#define IDLE_FLOOR_SLICES ARR__IDLE_FLOOR_SLICES
static uint64_t idle_budget(void)
{
	uint64_t floor = (uint64_t)IDLE_FLOOR_SLICES * arr__purge_scale(), b = used_slices / arr__opt.idle_ratio;
	return b > floor ? b : floor;
}

static uint64_t idle_over_budget(void)
{
	if (arr__opt.purge_delay < 0 || arr__opt.idle_ratio == 0)
		return 0;
	uint64_t b = idle_budget();
	return arr__dirty_slices > b ? arr__dirty_slices - b : 0;
}

/* Under the lock: up to PURGE_BATCH runs, taken out of the free mask: the
 * expired ones (all: every dirty one), or, over the idle budget, enough of
 * the oldest to get under it, or `force` slices of the oldest (fresh
 * carves, arr__pool_carved_fresh). */
ARR_HOT static unsigned purge_collect_over(bool all, uint64_t force, struct purge_run *runs, bool *budget_only)
{
	*budget_only = false;
	if (kept_slices != 0)
		kept_expire(all);
	if (arr__dirty_slices == 0)
		return 0;
	/* The op clock sums every thread's operations, so with n threads at
	 * work it runs n times faster than any one of them: the delay is
	 * counted per thread. Multi-threaded, a purge is also dearer (a TLB
	 * shootdown IPI to every CPU running the process); in the 4-thread
	 * stress replay a delay of 100 000 summed ops (~2 ms) purged 37 k
	 * OS pages that were faulted in again, 48 k faults against glibc's 29 k. */
	uint64_t due_at;
	bool due = arr__purge_limit(op_clock, arr__purge_mult(), &due_at);
	uint64_t over = force != 0 ? force : idle_over_budget();
	bool expired = due && (oldest_dirty == UINT64_MAX || oldest_dirty <= due_at);
	if (!all && !expired && over == 0)
		return 0;
	uint64_t limit = all ? UINT64_MAX : due_at;
	if (!all && !expired) {
		/* Over the idle budget: the older half of what waits first, and
		 * down to 3/4 of the budget, so the next give does not purge
		 * again (a purge is a TLB shootdown with several threads). A
		 * forced number: that many. */
		if (force == 0)
			over += idle_budget() / 4;
		if (over > arr__dirty_slices)
			over = arr__dirty_slices;
		limit = oldest_dirty + (op_clock - oldest_dirty) / 2;
		*budget_only = true;
	} else {
		over = UINT64_MAX;
	}
	uint64_t want = over;
again:;
	uint64_t oldest = UINT64_MAX;
	unsigned nr = 0;
	for (struct arr__segment *seg = segments; seg; seg = seg->next) {
		uint64_t dirty = seg->free_mask & ~seg->clean_mask;
		while (dirty) {
			unsigned i = (unsigned)__builtin_ctzll(dirty);
			unsigned j = i;
			while (j < ARR__SLICES && (dirty >> j & 1) && seg->stamp[j] <= limit)
				j++;
			if (j == i) {
				if (seg->stamp[i] < oldest)
					oldest = seg->stamp[i];
				dirty &= ~((uint64_t)1 << i);
				continue;
			}
			if (nr == PURGE_BATCH) {
				oldest = 0; /* not all seen: look again next time */
				goto done;
			}
			if (j - i > want)
				j = i + (unsigned)want;
			uint64_t bits = (j - i == 64 ? ~(uint64_t)0 : (((uint64_t)1 << (j - i)) - 1)) << i;
			seg->free_mask &= ~bits;
			dirty &= ~bits;
			arr__dirty_slices -= j - i;
			slices_in_flight += j - i;
			purged_pages += (uint64_t)(j - i) * (ARR__SLICE_SIZE / ARR__OS_PAGE);
			runs[nr++] = (struct purge_run){seg, i, j - i};
			want -= j - i;
			if (want == 0) {
				oldest = 0; /* not all seen */
				goto done;
			}
		}
	}
	if (want > 0 && over != UINT64_MAX && limit != UINT64_MAX && arr__dirty_slices > 0) {
		/* the older half was not enough: anything idle */
		limit = UINT64_MAX;
		oldest = UINT64_MAX;
		goto again;
	}
done:
	oldest_dirty = oldest;
	return nr;
}

ARR_HOT static unsigned purge_collect(bool all, struct purge_run *runs, bool *budget_only)
{
	return purge_collect_over(all, 0, runs, budget_only);
}

/* Without the lock: purge the runs, then put them back free and clean, and
 * (unless `keep_segments`) give back segments wholly free and clean (one is
 * kept). Purges for the idle budget keep them: they give back memory, and the
 * address space goes when a delay has passed, so a program that frees a
 * phase's blocks and allocates the next phase's gets the same addresses back
 * (no munmap and mmap, no new page tables). */
ARR_HOT static void purge_finish(struct purge_run *runs, unsigned nr, bool keep_segments)
{
	struct iovec iov[PURGE_BATCH] = {{0}};
	for (unsigned r = 0; r < nr; r++)
		iov[r] = (struct iovec){(uint8_t *)runs[r].seg + (size_t)runs[r].i * ARR__SLICE_SIZE,
					(size_t)runs[r].n * ARR__SLICE_SIZE};
	arr__os_purge_many(iov, nr);
	pthread_mutex_lock(&arr__lock);
	for (unsigned r = 0; r < nr; r++) {
		unsigned n = runs[r].n;
		uint64_t bits = (n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1)) << runs[r].i;
		runs[r].seg->free_mask |= bits;
		runs[r].seg->clean_mask |= bits;
		slices_in_flight -= n;
	}
	for (struct arr__segment **pp = &segments, *seg; !keep_segments && (seg = *pp) != NULL;) {
		if (seg->free_mask == USABLE_MASK && seg->clean_mask == USABLE_MASK && seg_count > 1) {
			*pp = seg->next;
			seg_count--;
			arr__segmap_set(seg, false);
			arr__os_unmap(seg, ARR__SEG_SIZE);
			continue;
		}
		pp = &seg->next;
	}
	pthread_mutex_unlock(&arr__lock);
}

/* Under the lock: take the cached huge mappings that expired (all: every
 * one) out of the cache into out[]; returns how many. */
ARR_HOT static unsigned huge_cache_expired(bool all, struct huge_cached *out)
{
	unsigned n = 0;
	if (huge_cache_n == 0)
		return 0;
	uint64_t due_at;
	bool due = arr__purge_limit(op_clock, arr__purge_mult(), &due_at);
	while (huge_cache_n > 0 && (all || (due && huge_cache[0].stamp <= due_at)))
		out[n++] = huge_cache_remove(0);
	return n;
}

/* Called with the lock held; releases it. */
ARR_HOT static void unlock_and_purge(void)
{
	struct purge_run runs[PURGE_BATCH];
	struct huge_cached old[HUGE_CACHE_N];
	bool budget_only;
	unsigned nr = purge_collect(false, runs, &budget_only);
	unsigned nh = huge_cache_expired(false, old);
	if (huge_slack_n != 0)
		huge_slack_shrink(0, true);
	pthread_mutex_unlock(&arr__lock);
	if (nh)
		huge_cache_unmap(old, nh);
	if (nr)
		purge_finish(runs, nr, budget_only);
}

/*
 * Fresh pages carved while free slices wait. A class page carves its span
 * an OS page at a time, and a carve past the part that came resident with
 * the span (zero_from) faults fresh memory in. The footprint's growth check
 * (purge_for_growth) sees slices taken, not carves, and a slice is taken
 * dirty first, so such a carve meets free dirty slices no take wanted: the
 * class pages of a program whose threads exit with blocks live, whose next
 * owners carve on while the pages the exits gave back wait for their delay
 * (`patterns handoff`, mimalloc-bench's larson). So the fresh pages are a
 * debt (a thread pays ARR__CARVE_DEBT_PAGES at a time, heap.c
 * page_extend), and each slice of it gives back a slice of the oldest free
 * dirty ones (the older half of the waiting first, as the idle budget's
 * purge), as far as more than the floor waits: IDLE_FLOOR_SLICES per busy
 * thread, or a 64th of the slices in use. The footprint then grows by what
 * the class pages hold, as for a slice taken at the high-water mark. Out
 * of the hot text: only where free slices wait beside a carve.
 */
__attribute__((noinline)) void arr__pool_carved_fresh(unsigned pages)
{
	pthread_mutex_lock(&arr__lock);
	uint64_t floor = (uint64_t)IDLE_FLOOR_SLICES * arr__purge_scale(), share = used_slices / 64;
	if (share > floor)
		floor = share;
	if (arr__opt.purge_delay < 0 || arr__dirty_slices <= floor) {
		fresh_debt = 0;
		pthread_mutex_unlock(&arr__lock);
		return;
	}
	fresh_debt += pages;
	uint64_t slices = fresh_debt / (ARR__SLICE_SIZE / ARR__OS_PAGE), nr = 0;
	struct purge_run runs[PURGE_BATCH];
	bool budget_only = false;
	if (slices != 0) {
		fresh_debt -= slices * (ARR__SLICE_SIZE / ARR__OS_PAGE);
		if (slices > arr__dirty_slices - floor)
			slices = arr__dirty_slices - floor;
		nr = purge_collect_over(false, slices, runs, &budget_only);
	}
	pthread_mutex_unlock(&arr__lock);
	if (nr != 0)
		purge_finish(runs, (unsigned)nr, budget_only);
}

/* Under the lock: unmap kept huge mappings, oldest first, until `bytes`
 * are gone; returns what is left of `bytes`. */
ARR_HOT static size_t huge_cache_shrink(size_t bytes)
{
	while (huge_cache_n > 0 && bytes > 0 && arr__opt.purge_delay >= 0) {
		struct huge_cached e = huge_cache_remove(0);
		huge_cache_unmap(&e, 1);
		bytes = bytes > e.map ? bytes - e.map : 0;
	}
	return bytes;
}

/*
 * The growth clock (arr__purge_limit): the op clock when an allocation last
 * took fresh memory with the allocator's resident memory at its high-water
 * mark, i.e. when the program's peak grew. Taking back memory purged
 * earlier, below the mark, is not growth: else every young purge a program
 * that reuses steadily makes would, when its memory is taken back, make
 * more of its free memory due (t1 private large steady: 8 590 page faults,
 * 4 276 without). Resident: the pool's used and free dirty slices (an upper
 * bound: a class page's span is carved as it fills), the huge mappings and
 * the span heap's pages, plus the `bytes` about to be taken (after what
 * purge_for_growth gave back). Under the lock; read without it.
 */
static uint64_t grow_clock, grow_hwm;
static uint64_t resident_pages(size_t bytes)
{
	return (used_slices + arr__dirty_slices) * (ARR__SLICE_SIZE / ARR__OS_PAGE) +
	       (uint64_t)atomic_load_explicit(&huge_mapped, memory_order_relaxed) / ARR__OS_PAGE +
	       arr__span_resident_pages() + bytes / ARR__OS_PAGE;
}
static void note_growth(size_t bytes)
{
	uint64_t r = resident_pages(bytes);
	if (r < grow_hwm)
		return;
	ARR__ASSERT(grow_clock <= op_clock);
	grow_hwm = r;
	__atomic_store_n(&grow_clock, op_clock, __ATOMIC_RELAXED);
}
ARR_HOT uint64_t arr__pool_grow_clock(void) { return __atomic_load_n(&grow_clock, __ATOMIC_RELAXED); }

/* Would `pages` fresh OS pages taken now raise the footprint's high-water
 * mark (the program's peak)? Read without the lock: a hint. */
ARR_HOT bool arr__pool_would_grow(uint64_t pages)
{
	return resident_pages(pages * ARR__OS_PAGE) >= __atomic_load_n(&grow_hwm, __ATOMIC_RELAXED);
}

/*
 * About to map fresh memory although `bytes` of free dirty slices may be
 * resident: they did not fit, so give that much back first. The footprint
 * then grows by what the program really holds, as a coalescing heap's does
 * (glibc would have carved the request out of that freed memory). Only when
 * the growth reaches the footprint's high-water mark: below it the growth
 * makes no peak, and what a purge there gives back is what the program
 * takes again. (A span heap re-carving the pages its decay purged would
 * drop the kept huge mappings at its carves, and a program that churns huge
 * blocks among small ones would map most of them afresh:
 * docs/notes/2026-12-07-growth-gate.md.) What the
 * kept huge mappings and the dirty slices do not cover comes out of the span
 * heap's free resident spans: never for the span heap's own growth
 * (GROW_SPAN: a free span that did not fit is a hole the next blocks fill);
 * for a pool segment or a huge block's mremap growth (GROW_POOL) only while
 * one thread is busy — with several a purge is a TLB shootdown, and what it
 * takes is soon faulted in again (4-thread stress program: 340 k -> 550 k
 * faults, the span purge on segments and huge mappings alike); for a fresh
 * huge mapping (GROW_HUGE) whatever the threads (that program: 343 k ->
 * 516 k faults, max RSS 101 -> 92 MB, time within noise): the
 * span heap's blocks end below it, so its free spans cannot serve that
 * size again until the program shrinks, where glibc would have unmapped
 * them at their free (`allocrr analyze` drop-in, two threads: 800 KB
 * buffers freed just before 1.2 MB ones are mapped, +4 MB over glibc).
 */
enum growth { GROW_SPAN, GROW_POOL, GROW_HUGE, GROW_EXTERNAL };

/*
 * Growth the allocator does not see: memory a program maps itself (python's
 * object arenas), file pages it touches through a mapping, the pages of its
 * blocks it writes long after their malloc. When that raises the process's
 * peak while freed memory waits here for the purge delay (counted in the
 * allocator's operations, which such a phase may hardly make), the peak is
 * the sum of both, where glibc, which gave its freed memory back at the
 * frees (its heap's top trimmed, its mapped chunks unmapped), peaks at the
 * larger. So at the allocator's slow calls under the lock (growth, pages
 * taken, ticks), at most once per EXT_OPS operations or EXT_BYTES of its
 * own growth (a sixteenth of that for EXT_WATCH reads after one that found
 * such growth), the process's resident size is read (/proc/self/statm: the
 * open, read and close the seccomp test uses already, no other system
 * call): its part beyond the allocator's footprint estimate is `ext`. When
 * ext has grown EXT_MIN past its highest value (arr__purge_mult() times
 * that with threads busy, whose pages the estimate counts less exactly; a
 * quarter of it in a watch) while the process is at its
 * peak (its resident size above the highest read, less what these purges
 * gave back), as much, and the allocator's own growth since the last read,
 * is purged from the idle memory, as the allocator's own growth at its mark
 * is. Below the peak the growth fills room. Under the lock.
 */
ARR_HOT static size_t ext_growth(size_t bytes)
{
	ext_bytes += bytes;
	unsigned shift = ext_watch != 0 ? 4 : 0;
	if (ext_off || (op_clock - ext_ops < (uint64_t)EXT_OPS >> shift && ext_bytes < EXT_BYTES >> shift && ext_set))
		return 0;
	size_t own = ext_bytes;
	ext_ops = op_clock;
	ext_bytes = 0;
	long r = arr__os_rss_pages();
	if (r < 0) {
		ext_off = true; /* no /proc: never again */
		return 0;
	}
	uint64_t ours = resident_pages(0), ext = (uint64_t)r > ours ? (uint64_t)r - ours : 0;
	bool peak = (uint64_t)r > rss_max;
	/* less: the program's stack, a table it touched, or the footprint
	 * estimate's error (pages counted resident at a carve, before the
	 * program writes them) */
	if (!ext_set || ext < ext_max + (uint64_t)arr__purge_mult() * (EXT_MIN >> (shift / 2)) / ARR__OS_PAGE) {
		if (!ext_set)
			ext_max = ext;
		ext_set = true;
		if (peak)
			rss_max = (uint64_t)r;
		if (ext_watch != 0)
			ext_watch--;
		return 0;
	}
	uint64_t d = ext - ext_max;
	ext_max = ext;
	ext_watch = EXT_WATCH;
	if (!peak)
		return 0;      /* room below the process's peak */
	ext_rss = (uint64_t)r; /* purge_external() sets rss_max */
	return (size_t)d * ARR__OS_PAGE + own;
}

static void purge_idle(size_t bytes, enum growth why);
static void purge_external(size_t bytes, enum growth why);
ARR_HOT static void purge_for_growth(size_t bytes, enum growth why)
{
	if (arr__opt.purge_delay < 0)
		return;
	size_t ext = ext_growth(bytes);
	if (ext != 0) {
		purge_external(ext, resident_pages(bytes) < grow_hwm ? GROW_EXTERNAL : why);
		return;
	}
	if (resident_pages(bytes) < grow_hwm)
		return;
	purge_idle(bytes, why);
}

/* The purge of an external growth at the process's peak; the peak after
 * it is what was read less what it gave back. */
static void purge_external(size_t bytes, enum growth why)
{
	uint64_t before = resident_pages(0);
	purge_idle(bytes, why);
	uint64_t after = resident_pages(0), gone = before > after ? before - after : 0;
	uint64_t r = ext_rss > gone ? ext_rss - gone : 0;
	if (r > rss_max)
		rss_max = r;
}

/* A slow call with no growth of its own: the external growth's check. */
ARR_HOT static void purge_for_external(void)
{
	if (arr__opt.purge_delay < 0)
		return;
	size_t ext = ext_growth(0);
	if (ext != 0)
		purge_external(ext, GROW_EXTERNAL);
}

ARR_HOT static void purge_idle(size_t bytes, enum growth why)
{
	/* freed huge mappings first: resident, and wholly unused; then the
	 * unused rest of live blocks' mappings */
	bytes = huge_cache_shrink(bytes);
	if (bytes != 0 && huge_slack_n != 0)
		bytes = huge_slack_shrink(bytes, false);
	if (bytes == 0)
		return;
	if (kept_slices != 0)
		kept_release(UINT64_MAX);
	size_t want = (bytes + ARR__SLICE_SIZE - 1) >> ARR__SLICE_SHIFT, wanted = want;
	for (struct arr__segment *seg = segments; seg && want && arr__dirty_slices; seg = seg->next) {
		uint64_t dirty = seg->free_mask & ~seg->clean_mask;
		while (dirty && want) {
			unsigned i = (unsigned)__builtin_ctzll(dirty), j = i;
			while (j < ARR__SLICES && (dirty >> j & 1) && j - i < want)
				j++;
			arr__os_purge((uint8_t *)seg + (size_t)i * ARR__SLICE_SIZE, (size_t)(j - i) * ARR__SLICE_SIZE);
			uint64_t bits = (j - i == 64 ? ~(uint64_t)0 : (((uint64_t)1 << (j - i)) - 1)) << i;
			seg->clean_mask |= bits;
			dirty &= ~bits;
			arr__dirty_slices -= j - i;
			want -= j - i;
			purged_pages += (uint64_t)(j - i) * (ARR__SLICE_SIZE / ARR__OS_PAGE);
		}
	}
	size_t got = (wanted - want) << ARR__SLICE_SHIFT;
	if (why != GROW_SPAN && got < bytes && (why == GROW_HUGE || arr__purge_scale() == 1) &&
	    (why == GROW_EXTERNAL || resident_pages(bytes) >= grow_hwm))
		arr__span_purge_for_growth((bytes - got + ARR__OS_PAGE - 1) / ARR__OS_PAGE);
}

void arr__page_init(struct arr__page *page, struct arr__heap *h, unsigned cls, size_t zero_from)
{
	uint32_t bs = arr__class_size[cls];
	page->free = NULL;
	page->local_free = NULL;
	page->heap = h;
	page->used = 0;
	page->flags = 0;
	page->free_is_zero = 0;
	page->cls = (uint16_t)cls;
	page->idle = 0;
	page->block_size = bs;
	page->capacity = 0;
	page->requeued = 0;
	page->trimmed = 0;
	page->reserved = (uint16_t)((size_t)page->slices * ARR__SLICE_SIZE / bs);
	ARR__ASSERT(page->reserved == (size_t)page->slices * ARR__SLICE_SIZE / bs);
	page->zero_from = (uint16_t)zero_from;
	page->seen_free = NULL;
	page->seen_used = 0;
	page->seen_ticks = 0;
	page->holes = 0;
	atomic_store_explicit(&page->thread_free, ARR__TF_NORMAL, memory_order_relaxed);
	page->next = page->prev = NULL;
}

/* Which free slices find_span looks at, and in whose segments. */
enum { SPAN_DIRTY = 1, SPAN_OWN = 2, SPAN_OTHERS = 4 };

/* Lowest start of a run of exactly n set bits (clear on both sides), or -1. */
static int exact_run(uint64_t m, unsigned n)
{
	uint64_t r = m;
	for (unsigned i = 1; i < n && r; i++)
		r &= m >> i;
	r &= ~(m << 1) & (n < 64 ? ~(m >> n) : ~(uint64_t)0);
	return r ? __builtin_ctzll(r) : -1;
}

/*
 * n free slices (only dirty ones with SPAN_DIRTY) in the segments of h
 * (SPAN_OWN) and/or of others (SPAN_OTHERS); NULL if none. Clean slices:
 * first fit. Dirty slices: a run of exactly n if there is one, else first
 * fit, so that single slices do not break up the dirty runs that longer
 * spans could reuse: 4-thread stress replay (9 alternating runs) peak RSS
 * −1.5 %, 3 % fewer page faults, same time.
 */
ARR_HOT __attribute__((noinline, noclone)) static struct arr__segment *find_span(struct arr__heap *h, unsigned n,
										 unsigned how, int *at)
{
	if ((how & SPAN_DIRTY) && arr__dirty_slices < n)
		return NULL;
	struct arr__segment *first = NULL;
	int first_at = -1;
	for (struct arr__segment *seg = segments; seg; seg = seg->next) {
		if (!(how & (seg->owner == h ? SPAN_OWN : SPAN_OTHERS)))
			continue;
		uint64_t m = seg->free_mask;
		if (how & SPAN_DIRTY)
			m &= ~seg->clean_mask;
		if ((unsigned)arr__popcount64(m) < n)
			continue;
		int i = (how & SPAN_DIRTY) ? exact_run(m, n) : -1;
		if (i >= 0) {
			*at = i;
			return seg;
		}
		if (first == NULL && (i = find_run(m, n)) >= 0) {
			first = seg;
			first_at = i;
			if (!(how & SPAN_DIRTY))
				break;
		}
	}
	*at = first_at;
	return first;
}

/* No resident free slice for a page of class cls: the free heaps' kept
 * pages are resident. One of this class (where the same class's blocks
 * were, as far as they were), else one as long; else every kept page to the
 * free slices (kept_slices 0: the caller searches them once more) and NULL.
 * Out of line: only where threads exited. */
__attribute__((noinline)) static struct arr__segment *kept_take(unsigned cls, int *at)
{
	uint64_t stamp;
	struct arr__page *kp = arr__heap_kept_steal_locked(cls, &stamp);
	if (kp == NULL) {
		kept_release(UINT64_MAX);
		return NULL;
	}
	kept_slices -= kp->slices;
	if (kept_slices == 0)
		kept_oldest = UINT64_MAX;
	arr__pool_give_locked(kp, stamp);
	struct arr__segment *seg = arr__segment_of(kp->start);
	*at = (int)(kp - seg->pages);
	return seg;
}

void arr__pool_reown(struct arr__heap *from, struct arr__heap *to)
{
	pthread_mutex_lock(&arr__lock);
	for (struct arr__segment *seg = segments; seg; seg = seg->next)
		if (seg->owner == from)
			seg->owner = to;
	pthread_mutex_unlock(&arr__lock);
}

ARR_HOT struct arr__page *arr__pool_take(struct arr__heap *h, unsigned cls)
{
	unsigned n = arr__class_slices[cls];
	pthread_mutex_lock(&arr__lock);
	clock_sync(h);
	purge_for_external();
	struct arr__segment *seg;
	int i = -1;
	/* Resident (dirty) free slices first, in any segment: taking a clean
	 * slice while a dirty one waits for its purge costs a purge (a TLB
	 * shootdown with several threads) and a page fault for nothing
	 * (4-thread stress replay: 27 % fewer faults, 25 % fewer purges).
	 * With several threads, a thread's spans stay in the segments mapped
	 * for it where that costs no memory: its own dirty slices, then
	 * anyone's, then its own clean ones, then a new segment of its own,
	 * never another thread's clean slices (a page fault either way). A
	 * thread's blocks then lie in a few segments instead of all of them,
	 * so its accesses need fewer page-table and cache lines (mimalloc's
	 * segments are per thread): 4-thread stress replay −7 % time, peak
	 * RSS +1 %. */
again:
	if (arr__purge_scale() > 1) {
		seg = find_span(h, n, SPAN_DIRTY | SPAN_OWN, &i);
		if (seg == NULL)
			seg = find_span(h, n, SPAN_DIRTY | SPAN_OTHERS, &i);
		if (seg == NULL && kept_slices != 0 && (seg = kept_take(cls, &i)) == NULL)
			goto again;
		if (seg == NULL)
			seg = find_span(h, n, SPAN_OWN, &i);
	} else {
		seg = find_span(h, n, SPAN_DIRTY | SPAN_OWN | SPAN_OTHERS, &i);
		if (seg == NULL && kept_slices != 0 && (seg = kept_take(cls, &i)) == NULL)
			goto again;
		if (seg == NULL)
			seg = find_span(h, n, SPAN_OWN | SPAN_OTHERS, &i);
	}
	if (seg == NULL) {
		purge_for_growth((size_t)n * ARR__SLICE_SIZE, GROW_POOL);
		seg = segment_new(h);
		if (seg == NULL) {
			pthread_mutex_unlock(&arr__lock);
			return NULL;
		}
		i = 1;
	}
	uint64_t bits = (((uint64_t)1 << n) - 1) << i;
	uint64_t dirty = bits & ~seg->clean_mask;
	arr__dirty_slices -= (uint64_t)arr__popcount64(dirty);
	/* Clean slices become resident as they are carved: growth, which
	 * kept huge mappings give way to (cc1 replay: +1.1 MB at its peak
	 * otherwise, a freed 4.6 MB block kept while its small blocks grew).
	 * Counting every carve of fresh memory instead kept cc1's
	 * peak the same and flushed the cache of a program that carves as it
	 * reuses its big blocks: test-alloc-stress-libc under LD_PRELOAD
	 * 1.53 → 1.74 s. */
	if ((huge_cache_n > 0 || huge_slack_n > 0) && dirty != bits) {
		size_t fresh = huge_cache_shrink((size_t)arr__popcount64(bits & ~dirty) * ARR__SLICE_SIZE);
		if (fresh != 0 && huge_slack_n > 0)
			huge_slack_shrink(fresh, false); /* then the live blocks' unused rest */
	}
	if (dirty != bits)
		note_growth((size_t)n * ARR__SLICE_SIZE); /* its slices: in neither count now */
	seg->free_mask &= ~bits;
	seg->clean_mask &= ~bits;
	used_slices += n;
	for (unsigned k = 0; k < n; k++)
		seg->pages[i + k].head_off = ARR__HEAD_OFF(k);
	seg->pages[i].slices = (uint8_t)n;
	ARR__ASSERT_EXPENSIVE(arr__pool_is_valid_locked());
	pthread_mutex_unlock(&arr__lock);

	struct arr__page *page = &seg->pages[i];
	/* Where the span's resident part ends: beyond, it is zero. */
	size_t zero_from = 0;
	if (dirty) {
		unsigned last = 63u - (unsigned)__builtin_clzll(dirty);
		zero_from = (size_t)(last - (unsigned)i) * ARR__SLICE_SIZE + (size_t)seg->res[last] * ARR__OS_PAGE;
	}
	page->slices = (uint8_t)n;
	arr__page_init(page, h, cls, zero_from / ARR__OS_PAGE);
	page->start = (uint8_t *)seg + (size_t)i * ARR__SLICE_SIZE;
	return page;
}

/* Under the lock: page's span back to the free slices, freed at `stamp`,
 * with what of each slice may be resident: what was carved, or what was
 * resident when the span was taken. Untouched slices stay clean; the next
 * owner knows where the resident part ends. */
static inline __attribute__((always_inline)) void give_page_locked(struct arr__page *page, uint64_t stamp)
{
	struct arr__segment *seg = arr__segment_of(page->start);
	unsigned i = (unsigned)(page - seg->pages), n = page->slices;
	uint64_t bits = (((uint64_t)1 << n) - 1) << i;
	size_t touched = (size_t)page->capacity * page->block_size;
	if (touched < (size_t)page->zero_from * ARR__OS_PAGE)
		touched = (size_t)page->zero_from * ARR__OS_PAGE;
	touched = (touched + ARR__OS_PAGE - 1) & ~(ARR__OS_PAGE - 1);
	uint64_t clean = 0;
	for (unsigned k = 0; k < n; k++) {
		size_t off = (size_t)k * ARR__SLICE_SIZE;
		size_t r = touched > off ? (touched - off) / ARR__OS_PAGE : 0;
		seg->res[i + k] = (uint8_t)(r > ARR__SLICE_SIZE / ARR__OS_PAGE ? ARR__SLICE_SIZE / ARR__OS_PAGE : r);
		seg->stamp[i + k] = stamp;
		if (r == 0)
			clean |= (uint64_t)1 << (i + k);
	}
	page->heap = NULL;
	page->capacity = 0;
	seg->free_mask |= bits;
	seg->clean_mask |= clean;
	used_slices -= n;
	arr__dirty_slices += (uint64_t)arr__popcount64(bits & ~clean);
	if (oldest_dirty == UINT64_MAX || stamp < oldest_dirty)
		oldest_dirty = stamp;
}

ARR_HOT void arr__pool_give(struct arr__heap *h, struct arr__page *page)
{
	pthread_mutex_lock(&arr__lock);
	clock_sync(h);
	give_page_locked(page, op_clock);
	ARR__ASSERT_EXPENSIVE(arr__pool_is_valid_locked());
	unlock_and_purge();
}

void arr__pool_give_locked(struct arr__page *page, uint64_t stamp) { give_page_locked(page, stamp); }

void arr__pool_kept_locked(int64_t slices, uint64_t stamp)
{
	kept_slices += (uint64_t)slices;
	if (slices > 0 && stamp < kept_oldest)
		kept_oldest = stamp;
	if (kept_slices == 0)
		kept_oldest = UINT64_MAX;
}

/* Under the lock: free heaps' kept pages, kept since `older_than` or
 * before, to the free slices (then taken, purged, decayed as any). */
__attribute__((noinline)) static void kept_release(uint64_t older_than)
{
	if (kept_slices == 0 || kept_oldest > older_than)
		return;
	kept_slices -= arr__heap_release_kept_locked(older_than, &kept_oldest);
	ARR__ASSERT((kept_slices == 0) == (kept_oldest == UINT64_MAX));
}

ARR_HOT void arr__pool_tick(struct arr__heap *h)
{
	pthread_mutex_lock(&arr__lock);
	clock_sync(h);
	purge_for_external();
	unlock_and_purge();
	arr__span_tick();
}

ARR_HOT uint64_t arr__pool_clock(void) { return __atomic_load_n(&op_clock, __ATOMIC_RELAXED); }

ARR_HOT void arr__pool_grow(size_t bytes)
{
	pthread_mutex_lock(&arr__lock);
	purge_for_growth(bytes, GROW_SPAN);
	note_growth(0); /* the span heap counts them resident already */
	pthread_mutex_unlock(&arr__lock);
}

ARR_HOT void arr__pool_count_purged(size_t bytes)
{
	atomic_fetch_add_explicit(&purged_in_pages, bytes / ARR__OS_PAGE, memory_order_relaxed);
}

ARR_HOT void arr__pool_purge_range(void *p, size_t size)
{
	arr__os_purge(p, size);
	atomic_fetch_add_explicit(&purged_in_pages, size / ARR__OS_PAGE, memory_order_relaxed);
}

size_t arr__pool_purge_all(void)
{
	struct purge_run runs[PURGE_BATCH];
	struct huge_cached old[HUGE_CACHE_N] = {{0}}; /* (gcc -O2 -Wmaybe-uninitialized) */
	size_t bytes = 0;
	pthread_mutex_lock(&arr__lock);
	unsigned nh = huge_cache_expired(true, old);
	while (huge_slack_n > 0)
		bytes += huge_slack_trim(0);
	pthread_mutex_unlock(&arr__lock);
	huge_cache_unmap(old, nh);
	for (unsigned k = 0; k < nh; k++)
		bytes += old[k].map;
	for (;;) {
		pthread_mutex_lock(&arr__lock);
		bool budget_only;
		unsigned nr = purge_collect(true, runs, &budget_only);
		pthread_mutex_unlock(&arr__lock);
		if (nr == 0)
			return bytes;
		for (unsigned r = 0; r < nr; r++)
			bytes += (size_t)runs[r].n * ARR__SLICE_SIZE;
		purge_finish(runs, nr, false);
	}
}

void arr__pool_stats(struct arr__pool_stats *out)
{
	memset(out, 0, sizeof *out);
	for (struct arr__segment *seg = segments; seg; seg = seg->next) {
		out->mapped += ARR__SEG_SIZE;
		out->resident += sizeof *seg;
		uint64_t dirty = seg->free_mask & ~seg->clean_mask;
		for (; dirty; dirty &= dirty - 1)
			out->resident += (uint64_t)seg->res[__builtin_ctzll(dirty)] * ARR__OS_PAGE;
		uint64_t used = ~seg->free_mask & USABLE_MASK;
		while (used) {
			unsigned i = (unsigned)__builtin_ctzll(used);
			struct arr__page *page = &seg->pages[i];
			unsigned n = page->slices ? page->slices : 1;
			size_t span = (size_t)n * ARR__SLICE_SIZE;
			size_t touched = (size_t)page->capacity * page->block_size;
			touched = (touched + ARR__OS_PAGE - 1) & ~(ARR__OS_PAGE - 1);
			if (touched < (size_t)page->zero_from * ARR__OS_PAGE)
				touched = (size_t)page->zero_from * ARR__OS_PAGE;
			size_t r = touched < span ? touched : span;
			if (page->cls < ARR__NCLASSES) {
				size_t holes = (size_t)arr__popcount64(page->holes) * ARR__OS_PAGE;
				r -= holes < r ? holes : r;
			}
			out->resident += r;
			if (page->cls < ARR__NCLASSES) {
				out->cls_pages[page->cls]++;
				out->cls_capacity[page->cls] += page->reserved;
				out->cls_used[page->cls] += page->used;
			}
			used &= ~((((uint64_t)1 << n) - 1) << i);
		}
	}
	int64_t hm = atomic_load(&huge_mapped);
	out->mapped += (uint64_t)hm;
	out->resident += (uint64_t)hm;
	out->purged_pages = purged_pages + atomic_load_explicit(&purged_in_pages, memory_order_relaxed);
	out->huge_live = (uint64_t)atomic_load(&arr__huge_live);
	out->huge_req = (uint64_t)atomic_load(&arr__huge_req_live);
	out->huge_count = (uint64_t)atomic_load(&arr__huge_count);
}

/* ---- huge blocks: one mapping each, header in the first OS page ---- */

static size_t huge_offset(size_t align)
{
	size_t a = align > ARR__OS_PAGE ? align : ARR__OS_PAGE;
	return (offsetof(struct arr__segment, pages) + sizeof(struct arr__page) + a - 1) & ~(a - 1);
}

/*
 * Alignments of a segment or more: such a block starts on a segment boundary,
 * where masking would find the block itself instead of a header, so its
 * header lives out of line in a short list searched by address. Only these
 * blocks start on a segment boundary (small spans start past slice 0, other
 * huge blocks past their header page), which is how free recognises them.
 */
struct big_aligned {
	struct big_aligned *next;
	void *p;
	size_t map, req;
};
static struct big_aligned *big_list, *big_spare;

static void *big_aligned_alloc(size_t size, size_t align)
{
	if (size > PTRDIFF_MAX - ARR__SEG_SIZE || align > ((size_t)1 << 40))
		return NULL;
	size_t map = (size + ARR__OS_PAGE - 1) & ~(ARR__OS_PAGE - 1);
	if (map == 0)
		map = ARR__OS_PAGE;
	pthread_mutex_lock(&arr__lock);
	purge_for_growth(map, GROW_HUGE);
	note_growth(map);
	struct big_aligned *b = big_spare;
	if (b) {
		big_spare = b->next;
	} else {
		b = arr__os_map(ARR__OS_PAGE);
		if (b != NULL) { /* carve the page into nodes */
			size_t n = ARR__OS_PAGE / sizeof *b;
			for (size_t i = 1; i < n; i++) {
				b[i].next = big_spare;
				big_spare = &b[i];
			}
		}
	}
	pthread_mutex_unlock(&arr__lock);
	if (b == NULL)
		return NULL;
	void *p = arr__os_map_aligned(map, align);
	pthread_mutex_lock(&arr__lock);
	if (p == NULL) {
		b->next = big_spare;
		big_spare = b;
	} else {
		b->p = p;
		b->map = map;
		b->req = size;
		b->next = big_list;
		big_list = b;
	}
	pthread_mutex_unlock(&arr__lock);
	if (p == NULL)
		return NULL;
	atomic_fetch_add(&huge_mapped, (int64_t)map);
	atomic_fetch_add(&arr__huge_live, (int64_t)map);
	atomic_fetch_add(&arr__huge_req_live, (int64_t)size);
	atomic_fetch_add(&arr__huge_count, 1);
	return p;
}

size_t arr__big_aligned_size(const void *p)
{
	size_t map = 0;
	pthread_mutex_lock(&arr__lock);
	for (struct big_aligned *b = big_list; b; b = b->next)
		if (b->p == p) {
			map = b->map;
			break;
		}
	pthread_mutex_unlock(&arr__lock);
	return map;
}

void arr__big_aligned_free(void *p)
{
	struct big_aligned *b, **pp;
	pthread_mutex_lock(&arr__lock);
	for (pp = &big_list; (b = *pp) != NULL; pp = &b->next)
		if (b->p == p)
			break;
	if (b != NULL) {
		*pp = b->next;
		b->next = big_spare;
		big_spare = b;
	}
	pthread_mutex_unlock(&arr__lock);
	if (b == NULL)
		return; /* not ours: ignore, like a double free we cannot detect */
	atomic_fetch_sub(&huge_mapped, (int64_t)b->map);
	atomic_fetch_sub(&arr__huge_live, (int64_t)b->map);
	atomic_fetch_sub(&arr__huge_req_live, (int64_t)b->req);
	atomic_fetch_sub(&arr__huge_count, 1);
	arr__os_unmap(p, b->map);
}

/* Huge mapping seg of `map` bytes resized to `nmap`, in place or moved
 * (mremap moves its pages, no copy); its new address, NULL if the kernel
 * refuses. The segment map's bit is cleared first: once moved, the old
 * range may be mapped by anyone. */
static inline struct arr__segment *huge_remap(struct arr__segment *seg, size_t map, size_t nmap)
{
	if (arr__os_resize_in_place(seg, map, nmap))
		return seg;
	arr__segmap_set(seg, false);
	struct arr__segment *moved = arr__os_remap_aligned(seg, map, nmap, ARR__SEG_SIZE);
	arr__segmap_set(moved ? moved : seg, true);
	return moved;
}

/* Under the lock: kept mapping k grown to `map` bytes, in place or moved
 * (mremap moves its pages, no copy): its resident pages serve, only the
 * rest is fresh. NULL if the kernel refuses. */
static __attribute__((noinline)) struct arr__segment *huge_cache_grow(unsigned k, size_t map, size_t *got, size_t *kept)
{
	struct huge_cached e = huge_cache[k];
	struct arr__segment *seg = huge_remap(e.seg, e.map, map);
	if (seg == NULL)
		return NULL;
	huge_cache_remove(k);
	atomic_fetch_add(&huge_mapped, (int64_t)(map - e.map));
	note_growth(map - e.map);
	*got = map;
	*kept = e.map;
	return seg;
}

/* Under the lock: the block of segment seg, just taken from the cache,
 * leaves `bytes` of its mapping unused: listed, trimmed lazily. */
static __attribute__((noinline)) void huge_slack_add(struct arr__segment *seg, size_t own, size_t bytes)
{
	if (huge_slack_n == HUGE_CACHE_N)
		huge_slack_trim(0);
	__atomic_store_n(&seg->huge_slack, (uint32_t)(bytes / ARR__OS_PAGE), __ATOMIC_RELAXED);
	huge_slack[huge_slack_n++] = (struct huge_slacked){seg, own, op_clock};
}

/* Under the lock: a cached mapping for `map` bytes (trimmed or grown to
 * fit), or NULL; *got the block's length, *kept how much of its mapping
 * was the cached one (resident, maybe written: a calloc clears that part
 * only). Best fit; of one more than 1/8 too long the rest is listed as
 * slack. */
static struct arr__segment *huge_cache_take(size_t map, size_t *got, size_t *kept)
{
	unsigned best = HUGE_CACHE_N, largest = HUGE_CACHE_N;
	for (unsigned k = 0; k < huge_cache_n; k++) {
		size_t m = huge_cache[k].map;
		if (m >= map && (best == HUGE_CACHE_N || m < huge_cache[best].map))
			best = k;
		if (largest == HUGE_CACHE_N || m > huge_cache[largest].map)
			largest = k;
	}
	if (best == HUGE_CACHE_N) {
		/* none long enough: grow the longest, if it is half there, in
		 * place or moved (mremap moves its pages, no copy): its resident
		 * pages serve, only the rest is fresh */
		if (largest == HUGE_CACHE_N || huge_cache[largest].map < map / 2)
			return NULL;
		return huge_cache_grow(largest, map, got, kept);
	}
	struct huge_cached e = huge_cache_remove(best);
	*got = e.map;
	*kept = e.map;
	if (e.map - map > map / 8) {
		huge_slack_add(e.seg, map, e.map - map); /* the rest waits (huge_slack above) */
		*got = map;
	}
	return e.seg;
}

/* Under the lock: a huge request of `map` bytes the cache did not serve
 * settles the outgrown rule's last bet (huge_regret, above). */
static void huge_bet_settle(size_t map)
{
	size_t dropped = __atomic_exchange_n(&huge_dropped, 0, __ATOMIC_RELAXED);
	unsigned r = huge_regret;
	if (dropped == 0)
		return;
	if (dropped >= map)
		r = r + 2 < HUGE_REGRET_MAX ? r + 2 : HUGE_REGRET_MAX;
	else if (r > 0)
		r--;
	__atomic_store_n(&huge_regret, r, __ATOMIC_RELAXED);
}

ARR_HOT void *arr__huge_alloc(size_t size, size_t align, size_t *zeroed)
{
	if (zeroed)
		*zeroed = 0;
	if (align >= ARR__SEG_SIZE)
		return big_aligned_alloc(size, align);
	size_t off = huge_offset(align);
	if (size > PTRDIFF_MAX - off - ARR__SEG_SIZE)
		return NULL;
	size_t map = (off + size + ARR__OS_PAGE - 1) & ~(ARR__OS_PAGE - 1);
	pthread_mutex_lock(&arr__lock);
	huge_newest = map;
	size_t kept = 0;
	struct arr__segment *seg = huge_cache_n ? huge_cache_take(map, &map, &kept) : NULL;
	if (seg == NULL) {
		huge_bet_settle(map);
		purge_for_growth(map, GROW_HUGE);
		note_growth(map);
	}
	pthread_mutex_unlock(&arr__lock);
	if (seg != NULL) {
		if (zeroed) { /* calloc: what a resident block costs to clear, a fresh one costs in faults */
			size_t dirty = kept - off < size ? kept - off : size;
			memset((uint8_t *)seg + off, 0, dirty);
			*zeroed = dirty;
		}
	} else {
		seg = arr__os_map_aligned(map, ARR__SEG_SIZE);
		if (seg == NULL)
			return NULL;
		atomic_fetch_add(&huge_mapped, (int64_t)map);
		arr__segmap_set(seg, true);
	}
	/* a fresh mapping has every descriptor's head_off zero; the one of the
	 * block's slice (past 0 when aligned to 64 KiB or more) leads to pages[0] */
	seg->kind = 1;
	struct arr__page *page = &seg->pages[0];
	seg->pages[off >> ARR__SLICE_SHIFT].head_off = ARR__HEAD_OFF(off >> ARR__SLICE_SHIFT);
	page->head_off = 0;
	page->heap = NULL;
	page->flags = ARR__PF_HUGE;
	page->cls = ARR__NCLASSES;
	page->start = (uint8_t *)seg + off;
	page->huge_map = map;
	page->huge_req = size;
	page->block_size = 0;
	atomic_fetch_add(&arr__huge_live, (int64_t)(map - off));
	atomic_fetch_add(&arr__huge_req_live, (int64_t)size);
	atomic_fetch_add(&arr__huge_count, 1);
	return page->start;
}

ARR_HOT void arr__huge_free(struct arr__page *page)
{
	struct arr__segment *seg = arr__segment_of(page->start);
	size_t off = (size_t)(page->start - (uint8_t *)seg), map = page->huge_map;
	atomic_fetch_sub(&arr__huge_live, (int64_t)(map - off));
	atomic_fetch_sub(&arr__huge_req_live, (int64_t)page->huge_req);
	atomic_fetch_sub(&arr__huge_count, 1);
	/* a second free of the block finds a descriptor not in use */
	page->flags = 0;
	page->heap = NULL;
	arr__calloc_fresh_note(map - off);
	bool outgrown = map < __atomic_load_n(&huge_newest, __ATOMIC_RELAXED) && arr__purge_scale() == 1 &&
			__atomic_load_n(&huge_regret, __ATOMIC_RELAXED) < HUGE_REGRET_OFF;
	if (ARR_UNLIKELY(__atomic_load_n(&seg->huge_slack, __ATOMIC_RELAXED) != 0)) {
		map += huge_slack_claim(seg); /* the whole mapping goes, or is kept */
	}
	if (arr__opt.purge_delay == 0 || map > HUGE_CACHE_BLOCK || outgrown) {
		if (outgrown)
			__atomic_store_n(&huge_dropped, map, __ATOMIC_RELAXED);
		arr__segmap_set(seg, false);
		arr__os_unmap(seg, map);
		atomic_fetch_sub(&huge_mapped, (int64_t)map);
		return;
	}
	/* keep it; the oldest make room */
	struct huge_cached old[HUGE_CACHE_N];
	unsigned n = 0;
	pthread_mutex_lock(&arr__lock);
	while (huge_cache_n == HUGE_CACHE_N || (huge_cache_n > 0 && huge_cache_bytes + map > HUGE_CACHE_BYTES))
		old[n++] = huge_cache_remove(0);
	huge_cache[huge_cache_n++] = (struct huge_cached){seg, map, op_clock};
	huge_cache_bytes += map;
	ARR__ASSERT_EXPENSIVE(arr__pool_is_valid_locked());
	pthread_mutex_unlock(&arr__lock);
	huge_cache_unmap(old, n);
}

/* A huge block count's change: a plain add while no other thread exists
 * (no reader either: the statistics are read by the program's threads). */
static inline void huge_count_add(_Atomic int64_t *c, int64_t d)
{
	if (__libc_single_threaded)
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + d, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(c, d, memory_order_relaxed);
}

/* Resize a huge block in place or move its pages with mremap; NULL (errno
 * ENOMEM) if impossible, the block as it was. */
ARR_HOT void *arr__huge_realloc(struct arr__page *page, void *p, size_t size)
{
	struct arr__segment *seg = arr__segment_of(p);
	size_t off = (size_t)((uint8_t *)p - (uint8_t *)seg), map = page->huge_map;
	if (size > PTRDIFF_MAX - off - ARR__SEG_SIZE)
		return NULL;
	size_t nmap = (off + size + ARR__OS_PAGE - 1) & ~(ARR__OS_PAGE - 1);
	if (ARR_UNLIKELY(__atomic_load_n(&seg->huge_slack, __ATOMIC_ACQUIRE) != 0)) {
		/* the block's again: a growth into it is in place, a shrink trims all */
		size_t tail = huge_slack_claim(seg);
		map += tail;
		page->huge_map = map;
		atomic_fetch_add(&arr__huge_live, (int64_t)tail);
	}
	size_t oreq = page->huge_req;
	/* Growing is growth like any other (sqlite's page cache grows by
	 * realloc while the slices of 21 MB it just freed wait to be purged). */
	if (nmap > map) {
		pthread_mutex_lock(&arr__lock);
		purge_for_growth(nmap - map, GROW_POOL);
		note_growth(nmap - map);
		pthread_mutex_unlock(&arr__lock);
	}
	if (nmap == map) {
		/* the same pages (a buffer grown a little at a time: 64 of every 65
		 * calls of one grown by 37 bytes, where the three locked adds were
		 * a third of the program's time) */
		page->huge_req = size;
		huge_count_add(&arr__huge_req_live, (int64_t)size - (int64_t)oreq);
		return p;
	}
	seg = huge_remap(seg, map, nmap);
	if (seg == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	page = &seg->pages[0];
	page->start = (uint8_t *)seg + off;
	page->huge_map = nmap;
	page->huge_req = size;
	atomic_fetch_add(&huge_mapped, (int64_t)nmap - (int64_t)map);
	atomic_fetch_add(&arr__huge_live, (int64_t)nmap - (int64_t)map);
	atomic_fetch_add(&arr__huge_req_live, (int64_t)size - (int64_t)oreq);
	return page->start;
}

_Static_assert(sizeof(struct arr__page) % 32 == 0 && offsetof(struct arr__segment, pages) % 32 == 0,
	       "page descriptors start on 32-byte boundaries");
