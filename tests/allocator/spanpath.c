/*
 * tests/allocator/spanpath.c - the span heap's call path (docs/allocator.md,
 * "The span heap", "The path"), what it must keep while it is short:
 *   - a sparse class stays on the span heap for exactly
 *     min(floor(sparse x slices x 64 KiB / block size), its rounding cap)
 *     blocks of one thread, the next is a block of the class's own pages
 *     (the bound is computed by a multiply now, not a division), for every
 *     sparse class;
 *   - span blocks freed through free, free_sized and realloc(p, 0), and
 *     sparse-class ones, come back to the statistics' start exactly (the
 *     free goes from free's first test to the span heap, the sparse count
 *     and the tick with it);
 *   - the slow path's short way (api.c alloc_slow to arr__malloc_refill,
 *     the class taken from the fast path's page) only where the long way
 *     would give a block of the class too: a dense class's blocks after
 *     its bound, three pages' worth more, all of the class (and none of
 *     them a span block); with span_min below a class page's size, a
 *     request of that size whose class page (made by aligned requests)
 *     has no free block left is a span block, calloc's too;
 *   - realloc that moves a block (of a class, of the span heap, huge, an
 *     aligned block's interior pointer, segment-aligned) copies it and frees
 *     the old one (through the descriptor it has read: api.c
 *     heap_free_page), the statistics back to their start after the frees;
 *   - a miss of malloc or calloc in a sparse class (a size inside it,
 *     the class as the fast path computed it; and one whose current page,
 *     made by aligned requests, is full) is a span block, calloc's zero,
 *     the statistics back to their start after the frees;
 *   - a span-heap malloc or calloc that finds no memory returns NULL with
 *     errno ENOMEM (it is reached by a tail call, so it sets errno itself),
 *     in a child under RLIMIT_AS (not under the sanitizers, whose shadow
 *     memory needs the address space).
 * Exits non-zero if a check fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "allocrr/alloc.h"
#include "internal.h"

#include "check.h"

static bool in_span_heap(const void *p) { return arr__segment_of(p)->kind == 2; }

/* ---- the sparse classes' bound ---- */

static void test_sparse_bound(void)
{
	long long sparse, sparse_min;
	CHECK(arr_alloc_get_option("sparse", &sparse) == 0 && sparse > 0);
	CHECK(arr_alloc_get_option("sparse_min", &sparse_min) == 0);
	unsigned tested = 0;
	for (unsigned c = ARR__SPARSE_FIRST; c < ARR__SPARSE_END; c++) {
		size_t size = arr__class_size[c];
		if ((long long)size <= sparse_min)
			continue;
		size_t bound = (size_t)sparse * arr__class_slices[c] * ARR__SLICE_SIZE / size;
		if (bound > arr__class_sparse_cap[c - ARR__SPARSE_FIRST])
			bound = arr__class_sparse_cap[c -
						      ARR__SPARSE_FIRST]; /* its span blocks' rounding (classes.c) */
		size_t n = bound + 1;
		void **b = malloc(n * sizeof *b);
		CHECK(b != NULL);
		if (b == NULL)
			return;
		size_t spans = 0;
		for (size_t i = 0; i < n; i++) {
			b[i] = arr_malloc(size);
			CHECK(b[i] != NULL);
			if (b[i] != NULL && in_span_heap(b[i]))
				spans++;
		}
		/* the first `bound` from the span heap, the last from the class */
		if (spans != bound || in_span_heap(b[n - 1]))
			fprintf(stderr, "class %u (%zu bytes): %zu span blocks of %zu, bound %zu\n", c, size, spans, n,
				bound);
		CHECK(spans == bound && !in_span_heap(b[n - 1]));
		for (size_t i = 0; i < n; i++)
			arr_free(b[i]);
		free(b);
		tested++;
	}
	CHECK(tested == ARR__SPARSE_END - ARR__SPARSE_FIRST);
}

/* ---- the slow path's short way (arr__malloc_refill) ---- */

