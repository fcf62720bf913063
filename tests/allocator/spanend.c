/*
 * tests/allocator/spanend.c - which end of a free span the span heap carves
 * a block from (spanheap.c carve_high): a free span whose low end was purged
 * (known zero) and whose high end was freed just now (resident). Below the
 * footprint's high-water mark the block comes from the low end, as always
 * (the fresh pages it faults in raise no peak); at the mark it comes from
 * the high end, reusing the resident pages instead of faulting in fresh
 * ones beside them. Runs in a fresh process; public API only: addresses
 * and residency by mincore. Exits non-zero if a check fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "allocrr/alloc.h"

#include "check.h"

enum { BIG = 256 << 10, WANT = 200 << 10, BARRIER = 16 << 10, HUGE = 8 << 20 };

/* a (low) and b (high) adjacent, b freed last: [a, b + BIG) one free span,
 * a's pages purged, b's resident */
static void low_clean_high_dirty(unsigned char *a, unsigned char *b)
{
	CHECK(b == a + BIG);
	arr_free(a);
	arr_alloc_purge();
	CHECK(resident_pages(a, BIG) == 0);
	arr_free(b);
	CHECK(resident_pages(b, BIG) == BIG / 4096);
}

int main(void)
{
	unsigned char *a = written(BIG), *b = written(BIG), *barrier = written(BARRIER);
	CHECK(barrier == b + BIG);

	/* below the high-water mark (a's pages were resident before): the low end */
	low_clean_high_dirty(a, b);
	unsigned char *p = written(WANT);
	CHECK(p == a);
	arr_free(p);
	arr_alloc_purge();

	/* at the mark: a huge block raised it with b live, then b is freed;
	 * the block takes b's resident pages, a's stay known zero */
	a = written(BIG);
	b = written(BIG);
	arr_free(a);
	arr_alloc_purge();
	unsigned char *huge = written(HUGE);
	arr_free(b);
	CHECK(resident_pages(a, BIG) == 0 && resident_pages(b, BIG) == BIG / 4096);
	p = written(WANT);
	CHECK(p == b + BIG - WANT);
	CHECK(resident_pages(a, BIG) == 0);

	/* the rest of the span stays free and whole: a block of its length fits */
	unsigned char *rest = arr_malloc(2 * BIG - WANT);
	CHECK(rest == a);
	arr_free(rest);
	arr_free(p);
	arr_free(huge);
	arr_free(barrier);
	if (failures)
		fprintf(stderr, "spanend: %d check(s) failed\n", failures);
	return failures != 0;
}
