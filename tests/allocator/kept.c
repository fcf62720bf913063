/*
 * tests/allocator/kept.c - kept pages (allocator/heap.c "Kept pages"): a
 * thread that exits with every block of its class pages freed leaves the
 * pages in its heap for the next thread.
 *
 *   keep      a thread mallocs blocks of six classes, frees them and exits:
 *             its heap is kept with one page per class; one that exits with
 *             a block still live keeps the other classes' pages in its
 *             abandoned heap, which the next thread's first malloc adopts
 *   reuse     the next thread to start takes that heap at once, not the
 *             light threads' shared heap, and its blocks lie in the same
 *             pages as the exited thread's of the same class
 *   tail      a kept page whose slice was resident further than its blocks
 *             reached (another class's before) keeps that tail until the
 *             next thread takes the heap, which gives it back
 *   adopted   the same tail in a page whose thread exited with a block in
 *             it: given back when the next thread adopts the page
 *   steal     with no resident free slice, another heap's page of a class
 *             is the kept page of that class (the same span)
 *   purge     arr_alloc_purge gives every kept page back (none kept after);
 *             so does the purge delay, counted from the thread's exit
 *   burst     8 rounds of 24 threads that malloc and free 300 blocks each,
 *             some freed by another thread, with the invariant walks on:
 *             the live blocks end at 0
 *   handed    a thread exits with its blocks live: the main thread's malloc
 *             does not adopt its heap, the next thread does, at once, and
 *             reuses its pages; the main thread freeing them itself and
 *             allocating on adopts it once it has waited
 *
 * Linked with arr_alloc_debug (ARR_DEBUG 2): the invariant walks run after
 * every pool call, the kept heaps' among them.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "allocrr/alloc.h"
#include "check.h"
#include "internal.h"

static const size_t sizes[6] = {16, 48, 112, 320, 640, 1000};
#define PER 40 /* blocks of each size a worker makes */

struct work {
	struct arr__heap *heap;     /* the thread's heap after its mallocs */
	struct arr__page *pages[6]; /* the page of its first block of each size */
	bool keep_one;              /* leave one block live (for the main thread) */
	void *left;                 /* that block */
	unsigned light_calls;       /* arr__light_calls() after its first malloc */
};

static void *worker(void *arg)
{
	struct work *w = arg;
	void *p[6][PER];
	for (int k = 0; k < 6; k++)
		for (int i = 0; i < PER; i++) {
			p[k][i] = arr_malloc(sizes[k]);
			CHECK(p[k][i] != NULL);
			memset(p[k][i], k + i, sizes[k]);
			if (k == 0 && i == 0)
				w->light_calls = arr__light_calls();
		}
	w->heap = arr__tl_heap;
	for (int k = 0; k < 6; k++)
		w->pages[k] = arr__page_of(p[k][0]);
	for (int k = 0; k < 6; k++)
		for (int i = 0; i < PER; i++) {
			if (w->keep_one && k == 0 && i == 0)
				w->left = p[k][i];
			else
				arr_free(p[k][i]);
		}
	return NULL;
}

static void run(struct work *w)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, worker, w) == 0);
	pthread_join(t, NULL);
}

static unsigned kept_heaps(void) { return atomic_load(&arr__kept_heaps); }

/* The slices of w's pages of sizes[from..5] (one page each). */
static uint32_t kept_slices_of(const struct work *w, int from)
{
	uint32_t n = 0;
	for (int k = from; k < 6; k++)
		n += w->pages[k]->slices;
	return n;
}

