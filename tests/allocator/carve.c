/*
 * tests/allocator/carve.c - fresh pages carved by class pages while free
 * slices wait for their purge (allocator/pool.c arr__pool_carved_fresh): a
 * class page carves its span an OS page at a time, and a carve past the part
 * that came resident faults fresh memory in while the pool may hold free
 * dirty slices no take wanted. Each slice's worth of such fresh pages gives
 * back a slice of the oldest, above the floor (docs/allocator.md, "Fresh
 * pages while free slices wait").
 *
 *   1. one block each of eleven classes below 256 bytes, smallest first
 *      (none borrows from a bigger class's page): a page each, one OS page
 *      of it carved;
 *   2. 45 pages of 1 000-byte blocks filled and freed: 44 free dirty slices
 *      wait in the pool (the purge delay is far: nothing expires);
 *   3. the eleven pages carved to their ends: ~160 fresh OS pages.
 * Then as many OS pages as step 3 carved fresh, less the debt not yet a
 * slice, are purged, and the free dirty slices fell by as many slices. With
 * purge_delay < 0 (nothing is ever purged) the same steps purge nothing.
 *
 * Linked with arr_alloc_debug (ARR_DEBUG 2: the pool's invariant walk after
 * every pool call). Exits non-zero if a check fails.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "allocrr/alloc.h"
#include "check.h"
#include "internal.h"

/* below 256 bytes: a class from there borrows a bigger class's free block
 * before a carve that would fault (heap.c find_page) */
static const size_t sizes[] = {16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224};
#define NSIZES (sizeof sizes / sizeof *sizes)
#define BIG 1000
#define BIG_PAGES 45

static uint64_t purged_pages(void)
{
	struct arr_alloc_stats st;
	CHECK(arr_alloc_stats_get(&st) == 0);
	return st.pages_purged;
}

/* OS pages carved of page */
static size_t carved(const struct arr__page *page)
{
	return ((size_t)page->capacity * page->block_size + ARR__OS_PAGE - 1) / ARR__OS_PAGE;
}

/* The three steps; returns the OS pages step 3 carved. */
static size_t steps(void **keep, void **big, size_t *nkeep, uint64_t *dirty2, uint64_t *purged2)
{
	struct arr__page *pages[NSIZES];
	size_t before = 0, n = 0;
	for (size_t k = 0; k < NSIZES; k++) {
		keep[n] = arr_malloc(sizes[k]);
		CHECK(keep[n] != NULL);
		pages[k] = arr__page_of(keep[n++]);
		CHECK(pages[k]->cls == arr__size_class(sizes[k])); /* its own page */
		for (size_t j = 0; j < k; j++)
			CHECK(pages[j] != pages[k]);
		before += carved(pages[k]);
	}
	size_t per = ARR__SLICE_SIZE / 1024, nbig = (size_t)BIG_PAGES * per;
	for (size_t i = 0; i < nbig; i++) {
		big[i] = arr_malloc(BIG);
		CHECK(big[i] != NULL);
		memset(big[i], 1, BIG);
	}
	for (size_t i = 0; i < nbig; i++)
		arr_free(big[i]);
	*dirty2 = arr__dirty_slices;
	*purged2 = purged_pages();
	CHECK(*dirty2 >= BIG_PAGES - 2);
	size_t after = 0;
	for (size_t k = 0; k < NSIZES; k++) {
		/* the rest of the page's blocks: carved to its end, no new page */
		uint32_t left = pages[k]->reserved - pages[k]->used;
		for (uint32_t i = 0; i < left; i++) {
			keep[n] = arr_malloc(sizes[k]);
			CHECK(keep[n] != NULL && arr__page_of(keep[n]) == pages[k]);
			memset(keep[n++], 2, sizes[k]);
		}
		after += carved(pages[k]);
	}
	*nkeep = n;
	return after - before;
}

static void *keep[70000], *big[BIG_PAGES * 64];

int main(int argc, char **argv)
{
	bool never = argc > 1 && strcmp(argv[1], "never") == 0;
	CHECK(arr_alloc_set_option("young", 0) == 0);
	CHECK(arr_alloc_set_option("aged", 0) == 0);
	CHECK(arr_alloc_set_option("purge_delay", never ? -1 : 10000000) == 0);
	uint64_t p0, d0;
	size_t nkeep, fresh = steps(keep, big, &nkeep, &d0, &p0);
	uint64_t purged = purged_pages() - p0;
	uint64_t dirty = arr__dirty_slices;
	printf("carve%s: %zu OS pages carved fresh, %llu purged, free dirty slices %llu -> %llu\n",
	       never ? " never" : "", fresh, (unsigned long long)purged, (unsigned long long)d0,
	       (unsigned long long)dirty);
	CHECK(fresh >= 2 * ARR__CARVE_DEBT_PAGES); /* enough for two payments */
	if (never) {
		CHECK(purged == 0 && dirty == d0);
	} else {
		/* the debt paid a whole number of slices at a time, from the
		 * free dirty slices: what is left unpaid is less than a
		 * thread's payment */
		uint64_t slice = ARR__SLICE_SIZE / ARR__OS_PAGE;
		CHECK(purged % slice == 0);
		CHECK(purged <= fresh && purged + ARR__CARVE_DEBT_PAGES > fresh);
		CHECK(dirty + purged / slice == d0);
	}
	for (size_t i = 0; i < nkeep; i++)
		arr_free(keep[i]);
	CHECK(arr__pool_is_valid());
	if (failures)
		fprintf(stderr, "carve: %d checks failed\n", failures);
	return failures ? 1 : 0;
}
