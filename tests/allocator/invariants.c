/*
 * tests/allocator/invariants.c - every group of the allocator's invariant
 * checks can fail: each case builds a real state through the API, breaks one
 * field through the internal API (allocator/internal.h), and runs the path
 * that checks it, in a child that must die of SIGABRT with the formula on
 * stderr. The same case run without the corruption must exit cleanly, so the
 * abort is the check's doing. Linked with arr_alloc_debug (ARR_DEBUG 2).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "allocrr/alloc.h"
#include "internal.h"

#if ARR_DEBUG < 2
#error "link with arr_alloc_debug and build with ARR_DEBUG=2"
#endif

static int failures;

/* A fresh page of a class nobody else here uses: its first block. */
static void *fresh_block(size_t size)
{
	void *p = arr_malloc(size);
	if (p == NULL) {
		fprintf(stderr, "malloc(%zu) failed\n", size);
		_exit(2);
	}
	return p;
}

/* Allocate blocks of `size` until the class's slow path has run (a page
 * change), which validates the page it returns. */
static void through_slow_path(size_t size, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		(void)fresh_block(size);
}

/* ---- the cases: corrupt (if asked) then run the checking path ---- */

static void used_count(bool corrupt)
{
	void *p = fresh_block(48);
	struct arr__page *page = arr__page_of(p);
	if (corrupt)
		page->used += 1; /* a block counted twice */
	through_slow_path(48, 4 * 4096 / 48);
}

static void free_list_dup(bool corrupt)
{
	void *a = fresh_block(80), *b = fresh_block(80);
	(void)b;
	arr_free(a);
	struct arr__page *page = arr__page_of(a);
	if (corrupt) /* the head's link back to itself: a block on the list twice */
		arr__block_set_next(page->free, page->free);
	arr__page_is_valid(page);
}

static void foreign_block_on_list(bool corrupt)
{
	void *a = fresh_block(96), *b = fresh_block(96);
	arr_free(a);
	struct arr__page *page = arr__page_of(a);
	if (corrupt) /* a block one byte off its class's grid */
		arr__block_set_next(page->free, (struct arr__block *)((uint8_t *)b + 8));
	arr__page_is_valid(page);
}

static void class_list_link(bool corrupt)
{
	/* two pages of one class: the first fills, the second becomes current
	 * (a dense class: pages of its own, not the span heap) */
	arr_alloc_set_option("sparse", 0);
	size_t sz = 6144;
	unsigned per_page = (unsigned)(ARR__SLICE_SIZE * arr__class_slices[arr__size_class(sz)] / 6144);
	void *first = fresh_block(sz);
	for (unsigned i = 1; i < per_page + 2; i++)
		(void)fresh_block(sz);
	struct arr__heap *h = arr__tl_heap;
	struct arr__page *page = h->pages[arr__size_class(sz)];
	if (corrupt)
		page->prev = arr__page_of(first); /* the head has no predecessor */
	arr__heap_is_valid(h);
}

static void *span_cache_thread(void *arg)
{
	bool corrupt = *(bool *)arg;
	/* a span into the cache: one block of a one-block class (64 KiB), freed */
	arr_alloc_set_option("span_min", 0); /* a class, not the span heap */
	void *p = fresh_block(65000);
	arr_free(p);
	struct arr__heap *h = arr__tl_heap;
	if (h->span_cache == NULL) {
		fprintf(stderr, "no span cached\n");
		_exit(2);
	}
	if (corrupt)
		h->span_cached += 1;
	arr__heap_is_valid(h);
	return NULL;
}

static void *park(void *arg)
{
	(void)arg;
	(void)fresh_block(16);
	pause();
	return NULL;
}

static void span_cache_count(bool corrupt)
{
	/* the span cache is kept with several threads only */
	pthread_t t1, t2;
	pthread_create(&t1, NULL, park, NULL);
	usleep(20000);
	pthread_create(&t2, NULL, span_cache_thread, &corrupt);
	pthread_join(t2, NULL);
}

static void thread_free_state(bool corrupt)
{
	void *p = fresh_block(112);
	struct arr__page *page = arr__page_of(p);
	if (corrupt) /* a page in a class list marked as full */
		atomic_store(&page->thread_free, ARR__TF_DELAYED);
	through_slow_path(112, 2 * 4096 / 112);
}

