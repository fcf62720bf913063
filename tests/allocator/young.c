/*
 * tests/allocator/young.c - the purge delay of a young program
 * (arr__purge_limit): memory a program frees in its first operations and
 * leaves free while its footprint grows is given back after a quarter of the
 * operations it has run (at least 1 000), not after the full `purge_delay`
 * (100 000), which is longer than a whole small program; without growth it
 * waits for the full delay (a program that reuses its free memory steadily
 * is not made to fault it in again); taking back memory purged earlier,
 * below the resident high-water mark, is not growth; from 400 000
 * operations on the young delay is `purge_delay` itself (the full delay,
 * grown with the program's age by `aged`, is longer by then: memory freed
 * before the footprint grows waits purge_delay, not half the age; the span
 * heap's own growth purges nothing at once). Runs in a fresh process
 * (the op clock starts at 0); public API only: residency by mincore, purges
 * by the statistics. Exits non-zero if a check fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "allocrr/alloc.h"

#include "check.h"

enum { NBIG = 12, BIG = 200000 };
static unsigned char *big[NBIG];

/* The phase with every other big block kept: the odd ones are holes
 * between live blocks (the last one before `pin`), which no block longer
 * than BIG can take. */
static unsigned char *pin;
static void phase_holes(void)
{
	for (int i = 0; i < NBIG; i++)
		big[i] = written(BIG);
	pin = written(BIG);
	for (int i = 1; i < NBIG; i += 2)
		arr_free(big[i]);
}

static unsigned big_resident(void)
{
	unsigned n = 0;
	for (int i = 0; i < NBIG; i++)
		n += resident_pages(big[i], BIG);
	return n;
}

/* Huge blocks (own mappings), written: fresh memory above the high-water
 * mark, i.e. growth. */
enum { NHUGE = 3, HUGE = 2 << 20, NGROWN = 16, GROWN = 700 << 10 };
static void grow(void)
{
	void *h[NHUGE];
	for (int i = 0; i < NHUGE; i++) {
		h[i] = arr_malloc(HUGE);
		CHECK(h[i] != NULL);
		if (h[i])
			memset(h[i], 1, HUGE);
	}
	for (int i = 0; i < NHUGE; i++)
		arr_free(h[i]);
}

int main(void)
{
	/* young, ~6 000 operations in; no growth since the phase's frees: the
	 * holes (every other big block, freed between live ones) wait for the
	 * full delay */
	phase_holes();
	CHECK(odd_resident(big, NBIG, BIG) > NBIG / 2 * (BIG / 4096) * 3 / 4);
	pairs(30000); /* 60 000 operations: under the full delay of 100 000 */
	CHECK(odd_resident(big, NBIG, BIG) > NBIG / 2 * (BIG / 4096) * 3 / 4);

	/* the span heap's own footprint grows (blocks too long for the holes,
	 * carved from fresh memory): what waited a quarter of the clock is
	 * given back. Not by the growth purge (arr__span_purge_for_growth: the
	 * span heap's own growth purges none of its free spans) but by the
	 * young delay, at the next tick; with young=0 the holes would wait
	 * for the full delay, 100 000 operations, not yet run */
	unsigned char *grown[NGROWN];
	for (int i = 0; i < 2; i++)
		grown[i] = written(GROWN);
	pairs(10000); /* past a heap tick (every 4 096 frees) */
	CHECK(odd_resident(big, NBIG, BIG) == 0);
	for (int i = 0; i < NBIG; i += 2)
		arr_free(big[i]);
	for (int i = 0; i < 2; i++)
		arr_free(grown[i]);
	arr_free(pin);
	grow(); /* huge blocks: the rest goes too */
	pairs(10000);
	CHECK(big_resident() == 0);

	/* taking purged memory back is not growth: the big blocks again, every
	 * other one freed, then blocks too long for their holes, carved from
	 * purged (clean) memory below the high-water mark; the holes wait */
	for (int i = 0; i < NBIG; i++) {
		big[i] = arr_malloc(BIG);
		CHECK(big[i] != NULL);
		if (big[i])
			memset(big[i], 0x5a, BIG);
	}
	for (int i = 0; i < NBIG; i += 2)
		arr_free(big[i]);
	unsigned char *longer[NBIG / 4];
	for (int i = 0; i < NBIG / 4; i++) {
		longer[i] = arr_malloc(2 * BIG);
		CHECK(longer[i] != NULL);
		if (longer[i])
			memset(longer[i], 0x3c, 2 * BIG);
	}
	pairs(30000);
	unsigned holes = 0;
	for (int i = 0; i < NBIG; i += 2)
		holes += resident_pages(big[i], BIG);
	CHECK(holes > NBIG / 2 * (BIG / 4096) * 3 / 4);
	for (int i = 1; i < NBIG; i += 2)
		arr_free(big[i]);
	for (int i = 0; i < NBIG / 4; i++)
		arr_free(longer[i]);

	/* grown up: 500 000 operations in, the young delay is purge_delay.
	 * Growth of the span heap's own (blocks too long for the holes
	 * every other big block leaves, 11 MB of fresh memory: a new high-water
	 * mark): growth that the span heap cannot serve, huge blocks, gives its
	 * free spans back whatever their age (arr__span_purge_for_growth) */
	pairs(180000);
	for (int i = 0; i < NBIG; i++)
		big[i] = written(BIG);
	for (int i = 1; i < NBIG; i += 2)
		arr_free(big[i]);
	for (int i = 0; i < NGROWN; i++)
		grown[i] = written(GROWN);
	CHECK(odd_resident(big, NBIG, BIG) > NBIG / 2 * (BIG / 4096) * 3 / 4);
	pairs(30000);
	CHECK(odd_resident(big, NBIG, BIG) > NBIG / 2 * (BIG / 4096) * 3 / 4);
	pairs(60000);                                      /* 180 000 operations since: past the delay */
	CHECK(odd_resident(big, NBIG, BIG) <= BIG / 4096); /* one may wait with the decay's 128 KiB cache */
	for (int i = 0; i < NBIG; i += 2)
		arr_free(big[i]);
	for (int i = 0; i < NGROWN; i++)
		arr_free(grown[i]);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
