/*
 * tests/allocator/api.c - the allocator's API contract, glibc semantics
 * included: errno, overflow, alignments, zeroing, realloc, usable size, stats.
 * Exits non-zero on the first failed check.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "allocrr/alloc.h"
#include "allocrr/error.h"

#include "check.h"

static struct arr_alloc_stats st; /* big: keep it off the stack */

static void test_overflow(void)
{
	errno = 0;
	CHECK(arr_malloc(SIZE_MAX) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(arr_malloc(PTRDIFF_MAX + (size_t)1) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(arr_malloc(SIZE_MAX - 4096) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(arr_calloc(SIZE_MAX / 4 + 2, 4) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(arr_calloc((size_t)1 << 33, (size_t)1 << 33) == NULL && errno == ENOMEM);
	void *p = arr_malloc(10);
	CHECK(p != NULL);
	errno = 0;
	CHECK(arr_reallocarray(p, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(arr_realloc(p, SIZE_MAX) == NULL && errno == ENOMEM);
	arr_free(p); /* still ours after the failed reallocs */
	errno = 0;
	CHECK(arr_pvalloc(SIZE_MAX - 10) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(arr_memalign(64, SIZE_MAX - 10) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(arr_aligned_alloc((size_t)1 << 20, SIZE_MAX - ((size_t)1 << 19)) == NULL && errno == ENOMEM);
	void *out = (void *)1;
	CHECK(arr_posix_memalign(&out, 64, SIZE_MAX - 10) == ENOMEM && out == (void *)1);
}

static void test_zero_size(void)
{
	void *p = arr_malloc(0);
	CHECK(p != NULL && arr_malloc_usable_size(p) >= 1);
	arr_free(p);
	p = arr_calloc(0, 5);
	CHECK(p != NULL);
	arr_free(p);
	p = arr_malloc(100);
	CHECK(arr_realloc(p, 0) == NULL); /* glibc: frees */
	p = arr_realloc(NULL, 50);
	CHECK(p != NULL && arr_malloc_usable_size(p) >= 50);
	arr_free(p);
	arr_free(NULL);
	CHECK(arr_malloc_usable_size(NULL) == 0);
	p = arr_pvalloc(0);
	CHECK(p != NULL && ((uintptr_t)p & 4095) == 0 && arr_malloc_usable_size(p) >= 4096);
	arr_free(p);
}

static void test_posix_memalign_einval(void)
{
	size_t bad[] = {0, 1, 2, 4, 12, 24, 48, 100, 4097, (size_t)3 << 20};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		void *out = (void *)1;
		errno = 1234;
		CHECK(arr_posix_memalign(&out, bad[i], 16) == EINVAL);
		CHECK(out == (void *)1);
		CHECK(errno == 1234); /* returned, not set */
	}
	/* glibc 2.36 memalign/aligned_alloc round a non-power-of-two alignment up */
	void *p = arr_memalign(48, 100);
	CHECK(p != NULL && ((uintptr_t)p & 63) == 0);
	arr_free(p);
	p = arr_aligned_alloc(3, 10);
	CHECK(p != NULL && ((uintptr_t)p & 3) == 0);
	arr_free(p);
	errno = 0;
	CHECK(arr_memalign(SIZE_MAX / 2 + 2, 8) == NULL && errno == EINVAL);
}

static void test_alignments(void)
{
	size_t sizes[] = {1, 8, 24, 100, 4096, 5000, 70000, (size_t)1 << 20, (size_t)3 << 20};
	for (size_t align = 8; align <= ((size_t)2 << 20); align <<= 1) {
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			void *ptrs[3] = {0};
			for (int k = 0; k < 3; k++) {
				void *p = NULL;
				int rc = arr_posix_memalign(&p, align, sizes[s]);
				CHECK(rc == 0 && p != NULL);
				if (p == NULL)
					continue;
				CHECK(((uintptr_t)p & (align - 1)) == 0);
				CHECK(arr_malloc_usable_size(p) >= sizes[s]);
				memset(p, 0x5a, sizes[s]);
				ptrs[k] = p;
			}
			void *q = arr_aligned_alloc(align, sizes[s]);
			CHECK(q != NULL && ((uintptr_t)q & (align - 1)) == 0);
			void *r = arr_memalign(align, sizes[s]);
			CHECK(r != NULL && ((uintptr_t)r & (align - 1)) == 0);
			/* an aligned block can be realloc'd and keeps its bytes */
			unsigned char *g = arr_realloc(ptrs[0], sizes[s] + 100);
			CHECK(g != NULL && g[0] == 0x5a && g[sizes[s] - 1] == 0x5a);
			arr_free(g);
			arr_free(ptrs[1]);
			arr_free(ptrs[2]);
			arr_free(q);
			arr_free(r);
		}
	}
	for (int i = 0; i < 100; i++) {
		void *p = arr_malloc((size_t)i * 13 + 9);
		CHECK(((uintptr_t)p & 15) == 0); /* malloc's 16-byte alignment above 8 bytes */
		arr_free(p);
	}
	void *v = arr_valloc(10);
	CHECK(v != NULL && ((uintptr_t)v & 4095) == 0);
	arr_free(v);
}

static void test_calloc_zeroes_dirty_memory(void)
{
	size_t sizes[] = {8, 16, 48, 200, 1000, 4000, 30000, 100000, 600000, (size_t)2 << 20};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		enum { N = 64 };
		unsigned char *v[N];
		for (int i = 0; i < N; i++) {
			v[i] = arr_malloc(sizes[s]);
			memset(v[i], 0xff, sizes[s]);
		}
		for (int i = 0; i < N; i++)
			arr_free(v[i]);
		for (int i = 0; i < N; i++) {
			v[i] = arr_calloc(1, sizes[s]);
			CHECK(v[i] != NULL);
			size_t bad = 0;
			for (size_t k = 0; k < sizes[s]; k++)
				bad += v[i][k] != 0;
			CHECK(bad == 0);
		}
		for (int i = 0; i < N; i++)
			arr_free(v[i]);
	}
	/* purged memory comes back zero and calloc knows it */
	CHECK(arr_alloc_set_option("purge_delay", 0) == 0);
	unsigned char *big[40];
	for (int i = 0; i < 40; i++) {
		big[i] = arr_malloc(60000);
		memset(big[i], 0xee, 60000);
	}
	for (int i = 0; i < 40; i++)
		arr_free(big[i]);
	arr_alloc_purge();
	arr_alloc_stats_get(&st);
	uint64_t skipped0 = st.calloc_skipped;
	CHECK(st.pages_purged > 0);
	for (int i = 0; i < 40; i++) {
		big[i] = arr_calloc(60000, 1);
		size_t bad = 0;
		for (size_t k = 0; k < 60000; k++)
			bad += big[i][k] != 0;
		CHECK(bad == 0);
	}
	arr_alloc_stats_get(&st);
	CHECK(st.calloc_skipped > skipped0);
	for (int i = 0; i < 40; i++)
		arr_free(big[i]);
	CHECK(arr_alloc_set_option("purge_delay", 100000) == 0);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

static size_t check_fill(const unsigned char *p, size_t n, unsigned seed)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += p[i] != (unsigned char)(i * 31 + seed);
	return bad;
}

static void test_realloc(void)
{
	/* grow through every class into huge and back down */
	size_t n = 1;
	unsigned char *p = arr_malloc(n);
	fill(p, n, 7);
	while (n < ((size_t)16 << 20)) {
		size_t m = n + n / 3 + 1;
		unsigned char *q = arr_realloc(p, m);
		CHECK(q != NULL);
		CHECK(check_fill(q, n, 7) == 0);
		fill(q, m, 7);
		p = q;
		n = m;
	}
	while (n > 1) {
		size_t m = n / 2;
		unsigned char *q = arr_realloc(p, m);
		CHECK(q != NULL && check_fill(q, m, 7) == 0);
		CHECK(arr_malloc_usable_size(q) >= m);
		p = q;
		n = m;
	}
	arr_free(p);
	/* huge grows by mremap: contents kept, several sizes and alignments */
	unsigned char *h = arr_memalign((size_t)1 << 20, (size_t)5 << 20);
	fill(h, (size_t)5 << 20, 3);
	unsigned char *h2 = arr_realloc(h, (size_t)50 << 20);
	CHECK(h2 != NULL && check_fill(h2, (size_t)5 << 20, 3) == 0);
	CHECK(arr_malloc_usable_size(h2) >= ((size_t)50 << 20));
	h2 = arr_realloc(h2, (size_t)3 << 20);
	CHECK(h2 != NULL && check_fill(h2, (size_t)3 << 20, 3) == 0);
	arr_free(h2);
	/* a huge block shrunk to a span-heap size of 128 KiB or more stays
	 * where it is (mremap gives its tail back, as glibc's realloc of a
	 * mapped chunk does), the bytes kept; below 128 KiB it moves */
	size_t sizes[] = {(size_t)1 << 20, 600000, (size_t)128 << 10};
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		unsigned char *b = arr_malloc((size_t)8 << 20);
		fill(b, (size_t)8 << 20, 5);
		unsigned char *c = arr_realloc(b, sizes[i]);
		CHECK(c == b && check_fill(c, sizes[i], 5) == 0);
		CHECK(arr_malloc_usable_size(c) >= sizes[i] && arr_malloc_usable_size(c) < sizes[i] + 4096);
		arr_free(c);
	}
	unsigned char *b = arr_malloc((size_t)8 << 20);
	fill(b, 100000, 6);
	unsigned char *c = arr_realloc(b, 100000);
	CHECK(c != b && check_fill(c, 100000, 6) == 0);
	arr_free(c);
}

/* The smallest class that holds s, from the stats' class table. */
static size_t class_for(size_t s)
{
	size_t best = SIZE_MAX;
	for (unsigned c = 0; c < st.nclasses; c++)
		if (st.classes[c].block_size >= s && st.classes[c].block_size < best)
			best = st.classes[c].block_size;
	return best;
}

static void test_usable_size(void)
{
	CHECK(arr_alloc_stats_get(&st) == 0 && st.nclasses > 100);
	for (size_t s = 1; s < 300000; s += s / 8 + 1) {
		unsigned char *p = arr_malloc(s);
		size_t u = arr_malloc_usable_size(p);
		CHECK(u >= s);
		if (s > 128)
			CHECK((class_for(s) - s) * 8 <= s); /* a class wastes at most 12.5% */
		/* a block borrowed from a larger class (up to four classes up) */
		CHECK(u <= class_for(s) || u <= 2 * s);
		memset(p, 1, u); /* the whole usable size is ours */
		arr_free(p);
	}
	/* "a power of two plus a header", 1 to 16 KiB: the first 64th above
	 * 2^k has its own class (sqlite's 1032 -> 1040), the first eighth is
	 * split at 1/32 and 17/256 rounded up to 16 (4368 -> 4368) */
	for (unsigned k = 10; k <= 13; k++) {
		size_t two = (size_t)1 << k, step = two >> 6;
		size_t third = two + ((((size_t)17 << (k - 8)) + 15) & ~(size_t)15);
		for (size_t s = two + 1; s <= two + (two >> 3); s += 8) {
			size_t limit = s <= two + step       ? two + step
				       : s <= two + 2 * step ? two + 2 * step
				       : s <= third          ? third
							     : two + 8 * step;
			CHECK(class_for(s) >= s && class_for(s) <= limit);
		}
	}
	CHECK(class_for(1032) == 1040 && class_for(4368) == 4368);
	/* and at 256 and 512 bytes, in 16-byte steps: a header of up to 16
	 * bytes over 256 (redis's 262-byte strings -> 272, not 288), of up to
	 * 32 over 512, 17/256 of 512 rounded up (546 -> 560) */
	for (size_t s = 257; s <= 288; s++)
		CHECK(class_for(s) == (s <= 272 ? 272 : 288));
	for (size_t s = 513; s <= 576; s++)
		CHECK(class_for(s) == (s <= 528 ? 528 : s <= 560 ? 560 : 576));
	CHECK(class_for(262) == 272);
}

/*
 * Every size up to 1 KiB (malloc's direct table from the size to its
 * class's current page to 128 bytes, the class table above), in a thread of its own (a fresh heap): two pages'
 * worth of blocks each, so that each class changes its current page at
 * least once; every block its size's class (or a borrowed larger one, at
 * most twice the request, before the class has a page), distinct, and the
 * last of them its own class's.
 */
static void *small_sizes(void *arg)
{
	(void)arg;
	enum { MAX_N = 2 * 65536 / 8 + 64 };
	static void *v[MAX_N];
	for (size_t s = 0; s <= 1024; s++) {
		size_t want = class_for(s ? s : 1);
		size_t n = 2 * 65536 / want + 64;
		for (size_t i = 0; i < n; i++) {
			v[i] = arr_malloc(s);
			CHECK(v[i] != NULL);
			size_t u = arr_malloc_usable_size(v[i]);
			CHECK(u >= s && (u == want || u <= 2 * s));
			*(size_t *)v[i] = i; /* every block ours alone: read back below */
		}
		CHECK(arr_malloc_usable_size(v[n - 1]) == want);
		for (size_t i = n; i-- > 0;) {
			CHECK(*(size_t *)v[i] == i);
			arr_free(v[i]);
		}
	}
	return NULL;
}

/* realloc reads the usable size from the block's descriptor: in place while
 * the new size fits and is at least half of it, moved (contents kept)
 * otherwise, for a plain block and an aligned one inside its block. */
static void test_realloc_usable(void)
{
	for (size_t s = 16; s <= 1024; s += 8) {
		unsigned char *p = arr_malloc(s);
		size_t u = arr_malloc_usable_size(p);
		fill(p, u, 5);
		CHECK(arr_realloc(p, u) == p && arr_realloc(p, u / 2 + 1) == p);
		unsigned char *q = arr_realloc(p, u + 1);
		CHECK(q != NULL && q != p && check_fill(q, u / 2 + 1, 5) == 0);
		arr_free(q);
	}
	/* 64-byte aligned blocks inside larger ones: usable runs to the block's end */
	for (int i = 0; i < 64; i++) {
		unsigned char *p = arr_memalign(64, 100);
		CHECK(p != NULL && ((uintptr_t)p & 63) == 0);
		size_t u = arr_malloc_usable_size(p);
		CHECK(u >= 100);
		fill(p, u, 9);
		CHECK(arr_realloc(p, u) == p && check_fill(p, u, 9) == 0);
		unsigned char *q = arr_realloc(p, u + 1);
		CHECK(q != NULL && check_fill(q, u, 9) == 0);
		arr_free(q);
	}
}

static void test_stats(void)
{
	struct arr_alloc_stats before;
	/* every block in a class (sizes to 3.5 KB: not the span heap's sparse classes) */
	CHECK(arr_alloc_set_option("sparse", 0) == 0);
	arr_alloc_stats_get(&before);
	enum { N = 5000 };
	static void *v[N];
	size_t req = 0;
	for (int i = 0; i < N; i++) {
		size_t s = (size_t)(i % 700) * 5 + 1;
		v[i] = arr_malloc(s);
		req += s;
	}
	void *huge = arr_malloc((size_t)8 << 20);
	arr_alloc_stats_get(&st);
	CHECK(st.live_blocks == before.live_blocks + N + 1);
	CHECK(st.live_requested == before.live_requested + req + ((size_t)8 << 20));
	CHECK(st.live_usable >= before.live_usable + req + ((size_t)8 << 20));
	CHECK(st.huge_blocks == before.huge_blocks + 1);
	CHECK(st.mapped >= st.live_usable);
	CHECK(st.nclasses > 100 && st.nclasses <= ARR_ALLOC_MAX_CLASSES);
	uint64_t live = 0;
	for (unsigned c = 0; c < st.nclasses; c++) {
		live += st.classes[c].live;
		CHECK(st.classes[c].live <= st.classes[c].capacity || st.classes[c].live == 0);
	}
	CHECK(live + st.huge_blocks == st.live_blocks);
	for (int i = 0; i < N; i++)
		arr_free_sized(v[i], (size_t)(i % 700) * 5 + 1);
	arr_free(huge);
	arr_alloc_stats_get(&st);
	CHECK(st.live_blocks == before.live_blocks);
	CHECK(st.live_usable == before.live_usable);
	CHECK(st.live_requested == before.live_requested);
	CHECK(st.huge_blocks == before.huge_blocks);
	CHECK(arr_alloc_set_option("sparse", 1) == 0);
}

/* The tests of the pool's slices with blocks above span_min run with the
 * span heap off (span_min 0: every size in its class), as before it. */
static long long span_min_saved = -1;
static void span_heap_off(void)
{
	if (span_min_saved < 0)
		CHECK(arr_alloc_get_option("span_min", &span_min_saved) == 0 && span_min_saved > 0);
	CHECK(arr_alloc_set_option("span_min", 0) == 0);
}

static void span_heap_on(void) { CHECK(arr_alloc_set_option("span_min", span_min_saved) == 0); }

static void test_options(void)
{
	long long v = 0;
	CHECK(arr_alloc_set_option("no_such_option", 1) == ARR_ENOTFOUND);
	CHECK(arr_alloc_set_option("mmap_threshold", -5) == ARR_ERANGE);
	CHECK(arr_alloc_parse_options("purge_delay=1234,mmap_threshold=64k") == 0);
	CHECK(arr_alloc_get_option("purge_delay", &v) == 0 && v == 1234);
	CHECK(arr_alloc_get_option("mmap_threshold", &v) == 0 && v == 65536);
	/* above the threshold: a mapping of its own */
	arr_alloc_stats_get(&st);
	uint64_t huge0 = st.huge_blocks;
	void *p = arr_malloc(100000);
	arr_alloc_stats_get(&st);
	CHECK(st.huge_blocks == huge0 + 1);
	arr_free(p);
	CHECK(arr_alloc_parse_options("purge_delay=x") < 0);
	CHECK(arr_alloc_parse_options("purge_delay=100000,mmap_threshold=1m") == 0);
	CHECK(arr_alloc_get_option("mmap_threshold", &v) == 0 && v == 1 << 20);
}

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Page faults while writing every OS page of [p, p + size). */
static long faults_touching(void *p, size_t size)
{
	long f0 = minor_faults();
	for (size_t k = 0; k < size; k += 4096)
		((volatile unsigned char *)p)[k] = 1;
	return minor_faults() - f0;
}

/*
 * A freed huge block's mapping is kept and serves the next huge request:
 * same address, no page faults; calloc clears it; a much shorter request
 * trims it; it goes when the footprint grows (clean slices taken), when the
 * purge delay has passed, and on arr_alloc_purge().
 */
static void test_huge_reuse(void)
{
	const size_t MB = (size_t)1 << 20;
	long long delay0 = 0;
	arr_alloc_get_option("purge_delay", &delay0);
	arr_alloc_set_option("purge_delay", 1LL << 40);
	arr_alloc_purge();

	unsigned char *p = arr_malloc(3 * MB);
	CHECK(p != NULL);
	CHECK(faults_touching(p, 3 * MB) >= 700); /* fresh: a fault an OS page */
	memset(p, 0xab, 3 * MB);
	arr_alloc_stats_get(&st);
	uint64_t mapped = st.mapped, huge = st.huge_blocks;
	arr_free(p);
	arr_alloc_stats_get(&st);
	CHECK(st.huge_blocks == huge - 1);
	CHECK(st.mapped == mapped); /* kept */

	unsigned char *q = arr_malloc(3 * MB - 100000); /* within 1/8: taken whole */
	CHECK(q == p);
	CHECK(faults_touching(q, 3 * MB - 100000) < 50);
	arr_free(q);

	arr_alloc_stats_get(&st);
	uint64_t zeroed = st.calloc_zeroed;
	unsigned char *r = arr_calloc(1, 3 * MB);
	CHECK(r == p);
	size_t nonzero = 0;
	for (size_t k = 0; r && k < 3 * MB; k++)
		nonzero += r[k] != 0;
	CHECK(nonzero == 0);
	arr_alloc_stats_get(&st);
	CHECK(st.calloc_zeroed == zeroed + 3 * MB);
	arr_free(r);

	/* half: the block is 1.5 MiB, the rest of the mapping its slack,
	 * still mapped and resident, trimmed only when memory is wanted */
	unsigned char *s = arr_malloc(MB + MB / 2);
	CHECK(s == p);
	CHECK(arr_malloc_usable_size(s) >= MB + MB / 2 && arr_malloc_usable_size(s) < MB + MB / 2 + 4096);
	arr_alloc_stats_get(&st);
	CHECK(st.mapped == mapped);
	CHECK(resident_pages(p + 2 * MB, MB / 2) == MB / 2 / 4096);
	/* its free gives the whole mapping back to the cache (re-taken whole) */
	arr_free(s);
	unsigned char *s2 = arr_malloc(3 * MB);
	CHECK(s2 == p && faults_touching(s2, 3 * MB) < 50);
	arr_free(s2);
	s = arr_malloc(MB + MB / 2);
	CHECK(s == p);
	memset(s, 0x5a, MB + MB / 2);

	/* growth: 16 MiB of new blocks take clean slices; the slack gives way
	 * (unmapped: mincore fails on it), the block keeps its bytes */
	enum { NB = 512 };
	static void *v[NB];
	for (int i = 0; i < NB; i++)
		v[i] = arr_malloc(32 * 1024);
	CHECK(resident_pages_or(p + 2 * MB, MB / 2, 99999) == 99999);
	size_t bad = 0;
	for (size_t k = 0; k < MB + MB / 2; k++)
		bad += s[k] != 0x5a;
	CHECK(bad == 0);
	arr_free(s);
	for (int i = 0; i < NB; i++)
		arr_free(v[i]);
	/* the cache gives way too: the 1.5 MiB mapping freed above is dropped
	 * when the footprint grows again past its high-water mark (4 MiB more
	 * blocks than before) */
	static void *w[NB / 4];
	for (int i = 0; i < NB; i++)
		v[i] = arr_malloc(32 * 1024);
	for (int i = 0; i < NB / 4; i++)
		w[i] = arr_malloc(32 * 1024);
	void *t = arr_malloc(MB + MB / 2);
	CHECK(t != NULL && faults_touching(t, MB + MB / 2) >= 350);
	arr_free(t);
	for (int i = 0; i < NB; i++)
		arr_free(v[i]);
	for (int i = 0; i < NB / 4; i++)
		arr_free(w[i]);

	/* expiry: 1 000 ops later (a tick every 4 096 frees) it is unmapped */
	arr_alloc_purge();
	arr_alloc_set_option("purge_delay", 1000);
	void *u = arr_malloc(2 * MB);
	faults_touching(u, 2 * MB);
	arr_free(u);
	arr_alloc_stats_get(&st);
	mapped = st.mapped;
	for (int i = 0; i < 3 * 4096; i++)
		arr_free(arr_malloc(64));
	arr_alloc_stats_get(&st);
	CHECK(st.mapped <= mapped - 2 * MB);

	/* and arr_alloc_purge() gives it back at once */
	arr_alloc_set_option("purge_delay", 1LL << 40);
	u = arr_malloc(2 * MB);
	arr_free(u);
	CHECK(arr_alloc_purge() >= 2 * MB);
	arr_alloc_set_option("purge_delay", delay0);
}

/*
 * A calloc'd block of a size class that calloc did not clear (known zero)
 * is writable at once: reading it first must not leave the kernel's zero
 * page behind for the first write to copy (a fault, and with threads an IPI).
 */
static void test_calloc_prefault(void)
{
	enum { SIZE = 45000, MAXN = 400 };
	static void *v[MAXN];
	int n = 0;
	unsigned char *b = NULL;
	arr_alloc_purge();
	while (n < MAXN) {
		arr_alloc_stats_get(&st);
		uint64_t skipped = st.calloc_skipped;
		v[n] = arr_calloc(1, SIZE);
		CHECK(v[n] != NULL);
		arr_alloc_stats_get(&st);
		if (st.calloc_skipped == skipped + SIZE) {
			b = v[n++];
			break;
		}
		n++;
	}
	CHECK(b != NULL); /* a fresh block came within MAXN */
	if (b != NULL) {
		unsigned sum = 0;
		for (size_t k = 0; k < SIZE; k += 4096)
			sum += ((volatile unsigned char *)b)[k];
		CHECK(sum == 0);
		CHECK(faults_touching(b, SIZE) <= 1);
	}
	for (int i = 0; i < n; i++)
		arr_free(v[i]);
}

/*
 * A known-zero calloc'd block above 64 KiB is left untouched, as glibc leaves
 * a fresh one: a program that callocs a big table and uses a corner of it
 * (git log --stat: 512 KB, 4 KB written) must not have the whole table
 * resident. The pages past the first one the carve may write stay out of
 * memory (mincore) until the program touches them.
 */
static void test_calloc_large_untouched(void)
{
	enum { SIZE = 512 << 10 };
	arr_alloc_purge();
	arr_alloc_stats_get(&st);
	uint64_t skipped = st.calloc_skipped;
	unsigned char *b = arr_calloc(32766, 16);
	CHECK(b != NULL);
	arr_alloc_stats_get(&st);
	CHECK(st.calloc_skipped >= skipped + SIZE - 32); /* known zero, no memset */
	if (b != NULL) {
		unsigned char *p = (unsigned char *)(((uintptr_t)b + 2 * 4096) & ~(uintptr_t)4095);
		static unsigned char vec[SIZE / 4096];
		size_t np = ((uintptr_t)b + 32766 * 16 - (uintptr_t)p) / 4096;
		unsigned in = 0;
		CHECK(mincore(p, np * 4096, vec) == 0);
		for (size_t i = 0; i < np; i++)
			in += vec[i] & 1;
		CHECK(in <= 2);
		CHECK(b[SIZE / 2] == 0 && b[32766 * 16 - 1] == 0);
		arr_free(b);
	}
}

/*
 * Single-threaded, a huge block about to be mapped makes every empty current
 * page give back all it carved: a 3000-byte block freed (its page empty,
 * kept current, one OS page carved), then 2 MiB taken; the next calloc of
 * 3000 bytes finds the page carved afresh, known zero, and skips its memset.
 */
static void test_trim_for_growth(void)
{
	void *p = arr_malloc(3000);
	CHECK(p != NULL);
	memset(p, 0xab, 3000);
	arr_free(p);
	void *big = arr_malloc((size_t)2 << 20);
	CHECK(big != NULL);
	arr_alloc_stats_get(&st);
	uint64_t skipped = st.calloc_skipped, zeroed = st.calloc_zeroed;
	unsigned char *q = arr_calloc(1, 3000);
	CHECK(q != NULL);
	arr_alloc_stats_get(&st);
	CHECK(st.calloc_skipped == skipped + 3000);
	CHECK(st.calloc_zeroed == zeroed);
	size_t nonzero = 0;
	for (size_t k = 0; q && k < 3000; k++)
		nonzero += q[k] != 0;
	CHECK(nonzero == 0);
	arr_free(q);
	arr_free(big);
}

/* 100,000 x 200 B freed, then 50,000 x 400 B: the 400s reuse the freed pages. */
static void test_contiguous_reuse(void)
{
	enum { N = 100000 };
	static void *v[N];
	for (int i = 0; i < N; i++)
		v[i] = arr_malloc(200);
	void *guard = arr_malloc(200);
	for (int i = 0; i < N; i++)
		arr_free(v[i]);
	arr_alloc_stats_get(&st);
	uint64_t mapped0 = st.mapped;
	for (int i = 0; i < N / 2; i++)
		v[i] = arr_malloc(400);
	arr_alloc_stats_get(&st);
	CHECK(st.mapped <= mapped0 + ((uint64_t)1 << 22)); /* at most one new segment */
	for (int i = 0; i < N / 2; i++)
		arr_free(v[i]);
	arr_free(guard);
}

/* Alignments of a segment (4 MiB) and more are served like glibc's, with
 * usable size, realloc (contents kept) and free working on them. */
static void test_big_alignments(void)
{
	static const size_t aligns[] = {(size_t)4 << 20, (size_t)16 << 20, (size_t)64 << 20};
	static const size_t sizes[] = {1, 100000, (size_t)5 << 20};
	for (size_t a = 0; a < sizeof aligns / sizeof *aligns; a++) {
		for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
			size_t align = aligns[a], size = sizes[s];
			void *p = (void *)1;
			CHECK(arr_posix_memalign(&p, align, size) == 0);
			CHECK(p != NULL && ((uintptr_t)p & (align - 1)) == 0);
			if (p == NULL || p == (void *)1)
				continue;
			CHECK(arr_malloc_usable_size(p) >= size);
			memset(p, 0x3c, size);
			unsigned char *q = arr_realloc(p, size + 3000);
			CHECK(q != NULL && q[0] == 0x3c && q[size - 1] == 0x3c);
			arr_free(q);
			void *m = arr_aligned_alloc(align, size);
			CHECK(m != NULL && ((uintptr_t)m & (align - 1)) == 0);
			arr_free(m);
			m = arr_memalign(align, size);
			CHECK(m != NULL && ((uintptr_t)m & (align - 1)) == 0);
			arr_free(m);
		}
	}
	CHECK(arr_alloc_stats_get(&st) == 0 && st.huge_blocks == 0);
}

/* A thread that only frees, on the fast path, still advances the purge
 * clock: a span freed earlier is purged within purge_delay operations. */
static void test_purge_on_fast_path(void)
{
	enum { N = 40000 };
	static void *v[N];
	long long old;
	CHECK(arr_alloc_get_option("purge_delay", &old) == 0);
	CHECK(arr_alloc_set_option("purge_delay", 1000) == 0);
	for (int i = 0; i < N; i++)
		v[i] = arr_malloc(64);
	void *big = arr_malloc(200000); /* a span of its own */
	memset(big, 1, 200000);
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t purged = st.pages_purged;
	arr_free(big); /* dirty; too young to purge */
	CHECK(arr_alloc_stats_get(&st) == 0 && st.pages_purged == purged);
	for (int i = 0; i < N; i += 2) /* frees that never empty a page */
		arr_free(v[i]);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.pages_purged > purged);
	for (int i = 1; i < N; i += 2)
		arr_free(v[i]);
	CHECK(arr_alloc_set_option("purge_delay", old) == 0);
}

static long rss_kb(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &res) != 2)
		res = -1;
	fclose(f);
	return res * 4;
}

