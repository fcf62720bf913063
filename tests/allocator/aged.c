/*
 * tests/allocator/aged.c - the full purge delay grows with the program's age
 * (option `aged`, arr__purge_limit): memory freed at operation s is purged
 * from operation ~2s on (aged = 2), not purge_delay (100 000) after s, so a
 * long-running program's phase that frees memory it takes back later (a
 * server's list emptied and filled again) keeps it resident; at most
 * ARR__AGED_CAP (64) x purge_delay; aged = 0 restores the fixed delay. Runs
 * in a fresh process (the op clock starts at 0), one thread; public API only:
 * residency by mincore. Exits non-zero if a check fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "allocrr/alloc.h"

#include "check.h"

enum { NBIG = 12, BIG = 200000 };
static unsigned char *big[NBIG];

/* every other big block freed between live ones: holes no growth fills */
static void phase_holes(void)
{
	for (int i = 0; i < NBIG; i++)
		big[i] = written(BIG);
	for (int i = 1; i < NBIG; i += 2)
		arr_free(big[i]);
}

static void phase_end(void)
{
	for (int i = 0; i < NBIG; i += 2)
		arr_free(big[i]);
}

#define ALL_THERE (NBIG / 2 * (BIG / 4096) * 3 / 4)

int main(void)
{
	long long aged = -1, delay = -1;
	CHECK(arr_alloc_get_option("aged", &aged) == 0 && aged == 2);
	CHECK(arr_alloc_get_option("purge_delay", &delay) == 0 && delay == 100000);

	/* a longer phase at the start, all freed: its memory, the high-water
	 * mark, is purged within 400 000 operations. The phases below take it
	 * back below the mark: not growth, so the young delay (memory freed
	 * before the footprint last grew) does not purge their holes */
	unsigned char *warm[NBIG + 4];
	for (int i = 0; i < NBIG + 4; i++)
		warm[i] = written(BIG);
	for (int i = 0; i < NBIG + 4; i++)
		arr_free(warm[i]);
	pairs(200000);
	CHECK(resident_pages(warm[0], BIG) == 0 && resident_pages(warm[NBIG], BIG) == 0);

	/* 400 000 operations in, a phase's holes: 150 000 operations later,
	 * past the fixed delay, they are still there (due at ~2 x 400 000) */
	phase_holes();
	pairs(75000);
	CHECK(odd_resident(big, NBIG, BIG) > ALL_THERE);
	/* ~1 000 000 operations in: they were freed before half of it, gone
	 * (a stamp lags by up to two heap ticks, 8 192 operations) */
	pairs(230000);
	CHECK(odd_resident(big, NBIG, BIG) <= BIG / 4096); /* one may wait in the decay's cache */
	phase_end();

	/* aged = 0: the fixed delay, 100 000 operations, whatever the age */
	CHECK(arr_alloc_set_option("aged", 0) == 0);
	phase_holes();
	pairs(40000);
	CHECK(odd_resident(big, NBIG, BIG) > ALL_THERE);
	pairs(75000);
	CHECK(odd_resident(big, NBIG, BIG) <= BIG / 4096);
	phase_end();

	/* the cap: at purge_delay 2 000 the delay is at most 64 x 2 000 = 128 000
	 * operations, although half the age is ~650 000 */
	CHECK(arr_alloc_set_option("aged", 2) == 0 && arr_alloc_set_option("purge_delay", 2000) == 0);
	phase_holes();
	pairs(50000);
	CHECK(odd_resident(big, NBIG, BIG) > ALL_THERE);
	pairs(25000);
	CHECK(odd_resident(big, NBIG, BIG) <= BIG / 4096);
	phase_end();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
