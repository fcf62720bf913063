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
 * The oldest free spans first, as much as the mapping: the youngest stay
 * for the span heap's next blocks. A huge block served from the freed mappings kept for reuse is no
 * growth: the span heap's free memory stays resident then; and growth below
 * the footprint's high-water mark gives nothing back (`mark`). Runs in a fresh process
 * (the op clock starts at 0, far from any purge delay); public API only:
 * residency by mincore. Exits non-zero if a check fails.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include "allocrr/alloc.h"
#include "internal.h" /* arr__busy_heaps: the census of threads that allocate */

#include "check.h"

enum { SPAN = 800 * 1024, HUGE = 1200 * 1024, PAGES = SPAN / 4096 };

static atomic_bool stop;

/* A second thread that keeps allocating: the census counts two busy heaps */
static void *churn(void *arg)
{
	(void)arg;
	void *p[512];
	while (!atomic_load(&stop)) { /* pages taken and given back: the pool's lock, where the census runs */
		for (int i = 0; i < 512; i++)
			p[i] = arr_malloc(400);
		for (int i = 0; i < 512; i++)
			arr_free(p[i]);
	}
	return NULL;
}

static unsigned char *filled(size_t size, int c)
{
	unsigned char *p = arr_malloc(size);
	CHECK(p != NULL);
	if (p != NULL)
		memset(p, c, size);
	return p;
}

/* main's share of the churn: enough calls that the census counts it busy */
static void churn_a_while(void)
{
	void *p[512];
	for (int r = 0; r < 8; r++) {
		for (int i = 0; i < 512; i++)
			p[i] = arr_malloc(400);
		for (int i = 0; i < 512; i++)
			arr_free(p[i]);
	}
}

/*
 * With two threads busy allocating, a fresh huge mapping still gives the
 * span heap's free spans back (a pool segment would not: spangrow.c); the
 * drop-in `allocrr analyze` runs two threads. In a process of its own
 * (`threads`), so that the mapping raises the footprint's high-water mark.
 */
static int two_threads(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, churn, NULL) == 0);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		churn_a_while();
	while (atomic_load(&arr__busy_heaps) < 2 &&
	       (clock_gettime(CLOCK_MONOTONIC, &now), now.tv_sec - t0.tv_sec < 10));
	unsigned char *d[4];
	for (int i = 0; i < 4; i++)
		if ((d[i] = filled(SPAN, 0x61 + i)) == NULL)
			return 1;
	arr_free(d[0]);
	arr_free(d[2]);
	CHECK(resident_pages(d[0], SPAN) >= PAGES - 2 && resident_pages(d[2], SPAN) >= PAGES - 2);
	churn_a_while();
	unsigned busy = atomic_load(&arr__busy_heaps);
	unsigned char *h = filled(HUGE, 0x45);
	CHECK(busy >= 2);
	CHECK(resident_pages(d[0], SPAN) == 0);
	CHECK(resident_pages(d[2], SPAN) == 0);
	CHECK(resident_pages(d[1], SPAN) >= PAGES - 1 && d[3][SPAN - 1] == 0x64);
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	arr_free(h);
	arr_free(d[1]);
	arr_free(d[3]);
	return 0;
}

/*
 * Growth below the high-water mark makes no peak, so it gives nothing back:
 * a freed huge mapping kept for reuse stays while the span heap takes fresh
 * pages under the mark (else a program that churns huge blocks among small
 * ones maps most of them afresh, a page fault per page), and goes once the
 * growth reaches the mark.
 */