/* After everything is freed, ordinary traffic (no malloc_trim) brings the
 * resident size back near where it started: retained pages are released and
 * dirty spans purged by operation count. */
static void test_rss_returns(void)
{
	enum { N = 60000 };
	static void *v[N];
	long base = rss_kb();
	for (int i = 0; i < N; i++) {
		size_t n = 64 + (size_t)(i * 7919 % 2000);
		v[i] = arr_malloc(n);
		memset(v[i], 7, n);
	}
	long peak = rss_kb();
	for (int i = 0; i < N; i++)
		arr_free(v[i]);
	for (int i = 0; i < 300000; i++) /* more than purge_delay operations */
		arr_free(arr_malloc(48));
	long after = rss_kb();
	CHECK(peak - base > 40000);
	CHECK(after - base < (peak - base) / 4);
	if (after - base >= (peak - base) / 4)
		fprintf(stderr, "rss: base %ld peak %ld after %ld KB\n", base, peak, after);
}

/* The tests below need a heap of their own: each runs in a new thread. */
static void run_in_thread(void *(*fn)(void *))
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fn, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
}

enum { TRIM_N = 16, TRIM_SZ = 4000 }; /* a whole slice of 4096-byte blocks */
/* With n threads holding a heap, an empty page is trimmed after n × 4 idle
 * ticks of 4096 frees (allocator/internal.h, ARR__MT_PURGE_FACTOR). */