static void test_keep_and_reuse(void)
{
	struct work a = {0}, b = {0}, c = {.keep_one = true};
	run(&a);
	CHECK(kept_heaps() == 1);
	CHECK(a.heap->state == ARR__HEAP_FREE && a.heap->kept >= 6);
	for (int k = 0; k < 6; k++)
		CHECK(a.pages[k]->heap == a.heap && a.pages[k]->used == 0);
	/* the next thread takes it at once: no light call, the same pages */
	run(&b);
	CHECK(b.light_calls == 0);
	CHECK(b.heap == a.heap);
	for (int k = 0; k < 6; k++)
		CHECK(b.pages[k] == a.pages[k]);
	CHECK(kept_heaps() == 1); /* b freed everything too */
	/* a block left live: the heap is abandoned, its empty pages kept in
	 * it (the live block's page is not); freed by the main thread, and
	 * the next thread's first malloc adopts every page */
	arr_alloc_purge();
	CHECK(kept_heaps() == 0);
	run(&c);
	CHECK(c.left != NULL);
	CHECK(kept_heaps() == 1);
	CHECK(c.heap->state == ARR__HEAP_ABANDONED);
	CHECK(c.heap->kept == kept_slices_of(&c, 1));
	arr_free(c.left);
	struct work d = {0};
	run(&d);
	CHECK(d.heap != c.heap);
	for (int k = 1; k < 6; k++)
		CHECK(d.pages[k] == c.pages[k]);
	CHECK(kept_heaps() == 1); /* d's heap now, kept as a's was */
	CHECK(d.heap->state == ARR__HEAP_FREE && c.heap->kept == 0);
	CHECK(arr__pool_is_valid());
}

/* A kept page whose slice came resident from a class that reached further
 * (a 640-byte class's whole slice, then one 112-byte block): the tail past
 * what its own blocks reached is given back when the next thread takes the
 * heap, not before */
static struct arr__page *tail_page;

static void *fill_640(void *arg)
{
	(void)arg;
	void *v[200];
	for (int i = 0; i < 200; i++)
		v[i] = arr_malloc(640);
	for (int i = 0; i < 200; i++)
		arr_free(v[i]);
	return NULL;
}

static void *one_112(void *arg)
{
	void *p = arr_malloc(112);
	struct arr__page *page = arr__page_of(p);
	if (arg == NULL)
		tail_page = page;
	else
		CHECK(page == tail_page && page->zero_from == 1);
	arr_free(p);
	return NULL;
}

static void test_tail(void)
{
	pthread_t t;
	arr_alloc_purge();
	pthread_create(&t, NULL, fill_640, NULL); /* its first page back to the pool, resident */
	pthread_join(t, NULL);
	pthread_create(&t, NULL, one_112, NULL); /* that slice for one 112-byte block */
	pthread_join(t, NULL);
	CHECK(tail_page != NULL && tail_page->heap != NULL && tail_page->heap->kept != 0);
	CHECK(tail_page->capacity * tail_page->block_size <= ARR__OS_PAGE && tail_page->zero_from == 16);
	pthread_create(&t, NULL, one_112, (void *)1); /* takes the heap: the tail purged */
	pthread_join(t, NULL);
	CHECK(arr__pool_is_valid());
}

/* The same tail in a page that still holds a block when its thread exits
 * (its heap abandoned): given back when the next thread adopts the page,
 * whose blocks stay as they were */
static void *live_112;

static void *one_112_live(void *arg)
{
	(void)arg;
	live_112 = arr_malloc(112);
	memset(live_112, 0x5a, 112);
	tail_page = arr__page_of(live_112);
	return NULL;
}

static struct arr__heap *adopter;

static void *adopt_all(void *arg)
{
	(void)arg;
	void *p = arr_malloc(48); /* a class it has no page of: adopts */
	adopter = arr__tl_heap;
	arr_free(p);
	return NULL;
}

static void test_adopted_tail(void)
{
	pthread_t t;
	arr_alloc_purge();
	pthread_create(&t, NULL, fill_640, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, one_112_live, NULL);
	pthread_join(t, NULL);
	CHECK(tail_page->heap->state == ARR__HEAP_ABANDONED && tail_page->used == 1);
	CHECK(tail_page->capacity * tail_page->block_size <= ARR__OS_PAGE && tail_page->zero_from == 16);
	struct arr_alloc_stats st;
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t purged = st.pages_purged;
	pthread_create(&t, NULL, adopt_all, NULL);
	pthread_join(t, NULL);
	CHECK(tail_page->heap == adopter && tail_page->zero_from == 1);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged >= purged + 15);
	unsigned char want[112];
	memset(want, 0x5a, sizeof want);
	CHECK(memcmp(live_112, want, sizeof want) == 0);
	arr_free(live_112);
	CHECK(arr__pool_is_valid());
}