static void segment_free_mask(bool corrupt)
{
	void *p = fresh_block(128);
	struct arr__page *page = arr__page_of(p);
	struct arr__segment *seg = arr__segment_of(p);
	if (corrupt) /* the span's slice marked free while in use */
		seg->free_mask |= (uint64_t)1 << (page - seg->pages);
	arr__page_is_valid(page);
}

static void span_head_off(bool corrupt)
{
	/* 200 KiB blocks: a span of several slices */
	arr_alloc_set_option("span_min", 0);
	void *p = fresh_block(200 << 10);
	struct arr__page *page = arr__page_of(p);
	if (page->slices < 2) {
		fprintf(stderr, "expected a multi-slice span\n");
		_exit(2);
	}
	if (corrupt)
		page[1].head_off = 0;
	arr__page_is_valid(page);
}

static void segment_clean_mask(bool corrupt)
{
	void *p = fresh_block(144);
	struct arr__segment *seg = arr__segment_of(p);
	struct arr__page *page = arr__page_of(p);
	if (corrupt) /* a used slice marked clean (zero) */
		seg->clean_mask |= (uint64_t)1 << (page - seg->pages);
	/* the next span given back to the pool checks the pool */
	arr_alloc_set_option("span_min", 0);
	void *q = fresh_block(300 << 10);
	arr_free(q);
	arr__pool_is_valid();
}

static void huge_cache_entry(bool corrupt)
{
	void *p = fresh_block(3 << 20);
	struct arr__page *page = arr__page_of(p);
	arr_free(p); /* kept in the huge cache */
	if (corrupt) /* the cached mapping's descriptor still says in use */
		page->flags = ARR__PF_HUGE;
	arr__pool_is_valid();
}

static void huge_descriptor(bool corrupt)
{
	void *p = fresh_block(5 << 20);
	struct arr__page *page = arr__page_of(p);
	if (corrupt)
		page->huge_req = page->huge_map; /* more than the mapping holds */
	arr_free(p);                             /* validated on the way out */
}

static void block_size(bool corrupt)
{
	void *p = fresh_block(160);
	struct arr__page *page = arr__page_of(p);
	if (corrupt)
		page->block_size += 16;
	arr__page_is_valid(page);
}

/* The span heap (allocator/spanheap.c): a 40 000-byte block and its
 * neighbours, one tag broken, then the walk. */
static unsigned span_unit(const void *p)
{
	return (unsigned)(((uintptr_t)p & (ARR__SEG_SIZE - 1)) >> ARR__SPAN_UNIT_SHIFT);
}

static void span_interior_tag(bool corrupt)
{
	void *p = fresh_block(40000);
	struct arr__spanseg *s = (struct arr__spanseg *)arr__segment_of(p);
	if (corrupt) /* a boundary inside a block: the spans no longer tile */
		arr__sp_tag_set(s, span_unit(p) + 3, 2 | ARR__SP_T_USED);
	arr__spanheap_is_valid();
}

static void span_tag_chunk(bool corrupt)
{
	void *p = fresh_block(40000);
	struct arr__spanseg *s = (struct arr__spanseg *)arr__segment_of(p);
	if (corrupt) /* a header page (no tags) given the block's first page's chunk too */
		s->tag_chunk[0] = s->tag_chunk[span_unit(p) / ARR__SP_UNITS_PER_OSPAGE];
	arr__spanheap_is_valid();
}

static void span_dirty_ends(bool corrupt)
{
	void *a = fresh_block(40000), *b = fresh_block(40000), *c = fresh_block(40000);
	(void)a, (void)c;
	arr_free(b); /* a free dirty span between two blocks in use */
	struct arr__spanseg *s = (struct arr__spanseg *)arr__segment_of(b);
	if (corrupt)
		*arr__sp_tag_ref(s, span_unit(b)) &= ~ARR__SP_T_DIRTY;
	arr__spanheap_is_valid();
}

static void span_slack(bool corrupt)
{
	void *p = fresh_block(40000);
	struct arr__spanseg *s = (struct arr__spanseg *)arr__segment_of(p);
	if (corrupt) /* requested bytes no longer add up to the live count */
		*arr__sp_tag_ref(s, span_unit(p)) ^= 1u << ARR__SP_T_SLACK_SHIFT;
	arr__spanheap_is_valid();
}