enum { TICK = 4096, MT_FACTOR = 4 };

/* Fill a page of 4 KB blocks, touch them, free them all; returns the pages
 * purged before the frees, to compare with after some ticks (single-threaded
 * the page may be trimmed as it empties). */
static uint64_t fill_and_empty_page(void *v[TRIM_N])
{
	for (int i = 0; i < TRIM_N; i++) {
		v[i] = arr_malloc(TRIM_SZ);
		memset(v[i], 1, TRIM_SZ);
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t purged = st.pages_purged;
	for (int i = 0; i < TRIM_N; i++)
		arr_free(v[i]);
	return purged;
}

/* An empty current page that sees no free during a tick gives back what it
 * carved (but its first carve) at the next tick: 16 blocks of 4 KB, all
 * freed, then only other traffic. Kept, the page would hold 64 KB resident
 * that no other class and no purge can reach. */
static void *trim_idle_page(void *arg)
{
	void *v[TRIM_N];
	uint64_t purged = fill_and_empty_page(v);
	/* this thread and main: 2 × 4 idle ticks, plus the one that sees it
	 * emptied and one for the tick count's phase; all frees in another class */
	for (int i = 0; i < (2 * MT_FACTOR + 2) * TICK; i++)
		arr_free(arr_malloc(32));
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - purged >= TRIM_N - 1); /* all but the first block */
	/* and the page carves again from the front */
	void *p = arr_malloc(TRIM_SZ);
	CHECK(p == v[0]);
	memset(p, 2, TRIM_SZ);
	arr_free(p);
	return arg;
}