static void test_refill_routes(void)
{
	/* a dense class: every block after the bound from its pages, through
	 * the short way once its current page runs dry */
	unsigned c = ARR__SPARSE_FIRST + 4;
	size_t size = arr__class_size[c];
	long long sparse;
	CHECK(arr_alloc_get_option("sparse", &sparse) == 0);
	size_t bound = (size_t)sparse * arr__class_slices[c] * ARR__SLICE_SIZE / size;
	if (bound > arr__class_sparse_cap[c - ARR__SPARSE_FIRST])
		bound = arr__class_sparse_cap[c - ARR__SPARSE_FIRST];
	size_t n = bound + 3 * (ARR__SLICE_SIZE / size) * arr__class_slices[c] + 2;
	void **b = malloc(n * sizeof *b);
	CHECK(b != NULL);
	if (b == NULL)
		return;
	size_t spans = 0, first_class = n;
	for (size_t i = 0; i < n; i++) {
		b[i] = arr_malloc(size);
		CHECK(b[i] != NULL);
		if (b[i] == NULL)
			continue;
		if (in_span_heap(b[i]))
			spans++;
		else if (first_class == n)
			first_class = i;
		if (first_class < i && !in_span_heap(b[i]))
			CHECK(arr_malloc_usable_size(b[i]) == size);
	}
	/* once dense, never a span block again */
	CHECK(first_class < n && spans == first_class);
	for (size_t i = 0; i < n; i++)
		arr_free(b[i]);

	/* span_min 500: 700 bytes are the span heap's, even where class 704
	 * has a current page (aligned requests' blocks) with none free */
	long long span_min;
	CHECK(arr_alloc_get_option("span_min", &span_min) == 0);
	CHECK(arr_alloc_set_option("span_min", 500) == 0);
	size_t k = 0;
	for (; k < 64; k++) {
		b[k] = arr_memalign(64, 700);
		CHECK(b[k] != NULL && !in_span_heap(b[k]));
	}
	/* the page's carve leaves at most one OS page of blocks on its list */
	size_t from_span = 0, asked = 0;
	for (; k < 64 + 40; k++, asked++) {
		b[k] = (k & 1) ? arr_calloc(1, 700) : arr_malloc(700);
		CHECK(b[k] != NULL);
		if (b[k] != NULL && in_span_heap(b[k]))
			from_span++;
	}
	if (from_span + ARR__OS_PAGE / 704 < asked)
		fprintf(stderr, "span_min 500: %zu of %zu 700-byte requests from the span heap\n", from_span, asked);
	CHECK(from_span + ARR__OS_PAGE / 704 >= asked);
	for (size_t i = 0; i < k; i++)
		arr_free(b[i]);
	CHECK(arr_alloc_set_option("span_min", span_min) == 0);
	free(b);
}

/* ---- realloc's move: the old block freed through its known descriptor ---- */

static void test_realloc_moves(void)
{
	struct arr_alloc_stats st;
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t n0 = st.live_blocks, use0 = st.live_usable, frees0 = st.frees;
	/* from a class block, a span block, a huge block, an aligned block's
	 * interior pointer and a segment-aligned huge block, each to a size
	 * that moves it (a larger class, a small class) */
	static const size_t from[] = {40, 20000, 3u << 20, 0, 0};
	static const size_t to[] = {3000, 100, 200, 5000, 64};
	enum { N = sizeof from / sizeof from[0] };
	void *b[N];
	for (unsigned i = 0; i < N; i++) {
		size_t n = from[i];
		if (i == 3)
			b[i] = arr_memalign(256, n = 300); /* an interior pointer of a class block */
		else if (i == 4)
			b[i] = arr_memalign((size_t)4 << 20, n = 100); /* aligned to a segment */
		else
			b[i] = arr_malloc(n);
		CHECK(b[i] != NULL);
		if (b[i] == NULL)
			return;
		memset(b[i], 0x40 + (int)i, n < to[i] ? n : to[i]);
		void *q = arr_realloc(b[i], to[i]);
		CHECK(q != NULL && q != b[i]);
		if (q == NULL)
			return;
		for (size_t k = 0; k < (n < to[i] ? n : to[i]); k++)
			if (((unsigned char *)q)[k] != 0x40 + i) {
				CHECK(!"realloc's copy");
				break;
			}
		b[i] = q;
	}
	/* (huge blocks' frees are not in `frees`) */
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_blocks == n0 + N && st.frees > frees0);
	for (unsigned i = 0; i < N; i++)
		arr_free(b[i]);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_blocks == n0 && st.live_usable == use0);
	CHECK(arr__spanheap_is_valid());
}

/* ---- frees of span blocks: the statistics back to their start ---- */