static void span_uncoalesced(bool corrupt)
{
	void *a = fresh_block(40000), *b = fresh_block(40000), *c = fresh_block(40000);
	(void)a, (void)c;
	arr_free(b);
	struct arr__spanseg *s = (struct arr__spanseg *)arr__segment_of(b);
	unsigned u = span_unit(b), len = arr__sp_tag(s, u) & ARR__SP_T_LEN;
	if (corrupt) { /* the free span cut in two free halves, the second in no bin */
		uint32_t d = arr__sp_tag(s, u) & ARR__SP_T_DIRTY,
			 slot = arr__sp_tag(s, u) & (ARR__SP_T_SLOT_MASK << ARR__SP_T_SLOT_SHIFT);
		arr__sp_tag_set(s, u, 1 | ARR__SP_T_FREE | d | slot);
		arr__sp_tag_set(s, u + 1, (len - 1) | ARR__SP_T_FREE | d);
		arr__sp_tag_set(s, u + len - 1, (len - 1) | ARR__SP_T_FREE | d);
	}
	arr__spanheap_is_valid();
}

/* A free span's node linked wrongly: its bin link (pprev, the link to it
 * that a remove writes through) or its lru link (lpprev) pointing at its
 * own next field instead of the bin's head or the lru's: a remove would
 * unlink nothing and leave it in its bin or on the lru. */
static struct arr__span_node *span_free_node(void)
{
	void *a = fresh_block(40000), *b = fresh_block(40000), *c = fresh_block(40000);
	(void)a, (void)c;
	arr_free(b); /* a free dirty span between two blocks in use */
	struct arr__spanseg *s = (struct arr__spanseg *)arr__segment_of(b);
	uint32_t t = arr__sp_tag(s, span_unit(b));
	return &s->node[t >> ARR__SP_T_SLOT_SHIFT & ARR__SP_T_SLOT_MASK];
}

static void span_bin_link(bool corrupt)
{
	struct arr__span_node *n = span_free_node();
	if (corrupt)
		n->pprev = &n->next;
	arr__spanheap_is_valid();
}

static void span_lru_link(bool corrupt)
{
	struct arr__span_node *n = span_free_node();
	if (corrupt)
		n->lpprev = &n->lnext;
	arr__spanheap_is_valid();
}

/* A bin of several lengths (above 128 KiB: spanheap.c bin_of) keeps its
 * list in order of length, which best fit relies on: two free spans of one
 * bin, 1030 and 1050 units, kept apart by blocks in use; corrupt, their
 * order swapped (every link still consistent). */
static void span_bin_order(bool corrupt)
{
	void *a = fresh_block(1030 << ARR__SPAN_UNIT_SHIFT), *g1 = fresh_block(40000);
	void *b = fresh_block(1050 << ARR__SPAN_UNIT_SHIFT), *g2 = fresh_block(40000);
	(void)g1, (void)g2;
	arr_free(b);
	arr_free(a);
	struct arr__spanseg *sa = (struct arr__spanseg *)arr__segment_of(a);
	struct arr__spanseg *sb = (struct arr__spanseg *)arr__segment_of(b);
	struct arr__span_node *n1 =
		&sa->node[arr__sp_tag(sa, span_unit(a)) >> ARR__SP_T_SLOT_SHIFT & ARR__SP_T_SLOT_MASK];
	struct arr__span_node *n2 =
		&sb->node[arr__sp_tag(sb, span_unit(b)) >> ARR__SP_T_SLOT_SHIFT & ARR__SP_T_SLOT_MASK];
	if (n1->next != n2 || n2->next != NULL) {
		fprintf(stderr, "expected the bin's list: the 1030-unit span, then the 1050-unit one\n");
		_exit(2);
	}
	if (corrupt) {
		struct arr__span_node **head = n1->pprev;
		*head = n2;
		n2->pprev = head;
		n2->next = n1;
		n1->pprev = &n2->next;
		n1->next = NULL;
	}
	arr__spanheap_is_valid();
}

/* Span arenas: a segment on an arena's list marked as another arena's (its
 * frees would go to a lock that does not guard its spans). */
static void span_arena_foreign(bool corrupt)
{
	void *p = fresh_block(40000);
	struct arr__spanseg *s = (struct arr__spanseg *)arr__segment_of(p);
	if (corrupt)
		s->arena = (s->arena + 1) % ARR__SPAN_ARENAS;
	arr__spanheap_is_valid();
}

/* A thread's span-heap block cache (span_cache on): a freed block waits
 * there, in use to the span heap and marked cached; its bytes add up. */