/* A parked thread: gets a heap, then waits to be let go. */
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static int park_state; /* 1: parked thread has its heap; 2: may leave */

/* What a parked thread does before it parks and after it is let go; by
 * default it only gets a heap of its own. */
struct park_job {
	void (*before)(void), (*after)(void);
};

static void *parked(void *arg)
{
	const struct park_job *job = arg;
	if (job && job->before)
		job->before();
	else
		arr_free(arr_malloc(16)); /* a heap of its own */
	pthread_mutex_lock(&park_mu);
	park_state = 1;
	pthread_cond_broadcast(&park_cv);
	while (park_state != 2)
		pthread_cond_wait(&park_cv, &park_mu);
	pthread_mutex_unlock(&park_mu);
	if (job && job->after)
		job->after();
	return NULL;
}

/* Start a parked thread (one more heap) and wait until it has done job's
 * `before` (NULL: until it has its heap). */
static void park_start_job(pthread_t *t, const struct park_job *job)
{
	park_state = 0;
	CHECK(pthread_create(t, NULL, parked, (void *)job) == 0);
	pthread_mutex_lock(&park_mu);
	while (park_state != 1)
		pthread_cond_wait(&park_cv, &park_mu);
	pthread_mutex_unlock(&park_mu);
}

static void park_start(pthread_t *t) { park_start_job(t, NULL); }