static void test_steal(void)
{
	arr_alloc_purge(); /* no resident free slice left: the kept pages are the only ones */
	struct work a = {0};
	run(&a);
	CHECK(kept_heaps() == 1);
	uint32_t kept = a.heap->kept;
	/* the main thread has no page of the 640-byte class: its first block's
	 * page is the exited thread's of that class */
	CHECK(arr__tl_heap->pages[arr__size_class(640)] == &arr__page_empty);
	void *p = arr_malloc(640);
	CHECK(arr__page_of(p) == a.pages[4] && arr__page_of(p)->heap == arr__tl_heap);
	CHECK(a.heap->kept == kept - a.pages[4]->slices && kept_heaps() == 1);
	arr_free(p);
	CHECK(arr__pool_is_valid());
}

static void test_purge(void)
{
	struct work a = {0};
	run(&a);
	CHECK(kept_heaps() == 1);
	arr_alloc_purge();
	CHECK(kept_heaps() == 0);
	CHECK(a.heap->kept == 0);
	for (unsigned c = 0; c < ARR__NCLASSES; c++)
		CHECK(a.heap->pages[c] == &arr__page_empty);
	/* the delay: counted on the op clock from the thread's exit */
	CHECK(arr_alloc_set_option("purge_delay", 1000) == 0);
	CHECK(arr_alloc_set_option("young", 0) == 0);
	CHECK(arr_alloc_set_option("aged", 0) == 0);
	run(&a);
	CHECK(kept_heaps() == 1);
	for (int i = 0; i < 40 * ARR__TICK_OPS && kept_heaps() != 0; i++)
		arr_free(arr_malloc(64));
	CHECK(kept_heaps() == 0);
	CHECK(arr_alloc_set_option("purge_delay", 100000) == 0);
	CHECK(arr_alloc_set_option("young", 4) == 0);
	CHECK(arr_alloc_set_option("aged", 2) == 0);
	CHECK(arr__pool_is_valid());
}

/* ---- a burst of threads, some blocks freed by the next thread ---- */

#define ROUNDS 8
#define BURST 24
#define BLOCKS 300
static void *handed[BURST];

static void *burst_worker(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint64_t seed = t * 2654435761u + 1;
	void *p[BLOCKS];
	for (int i = 0; i < BLOCKS; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		p[i] = arr_malloc(16 + seed % 1000);
		CHECK(p[i] != NULL);
		((unsigned char *)p[i])[0] = (unsigned char)i;
	}
	for (int i = 0; i < BLOCKS; i++)
		CHECK(((unsigned char *)p[i])[0] == (unsigned char)i);
	/* one block to the next thread of the round (a remote free), one from the previous */
	void *mine = p[0];
	void *theirs = atomic_exchange((_Atomic(void *) *)&handed[(t + 1) % BURST], mine);
	for (int i = 1; i < BLOCKS; i++)
		arr_free(p[i]);
	if (theirs != NULL)
		arr_free(theirs);
	return NULL;
}

static void test_burst(void)
{
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t t[BURST];
		memset(handed, 0, sizeof handed);
		for (unsigned i = 0; i < BURST; i++)
			CHECK(pthread_create(&t[i], NULL, burst_worker, (void *)(uintptr_t)(r * BURST + i)) == 0);
		for (unsigned i = 0; i < BURST; i++)
			pthread_join(t[i], NULL);
		for (unsigned i = 0; i < BURST; i++)
			arr_free(handed[i]);
	}
	struct arr_alloc_stats st;
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_blocks == 0);
	CHECK(arr__pool_is_valid());
}

/*
 * A working set handed from thread to thread (a worker per task, each
 * taking over the last one's blocks): a worker exits with its blocks live,
 * and the main thread, which holds an old heap, mallocs a page's worth of
 * its class before the next worker starts. It must not adopt the abandoned
 * heap: the next worker frees those blocks, into the pages of a heap whose
 * thread waits and never collects them (9.4 MB against glibc's 4.2 over 40
 * such handovers). The next worker, young, adopts it at its first malloc,
 * not light, and its blocks go into the adopted pages.
 */