static int below_the_mark(void)
{
	enum { BIG = 40 << 20, KEPT = 2 << 20 };
	/* the mark: 40 MB at once, unmapped at its free (no mapping that long is kept) */
	unsigned char *big = filled(BIG, 0x71);
	if (big == NULL)
		return 1;
	arr_free(big);
	unsigned char *h = filled(KEPT, 0x72);
	if (h == NULL)
		return 1;
	arr_free(h);
	CHECK(resident_pages(h, KEPT) >= KEPT / 4096 - 1); /* kept, resident */

	/* 3.2 MB of fresh span pages, far below the mark: the mapping stays */
	unsigned char *s[60];
	for (int i = 0; i < 4; i++)
		if ((s[i] = filled(SPAN, 0x73)) == NULL)
			return 1;
	/* the next request of its length gets it back, resident before any
	 * write (a fresh mapping has nothing resident) */
	unsigned char *h2 = arr_malloc(KEPT);
	CHECK(h2 == h);
	CHECK(h2 != NULL && resident_pages(h2, KEPT) >= KEPT / 4096 - 1);
	arr_free(h2);

	/* span blocks up to past the mark: the kept mapping goes before it, so
	 * the next request is mapped afresh (not asked of the old address,
	 * which the kernel may have handed to a span segment since) */
	for (int i = 4; i < 60; i++)
		if ((s[i] = filled(SPAN, 0x75)) == NULL)
			return 1;
	unsigned char *h3 = arr_malloc(KEPT);
	CHECK(h3 != NULL && resident_pages(h3, KEPT) <= 1);
	arr_free(h3);
	CHECK(s[0][0] == 0x73 && s[59][SPAN - 1] == 0x75);
	for (int i = 0; i < 60; i++)
		arr_free(s[i]);
	return 0;
}

/*
 * Growth outside the allocator (memory the program maps itself) while
 * freed memory waits for its purge delay: the process's peak would be the
 * sum of both, where glibc gave its freed memory back at the frees. The
 * process's resident size is read at the allocator's slow calls (at most
 * once per 65 536 operations or 1 MiB of its own growth); as much as grows
 * outside its footprint at the process's peak is purged from the waiting
 * memory. With no such growth, the same calls leave the freed memory
 * resident.
 */
static long statm_rss_pages(void)
{
	char buf[128];
	FILE *f = fopen("/proc/self/statm", "r");
	long a = 0, r = -1;
	if (f != NULL) {
		if (fgets(buf, sizeof buf, f) != NULL && sscanf(buf, "%ld %ld", &a, &r) != 2)
			r = -1;
		fclose(f);
	}
	return r;
}