static void park_stop(pthread_t t)
{
	pthread_mutex_lock(&park_mu);
	park_state = 2;
	pthread_cond_broadcast(&park_cv);
	pthread_mutex_unlock(&park_mu);
	CHECK(pthread_join(t, NULL) == 0);
}

/* A thread that allocates when poked, in step with the caller: busy by the
 * census (heap.c) without any timing. */
static pthread_mutex_t poke_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t poke_cv = PTHREAD_COND_INITIALIZER;
static int poke_req, poke_done;

static void *poked(void *arg)
{
	pthread_mutex_lock(&poke_mu);
	for (;;) {
		while (poke_done == poke_req)
			pthread_cond_wait(&poke_cv, &poke_mu);
		if (poke_req < 0)
			break;
		pthread_mutex_unlock(&poke_mu);
		for (int i = 0; i < 8; i++)
			arr_free(arr_malloc(48));
		pthread_mutex_lock(&poke_mu);
		poke_done++;
		pthread_cond_broadcast(&poke_cv);
	}
	pthread_mutex_unlock(&poke_mu);
	return arg;
}

static void poke(int stop)
{
	pthread_mutex_lock(&poke_mu);
	poke_req = stop ? -1 : poke_req + 1;
	pthread_cond_broadcast(&poke_cv);
	while (!stop && poke_done != poke_req)
		pthread_cond_wait(&poke_cv, &poke_mu);
	pthread_mutex_unlock(&poke_mu);
}

/* Threads that hold a heap but make no call (main, waiting for this one; a
 * parked thread) do not count: the trim of an idle page comes after the
 * single-thread tick, not after 4 ticks for each of three threads. */
static void *trim_ignores_idle_threads(void *arg)
{
	pthread_t t;
	void *v[TRIM_N];
	park_start(&t); /* then this heap: the newest, so the parked one made no call since */
	uint64_t purged = fill_and_empty_page(v);
	for (int i = 0; i < (MT_FACTOR + 2) * TICK; i++)
		arr_free(arr_malloc(32));
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - purged >= TRIM_N - 1);
	park_stop(t);
	return arg;
}

/* With a second thread busy allocating the trim waits: 4 idle ticks per busy
 * thread (here two: this one and a poked one; main is idle), because a purge
 * then costs the other CPU a TLB shootdown. */
static void *trim_waits_for_threads(void *arg)
{
	pthread_t t;
	void *v[TRIM_N];
	arr_free(arr_malloc(16));
	poke_req = poke_done = 0;
	CHECK(pthread_create(&t, NULL, poked, NULL) == 0);
	poke(0);
	uint64_t purged = fill_and_empty_page(v);
	for (int i = 0; i < (MT_FACTOR + 2) * TICK; i++) { /* 6 ticks: not yet */
		arr_free(arr_malloc(32));
		if (i % 512 == 0)
			poke(0);
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - purged < TRIM_N - 1);
	for (int i = 0; i < (MT_FACTOR + 2) * TICK; i++) { /* 12: 2 x 4 + 2 or more, now it is */
		arr_free(arr_malloc(32));
		if (i % 512 == 0)
			poke(0);
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - purged >= TRIM_N - 1);
	poke(1);
	CHECK(pthread_join(t, NULL) == 0);
	return arg;
}

/*
 * With several threads, when the current page of a class runs dry, the
 * fuller of the next page with free blocks and the one after becomes
 * current, so that the sparser one drains: three pages of 4096-byte blocks
 * filled, then 12 blocks of the first freed and 2 of the second; the next
 * block comes from the second (14 of 16 in use), not the first (4).
 */
static void *fullest_next(void *arg)
{
	enum { PER = 16, BS = 4096 };
	pthread_t t;
	park_start(&t);
	void *v[3 * PER];
	for (int i = 0; i < 3 * PER; i++) {
		v[i] = arr_malloc(BS);
		CHECK(v[i] != NULL);
	}
	uintptr_t a = (uintptr_t)v[0] & ~(uintptr_t)0xffff, b = (uintptr_t)v[PER] & ~(uintptr_t)0xffff;
	int sorted = a != b;
	for (int i = 0; i < PER; i++) /* each page is one 64 KiB slice */
		sorted &= ((uintptr_t)v[i] & ~(uintptr_t)0xffff) == a &&
			  ((uintptr_t)v[PER + i] & ~(uintptr_t)0xffff) == b;
	CHECK(sorted);
	for (int i = 0; i < 12; i++) {
		arr_free(v[i]);
		v[i] = NULL;
	}
	for (int i = 0; i < 2; i++) {
		arr_free(v[PER + i]);
		v[PER + i] = NULL;
	}
	void *p = arr_malloc(BS);
	CHECK(((uintptr_t)p & ~(uintptr_t)0xffff) == b);
	arr_free(p);
	for (int i = 0; i < 3 * PER; i++)
		arr_free(v[i]);
	park_stop(t);
	return arg;
}

/* A block freed is the next one of its class handed out (LIFO), not one
 * that has waited on the page's list for longer and left the cache. */
static void *free_is_lifo(void *arg)
{
	void *a = arr_malloc(96), *b = arr_malloc(96), *c = arr_malloc(96);
	CHECK(a && b && c);
	arr_free(b);
	void *d = arr_malloc(96);
	CHECK(d == b);
	arr_free(a);
	arr_free(c);
	void *e = arr_malloc(96), *f = arr_malloc(96);
	CHECK(e == c && f == a);
	arr_free(d);
	arr_free(e);
	arr_free(f);
	return arg;
}

/* Fresh statistics of the class of block size bs. */
static const struct arr_alloc_class_stats *class_stats(size_t bs)
{
	CHECK(arr_alloc_stats_get(&st) == 0);
	for (unsigned c = 0; c < st.nclasses; c++)
		if (st.classes[c].block_size == bs)
			return &st.classes[c];
	CHECK(!"no such class");
	return NULL;
}

/* Pages of the class (spans held for it). */
static uint64_t class_pages(size_t bs) { return class_stats(bs)->pages; }