static void test_frees(void)
{
	struct arr_alloc_stats st;
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t n0 = st.live_blocks, req0 = st.live_requested, use0 = st.live_usable, frees0 = st.frees;
	enum { N = 64 };
	static void *b[N];
	/* 2-8 KiB (sparse classes: the first of a class stay span blocks) and
	 * 9 KiB-1 MiB */
	for (unsigned i = 0; i < N; i++) {
		size_t size = i % 2 ? 9000 + (size_t)i * 15000 : 2100 + (size_t)i * 90;
		b[i] = arr_malloc(size);
		CHECK(b[i] != NULL && in_span_heap(b[i]));
	}
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_blocks == n0 + N);
	for (unsigned i = 0; i < N; i++) {
		size_t size = i % 2 ? 9000 + (size_t)i * 15000 : 2100 + (size_t)i * 90;
		if (i % 3 == 0)
			arr_free(b[i]);
		else if (i % 3 == 1)
			arr_free_sized(b[i], size);
		else
			CHECK(arr_realloc(b[i], 0) == NULL);
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_blocks == n0 && st.live_requested == req0 && st.live_usable == use0);
	CHECK(st.frees - frees0 >= N);
	CHECK(arr__spanheap_is_valid());
}

/* ---- the sparse classes' front, with the class the fast path computed ---- */

static void test_sparse_front(void)
{
	long long sparse_min;
	CHECK(arr_alloc_get_option("sparse_min", &sparse_min) == 0);
	struct arr_alloc_stats st;
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t n0 = st.live_blocks, req0 = st.live_requested;
	enum { N = 2 * (ARR__SPARSE_END - ARR__SPARSE_FIRST) + 5 };
	static void *b[N];
	static size_t sz[N];
	unsigned n = 0;
	/* a size inside each sparse class, not its block size: malloc's and
	 * calloc's miss with no page of the class, span blocks (calloc's zero) */
	for (unsigned c = ARR__SPARSE_FIRST; c < ARR__SPARSE_END; c++) {
		size_t size = arr__class_size[c] - 9;
		if ((long long)arr__class_size[c] <= sparse_min)
			continue;
		CHECK(arr__size_class(size) == c);
		sz[n] = size;
		b[n] = arr_malloc(size);
		CHECK(b[n] != NULL && in_span_heap(b[n]));
		if (b[n] != NULL)
			memset(b[n], 0xa5, size);
		n++;
		sz[n] = size;
		b[n] = arr_calloc(1, size);
		CHECK(b[n] != NULL && in_span_heap(b[n]));
		const unsigned char *z = b[n];
		size_t nz = 0;
		for (size_t i = 0; z != NULL && i < size; i++)
			nz += z[i] != 0;
		CHECK(nz == 0);
		n++;
	}
	/* a sparse class whose current page (aligned requests' blocks) is
	 * full: a plain malloc's miss finds the page, not the empty one, and
	 * is a span block still (the class is not dense) */
	unsigned c = arr__size_class(1152);
	CHECK(arr__class_size[c] == 1152 && c >= ARR__SPARSE_FIRST && c < ARR__SPARSE_END);
	size_t reserved = arr__class_slices[c] * ARR__SLICE_SIZE / 1152;
	void **al = malloc(reserved * sizeof *al);
	CHECK(al != NULL);
	for (size_t i = 0; al != NULL && i < reserved; i++) {
		/* aligned to 512: over-allocated in class 1152 (656 + 512 - 16);
		 * aligned to 256 or less it would be a span block (below) */
		al[i] = arr_memalign(512, 656);
		CHECK(al[i] != NULL && !in_span_heap(al[i]) && ((uintptr_t)al[i] & 511) == 0);
	}
	if (al != NULL && al[0] != NULL) {
		struct arr__page *page = arr__page_of(al[0]);
		CHECK(page->free == NULL && page->used == reserved && arr__tl_heap->pages[c] == page);
		CHECK(!(arr__tl_heap->dense >> (c - ARR__SPARSE_FIRST) & 1));
	}
	sz[n] = 1100;
	b[n] = arr_malloc(1100);
	CHECK(b[n] != NULL && in_span_heap(b[n]));
	n++;
	/* aligned to 256 or less, a request of a sparse class or a span-heap
	 * size is a span block (256-byte aligned) as its malloc would be */
	static const size_t asz[][2] = {{64, 1152}, {32, 3000}, {256, 5000}, {128, 20000}};
	for (unsigned i = 0; i < sizeof asz / sizeof asz[0]; i++) {
		sz[n] = asz[i][1];
		CHECK(arr_posix_memalign(&b[n], asz[i][0], asz[i][1]) == 0);
		CHECK(b[n] != NULL && in_span_heap(b[n]) && ((uintptr_t)b[n] & 255) == 0 &&
		      arr_malloc_usable_size(b[n]) >= asz[i][1]);
		n++;
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_blocks == n0 + n + reserved);
	for (size_t i = 0; al != NULL && i < reserved; i++)
		arr_free(al[i]);
	free(al);
	for (unsigned i = 0; i < n; i++)
		arr_free_sized(b[i], sz[i]);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_blocks == n0 && st.live_requested == req0);
	CHECK(arr__spanheap_is_valid());
}

