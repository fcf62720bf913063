/*
 * tests/allocator/growth.c - what a fresh huge mapping does to the span
 * heap's free memory: it is growth the span heap cannot serve (blocks above
 * 1 MiB are mapped on their own), so the span blocks freed before it are
 * given back first, however young, and the footprint grows by what the
 * program holds. glibc maps such blocks above its mmap threshold and unmaps
 * them at their free, so they never wait resident while a bigger block is
 * mapped (`allocrr analyze` drop-in: +4 MB over glibc before, its decoder's
 * 800 KB buffers freed just before 1.2 MB ones were mapped).
 *
 * At most 4 times the mapping: more is left to the span heap's trim and
 * decay. A huge block served from the freed mappings kept for reuse is no
 * growth: the span heap's free memory stays resident then. Runs in a fresh process
 * (the op clock starts at 0, far from any purge delay); public API only:
 * residency by mincore. Exits non-zero if a check fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "allocrr/alloc.h"

#include "check.h"

enum { SPAN = 800 * 1024, HUGE = 1200 * 1024, PAGES = SPAN / 4096 };

static unsigned char *filled(size_t size, int c)
{
	unsigned char *p = arr_malloc(size);
	CHECK(p != NULL);
	if (p != NULL)
		memset(p, c, size);
	return p;
}

int main(void)
{
	unsigned char *b[4];
	for (int i = 0; i < 4; i++)
		if ((b[i] = filled(SPAN, 0x21 + i)) == NULL)
			return 1;
	arr_free(b[0]);
	arr_free(b[2]);
	/* freed a few operations ago: resident, as the decay keeps them */
	CHECK(resident_pages(b[0], SPAN) >= PAGES - 2);
	CHECK(resident_pages(b[2], SPAN) >= PAGES - 2);

	/* a fresh mapping: the free spans go first, the live ones stay */
	unsigned char *h = filled(HUGE, 0x42);
	if (h == NULL)
		return 1;
	CHECK(resident_pages(b[0], SPAN) == 0);
	CHECK(resident_pages(b[2], SPAN) == 0);
	CHECK(resident_pages(b[1], SPAN) >= PAGES - 1);
	CHECK(b[1][0] == 0x22 && b[1][SPAN - 1] == 0x22 && b[3][SPAN / 2] == 0x24);

	/* the mapping kept at its free serves the next huge request: no
	 * growth, so a span freed meanwhile stays resident */
	arr_free(h);
	arr_free(b[1]);
	unsigned char *h2 = filled(HUGE, 0x43);
	if (h2 == NULL)
		return 1;
	CHECK(h2 == h);
	CHECK(resident_pages(b[1], SPAN) >= PAGES - 2);

	/* more free span memory than SPAN_GROWTH_RATIO (4) times a fresh
	 * mapping: left to the trim and the decay, resident */
	unsigned char *c[8];
	for (int i = 0; i < 8; i++)
		if ((c[i] = filled(SPAN, 0x51 + i)) == NULL)
			return 1;
	for (int i = 0; i < 8; i++)
		arr_free(c[i]);
	unsigned char *h3 = filled(HUGE, 0x44);
	if (h3 == NULL)
		return 1;
	unsigned kept = 0;
	for (int i = 0; i < 8; i++)
		kept += resident_pages(c[i], SPAN);
	CHECK(kept >= 8 * (PAGES - 2));

	arr_free(h3);
	arr_free(h2);
	arr_free(b[3]);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