/* With several threads, a span emptied by a free is kept by the thread for
 * its next span of the same length, whatever the class, and malloc_trim
 * (arr_alloc_purge) gives it back. Here: a 100 kB block (class 106496, one
 * block in two slices) freed, then a 120 kB one (class 122880, also two
 * slices) gets the same span. */
static void *span_cache_reused(void *arg)
{
	pthread_t t;
	span_heap_off(); /* the sizes of slices, not of the span heap's blocks */
	park_start(&t);
	unsigned char *p = arr_malloc(100000);
	CHECK(p != NULL && arr_malloc_usable_size(p) == 106496);
	memset(p, 1, 100000);
	uint64_t before = class_pages(106496);
	arr_free(p);
	CHECK(class_pages(106496) == before); /* kept, not given to the pool */
	unsigned char *q = arr_malloc(120000);
	CHECK(q == p && arr_malloc_usable_size(q) == 122880);
	memset(q, 2, 120000);
	CHECK(q[0] == 2 && q[119999] == 2);
	arr_free(q);
	CHECK(arr_alloc_purge() >= 2 * 65536); /* the kept span, among others */
	CHECK(class_pages(122880) == 0);
	park_stop(t);
	span_heap_on();
	return arg;
}

/* With several threads, a thread that needs fresh memory maps a segment of
 * its own rather than filling another thread's: its blocks stay in a few
 * segments. Here a parked thread holds 6 MB of 60 kB blocks (one 64 KiB
 * slice each: a segment and a half), and another thread, with no dirty
 * slices anywhere (purged first), takes 6 MB more: none of its blocks may
 * share a segment with the first thread's (first fit would fill the second
 * half of the first thread's last segment). */
enum { OWN_N = 100, OWN_SZ = 60000 };
static void *own_blocks[OWN_N];
static void own_alloc(void)
{
	for (int i = 0; i < OWN_N; i++)
		own_blocks[i] = arr_malloc(OWN_SZ);
}

static void own_free(void)
{
	for (int i = 0; i < OWN_N; i++)
		arr_free(own_blocks[i]);
}

static void *own_segments(void *arg)
{
	uintptr_t segs[OWN_N];
	for (int i = 0; i < OWN_N; i++) {
		CHECK(own_blocks[i] != NULL);
		segs[i] = (uintptr_t)own_blocks[i] >> 22; /* 4 MiB segments */
	}
	void *mine[OWN_N];
	int shared = 0;
	for (int i = 0; i < OWN_N; i++) {
		mine[i] = arr_malloc(OWN_SZ);
		CHECK(mine[i] != NULL);
		for (int j = 0; j < OWN_N; j++)
			shared += segs[j] == (uintptr_t)mine[i] >> 22;
	}
	CHECK(shared == 0);
	if (shared)
		fprintf(stderr, "own_segments: %d blocks share a segment with the other thread's\n", shared);
	for (int i = 0; i < OWN_N; i++)
		arr_free(mine[i]);
	return arg;
}

static void test_own_segments(void)
{
	span_heap_off();   /* 60 kB blocks: the span heap shares its segments */
	arr_alloc_purge(); /* no dirty slices left to reuse */
	static const struct park_job holder = {own_alloc, own_free};
	pthread_t t;
	park_start_job(&t, &holder);
	run_in_thread(own_segments);
	park_stop(t);
	span_heap_on();
}

/* Live blocks of the class. */
static uint64_t class_live(size_t bs) { return class_stats(bs)->live; }

/* A class's live count is its pages' `used` plus per-thread adjustments:
 * a block freed by another thread counts as freed at once, before its owner
 * collects it (and lowers `used`), and not twice after. */
#define REMOTE_N 200
static void *remote_free_some(void *arg)
{
	void **v = arg;
	for (int i = 0; i < REMOTE_N; i += 2)
		arr_free(v[i]);
	return NULL;
}

static void *remote_free_live(void *arg)
{
	static void *v[REMOTE_N];
	uint64_t before = class_live(160);
	for (int i = 0; i < REMOTE_N; i++) {
		v[i] = arr_malloc(150);
		CHECK(arr_malloc_usable_size(v[i]) == 160);
	}
	CHECK(class_live(160) == before + REMOTE_N);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, remote_free_some, v) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(class_live(160) == before + REMOTE_N / 2); /* not yet collected */
	for (int i = 0; i < REMOTE_N; i += 2)            /* takes the remote frees back */
		v[i] = arr_malloc(150);
	CHECK(class_live(160) == before + REMOTE_N);
	for (int i = 0; i < REMOTE_N; i++)
		arr_free(v[i]);
	CHECK(class_live(160) == before);
	return arg;
}

/* A class with no free block borrows one ready in a slightly larger class
 * rather than touching fresh memory; never for a request whose alignment
 * comes from its own class's block size. */
static void *borrow_neighbour(void *arg)
{
	void *a = arr_malloc(2300), *b = arr_malloc(2300); /* class 2304 */
	CHECK(arr_malloc_usable_size(a) == 2304);
	arr_free(a);
	void *c = arr_malloc(2200); /* class 2192: no page yet */
	CHECK(c == a && arr_malloc_usable_size(c) == 2304);
	arr_free(c);
	arr_free(b);
	/* 8320-byte blocks at 64 KiB + k * 8320; free the second (not 4 KiB
	 * aligned). A class's, not the span heap's. */
	span_heap_off();
	void *x = arr_malloc(8300), *y = arr_malloc(8300);
	CHECK(arr_malloc_usable_size(y) == 8320 && ((uintptr_t)y & 4095) != 0);
	arr_free(y);
	void *z = arr_aligned_alloc(4096, 8192); /* served by class 8192: must not borrow y */
	CHECK(z != NULL && ((uintptr_t)z & 4095) == 0 && z != y);
	arr_free(z);
	arr_free(x);
	span_heap_on();
	CHECK(arr_alloc_stats_get(&st) == 0);
	return arg;
}

/* Single-threaded (main alone holds a heap), an empty current page is
 * trimmed at a tick even if malloc/free pairs use it: 16 blocks of 4 KB
 * freed, then one 4 KB pair every 1000 frees of another class. Without the
 * trim the pairs keep taking the last block freed (v[TRIM_N - 1]) and all 16
 * stay resident. */
static void test_trim_busy_page(void)
{
	void *v[TRIM_N];
	uint64_t purged = fill_and_empty_page(v);
	for (int i = 0; i < 3 * 4096; i++) { /* three ticks */
		arr_free(arr_malloc(32));
		if (i % 1000 == 0) {
			void *p = arr_malloc(TRIM_SZ);
			memset(p, 2, TRIM_SZ);
			arr_free(p);
		}
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - purged >= TRIM_N - 1); /* all but the first block */
	void *p = arr_malloc(TRIM_SZ);
	CHECK(p == v[0]); /* carved again from the front */
	arr_free(p);
}

/* Single-threaded, an empty page idle for 6 ticks more than the first trim
 * gives back its first carve too, and carves again from the front: fresh,
 * known-zero memory (calloc skips the zeroing). Without it the first 4 KB
 * block stays resident and calloc must clear it. */
static void test_trim_idle_fully(void)
{
	void *v[TRIM_N];
	uint64_t purged = fill_and_empty_page(v);
	for (int i = 0; i < 9 * TICK; i++) /* 1 + 6 idle ticks, plus the phase */
		arr_free(arr_malloc(32));
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - purged >= TRIM_N); /* every block, the first one too */
	uint64_t skipped = st.calloc_skipped;
	void *first = v[0]; /* the page's first block (v[] comes in LIFO order) */
	for (int i = 1; i < TRIM_N; i++)
		if ((uintptr_t)v[i] < (uintptr_t)first)
			first = v[i];
	unsigned char *p = arr_calloc(1, TRIM_SZ);
	CHECK(p == first);
	CHECK(p[0] == 0 && p[TRIM_SZ - 1] == 0);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.calloc_skipped - skipped == TRIM_SZ); /* known zero: not cleared */
	arr_free(p);
}

/* A span is taken from a run of free dirty slices of exactly its length when
 * there is one, not from the first longer run (which a longer span could
 * have reused): with slices 1-2 free and dirty and slice 4 free and dirty,
 * a one-slice block goes to slice 4. 60 kB blocks: one per 64 KiB slice. */
