/*
 * tests/allocator/spangrow.c - the span heap's free memory gives way to
 * growth it cannot serve (arr__span_purge_for_growth): a program of few,
 * large calls frees span-heap blocks and then maps huge blocks; the freed
 * blocks' pages are given back, the oldest first, as much as the huge
 * blocks take, though neither the purge delay (100 000 operations) nor the
 * young delay (1 000 at least) has passed — the test makes a few hundred
 * operations in all. The youngest free spans, up to an eighth of the live
 * blocks (and 128 KiB), stay. The span heap's own growth (a block that no
 * free span fits) leaves the free spans resident: they are holes the next
 * blocks fill. And a huge block freed while a longer one is the newest
 * (outgrown: a table resized by copy) is unmapped at once, where one freed
 * otherwise is kept for reuse — until that rule has guessed wrong twice,
 * then such blocks are kept too; a longer request grows a kept mapping
 * with its pages; and a span block that realloc moves into a
 * huge block (a buffer grown past the largest class) gives its pages back
 * at once. First, a fresh heap's page is trimmed as it empties. Runs in a fresh process (the op clock starts at 0); public
 * API only: residency by mincore. Exits non-zero if a check fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "allocrr/alloc.h"

#include "check.h"

enum { SPAN = 480 << 10, PAGES = SPAN / 4096, NL = 10, NA = 24, NB = 16, NHUGE = 3, HUGE = 4 << 20 };
/* what a growth purge keeps: an eighth of the live span blocks, and 128 KiB */
enum { KEEP_PAGES = (NL * SPAN / 8 + (128 << 10)) / 4096 };
static unsigned char *live[NL], *a[NA], *c[2 * NB], *huge[NHUGE + 1];

static unsigned resident(unsigned char **v, int from, int to)
{
	unsigned n = 0;
	for (int i = from; i < to; i++)
		n += resident_pages(v[i], SPAN);
	return n;
}

/* A page of 1000-byte blocks filled and emptied: the OS pages purged
 * meanwhile (the trim as it empties). */
static uint64_t fill_empty_purged(void)
{
	static unsigned char *b[64];
	struct arr_alloc_stats st0, st1;
	for (int i = 0; i < 64; i++)
		b[i] = written(1000);
	arr_alloc_stats_get(&st0);
	for (int i = 0; i < 64; i++)
		arr_free(b[i]);
	arr_alloc_stats_get(&st1);
	return st1.pages_purged - st0.pages_purged;
}