/* ---- a heap taken over from an exited thread is young ---- */

static void *exit_at_once(void *arg)
{
	(void)arg;
	arr_free(arr_malloc(64));
	return NULL;
}

static void *young_probe(void *arg)
{
	uint64_t *age = arg;
	arr_free(arr_malloc(64)); /* takes a heap: the exited thread's */
	struct arr__heap *h = arr__tl_heap;
	age[0] = arr__heap_frees(h) - h->born_frees;
	pairs(ARR__TRIM_NOW_AGE);
	age[1] = arr__heap_frees(h) - h->born_frees;
	return NULL;
}

/* A thread that takes over the heap of one that exited does not trim its
 * pages as they empty (arr__page_trim_now) until it has made
 * ARR__TRIM_NOW_AGE frees: short-lived threads leave their pages to the
 * next. A heap of its own is old from the start. */
static void test_young_heap(void)
{
	pthread_t t;
	uint64_t age[2] = {0, 0};
	CHECK(pthread_create(&t, NULL, exit_at_once, NULL) == 0 && pthread_join(t, NULL) == 0);
	CHECK(pthread_create(&t, NULL, young_probe, age) == 0 && pthread_join(t, NULL) == 0);
	CHECK(age[0] < ARR__TRIM_NOW_AGE && age[1] >= ARR__TRIM_NOW_AGE);
	struct arr__heap *h = arr__tl_heap;
	CHECK(h != &arr__heap_empty && arr__heap_frees(h) - h->born_frees >= ARR__TRIM_NOW_AGE);
}

static void *test_frees_thread(void *arg)
{
	test_sparse_front();
	test_frees();
	return arg;
}

/* ---- out of memory: NULL and ENOMEM ---- */

static int oom_child(void)
{
	/* the address space as it is plus a little: no new 4 MiB segment */
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0;
	if (f == NULL || fscanf(f, "%lu", &pages) != 1)
		return 3;
	fclose(f);
	struct rlimit rl = {.rlim_cur = pages * 4096 + (2u << 20), .rlim_max = RLIM_INFINITY};
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		return 3;
	int rc = 2; /* never out of memory */
	for (unsigned i = 0; i < 1000; i++) {
		errno = 0;
		void *p = i % 2 ? arr_malloc(300000) : arr_calloc(1, 300000);
		if (p == NULL) {
			rc = errno == ENOMEM ? 0 : 4;
			if (rc != 0)
				fprintf(stderr, "%s: NULL with errno %d\n", i % 2 ? "malloc" : "calloc", errno);
			break;
		}
	}
	/* and the other entry point too, now that memory is out */
	errno = 0;
	if (rc == 0 && (arr_calloc(1, 300000) != NULL || errno != ENOMEM))
		rc = 5;
	errno = 0;
	if (rc == 0 && (arr_malloc(300000) != NULL || errno != ENOMEM))
		rc = 6;
	return rc;
}

static void test_enomem(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return;
#endif
#endif
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(oom_child());
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "enomem child: status %#x\n", st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	/* these tests are of a thread's own heap from its first malloc: no
	 * light threads (tests/allocator/light.c has those) */
	arr_alloc_set_option("light", 0);
	arr_free(arr_malloc(1)); /* initialised: the class tables filled */
	test_sparse_bound();
	test_refill_routes();
	test_realloc_moves();
	/* in a fresh heap: the bound's test left its classes dense (their
	 * pages go back, and the classes sparse again, only at a tick); main
	 * still counts as busy there, so sparse classes for two threads */
	run_thread_sparse(test_frees_thread);
	test_young_heap();
	test_enomem();
	if (failures)
		fprintf(stderr, "spanpath: %d checks failed\n", failures);
	return failures != 0;
}