static void test_dirty_exact_fit(void)
{
	enum { N = 24 };
	void *b[N];
	span_heap_off();   /* slices of the pool */
	arr_alloc_purge(); /* no dirty slices but ours */
	for (int i = 0; i < N; i++) {
		b[i] = arr_malloc(OWN_SZ);
		CHECK(b[i] != NULL);
	}
	/* six blocks in consecutive slices */
	int k = -1;
	for (int i = 0; i + 6 <= N && k < 0; i++) {
		int j = 1;
		while (j < 6 && (uintptr_t)b[i + j] == (uintptr_t)b[i] + (uintptr_t)j * 65536)
			j++;
		if (j == 6)
			k = i;
	}
	CHECK(k >= 0);
	if (k >= 0) {
		void *one = b[k + 4];
		arr_free(b[k + 1]);
		arr_free(b[k + 2]);
		arr_free(b[k + 4]);
		b[k + 1] = b[k + 2] = NULL;
		b[k + 4] = arr_malloc(OWN_SZ);
		CHECK(b[k + 4] == one);
	}
	for (int i = 0; i < N; i++)
		arr_free(b[i]);
	span_heap_on();
}

/* Free resident memory beyond 1/idle_ratio of what is in use goes back at
 * once, oldest first, long before its purge delay: 64 blocks of 200 KB
 * (4 slices each) written, 48 freed: about an eighth of the slices in use
 * stay resident, the first block freed is no longer resident (mincore), and its
 * address comes back for the next block of its class (idle_ratio=8; the
 * default, 0, has no bound: the same frees purge nothing, the delay alone
 * decides). */
static void test_idle_budget(void)
{
	enum { N = 64, FREED = 48, SZ = 200000 };
	static unsigned char *b[N];
	span_heap_off(); /* a budget of the pool's slices */
	long long delay = 0, ratio = 0;
	CHECK(arr_alloc_get_option("purge_delay", &delay) == 0 && delay == 100000);
	CHECK(arr_alloc_get_option("idle_ratio", &ratio) == 0 && ratio == 0);
	CHECK(arr_alloc_set_option("idle_ratio", -1) == ARR_ERANGE);
	for (int round = 0; round < 2; round++) {
		CHECK(arr_alloc_set_option("idle_ratio", round == 0 ? 8 : 0) == 0);
		arr_alloc_purge();
		for (int i = 0; i < N; i++) {
			b[i] = arr_malloc(SZ);
			CHECK(b[i] != NULL);
			if (b[i])
				memset(b[i], 0x5a, SZ);
		}
		arr_alloc_stats_get(&st);
		uint64_t purged0 = st.pages_purged;
		unsigned char *first = b[0];
		for (int i = 0; i < FREED; i++)
			arr_free(b[i]);
		arr_alloc_stats_get(&st);
		uint64_t purged = st.pages_purged - purged0; /* OS pages */
		if (round == 0) {
			/* 192 slices freed; kept: an eighth of the slices in use
			 * (ours and what earlier tests left in their pages), far
			 * fewer than 32 */
			CHECK(purged >= (uint64_t)(FREED * 4 - 32) * 16);
			CHECK(resident_pages_or(first, SZ, 9999) == 0);
		} else {
			CHECK(purged == 0);
			CHECK(resident_pages_or(first, SZ, 9999) >= 48);
		}
		/* the address space comes back (budget purges keep the
		 * segments): the next block lies in a segment of a freed one
		 * (which slices, the budget's leftovers decide) */
		void *again = arr_malloc(SZ);
		CHECK(again != NULL);
		int found = 0;
		for (int i = 0; i < FREED; i++)
			found |= (uintptr_t)again >> 22 == (uintptr_t)b[i] >> 22;
		CHECK(found);
		arr_free(again);
		for (int i = FREED; i < N; i++)
			arr_free(b[i]);
	}
	CHECK(arr_alloc_set_option("idle_ratio", 0) == 0);
	arr_alloc_purge();
	span_heap_on();
}

/* A page that is not its class's current page and stays unchanged gives
 * back its OS pages whose blocks are all free (holes), and hands those
 * blocks out again, zero, once it has no other free block. Here a full page
 * of 32-byte blocks keeps only its first block: its 15 other OS pages go. */
static void test_punch_holes(void)
{
	enum { PER_PAGE = 65536 / 32, MAX_TRIES = 5 * PER_PAGE };
	static unsigned char *v[2 * PER_PAGE + 64];
	int n = 0;
	/* fill pages of the class until one is full and another is current */
	for (; n < 2 * PER_PAGE + 64; n++)
		v[n] = arr_malloc(32);
	/* the page of the first block whose whole page we hold */
	uintptr_t base = 0;
	for (int i = 0; i < n && !base; i++) {
		uintptr_t b = (uintptr_t)v[i] & ~(uintptr_t)65535;
		int count = 0;
		for (int j = 0; j < n; j++)
			count += ((uintptr_t)v[j] & ~(uintptr_t)65535) == b;
		if (count == PER_PAGE)
			base = b;
	}
	CHECK(base != 0);
	int kept = -1;
	for (int i = 0; i < n; i++)
		if (((uintptr_t)v[i] & ~(uintptr_t)65535) == base) {
			if ((uintptr_t)v[i] == base) {
				kept = i;
				continue;
			}
			memset(v[i], 0x5a, 32);
			arr_free(v[i]);
		}
	CHECK(kept >= 0);
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t purged = st.pages_purged;
	for (int t = 0; t < 64 * TICK; t++) /* ticks; other classes only */
		arr_free(arr_malloc(200));
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - purged >= 15);
	/* every freed block of that page comes back, those past its first OS page zero */
	int back = 0, zero = 1;
	static void *w[MAX_TRIES];
	int m = 0;
	while (back < PER_PAGE - 1 && m < MAX_TRIES) {
		unsigned char *p = arr_malloc(32);
		w[m++] = p;
		if (((uintptr_t)p & ~(uintptr_t)65535) != base)
			continue;
		back++;
		if ((uintptr_t)p - base >= 4096)
			for (int k = 8; k < 32; k++)
				zero &= p[k] == 0;
		memset(p, 0xa5, 32);
	}
	CHECK(back == PER_PAGE - 1);
	CHECK(zero);
	for (int i = 0; i < m; i++)
		arr_free(w[i]);
	for (int i = 0; i < n; i++)
		if (((uintptr_t)v[i] & ~(uintptr_t)65535) != base || i == kept)
			arr_free(v[i]);
}

/* Single-threaded, the current page that empties is trimmed at once (beyond
 * its first carve) if it carved more than two OS pages, at most once a tick:
 * emptied again and again before the next tick, it is not trimmed again.
 * Carved again past its first OS page after such a trim, it is not trimmed
 * so again while it churns, ticks included (the tick's own trim of an empty
 * page still runs: TRIM_N - 1 pages a tick here), until a tick finds it not
 * emptied since the one before. */
static void test_trim_at_emptying(void)
{
	void *v[TRIM_N];
	uint64_t before = fill_and_empty_page(v);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - before >= TRIM_N - 1); /* no tick needed */
	uint64_t again = st.pages_purged;
	for (int r = 0; r < 3; r++)
		fill_and_empty_page(v);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - again <= TRIM_N - 1); /* a tick may fall in between, once */
	/* four ticks (4096 pairs of a small class each), two rounds between
	 * them: the first round's trim at emptying is carved again by the
	 * second, and from then on the page is trimmed only by the ticks
	 * (4 x 15 pages; with a trim at each tick's first emptying too, 8 x 15) */
	again = st.pages_purged;
	for (int r = 0; r < 4; r++) {
		pairs(TICK);
		fill_and_empty_page(v);
		fill_and_empty_page(v);
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - again <= 5 * (TRIM_N - 1));
	/* a tick that finds it not emptied since the one before (the second
	 * of two) lifts the bar: trimmed at once again */
	pairs(2 * TICK);
	before = fill_and_empty_page(v);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.pages_purged - before >= TRIM_N - 1);
}

/* Purges of several ranges use process_madvise() where the kernel allows,
 * but never under a seccomp filter, which may kill a program for a system
 * call it does not list: here a child whose filter kills on
 * process_madvise must survive a batched purge (internal entry point). */
