/*
 * tests/allocator/fastfree.c - what free's fast path (allocator/api.c
 * heap_free) computes without a multiply or a reload: the page of a block in
 * any slice of a span of several slices (the slice's descriptor, minus its
 * head_off in bytes), the decrement-and-test of `used` and of the tick
 * countdown (arr__dec32/64_was_le1), a tick every ARR__TICK_OPS frees,
 * whether or not each free empties its page, every free counted by that
 * countdown, and the segment map's byte per
 * 4 MiB. Exits non-zero if a check fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "allocrr/alloc.h"
#include "internal.h"

#include "check.h"

static void test_dec(void)
{
	uint32_t u = 2;
	CHECK(!arr__dec32_was_le1(&u) && u == 1);
	CHECK(arr__dec32_was_le1(&u) && u == 0);
	CHECK(arr__dec32_was_le1(&u) && u == UINT32_MAX); /* from 0: a free with no block out */
	u = UINT32_MAX;
	CHECK(!arr__dec32_was_le1(&u) && u == UINT32_MAX - 1);
	uint64_t v = ARR__TICK_OPS;
	CHECK(!arr__dec64_was_le1(&v) && v == ARR__TICK_OPS - 1);
	v = 1;
	CHECK(arr__dec64_was_le1(&v) && v == 0);
	CHECK(arr__dec64_was_le1(&v) && v == UINT64_MAX); /* a fresh heap's 0 ticks */
}

/* Blocks of a class whose span has three slices or more, every one: each
 * block's page is its span's first descriptor, and a block freed from the
 * last slice is the next one its class hands out (pushed on that page). */
static void test_multislice(void)
{
	unsigned c = 0;
	for (unsigned k = 1; k < ARR__NCLASSES && arr__class_size[k] <= arr__opt.fast_max; k++)
		if (arr__class_slices[k] >= 3) {
			c = k;
			break;
		}
	CHECK(c != 0);
	if (c == 0)
		return;
	size_t bs = arr__class_size[c];
	size_t n = (size_t)arr__class_slices[c] * ARR__SLICE_SIZE / bs * 2;
	void **v = malloc(n * sizeof *v);
	CHECK(v != NULL);
	unsigned far = 0; /* blocks past a span's second slice */
	for (size_t i = 0; i < n; i++) {
		v[i] = arr_malloc(bs);
		CHECK(v[i] != NULL);
		struct arr__page *page = arr__page_of(v[i]);
		CHECK(page->cls == c && page->head_off == 0);
		CHECK((uint8_t *)v[i] >= page->start &&
		      (uint8_t *)v[i] + bs <= page->start + (size_t)page->slices * ARR__SLICE_SIZE);
		CHECK(arr_malloc_usable_size(v[i]) == bs);
		size_t slice = (size_t)((uint8_t *)v[i] - page->start) >> ARR__SLICE_SHIFT;
		if (slice >= 2) {
			far++;
			CHECK(arr__slice_desc(v[i])->head_off == ARR__HEAD_OFF(slice));
		}
	}
	CHECK(far > 0);
	/* the last block of the first span: in its last slice */
	size_t last = (size_t)arr__class_slices[c] * ARR__SLICE_SIZE / bs - 1;
	void *q = v[last];
	CHECK(arr__page_of(q) == arr__page_of(v[0]));
	arr_free(q);
	void *again = arr_malloc(bs);
	CHECK(again == q);
	for (size_t i = 0; i < n; i++)
		arr_free(v[i]);
	free(v);
}

/* The tick comes every ARR__TICK_OPS frees: pairs whose free empties its
 * page (free_emptied), then frees that leave a block in it (the plain push). */
static void test_tick(void)
{
	void *keep = arr_malloc(40);
	struct arr__heap *h = arr__tl_heap;
	CHECK(h != &arr__heap_empty);
	CHECK(h->tick_left >= 1 && h->tick_left <= ARR__TICK_OPS);
	uint64_t frees0 = arr__heap_frees(h), frees = 0;
	for (int round = 0; round < 2; round++) {
		/* round 0: the only block of a page of its own class, emptied
		 * by every free; round 1: next to `keep`, never emptied */
		size_t size = round == 0 ? 3000 : 40;
		void *p = arr_malloc(size);
		arr_free(p);
		uint64_t left = h->tick_left;
		for (uint64_t i = 1; i < left; i++) {
			p = arr_malloc(size);
			arr_free(p);
		}
		CHECK(h->tick_left == 1);
		p = arr_malloc(size);
		arr_free(p); /* ticks */
		CHECK(h->tick_left == ARR__TICK_OPS);
		frees += left + 1;
		/* every free counted, across the tick (the countdown folded in) */
		CHECK(arr__heap_frees(h) - frees0 == frees);
	}
	struct arr_alloc_stats st0, st1;
	CHECK(arr_alloc_stats_get(&st0) == 0);
	arr_free(keep);
	CHECK(arr__heap_frees(h) - frees0 == frees + 1);
	CHECK(arr_alloc_stats_get(&st1) == 0);
	CHECK(st1.frees - st0.frees == 1 && st1.mallocs == st0.mallocs);
}

/* The segment map: a byte per segment, set for ours only, and nothing past
 * 47 bits. */
static void test_segmap(void)
{
	void *small = arr_malloc(24), *huge = arr_malloc(8 << 20);
	CHECK(arr__segment_known(small) && arr__segment_known(huge));
	CHECK(arr__segmap[(uintptr_t)small >> ARR__SEG_SHIFT] == 1);
	int local;
	CHECK(!arr__segment_known(&local));
	CHECK(!arr__segment_known((void *)((uintptr_t)1 << 47)));
	CHECK(!arr__segment_known((void *)UINTPTR_MAX));
	/* a 4 MiB-aligned mapping of our own, next to nothing of the allocator's */
	size_t len = 3 * ARR__SEG_SIZE;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	if (m != MAP_FAILED) {
		uint8_t *seg = (uint8_t *)(((uintptr_t)m + ARR__SEG_SIZE - 1) & ~(uintptr_t)(ARR__SEG_SIZE - 1));
		CHECK(!arr__segment_known(seg) && !arr__segment_known(seg + ARR__SEG_SIZE - 1));
		munmap(m, len);
	}
	uintptr_t hs = (uintptr_t)huge >> ARR__SEG_SHIFT;
	arr_free(huge); /* unmapped (or cached: still ours) */
	CHECK(arr__segmap[hs] == 0 || arr__segmap[hs] == 1);
	arr_free(small);
}

int main(void)
{
	/* blocks of 1-8 KiB from their classes' pages, not the span heap */
	CHECK(arr_alloc_set_option("sparse", 0) == 0);
	arr_free(arr_malloc(1)); /* the thread's heap */
	test_dec();
	test_multislice();
	test_tick();
	test_segmap();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