int main(void)
{
	/* a heap of its own, never another thread's: its page is trimmed as it
	 * empties from the first (only a heap taken over from an exited thread
	 * waits 8 192 frees: allocator.spanpath) */
	CHECK(fill_empty_purged() >= 14);

	/* live span blocks throughout (4.7 MiB), so that the trim (at 8 x the
	 * live blocks + 4 MiB resident) never fires here */
	for (int i = 0; i < NL; i++)
		live[i] = written(SPAN);
	/* a phase's span blocks, every other one freed: 480 KiB holes */
	for (int i = 0; i < NA; i++)
		a[i] = written(SPAN);
	for (int i = 1; i < NA; i += 2)
		arr_free(a[i]);
	/* the span heap's own growth: a block too long for any hole comes
	 * from fresh memory, and the holes stay resident */
	unsigned char *longer = written(2 * SPAN);
	for (int i = 1; i < NA; i += 2)
		CHECK(resident(a, i, i + 1) == PAGES);
	/* the rest freed: 11 MiB free and resident */
	for (int i = 0; i < NA; i += 2)
		arr_free(a[i]);
	arr_free(longer);
	CHECK(resident(a, 0, NA) == NA * PAGES);

	/* growth it cannot serve: 12 MiB of huge blocks, kept live so no kept
	 * mapping serves the next; the free spans are purged as they come
	 * (counted by the statistics: a segment left wholly free and clean is
	 * unmapped, and the next huge block may be mapped at its address) */
	struct arr_alloc_stats st;
	arr_alloc_stats_get(&st);
	uint64_t purged0 = st.pages_purged;
	for (int i = 0; i < NHUGE; i++)
		huge[i] = written(HUGE);
	arr_alloc_stats_get(&st);
	CHECK(st.pages_purged - purged0 >= (NA + 2) * PAGES - KEEP_PAGES);

	/* oldest first: every other one of 2 x NB blocks freed, in order (each
	 * a free span between live ones), then a 2 MiB huge block at the
	 * footprint's high-water mark again (12 MiB huge, 12 MiB live, 7.5 MiB
	 * free span blocks): the five oldest go (5 x 480 KiB >= 2 MiB), the
	 * youngest stay */
	for (int i = 0; i < 2 * NB; i++)
		c[i] = written(SPAN);
	for (int i = 1; i < 2 * NB; i += 2)
		arr_free(c[i]);
	huge[NHUGE] = written(2 << 20);
	for (int i = 1; i < 9; i += 2)
		CHECK(resident(c, i, i + 1) <= 2); /* the four oldest (pages shared at their ends aside) */
	for (int i = NB + 1; i < 2 * NB; i += 2)
		CHECK(resident(c, i, i + 1) == PAGES); /* the youngest half */

	for (int i = 0; i <= NHUGE; i++)
		arr_free(huge[i]);

	/* outgrown: a 2 MiB table, then its 4 MiB successor; the old one is
	 * unmapped (mincore fails on it), the newest, freed, is kept */
	unsigned char *old = written(2 << 20), *new = written(4 << 20);
	arr_free(old);
	CHECK(resident_pages_or(old, 2 << 20, 99999) == 99999);
	arr_free(new);
	CHECK(resident_pages_or(new, 4 << 20, 99999) == (4 << 20) / 4096);

	/* the rule learns: a request the cache cannot serve settles the last
	 * drop's bet, lost if the dropped mapping would have served it. The
	 * drop above (2 MiB) is lost by the next 2 MiB request, the next drop
	 * by a 1.5 MiB one; after two lost bets a block freed while a longer
	 * one is the newest is kept, as a churn of huge blocks of random sizes
	 * wants */
	for (int round = 0; round < 2; round++) {
		arr_alloc_purge();
		unsigned char *x = written(2 << 20), *y = written(4 << 20);
		arr_free(x);
		if (round == 0) {
			CHECK(resident_pages_or(x, 2 << 20, 99999) == 99999); /* dropped */
			arr_free(written(3 << 19));                           /* 1.5 MiB: lost */
		} else {
			CHECK(resident_pages_or(x, 2 << 20, 99999) == (2 << 20) / 4096); /* kept */
		}
		arr_free(y);
	}
	/* a request longer than every kept mapping grows the longest (if half
	 * as long), in place or moved, its pages resident: a calloc clears
	 * what was kept, the rest is fresh */
	arr_alloc_purge();
	unsigned char *k2 = written(2 << 20);
	arr_free(k2);
	arr_alloc_stats_get(&st);
	uint64_t zeroed0 = st.calloc_zeroed;
	unsigned char *k3 = arr_calloc(1, 3 << 20);
	CHECK(k3 != NULL);
	if (k3 != NULL) {
		CHECK(resident_pages(k3, 2 << 20) >= (2 << 20) / 4096 - 1); /* the kept pages */
		size_t nz = 0;
		for (size_t k = 0; k < (3 << 20); k++)
			nz += k3[k] != 0;
		CHECK(nz == 0);
		arr_alloc_stats_get(&st);
		CHECK(st.calloc_zeroed - zeroed0 <= (2 << 20)); /* only the kept part cleared */
		arr_free(k3);
	}
	/* a buffer grown out of the span heap (realloc past the largest
	 * class, into a huge block): the old block's pages go at once, where a
	 * span block freed otherwise waits for the decay; the contents move */
	unsigned char *buf = written(SPAN), *kept = written(SPAN);
	for (size_t k = 0; k < SPAN; k++)
		buf[k] = (unsigned char)(k * 7 + 1);
	arr_free(kept);
	CHECK(resident_pages(kept, SPAN) == PAGES); /* freed: kept resident for reuse */
	unsigned char *grown = arr_realloc(buf, 3 << 20);
	CHECK(grown != NULL && grown != buf);
	if (grown != NULL) {
		CHECK(resident_pages(buf, SPAN) <= 2); /* moved: given back (its end pages aside) */
		size_t bad = 0;
		for (size_t k = 0; k < SPAN; k++)
			bad += grown[k] != (unsigned char)(k * 7 + 1);
		CHECK(bad == 0);
		arr_free(grown);
	}
	for (int i = 0; i < 2 * NB; i += 2)
		arr_free(c[i]);
	for (int i = 0; i < NL; i++)
		arr_free(live[i]);
	arr_alloc_stats_get(&st);
	CHECK(st.live_blocks == 0);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