void arr__os_purge_many(const struct iovec *iov, unsigned n);
static void test_purge_under_seccomp(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 440 /* process_madvise */, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			_exit(3);
		char *m = mmap(NULL, 4 * 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			_exit(4);
		memset(m, 1, 4 * 65536);
		struct iovec iov[2] = {{m, 65536}, {m + 2 * 65536, 65536}};
		arr__os_purge_many(iov, 2);
		_exit(m[0] == 0 && m[65536] == 1 && m[2 * 65536] == 0 ? 0 : 5);
	}
	int status = 0;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "purge_under_seccomp: child status %#x\n", status);
}

/*
 * calloc of resident memory gives the whole pages back instead of clearing
 * them when the request is above glibc's mmap threshold (128 KiB, raised
 * by every larger block freed to its size in pages): glibc would map it
 * fresh. A process of its own: the threshold is the process's.
 */
static size_t all_zero(const unsigned char *p, size_t n)
{
	size_t bad = 0;
	for (size_t k = 0; k < n; k++)
		bad += p[k] != 0;
	return bad;
}

static void test_calloc_fresh(void)
{
	const size_t KB = 1024;
	long long delay0 = 0;
	arr_alloc_get_option("purge_delay", &delay0);
	arr_alloc_set_option("purge_delay", 1LL << 40); /* freed memory stays resident */
	arr_alloc_purge();

	/* a span block of 400 KiB written and freed: resident; the next,
	 * longer calloc takes its pages (best fit, from the low end) and
	 * gives them back: the threshold is 400 KiB, the request above it */
	unsigned char *a = arr_malloc(400 * KB);
	CHECK(a != NULL);
	memset(a, 0x5a, 400 * KB);
	arr_free(a);
	CHECK(resident_pages(a, 400 * KB) >= 99);
	arr_alloc_stats_get(&st);
	uint64_t zeroed = st.calloc_zeroed, skipped = st.calloc_skipped;
	unsigned char *b = arr_calloc(1, 500 * KB);
	CHECK(b == a);
	CHECK(resident_pages(b, 500 * KB) <= 2); /* at most the pages it shares */
	arr_alloc_stats_get(&st);
	CHECK(st.calloc_zeroed - zeroed <= 8 * KB && st.calloc_skipped - skipped >= 492 * KB);
	CHECK(b != NULL && all_zero(b, 500 * KB) == 0);
	if (b != NULL)
		memset(b, 0x77, 500 * KB);
	arr_free(b); /* the threshold: 500 KiB */

	/* the same size again: at the threshold, cleared (resident, as
	 * glibc's heap would serve it once its threshold rose) */
	arr_alloc_stats_get(&st);
	zeroed = st.calloc_zeroed;
	unsigned char *c = arr_calloc(1, 500 * KB);
	CHECK(c == a);
	CHECK(resident_pages(c, 500 * KB) >= 124);
	arr_alloc_stats_get(&st);
	CHECK(st.calloc_zeroed - zeroed == 500 * KB);
	CHECK(c != NULL && all_zero(c, 500 * KB) == 0);
	arr_free(c);

	arr_alloc_set_option("purge_delay", delay0);
}

/*
 * A class of two pages whose blocks are all freed, round after round: 1 600
 * blocks of 64 bytes fill one page and part of a second, which is current
 * when it empties and is trimmed; the full page goes to the pool and comes
 * back as the next round's second page. The bar on trimming a page carved
 * again within the tick is the class's, so the page that comes back is not
 * trimmed either (glibc's bench-malloc-simple: 77 000 faults before).
 */
static void test_trim_bar(void)
{
	enum { N = 1600, ROUNDS = 300 };
	static unsigned char *v[N];
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t purged = st.pages_purged;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++) {
			v[i] = arr_malloc(64);
			memset(v[i], r, 64);
		}
		for (int i = 0; i < N / 2; i++)
			arr_free(v[i]);
		for (int i = N - 1; i >= N / 2; i--)
			arr_free(v[i]);
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	purged = st.pages_purged - purged;
	/* without the class's bar: ~15 pages a round */
	if (purged > ROUNDS)
		fprintf(stderr, "trim bar: %llu pages purged in %d rounds\n", (unsigned long long)purged, ROUNDS);
	CHECK(purged <= ROUNDS);
}

/*
 * The tick's trim of a page emptied since the tick before is barred too:
 * a thousand blocks of 16-515 bytes made and all freed, round after round
 * (the drop-in bench's `rounds`), with a tick every four rounds or so. The
 * classes' pages empty at every round's end; a tick in the frees' half
 * found them empty and trimmed them past their first OS page, and the next
 * round carved them again. Without the bar on the ticks' trims (and with
 * the bars lapsing all at once) ~1 100 pages were given back in 2 560
 * rounds; glibc gives back none.
 */
static void test_trim_bar_ticks(void)
{
	enum { N = 1000, ROUNDS = 2560 };
	static unsigned char *v[N];
	uint64_t seed = 7;
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t purged = st.pages_purged;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			v[i] = arr_malloc(16 + seed % 500);
			v[i][0] = (unsigned char)i;
		}
		for (int i = 0; i < N; i++)
			arr_free(v[i]);
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	purged = st.pages_purged - purged;
	fprintf(stderr, "trim bar, ticks: %llu pages purged in %d rounds\n", (unsigned long long)purged, ROUNDS);
	CHECK(purged <= ROUNDS / 16);
}

int main(int argc, char **argv)
{
	/* these tests are of a thread's own heap from its first malloc: no
	 * light threads (tests/allocator/light.c has those); the purges after
	 * a fixed delay, in a process that has run many operations: not the
	 * delay that grows with its age (tests/allocator/aged.c has that) */
	arr_alloc_set_option("light", 0);
	arr_alloc_set_option("aged", 0);
	/* in a process of their own: "huge"'s growths reach the footprint's
	 * high-water mark, which the others' would have set far above;
	 * "fresh" needs calloc's fresh-page threshold at its start; "trimbar"
	 * a class's pages as the first round leaves them. The small
	 * classes' segment mapped first, as it is in any program (its mapping
	 * is not what the checks count) */
	if (argc > 1 && (!strcmp(argv[1], "huge") || !strcmp(argv[1], "fresh") || !strcmp(argv[1], "trimbar"))) {
		arr_free(arr_malloc(64));
		if (!strcmp(argv[1], "huge"))
			test_huge_reuse();
		else if (!strcmp(argv[1], "trimbar")) {
			test_trim_bar();
			test_trim_bar_ticks();
		} else
			test_calloc_fresh();
		if (failures)
			fprintf(stderr, "%d check(s) failed\n", failures);
		return failures != 0;
	}
	test_stats(); /* first: arr_free() elsewhere makes live_requested a lower bound */
	test_overflow();
	test_zero_size();
	test_posix_memalign_einval();
	test_alignments();
	test_calloc_zeroes_dirty_memory();
	test_realloc();
	test_usable_size();
	run_in_thread(small_sizes);
	test_realloc_usable();
	test_options();
	test_contiguous_reuse();
	test_big_alignments();
	test_calloc_prefault();
	test_calloc_large_untouched();
	test_purge_on_fast_path();
	test_rss_returns();
	/* from here on, the pages of the classes of 2-8 KiB blocks: as dense
	 * classes, not the sparse ones the span heap serves (tests/allocator/
	 * spanheap.c) */
	CHECK(arr_alloc_set_option("sparse", 0) == 0);
	run_in_thread(trim_idle_page);
	run_in_thread(borrow_neighbour);
	run_in_thread(remote_free_live);
	test_trim_busy_page(); /* threads gone: single-threaded again */
	test_trim_at_emptying();
	test_trim_for_growth();
	test_trim_idle_fully();
	test_dirty_exact_fit();
	test_idle_budget();
	test_punch_holes();
	test_purge_under_seccomp();
	run_in_thread(trim_waits_for_threads);
	run_in_thread(trim_ignores_idle_threads);
	run_in_thread(free_is_lifo);
	run_in_thread(fullest_next);
	run_in_thread(span_cache_reused);
	CHECK(arr_alloc_set_option("sparse", 1) == 0);
	test_own_segments();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("allocator api: all checks passed\n");
	return 0;
}