static void span_block_cache(bool corrupt)
{
	arr_alloc_set_option("span_cache", 1 << 20);
	void *a = fresh_block(40000), *b = fresh_block(40000);
	(void)b;
	arr_free(a);
	struct arr__heap *h = arr__tl_heap;
	if (h->sc_n != 1) {
		fprintf(stderr, "expected a cached block\n");
		_exit(2);
	}
	if (corrupt) /* the cache's byte count no longer its blocks' */
		h->sc_units += 1;
	arr__heap_is_valid(h);
	arr__spanheap_is_valid();
}

static void span_cached_unmarked(bool corrupt)
{
	arr_alloc_set_option("span_cache", 1 << 20);
	void *a = fresh_block(40000), *b = fresh_block(40000);
	(void)b;
	arr_free(a);
	struct arr__spanseg *s = (struct arr__spanseg *)arr__segment_of(a);
	unsigned u = span_unit(a), len = arr__sp_tag(s, u) & ARR__SP_T_LEN;
	if (corrupt) /* a block of the cache that the span heap could hand out twice */
		*arr__sp_tag_ref(s, u + len - 1) &= ~ARR__SP_T_CACHED;
	arr__heap_is_valid(arr__tl_heap);
}

/* A class's count of borrowed blocks past the bound a tick allows; the
 * next tick's walk of the heap sees it. */
static void small_borrows(bool corrupt)
{
	void *p = fresh_block(16);
	(void)p;
	if (corrupt)
		arr__tl_heap->borrows[arr__size_class(40)] = ARR__SMALL_BORROWS + 1;
	for (int i = 0; i < 2 * 4096; i++)
		arr_free(arr_malloc(16));
}

/* A size's entry of the heap's direct table (malloc's fast path up to 1
 * KiB) no longer its class's current page: the next heap walk sees it. */
static void direct_entry(bool corrupt)
{
	void *p = fresh_block(120), *q = fresh_block(40);
	(void)p;
	if (corrupt) /* 120 bytes sent to the 40-byte class's page */
		arr__tl_heap->direct[(120 + 7) / 8] = arr__page_of(q);
	arr__heap_is_valid(arr__tl_heap);
}

/* The same, caught by malloc's own fast path at its first use. */
static void direct_fast_path(bool corrupt)
{
	void *p = fresh_block(72), *q = fresh_block(24);
	(void)p;
	if (corrupt)
		arr__tl_heap->direct[(72 + 7) / 8] = arr__page_of(q);
	arr_free(arr_malloc(72));
}

/* The shared heap (light threads): a block of it from a light thread. */
static void *light_malloc_thread(void *arg)
{
	*(void **)arg = arr_malloc(200);
	return NULL;
}

static void *light_block(void)
{
	arr_alloc_set_option("light", 64);
	(void)fresh_block(24); /* main holds a heap: the thread is light */
	void *p = NULL;
	pthread_t th;
	pthread_create(&th, NULL, light_malloc_thread, &p);
	pthread_join(th, NULL);
	if (p == NULL || arr__page_of(p)->heap != arr__shared_heap)
		_exit(3);
	return p;
}

/* The shared heap counted busy (the census's): its walk sees it. */
static void shared_busy(bool corrupt)
{
	(void)light_block();
	if (corrupt)
		arr__shared_heap->census_busy = true;
	arr__shared_is_valid();
}

/* A page on the shared heap's class list that says it is another heap's. */
static void shared_page_owner(bool corrupt)
{
	void *p = light_block();
	if (corrupt)
		arr__page_of(p)->heap = arr__tl_heap;
	arr__shared_is_valid();
}

struct tcase {
	const char *name;
	void (*run)(bool corrupt);
	const char *expect; /* on stderr */
};

/* A thread that frees all it allocated and exits leaves its pages in its
 * heap for the next thread (heap.c "Kept pages"): the slices it keeps,
 * counted one too many, break the kept heaps' walk. */
static struct arr__heap *kept;

static void *keep_thread(void *arg)
{
	(void)arg;
	void *a = fresh_block(48), *b = fresh_block(320);
	kept = arr__tl_heap;
	arr_free(a);
	arr_free(b);
	return NULL;
}

