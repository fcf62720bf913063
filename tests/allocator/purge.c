/*
 * tests/allocator/purge.c - what the span heap's purge leaves for the next
 * malloc: of two free spans of the same length, one purged and one still
 * resident, malloc takes the resident one, though the purge put the other
 * at the head of their bin (spanheap.c best_fit). Taking the purged one
 * would fault its pages in again while the resident one waits for its own
 * purge. Runs in a fresh process (the op clock starts at 0); public API
 * only: residency by mincore. Exits non-zero if a check fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "allocrr/alloc.h"

#include "check.h"

enum { SIZE = 300000, DELAY = 20000 };

int main(void)
{
	/* the full delay only (no young delay), short enough to pass here */
	CHECK(arr_alloc_set_option("young", 0) == 0);
	CHECK(arr_alloc_set_option("purge_delay", DELAY) == 0);
	unsigned char *b[5];
	for (int i = 0; i < 5; i++) {
		b[i] = arr_malloc(SIZE);
		CHECK(b[i] != NULL);
		if (b[i] == NULL)
			return 1;
		memset(b[i], 0x11 * (i + 1), SIZE);
	}
	/* b[1] and b[3], kept apart by live blocks: two free spans of one
	 * length. b[1] is freed first and purged first. */
	arr_free(b[1]);
	pairs(5000);
	arr_free(b[3]);
	pairs(7500); /* b[1] freed ~25 000 operations ago, b[3] ~15 000 */
	CHECK(resident_pages(b[1], SIZE) == 0);
	CHECK(resident_pages(b[3], SIZE) > SIZE / 4096 - 2);
	unsigned char *p = arr_malloc(SIZE);
	CHECK(p == b[3]);
	arr_free(p);
	for (int i = 0; i < 5; i += 2)
		arr_free(b[i]);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