static int outside_growth(void)
{
	enum { N = 24 * 1024, SZ = 1000, STEP = 1 << 20, STEPS = 24, BIG = 64 << 20 };
	static unsigned char *b[N];
	/* the footprint's mark far above what follows: the growths below are
	 * not the allocator's own peak (so its purge before growth stays out) */
	unsigned char *big = filled(BIG, 0x30);
	if (big == NULL)
		return 1;
	arr_free(big);
	for (int i = 0; i < N; i++)
		if ((b[i] = filled(SZ, 0x31)) == NULL)
			return 1;
	for (int i = 0; i < N; i++)
		arr_free(b[i]);
	/* a buffer grown by realloc, a quarter megabyte a step (the reads'
	 * occasions): nothing grows outside, the freed memory stays (the
	 * delay is far off) */
	size_t len = 2 << 20;
	unsigned char *buf = filled(len, 0x32);
	for (int s = 0; s < STEPS && buf != NULL; s++) {
		buf = arr_realloc(buf, len + STEP / 4);
		CHECK(buf != NULL);
		if (buf != NULL)
			memset(buf + len, 0x33, STEP / 4);
		len += STEP / 4;
	}
	if (buf == NULL)
		return 1;
	unsigned in = 0;
	for (int i = 0; i < N; i += 16)
		in += resident_pages(b[i] - (uintptr_t)b[i] % 4096, 4096) != 0;
	CHECK(in >= N / 16 * 9 / 10);
	long before = statm_rss_pages();
	CHECK(before > 0);

	/* 24 MB mapped and written by the program, a step at a time, the
	 * buffer grown by a megabyte a step: as much of the freed memory goes */
	unsigned char *m = mmap(NULL, (size_t)STEPS * STEP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return 1;
	long peak = 0;
	for (int s = 0; s < STEPS && buf != NULL; s++) {
		memset(m + (size_t)s * STEP, 0x34, STEP);
		buf = arr_realloc(buf, len + STEP);
		CHECK(buf != NULL);
		if (buf != NULL)
			memset(buf + len, 0x35, STEP);
		len += STEP;
		long r = statm_rss_pages();
		if (r > peak)
			peak = r;
	}
	in = 0;
	for (int i = 0; i < N; i += 16)
		in += resident_pages(b[i] - (uintptr_t)b[i] % 4096, 4096) != 0;
	CHECK(in <= N / 16 / 4);
	/* the process grew by much less than what it mapped and grew (without:
	 * by all of it) */
	CHECK(peak - before < (long)STEPS * 2 * STEP / 4096 * 3 / 4);
	printf("outside growth: %u of %d sampled pages of the freed blocks resident; rss +%ld pages for %d mapped and grown\n",
	       in, N / 16, peak - before, STEPS * 2 * STEP / 4096);
	munmap(m, (size_t)STEPS * STEP);
	arr_free(buf);
	return 0;
}

#ifdef __SANITIZE_ADDRESS__
/* Does a read of an untouched anonymous page make it resident here (the
 * kernel backs it with a page of its own, not the shared zero page; seen
 * on a 6.18 kernel)? Read 64 fresh pages and look at the RSS. */
static bool reads_fault_in(void)
{
	enum { N = 64 };
	volatile unsigned char *m = mmap(NULL, N * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return false;
	long before = statm_rss_pages();
	unsigned sum = 0;
	for (int i = 0; i < N; i++)
		sum += m[(size_t)i * 4096];
	long grown = statm_rss_pages() - before;
	munmap((void *)m, N * 4096);
	return sum == 0 && grown >= N / 2;
}
#endif

int main(int argc, char **argv)
{
#ifdef __SANITIZE_ADDRESS__
	/* Under ASan every read of fresh memory reads its shadow first: where
	 * such reads fault pages in, the shadow's pages grow the process's RSS
	 * by as much as the program's, the allocator counts that as growth
	 * outside it (ext_growth) and purges for it, and these two checks of
	 * what it keeps resident measure ASan, not the allocator (the release
	 * build runs them) */
	if ((argc == 1 || !strcmp(argv[1], "outside")) && reads_fault_in()) {
		printf("skip: under ASan on a kernel that faults pages in on reads, the shadow's reads are growth "
		       "outside the allocator\n");
		return 77;
	}
#endif
	if (argc > 1 && !strcmp(argv[1], "mark")) { /* a process of its own: its own high-water mark */
		int rc = below_the_mark();
		if (failures)
			fprintf(stderr, "%d check(s) failed\n", failures);
		return rc || failures != 0;
	}
	if (argc > 1 && !strcmp(argv[1], "outside")) { /* a process of its own: the op clock far from the delay */
		int rc = outside_growth();
		if (failures)
			fprintf(stderr, "%d check(s) failed\n", failures);
		return rc || failures != 0;
	}
	if (argc > 1 && !strcmp(argv[1], "threads")) { /* a process of its own: its own high-water mark */
		int rc = two_threads();
		if (failures)
			fprintf(stderr, "%d check(s) failed\n", failures);
		return rc || failures != 0;
	}
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

	/* eight free spans between live ones, 6.4 MB, against a fresh 1.2 MB
	 * mapping: the oldest go, as much as the growth (whole spans: at most
	 * one more), the youngest stay resident for the next blocks */
	unsigned char *c[16];
	for (int i = 0; i < 16; i++)
		if ((c[i] = filled(SPAN, 0x51 + i)) == NULL)
			return 1;
	for (int i = 0; i < 16; i += 2)
		arr_free(c[i]);
	unsigned char *h3 = filled(HUGE, 0x44);
	if (h3 == NULL)
		return 1;
	unsigned kept = 0;
	for (int i = 0; i < 16; i += 2)
		kept += resident_pages(c[i], SPAN);
	unsigned gone = 8 * PAGES - kept, grown = HUGE / 4096;
	CHECK(gone >= grown - 2 && gone <= grown + PAGES);
	CHECK(resident_pages(c[0], SPAN) == 0);
	CHECK(resident_pages(c[14], SPAN) >= PAGES - 2);
	if (gone < grown - 2 || gone > grown + PAGES)
		fprintf(stderr, "purged %u pages of the free spans for a growth of %u\n", gone, grown);
	for (int i = 1; i < 16; i += 2)
		arr_free(c[i]);

	arr_free(h3);
	arr_free(h2);
	arr_free(b[3]);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