static void kept_used(bool corrupt)
{
	pthread_t t;
	pthread_create(&t, NULL, keep_thread, NULL);
	pthread_join(t, NULL);
	if (atomic_load(&arr__kept_heaps) != 1 || kept->kept == 0) {
		fprintf(stderr, "no heap kept\n");
		_exit(2);
	}
	if (corrupt)
		kept->kept += 1;
	arr__pool_is_valid();
}

static const struct tcase cases[] = {
	{"used count", used_count, "page->used + nfree + nlocal + holed == page->capacity"},
	{"free list duplicate", free_list_dup, "!(seen[i / 64] >> (i % 64) & 1)"},
	{"block off the grid", foreign_block_on_list, "off % page->block_size == 0"},
	{"class list link", class_list_link, "page->prev == prev"},
	{"span cache count", span_cache_count, "slices == h->span_cached"},
	{"thread_free state", thread_free_state, "state == ARR__TF_NORMAL"},
	{"segment free_mask", segment_free_mask, "free_mask, __ATOMIC_RELAXED) & span) == 0"},
	{"span head_off", span_head_off, "seg->pages[idx + k].head_off == ARR__HEAD_OFF(k)"},
	{"segment clean_mask", segment_clean_mask, "(seg->clean_mask & ~seg->free_mask) == 0"},
	{"huge cache entry", huge_cache_entry, "seg->pages[0].flags == 0"},
	{"huge descriptor", huge_descriptor, "page->huge_req <= page->huge_map - off"},
	{"block size", block_size, "page->block_size == arr__class_size[page->cls]"},
	{"span interior tag", span_interior_tag, "arr__sp_tag(s, k) == 0"},
	{"span tag chunk", span_tag_chunk, "c <= s->tag_used && !seen[c]"},
	{"span dirty ends", span_dirty_ends, "(t & T_DIRTY) == (e & T_DIRTY)"},
	{"span slack", span_slack, "req == a->live_req"},
	{"span coalesced", span_uncoalesced, "prev_state != T_FREE"},
	{"span bin link", span_bin_link, "n->pprev == (prev ?"},
	{"span lru link", span_lru_link, "n->lpprev == (prev ?"},
	{"span bin order", span_bin_order, "node_len(prev) <= (t & T_LEN)"},
	{"span block cache", span_block_cache, "units == h->sc_units"},
	{"span cached mark", span_cached_unmarked, "ARR__SP_T_CACHED"},
	{"span arena of a segment", span_arena_foreign, "s->arena == arena_index(a)"},
	{"small-class borrows", small_borrows, "ARR__SMALL_BORROWS : 0)"},
	{"direct table entry", direct_entry, "h->direct[i] == h->pages[arr__class_tab[i]]"},
	{"direct table on malloc", direct_fast_path, "page == h->pages[arr__class_tab[(size + 7) >> 3]]"},
	{"shared heap busy", shared_busy, "h->state == ARR__HEAP_SHARED && !h->census_busy"},
	{"shared heap page owner", shared_page_owner, "page->cls == c && page->heap == h"},
	{"kept heap's slices", kept_used, "slices == h->kept"},
};

/* Run c in a child; returns its wait status and its stderr in err. */
static int run_child(const struct tcase *c, bool corrupt, char *err, size_t errsz)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], 2);
		c->run(corrupt);
		_exit(0);
	}
	close(fd[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < errsz && (r = read(fd[0], err + n, errsz - 1 - n)) > 0)
		n += (size_t)r;
	err[n] = '\0';
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

int main(void)
{
	static char err[4096];
	/* these tests are of a thread's own heap from its first malloc: no
	 * light threads (tests/allocator/light.c has those) */
	arr_alloc_set_option("light", 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct tcase *c = &cases[i];
		int st = run_child(c, false, err, sizeof err);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "FAIL %s: the intact state fails (status %#x): %s\n", c->name, st, err);
			failures++;
			continue;
		}
		st = run_child(c, true, err, sizeof err);
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) {
			fprintf(stderr, "FAIL %s: no abort (status %#x): %s\n", c->name, st, err);
			failures++;
		} else if (strstr(err, "assertion failed") == NULL || strstr(err, c->expect) == NULL) {
			fprintf(stderr, "FAIL %s: aborted, but stderr lacks \"%s\": %s\n", c->name, c->expect, err);
			failures++;
		} else {
			printf("ok   %-20s %s", c->name, err);
		}
	}
	if (failures)
		fprintf(stderr, "%d of %zu cases failed\n", failures, sizeof cases / sizeof cases[0]);
	return failures != 0;
}