#define HAND_N 400
#define HAND_SIZE 200
static void *hand[HAND_N];
static struct arr__page *hand_pages[HAND_N];

static void *hand_make(void *arg)
{
	(void)arg;
	for (int i = 0; i < HAND_N; i++) {
		hand[i] = arr_malloc(HAND_SIZE);
		memset(hand[i], i, HAND_SIZE);
		hand_pages[i] = arr__page_of(hand[i]);
	}
	return NULL;
}

static void *hand_next(void *arg)
{
	struct arr__heap *from = arg;
	for (int i = 0; i < HAND_N; i++) {
		unsigned char *q = arr_malloc(HAND_SIZE);
		if (i == 0) {
			CHECK(arr__light_calls() == 0);
			CHECK(hand_pages[0]->heap == arr__tl_heap && from->state == ARR__HEAP_FREE);
		}
		CHECK(((unsigned char *)hand[i])[HAND_SIZE - 1] == (unsigned char)i);
		arr_free(hand[i]);
		hand[i] = q;
		bool old_page = false;
		for (int k = 0; k < HAND_N && !old_page; k++)
			old_page = arr__page_of(q) == hand_pages[k];
		CHECK(old_page); /* freed blocks of the adopted pages reused: no fresh page */
	}
	for (int i = 0; i < HAND_N; i++)
		arr_free(hand[i]);
	return NULL;
}

static void test_handed_on(void)
{
	pthread_t t;
	for (int i = 0; i < 32 * ARR__TICK_OPS; i++) /* the main thread's heap: old */
		arr_free(arr_malloc(24));
	pthread_create(&t, NULL, hand_make, NULL);
	pthread_join(t, NULL);
	struct arr__heap *a = hand_pages[0]->heap;
	CHECK(a->state == ARR__HEAP_ABANDONED);
	/* main: a page's worth and more of the class, so that its mallocs
	 * find no page (no frees: the op clock stays) */
	static void *mine[HAND_N];
	for (int i = 0; i < HAND_N; i++)
		mine[i] = arr_malloc(HAND_SIZE);
	CHECK(a->state == ARR__HEAP_ABANDONED && hand_pages[0]->heap == a);
	for (int i = 0; i < HAND_N; i++)
		arr_free(mine[i]);
	pthread_create(&t, NULL, hand_next, a);
	pthread_join(t, NULL);
	CHECK(a->state == ARR__HEAP_FREE);
	/* again, and this time the main thread frees the blocks itself and
	 * allocates on: once the heap has waited (4 ticks' operations of the
	 * op clock), its malloc that finds no page adopts it */
	pthread_create(&t, NULL, hand_make, NULL);
	pthread_join(t, NULL);
	a = hand_pages[0]->heap;
	CHECK(a->state == ARR__HEAP_ABANDONED);
	for (int i = 0; i < HAND_N; i++)
		arr_free(hand[i]);
	for (int i = 0; i < 8 * ARR__TICK_OPS; i++)
		arr_free(arr_malloc(24));
	CHECK(a->state == ARR__HEAP_ABANDONED); /* the frees alone adopt nothing */
	/* each malloc that finds no page adopts one heap that has waited (other
	 * tests' threads may have left some too): a few pages' worth */
	static void *more[8 * HAND_N];
	int n = 0;
	while (n < 8 * HAND_N && a->state == ARR__HEAP_ABANDONED)
		more[n++] = arr_malloc(HAND_SIZE);
	/* adopted: its pages, empty now, the main thread's or the pool's */
	CHECK(a->state == ARR__HEAP_FREE && hand_pages[0]->heap != a);
	while (n > 0)
		arr_free(more[--n]);
	CHECK(arr__pool_is_valid());
}

int main(void)
{
	arr_free(arr_malloc(1)); /* main holds a heap: the others would be light */
	test_keep_and_reuse();
	test_tail();
	test_adopted_tail();
	test_steal();
	test_purge();
	test_burst();
	test_handed_on();
	if (failures)
		fprintf(stderr, "kept: %d checks failed\n", failures);
	return failures ? 1 : 0;
}
