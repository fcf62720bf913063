/*
 * tests/allocator/spanheap.c - the span heap (allocator/spanheap.c): blocks
 * above span_min come from segments shared by every size, carved at 256-byte
 * granularity; freed neighbours coalesce, malloc takes the best fit, calloc
 * knows fresh memory is zero, a freed span is purged only after purge_delay
 * operations (and never when the program takes it back sooner), blocks freed
 * by another thread come back, and the statistics return exactly; realloc
 * grows into a free neighbour and shrinks in place, a sparse class's block
 * too (grown step by step, moved to room to grow); a thread's block cache
 * (span_cache) serves its next requests and gives its blocks back, and the
 * sparse block cache its next block of the same length; the
 * sparse classes above 2 KiB come from it until a thread holds many; plain
 * requests above span_min reach it directly, by the options' route.
 * Exits non-zero if a check fails.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "allocrr/alloc.h"

#include "check.h"

static struct arr_alloc_stats st;

/* resident_pages_or()'s answer for an unmapped range where a check needs the
 * memory mapped; resident_pages(), for checks that memory went back, counts
 * it as none (a segment left wholly free and clean is unmapped). */
enum { UNMAPPED = 9999 };

static uint64_t purged(void)
{
	CHECK(arr_alloc_stats_get(&st) == 0);
	return st.pages_purged;
}

/* Operations on the size classes only: the heap's ticks (every 4096 frees)
 * advance the op clock that the span heap's decay counts in. */
static void churn(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		arr_free(arr_malloc(64));
}

/* Exact statistics: requested, usable and block counts go up by what was
 * allocated and back to where they were. */
static void test_stats(void)
{
	enum { N = 50 };
	void *b[N];
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t req0 = st.live_requested, use0 = st.live_usable, n0 = st.live_blocks;
	size_t req = 0, use = 0;
	for (int i = 0; i < N; i++) {
		size_t sz = 20000 + (size_t)i * 7777;
		b[i] = arr_malloc(sz);
		CHECK(b[i] != NULL);
		req += sz;
		use += arr_malloc_usable_size(b[i]);
	}
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested - req0 == req);
	CHECK(st.live_usable - use0 == use);
	CHECK(st.live_blocks - n0 == N);
	for (int i = 0; i < N; i++)
		arr_free(b[i]);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested == req0 && st.live_usable == use0 && st.live_blocks == n0);
}

/* Usable size: the request rounded up to 256 bytes, at most 1/8 over. */
static void test_usable(void)
{
	long long min;
	CHECK(arr_alloc_get_option("span_min", &min) == 0 && min >= 2048);
	for (size_t sz = (size_t)min + 1; sz <= (1u << 20); sz += sz / 7 + 13) {
		void *p = arr_malloc(sz);
		size_t u = arr_malloc_usable_size(p);
		CHECK(p != NULL && u >= sz && u - sz < 256 && (u - sz) * 8 <= sz);
		CHECK(((uintptr_t)p & 255) == 0);
		memset(p, 1, u);
		arr_free(p);
	}
	void *p = arr_malloc(40000);
	CHECK(p != NULL && arr_malloc_usable_size(p) == 40192);
	arr_free(p);
}

static void *dense_after_direct(void *arg)
{
	enum { N = 100 };
	static void *v[N];
	unsigned *counts = arg; /* span blocks, then class blocks */
	for (int i = 0; i < N; i++)
		v[i] = arr_malloc(5000);
	for (int i = 0; i < N; i++)
		arr_free(v[i]);
	for (int i = 0; i < N; i++) {
		v[i] = arr_malloc(4700);
		size_t u = arr_malloc_usable_size(v[i]);
		CHECK(u == 4864 || u == 5120);
		counts[u == 5120]++;
		CHECK(u == 5120 || counts[1] == 0); /* no span block after the first class block */
	}
	for (int i = 0; i < N; i++)
		arr_free(v[i]);
	return NULL;
}

/* A plain request above span_min goes straight to the span heap, even when
 * its class has a current page with a free block (left by an aligned
 * request, which keeps the classes): the slow path's class and sparse-class
 * tests cost ~100 instructions before the span heap's own work. And the
 * route follows the options: above mmap_threshold such a request is a huge
 * block (a 4 MiB-aligned mapping after a one-page header). */
static void test_direct_route(void)
{
	void *a = arr_aligned_alloc(4096, 40000), *b = arr_aligned_alloc(4096, 40000);
	CHECK(a != NULL && b != NULL && arr_malloc_usable_size(a) == 40960);
	arr_free(a); /* the class's current page now has a free block: a's */
	void *p = arr_malloc(40000);
	CHECK(p != NULL && p != a && arr_malloc_usable_size(p) == 40192);
	void *c = arr_aligned_alloc(4096, 40000); /* the page still serves aligned requests */
	CHECK(c == a);
	arr_free(p);
	arr_free(b);
	arr_free(c);

	long long thr;
	CHECK(arr_alloc_get_option("mmap_threshold", &thr) == 0);
	CHECK(arr_alloc_set_option("mmap_threshold", 32768) == 0);
	p = arr_malloc(40000);
	CHECK(p != NULL && (uintptr_t)p % ((uintptr_t)4 << 20) == 4096);
	arr_free(p);
	p = arr_calloc(1, 40000);
	CHECK(p != NULL && (uintptr_t)p % ((uintptr_t)4 << 20) == 4096);
	arr_free(p);
	CHECK(arr_alloc_set_option("mmap_threshold", thr) == 0);
	p = arr_malloc(40000);
	CHECK(p != NULL && arr_malloc_usable_size(p) == 40192);
	arr_free(p);

	/* With span_min inside a sparse class (4900: class 5120 holds 4609 to
	 * 5120), its requests above span_min keep the slow path's per-class
	 * count, which their frees lower: blocks of 5000 bytes out and back
	 * leave the count where it was, so 4700-byte requests still turn the
	 * class dense after 25 span blocks (4864 bytes), then class 5120. In a
	 * thread of its own: main's class 5120 has a page already. */
	long long min, pages, thr1;
	CHECK(arr_alloc_get_option("span_min", &min) == 0 && arr_alloc_get_option("sparse", &pages) == 0 &&
	      arr_alloc_get_option("sparse_threads", &thr1) == 0);
	CHECK(arr_alloc_set_option("span_min", 4900) == 0 && arr_alloc_set_option("sparse", 2) == 0 &&
	      arr_alloc_set_option("sparse_threads", 0) == 0); /* main counts as busy too */
	pthread_t t;
	unsigned counts[2] = {0, 0};
	CHECK(pthread_create(&t, NULL, dense_after_direct, counts) == 0 && pthread_join(t, NULL) == 0);
	CHECK(counts[0] == 25 && counts[1] == 75);
	CHECK(arr_alloc_set_option("span_min", min) == 0 && arr_alloc_set_option("sparse", pages) == 0 &&
	      arr_alloc_set_option("sparse_threads", thr1) == 0);
}

/* Off (span_min 0): the same request is a class's block. Last: the class
 * page it leaves in this thread's heap would serve later aligned requests. */
static void test_off(void)
{
	long long min;
	CHECK(arr_alloc_get_option("span_min", &min) == 0);
	CHECK(arr_alloc_set_option("span_min", 0) == 0);
	void *p = arr_malloc(40000);
	CHECK(p != NULL && arr_malloc_usable_size(p) == 40960);
	arr_free(p);
	CHECK(arr_alloc_set_option("span_min", min) == 0);
}

/* Free neighbours coalesce: two freed blocks serve one of their summed size
 * at the first's address; best fit: each request gets the tightest hole. */
static void test_coalesce_best_fit(void)
{
	char *a = arr_malloc(40000), *b = arr_malloc(40000), *g = arr_malloc(40000);
	CHECK(a && b && g);
	CHECK(b == a + 40192 && g == b + 40192); /* carved one after the other */
	arr_free(a);
	arr_free(b);
	char *d = arr_malloc(80000); /* 80 384 bytes free there */
	CHECK(d == a);
	arr_free(d);
	arr_free(g);

	enum { K = 3 };
	static const size_t hole[K] = {100000, 50000, 60000};
	char *x[K], *guard[K];
	for (int i = 0; i < K; i++) {
		x[i] = arr_malloc(hole[i]);
		guard[i] = arr_malloc(30000);
		CHECK(x[i] && guard[i]);
	}
	for (int i = 0; i < K; i++)
		arr_free(x[i]);
	char *y1 = arr_malloc(49000), *y2 = arr_malloc(59000), *y0 = arr_malloc(99000);
	CHECK(y1 == x[1] && y2 == x[2] && y0 == x[0]);
	arr_free(y0);
	arr_free(y1);
	arr_free(y2);
	for (int i = 0; i < K; i++)
		arr_free(guard[i]);
}

/* Best fit above 128 KiB, where a bin holds spans of several lengths
 * (spanheap.c bin_of: 1025-1056 units in one, 1057-1088 in the next): the
 * shortest span that fits, not the first of the bin's list that fits (LIFO
 * would give the 1050-unit hole, freed later than the 1040-unit one), not
 * the last freed of the next bin (1080 units, freed after the 1060-unit
 * one); among equal lengths the last freed. */
static void test_coarse_best_fit(void)
{
	enum { H = 7, U = 256 };
	static const unsigned units[H] = {1040, 1050, 1030, 1060, 1080, 1100, 1100};
	char *hole[H], *guard[H];
	for (int i = 0; i < H; i++) {
		hole[i] = arr_malloc((size_t)units[i] * U);
		guard[i] = arr_malloc(9000);
		CHECK(hole[i] && guard[i]);
	}
	for (int i = 0; i < H; i++)
		arr_free(hole[i]);
	char *a = arr_malloc((size_t)1035 * U); /* 1040 fits best; 1050 is its bin's first fit */
	char *d = arr_malloc((size_t)1052 * U); /* none in its bin: the next bin's shortest, 1060 */
	char *f = arr_malloc((size_t)1100 * U); /* two of 1100: the last freed */
	char *g = arr_malloc((size_t)1100 * U);
	CHECK(a == hole[0]);
	CHECK(d == hole[3]);
	CHECK(f == hole[6] && g == hole[5]);
	arr_free(a);
	arr_free(d);
	arr_free(f);
	arr_free(g);
	for (int i = 0; i < H; i++)
		arr_free(guard[i]);
}

/* calloc: fresh span memory is known zero (no memset), reused memory is
 * cleared. */
static void test_calloc(void)
{
	enum { SZ = 300000 };
	arr_alloc_purge();
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t skipped = st.calloc_skipped, zeroed = st.calloc_zeroed;
	unsigned char *p = arr_calloc(1, SZ);
	CHECK(p != NULL);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.calloc_skipped - skipped == SZ && st.calloc_zeroed == zeroed);
	int nz = 0;
	for (size_t i = 0; i < SZ; i++)
		nz |= p[i];
	CHECK(nz == 0);
	memset(p, 0xa5, SZ);
	arr_free(p);
	unsigned char *q = arr_calloc(SZ, 1);
	CHECK(q == p); /* dirty now */
	CHECK(arr_alloc_stats_get(&st) == 0 && st.calloc_zeroed - zeroed == SZ);
	for (size_t i = 0; i < SZ; i++)
		nz |= q[i];
	CHECK(nz == 0);
	arr_free(q);
}

/* The decay: a freed span stays resident until purge_delay operations have
 * passed, then the next tick purges it; one the program takes back before
 * that is never purged, however long the program runs. */
static void test_decay(void)
{
	enum { SZ = 400000 };
	long long delay0;
	CHECK(arr_alloc_get_option("purge_delay", &delay0) == 0);
	CHECK(arr_alloc_set_option("purge_delay", 20000) == 0);
	/* past the young program's shorter delay (a quarter of the operations
	 * run so far: allocator.young), so the delay is purge_delay itself */
	churn(45000);
	arr_alloc_purge();
	void *pin = arr_malloc(SZ); /* the span after it stays apart */
	unsigned char *p = arr_malloc(SZ);
	void *pin2 = arr_malloc(SZ);
	CHECK(pin && p && pin2);
	memset(p, 7, SZ);
	uint64_t before = purged();
	/* taken back within the delay, 40 times: 40 x 6 000 operations, twelve
	 * delays in all, nothing purged (the clock is folded in at the ticks,
	 * every 4096 frees: a free's stamp may lag by up to 8 192 operations) */
	for (int round = 0; round < 40; round++) {
		arr_free(p);
		churn(3000);
		unsigned char *q = arr_malloc(SZ);
		CHECK(q == p);
		CHECK(resident_pages_or(q, SZ, UNMAPPED) >= SZ / 4096 - 1);
		memset(q, 8, SZ);
	}
	CHECK(resident_pages_or(p, SZ, UNMAPPED) >= SZ / 4096 - 1);
	(void)before;
	/* left free: purged after the delay */
	arr_free(p);
	churn(4000);
	CHECK(resident_pages_or(p, SZ, UNMAPPED) >= SZ / 4096 - 1); /* not yet */
	churn(40000);
	CHECK(resident_pages_or(p, SZ, UNMAPPED) == 0);
	CHECK(purged() - before >= SZ / 4096 - 1);
	/* and comes back zero for calloc */
	unsigned char *z = arr_calloc(1, SZ);
	CHECK(z == p);
	int nz = 0;
	for (size_t i = 0; i < SZ; i += 512)
		nz |= z[i];
	CHECK(nz == 0);
	arr_free(z);
	arr_free(pin);
	arr_free(pin2);
	CHECK(arr_alloc_set_option("purge_delay", delay0) == 0);
}

/* The trim: a span heap whose live blocks fall below an eighth of what it
 * holds resident (past a 4 MiB floor) gives back its free spans at once,
 * long before their decay; one that still holds a quarter keeps them, and
 * purge_delay < 0 (never purge) keeps everything. */
static unsigned trim_round(unsigned char **b, unsigned n, size_t sz, unsigned keep)
{
	for (unsigned i = 0; i < n; i++) {
		b[i] = arr_malloc(sz);
		CHECK(b[i] != NULL);
		memset(b[i], (int)i, sz);
	}
	for (unsigned i = 0; i < n - keep; i++)
		arr_free(b[i]);
	unsigned res = 0;
	for (unsigned i = 0; i < n - keep; i++)
		res += resident_pages_or(b[i], sz, UNMAPPED);
	return res;
}

static void test_trim(void)
{
	enum { N = 96, SZ = 200000, INNER = SZ / 4096 - 1 };
	static unsigned char *b[N];
	long long delay0;
	CHECK(arr_alloc_get_option("purge_delay", &delay0) == 0);
	arr_alloc_purge();
	/* 19 MB, three quarters freed: 4.8 MB live holds them */
	unsigned res = trim_round(b, N, SZ, N / 4);
	CHECK(res >= (N - N / 4) * INNER);
	/* the last quarter freed: at most half the floor stays resident */
	for (unsigned i = N - N / 4; i < N; i++)
		arr_free(b[i]);
	res = 0;
	for (unsigned i = 0; i < N; i++)
		res += resident_pages(b[i], SZ);
	CHECK((size_t)res * 4096 <= ((size_t)4 << 20) + 2 * N * 4096);
	/* never purge: nothing goes */
	CHECK(arr_alloc_set_option("purge_delay", -1) == 0);
	res = trim_round(b, N, SZ, 0);
	CHECK(res >= N * INNER);
	CHECK(arr_alloc_set_option("purge_delay", delay0) == 0);
	arr_alloc_purge();
}

/*
 * The trim's bet (spanheap.c trim_bet_settle): rounds that build ~8 MB of
 * 8-64 KB blocks and free them all are trimmed whole while the trims win
 * their bets; once two have been lost (the arena grew back every time),
 * the rounds keep their pages: the next eight give back less than a
 * round's worth where each gave back all of it before, and the arena's
 * resident pages stay within a sixteenth of a round's pages of the first
 * round's.
 */
static void test_trim_bet(void)
{
	enum { N = 240, ROUNDS = 12 };
	static unsigned char *b[N];
	uint64_t x = 88172645463325252ull, early = purged(), p4 = 0, need = 0;
	uint64_t level[ROUNDS];
	for (unsigned r = 0; r < ROUNDS; r++) {
		if (r == 4)
			p4 = purged();
		uint64_t bytes = 0;
		for (unsigned i = 0; i < N; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			size_t sz = 8192 + x % (56u << 10);
			b[i] = arr_malloc(sz);
			CHECK(b[i] != NULL);
			memset(b[i], (int)r, sz);
			bytes += sz;
		}
		need = bytes / 4096 > need ? bytes / 4096 : need;
		CHECK(arr_alloc_stats_get(&st) == 0);
		level[r] = st.resident / 4096;
		for (unsigned i = 0; i < N; i++)
			arr_free(b[i]);
	}
	uint64_t p_end = purged();
	/* the first rounds were trimmed (else nothing here is tested) */
	CHECK(p4 - early >= need);
	/* the rounds after the bets were lost keep their pages (each of the
	 * eight gave back all of them without the bet) */
	CHECK(p_end - p4 < need);
	/* and carve the same ones again (fit_kept: without it the level rose
	 * by a fifth of a round's pages, to stay) */
	uint64_t top = 0;
	for (unsigned r = 4; r < ROUNDS; r++)
		top = level[r] > top ? level[r] : top;
	CHECK(top <= level[0] + need / 16);
	if (p4 - early < need || p_end - p4 >= need || top > level[0] + need / 16)
		fprintf(stderr,
			"trim bet: %llu pages purged in rounds 0-3, %llu in 4-11 (a round: %llu); resident %llu in "
			"the first, %llu at most from the fifth\n",
			(unsigned long long)(p4 - early), (unsigned long long)(p_end - p4), (unsigned long long)need,
			(unsigned long long)level[0], (unsigned long long)top);
}

/* Blocks freed by another thread (there is no owner: one heap for all). */
static void *alloc_many(void *arg)
{
	void **v = arg;
	for (int i = 0; i < 64; i++) {
		v[i] = arr_malloc(17000 + (size_t)i * 3001);
		if (v[i])
			memset(v[i], i, 17000);
	}
	return NULL;
}

static void test_remote_free(void)
{
	static void *v[64];
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t n0 = st.live_blocks, req0 = st.live_requested;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, alloc_many, v) == 0);
	pthread_join(t, NULL);
	for (int i = 0; i < 64; i++) {
		CHECK(v[i] != NULL && ((unsigned char *)v[i])[16999] == (unsigned char)i);
		arr_free(v[i]);
	}
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_blocks == n0 && st.live_requested == req0);
}

/* realloc within the block keeps it; beyond, moves it with its bytes.
 * Within its last 256-byte unit only the request changes, without the
 * span heap's lock (the slack in the last tag, the difference in the
 * heap's waste): the live requested bytes say the new size, up and down,
 * and come back exactly at the free, also after a realloc that grows it
 * past the unit (the lock's way settles the difference). */
static void test_realloc(void)
{
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t req0 = st.live_requested;
	unsigned char *p = arr_malloc(30000);
	CHECK(p != NULL);
	memset(p, 3, 30000);
	CHECK(arr_realloc(p, 30100) == p);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 + 30100);
	CHECK(arr_realloc(p, 30000 - 40) == p && arr_malloc_usable_size(p) == 30208);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 + 30000 - 40);
	CHECK(arr_realloc(p, 30208) == p && p[29959] == 3);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 + 30208);
	unsigned char *g = arr_realloc(p, 30300); /* the next unit: the lock's way */
	CHECK(g != NULL && g[0] == 3);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 + 30300);
	CHECK(arr_realloc(g, 30250) == g);
	arr_free(g);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0);
	p = arr_malloc(30000);
	CHECK(p != NULL);
	memset(p, 3, 30000);
	CHECK(arr_realloc(p, 30100) == p);
	unsigned char *q = arr_realloc(p, 200000);
	CHECK(q != NULL && q[0] == 3 && q[29999] == 3);
	unsigned char *r = arr_realloc(q, 1000);
	CHECK(r != NULL && r[999] == 3);
	arr_free(r);
}

/* realloc in place: a block grows into the free span after it (the bytes
 * stay, the statistics say the new size), shrinks by giving its tail back,
 * and moves only when the next span is in use. */
static void test_realloc_in_place(void)
{
	/* live bytes under the counts: plain frees of class blocks leave the
	 * requested-bytes sum a lower bound, clamped at 0 (test_stats) */
	void *pin = arr_malloc(100000);
	unsigned char *a = arr_malloc(30000), *b = arr_malloc(30000), *g = arr_malloc(30000);
	CHECK(a && b && g && b == a + 30208 && g == b + 30208);
	memset(a, 5, 30000);
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t req0 = st.live_requested, use0 = st.live_usable;
	arr_free(b);
	unsigned char *a2 = arr_realloc(a, 55000); /* 30 208 + 30 208 free after it */
	CHECK(a2 == a && a2[0] == 5 && a2[29999] == 5);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested == req0 - 30000 + 25000 && st.live_usable == use0 - 30208 + 55040 - 30208);
	memset(a2, 6, 55000);
	/* the rest of b's span is still free: it serves the next request there */
	unsigned char *a3 = arr_realloc(a2, 12000); /* shrunk: the tail is free again */
	CHECK(a3 == a && a3[11999] == 6);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested == req0 - 60000 + 12000 && st.live_usable == use0 - 2 * 30208 + 12032);
	unsigned char *d = arr_malloc(40000); /* best fit: the freed tail, 48 384 bytes */
	CHECK(d == a + 12032);
	/* no room after a (d in use): realloc moves it with its bytes */
	unsigned char *a4 = arr_realloc(a3, 20000);
	CHECK(a4 != NULL && a4 != a && a4[0] == 6 && a4[11999] == 6);
	arr_free(a4);
	arr_free(d);
	arr_free(g);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested == req0 - 90000 && st.live_usable == use0 - 3 * 30208);
	arr_free(pin);
}

/* A span block grown by a small step (at most a sixteenth of it) into the
 * free span after it takes an eighth more, up to 15 units past its request,
 * so that the next small steps stay within it; a bigger step takes what it
 * asks; reallocs within the last 16 units keep the block; the statistics
 * say the request each time, the usable size the block, and come back at
 * the free (in a process where no block was cached or resized before, so
 * the free must know to read the last tag). */
static void test_realloc_headroom(void)
{
	void *pin = arr_malloc(100000);
	unsigned char *p = arr_malloc(20000), *after = arr_malloc(200000);
	CHECK(p != NULL && after == p + 20224); /* 79 units, then 200 000 bytes */
	arr_free(after);
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t req1 = st.live_requested - 20000;
	CHECK(arr_realloc(p, 20300) == p && arr_malloc_usable_size(p) == (80 + 9) * 256);
	arr_free(p); /* the process's first block with units past its request */
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req1);
	p = arr_malloc(20000);
	CHECK(p != NULL && arr_malloc_usable_size(p) == 20224);
	memset(p, 7, 20000);
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t req0 = st.live_requested - 20000, use0 = st.live_usable - 20224;
	size_t n = 20300; /* one unit more: 80, and 79 / 8 = 9 of room */
	CHECK(arr_realloc(p, n) == p && arr_malloc_usable_size(p) == (80 + 9) * 256 && p[19999] == 7);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 + n && st.live_usable == use0 + 89 * 256);
	for (; n + 37 <= 89 * 256; n += 37) { /* within the room: the same block */
		CHECK(arr_realloc(p, n + 37) == p && arr_malloc_usable_size(p) == 89 * 256);
		CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 + n + 37);
	}
	CHECK(arr_realloc(p, 89 * 256 - 3000) == p && arr_malloc_usable_size(p) == 89 * 256); /* shrunk within */
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 + 89 * 256 - 3000);
	n = 89 * 256 + 100; /* 90 units: 1 step, 89 / 8 = 11 of room */
	CHECK(arr_realloc(p, n) == p && arr_malloc_usable_size(p) == (90 + 11) * 256);
	n = 101 * 256 + 8000; /* a step of 32 units (> 101 / 16): what it asks */
	CHECK(arr_realloc(p, n) == p && arr_malloc_usable_size(p) == (n + 255) / 256 * 256 && p[19999] == 7);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 + n &&
	      st.live_usable == use0 + (n + 255) / 256 * 256);
	arr_free(p);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 && st.live_usable == use0);
	arr_free(pin);
}

/* A sparse class's block that realloc grows step by step (a buffer, a
 * list's node, as redis's listpacks grow to 8 KiB) grows in place into the
 * free span after it, as bigger span blocks do: the move that makes room is
 * carved from the low end of its free span, not the high end where sparse
 * blocks go. Before, every step was a malloc, a copy and a free. Its heap
 * counts a sparse block in the class of its request (sparse_live), moved
 * along with the block: left where it was mallocked, the class of the first
 * block grown in place (1362 bytes: 1408, span blocks of 1536, dense after
 * 128) turned dense after these 200 chains. */
static void test_realloc_sparse_growth(void)
{
	enum { CHAINS = 200, START = 1100, STEP = 262, END = 7000 };
	static unsigned char *keep[CHAINS];
	/* live bytes under the counts (test_realloc_in_place) */
	void *pin = arr_malloc(100000);
	unsigned char *probe = arr_malloc(START);
	CHECK(arr_malloc_usable_size(probe) == 1280); /* sparse: a span block */
	arr_free(probe);
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t use0 = st.live_usable, n0 = st.live_blocks;
	unsigned steps = 0, in_place = 0;
	size_t kept = 0;
	for (int c = 0; c < CHAINS; c++) {
		size_t n = START;
		unsigned char *p = arr_malloc(n);
		memset(p, c & 0xff, n);
		while (n + STEP <= END) {
			unsigned char *q = arr_realloc(p, n + STEP);
			CHECK(q != NULL && q[0] == (c & 0xff) && q[n - 1] == (c & 0xff));
			memset(q + n, c & 0xff, STEP);
			steps++;
			in_place += q == p;
			p = q;
			n += STEP;
		}
		/* other calls between, as a program makes (a whole class
		 * block: the live requested bytes stay exact) */
		arr_free(arr_malloc(32));
		if (c % 2) {
			keep[c] = p;
			kept += arr_malloc_usable_size(p);
		} else {
			arr_free(p);
		}
	}
	/* 4 200 of 4 400 steps; carved from the high end 2 212, never before */
	CHECK(in_place * 4 >= steps * 3);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_usable == use0 + kept && st.live_blocks == n0 + CHAINS / 2);
	for (int c = 1; c < CHAINS; c += 2)
		arr_free(keep[c]);
	/* every class the chains went through is still sparse: span blocks */
	for (size_t n = START; n <= END; n += STEP) {
		probe = arr_malloc(n);
		CHECK(arr_malloc_usable_size(probe) % 256 == 0);
		arr_free(probe);
	}
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_blocks == n0 && st.live_usable == use0);
	arr_free(pin);
}

/* The thread's block cache (span_cache on): a freed block serves this
 * thread's next request that fits it without the span heap (the same
 * address, exact statistics), a second free of it is a double free, and the
 * heap's ticks give it back to the span heap, where it coalesces. */
static void *cache_thread(void *arg)
{
	(void)arg;
	void *v[8];
	for (int i = 0; i < 8; i++)
		v[i] = arr_malloc(20000 + (size_t)i * 1000);
	for (int i = 0; i < 8; i++)
		arr_free(v[i]); /* into this thread's cache; back at its exit */
	return NULL;
}

/* Does free(p) abort the process? (in a child, its stderr muted) */
static bool free_aborts(void *p)
{
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 2);
		arr_free(p);
		_exit(0);
	}
	int ws = 0;
	return pid > 0 && waitpid(pid, &ws, 0) == pid && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGABRT;
}

static void test_block_cache(void)
{
	long long sc0;
	CHECK(arr_alloc_get_option("span_cache", &sc0) == 0);
	CHECK(arr_alloc_set_option("span_cache", 1 << 20) == 0);
	void *pin = arr_malloc(100000); /* as in test_realloc_in_place */
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t req0 = st.live_requested, use0 = st.live_usable, n0 = st.live_blocks;
	char *a = arr_malloc(40000), *b = arr_malloc(40000), *g = arr_malloc(40000);
	CHECK(a && b && g && b == a + 40192);
	arr_free(a);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested == req0 + 80000 && st.live_usable == use0 + 2 * 40192 && st.live_blocks == n0 + 2);
	char *a2 = arr_malloc(39000); /* 4 units shorter: the cached block */
	CHECK(a2 == a && arr_malloc_usable_size(a2) == 40192);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested == req0 + 119000 && st.live_usable == use0 + 3 * 40192);
	char *x = arr_malloc(20000); /* no cached block fits: the span heap */
	CHECK(x != NULL && x != a && x != b);
	arr_free(x);
	arr_free(a2);
	CHECK(free_aborts(a2)); /* a double free of a cached block */
	arr_free(b);
	/* cached a and b do not coalesce; two ticks later they have */
	churn(2 * 4096 + 10);
	char *d = arr_malloc(80000);
	CHECK(d == a);
	arr_free(d);
	arr_free(g);
	/* another thread's cache goes back at its exit */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, cache_thread, NULL) == 0);
	pthread_join(t, NULL);
	arr_alloc_purge();
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested == req0 && st.live_usable == use0 && st.live_blocks == n0);
	CHECK(arr_alloc_set_option("span_cache", sc0) == 0);
	arr_free(pin);
}

/* A thread that leaves a block in its sparse cache when it exits. */
static void *sparse_kept;
static void *sparse_cache_thread(void *arg)
{
	(void)arg;
	void *keep = arr_malloc(3000);
	sparse_kept = keep;
	arr_free(arr_malloc(6000)); /* cached; back at the thread's exit */
	arr_free(keep);
	return NULL;
}

/* The sparse block cache (on by default): once two span-heap mallocs have
 * wanted the length of the block freed just before, a sparse class's span
 * block that a thread frees is kept for its next malloc of the same length
 * in units. While such takes are not yet a streak, only where best fit
 * would have carved the request anyway (no free span next to it): the span
 * heap's layout is as without the cache. From the fourth in a row,
 * wherever: a block with a free span above it (where best fit would carve
 * the request from the top of the merged span) comes back in place. A
 * malloc of another length gives it back first and ends the streak. A
 * double free of a cached block is caught, and the statistics are exact
 * throughout. */
static void test_sparse_cache(void)
{
	long long on;
	CHECK(arr_alloc_get_option("sparse_cache", &on) == 0 && on == 1);
	CHECK(arr_alloc_set_option("sparse_cache", 2) < 0 && arr_alloc_set_option("sparse_cache", -1) < 0);
	void *pin = arr_malloc(100000);
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t req0 = st.live_requested, use0 = st.live_usable, n0 = st.live_blocks;
	/* sparse blocks are carved from the high end: c below b below a */
	char *a = arr_malloc(5000), *b = arr_malloc(5000), *c = arr_malloc(5000);
	CHECK(a && b == a - 5120 && c == b - 5120 && arr_malloc_usable_size(b) == 5120);
	for (int round = 0; round < 6; round++) {
		arr_free(b);
		CHECK(arr_alloc_stats_get(&st) == 0);
		CHECK(st.live_requested == req0 + 10000 && st.live_usable == use0 + 2 * 5120 &&
		      st.live_blocks == n0 + 2);
		char *b2 = arr_malloc(4900 + (size_t)round); /* 20 units too */
		CHECK(b2 == b && arr_malloc_usable_size(b2) == 5120);
		CHECK(arr_alloc_stats_get(&st) == 0);
		CHECK(st.live_requested == req0 + 14900 + (uint64_t)round && st.live_usable == use0 + 3 * 5120 &&
		      st.live_blocks == n0 + 3);
		b = b2;
	}
	/* a calloc takes it back too, cleared */
	memset(b, 0xab, 5000);
	arr_free(b);
	char *z = arr_calloc(1, 4950);
	bool zero = z == b;
	for (size_t i = 0; zero && i < 4950; i++)
		zero = z[i] == 0;
	CHECK(zero);
	/* a streak: b comes back although a's span, freed, lies above it */
	arr_free(a);
	arr_free(b); /* gives a back, keeps b */
	char *p = arr_malloc(5000);
	CHECK(p == b);
	arr_free(p);
	CHECK(free_aborts(p)); /* a double free of the cached block */
	/* another length: b goes back first (merged with a's span above it),
	 * the streak ends, and the 6000-byte block is carved from the top */
	char *q = arr_malloc(6000);
	CHECK(q == b + 2 * 5120 - 6144);
	arr_free(q);          /* cached */
	arr_free(c);          /* gives q back (merged with the rest of b's span), keeps c */
	p = arr_malloc(5000); /* c's length, no streak, a free span above c: from the top */
	CHECK(p != c && p == a);
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested == req0 + 5000 && st.live_usable == use0 + 5120 && st.live_blocks == n0 + 1);
	arr_free(p);
	/* off: a streak changes nothing, b merges with a's span at its free */
	CHECK(arr_alloc_set_option("sparse_cache", 0) == 0);
	a = arr_malloc(5000);
	b = arr_malloc(5000);
	CHECK(b == a - 5120);
	for (int round = 0; round < 5; round++) {
		arr_free(b);
		CHECK(arr_malloc(5000) == b);
	}
	arr_free(a);
	arr_free(b);
	p = arr_malloc(5000);
	CHECK(p == a);
	arr_free(p);
	CHECK(arr_alloc_set_option("sparse_cache", 1) == 0);
	/* a thread's cached block goes back at its exit (its blocks sparse
	 * while main is busy too) */
	run_thread_sparse(sparse_cache_thread);
	p = arr_malloc(3000); /* the top again: the thread's block is free */
	CHECK(p == sparse_kept);
	arr_free(p);
	churn(4096); /* a tick: main's cache given back */
	CHECK(arr_alloc_stats_get(&st) == 0);
	CHECK(st.live_requested == req0 && st.live_usable == use0 && st.live_blocks == n0);
	arr_free(pin);
}

/* Sparse classes: a 4700-byte request, a block of the 5120-byte class when
 * its class is dense, is a 4864-byte span-heap block while this thread
 * holds few of that class (fewer than `sparse` pages' worth); past that the
 * class gets pages again, and once they have all gone back (a tick) it is
 * sparse again. The statistics stay exact throughout. */
static void test_sparse_classes(void)
{
	enum { N = 400, SZ = 4700 };
	static void *v[N];
	long long pages;
	CHECK(arr_alloc_get_option("sparse", &pages) == 0 && pages >= 0);
	CHECK(arr_alloc_set_option("sparse", 2) == 0); /* dense from 2 x 65 536 / 5120 = 25 blocks */
	void *pin = arr_malloc(100000);
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t req0 = st.live_requested, n0 = st.live_blocks;
	unsigned span = 0, cls = 0;
	for (int i = 0; i < N; i++) {
		v[i] = arr_malloc(SZ);
		size_t u = arr_malloc_usable_size(v[i]);
		CHECK(u == 4864 || u == 5120);
		if (u == 4864)
			span += 1 + (cls != 0) * 1000; /* none after the first class block */
		else
			cls++;
		memset(v[i], i, SZ);
	}
	CHECK(span == 25 && cls == N - 25);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_requested == req0 + (uint64_t)N * SZ &&
	      st.live_blocks == n0 + N);
	for (int i = 0; i < N; i++)
		arr_free(v[i]);
	churn(2 * 4096 + 10); /* the class's pages go back, a tick: sparse again */
	void *p = arr_malloc(SZ);
	CHECK(arr_malloc_usable_size(p) == 4864);
	arr_free(p);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_blocks == n0);
	/* off: the class's pages from the first block */
	CHECK(arr_alloc_set_option("sparse", 0) == 0);
	p = arr_malloc(SZ);
	CHECK(arr_malloc_usable_size(p) == 5120);
	arr_free(p);
	CHECK(arr_alloc_set_option("sparse", pages) == 0);
	arr_free(pin);
}

/* A sparse class whose blocks the span heap rounds up past the class's
 * block turns dense once that excess reaches 16 KiB, however few pages'
 * worth it holds: sqlite's 1032-byte page-cache entries are 1280-byte span
 * blocks (1040 in their class), 240 bytes more each, so from the 69th
 * (16 384 / 240 = 68) they come from the class's pages; before, all of the
 * first 1008 (16 pages' worth) were span blocks (sqlite3 drop-in: +250 KB). */
static void test_sparse_waste(void)
{
	enum { N = 300, SZ = 1032 };
	static void *v[N];
	long long pages;
	CHECK(arr_alloc_get_option("sparse", &pages) == 0 && pages == 64);
	unsigned span = 0, cls = 0;
	for (int i = 0; i < N; i++) {
		v[i] = arr_malloc(SZ);
		size_t u = arr_malloc_usable_size(v[i]);
		CHECK(u == 1280 || u == 1040);
		if (u == 1280)
			span += 1 + (cls != 0) * 1000; /* none after the first class block */
		else
			cls++;
		memset(v[i], i, SZ);
	}
	if (span != 16384 / (1280 - 1040))
		fprintf(stderr, "sparse_waste: %u span blocks, %u class blocks\n", span, cls);
	CHECK(span == 16384 / (1280 - 1040) && cls == N - span);
	for (int i = 0; i < N; i++)
		arr_free(v[i]);
}

/* ---- arenas (span_arenas; span_split 0: each thread its own from its
 * first span-heap malloc, not after contention) ---- */

#define SEG_OF(p) ((uintptr_t)(p) >> 22) /* 4 MiB segments */
enum { XN = 48 };
struct xfer {
	void *mine[XN], **theirs;
	pthread_barrier_t *bar;
	unsigned seed;
	int bad;
};

/* Allocate XN blocks of 9-300 KiB, written; meet; free the other thread's
 * (each checked) while the other frees ours; again, 20 rounds. */
static void *cross_free(void *arg)
{
	struct xfer *x = arg;
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < XN; i++) {
			size_t sz = 9000 + (size_t)(rand_r(&x->seed) % 300000);
			unsigned char *p = arr_malloc(sz);
			if (p == NULL) {
				x->bad++;
				continue;
			}
			p[0] = p[sz - 1] = (unsigned char)(i + round);
			memcpy(p + 1, &sz, sizeof sz);
			x->mine[i] = p;
		}
		pthread_barrier_wait(x->bar);
		for (int i = 0; i < XN; i++) {
			unsigned char *p = x->theirs[i];
			size_t sz;
			memcpy(&sz, p + 1, sizeof sz);
			if (p[0] != (unsigned char)(i + round) || p[sz - 1] != (unsigned char)(i + round) ||
			    arr_malloc_usable_size(p) < sz)
				x->bad++;
			arr_free(p);
		}
		pthread_barrier_wait(x->bar);
	}
	return NULL;
}

/* Two threads free each other's large blocks at once, from two arenas: the
 * blocks survive, the counters come back, and the threads' blocks lie in
 * segments of their own (each arena maps its own). */
static void test_arena_cross_free(void)
{
	CHECK(arr_alloc_set_option("span_arenas", 8) == 0 && arr_alloc_set_option("span_split", 0) == 0);
	CHECK(arr_alloc_stats_get(&st) == 0);
	uint64_t n0 = st.live_blocks, req0 = st.live_requested;
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 2);
	static struct xfer x[2];
	x[0] = (struct xfer){.theirs = x[1].mine, .bar = &bar, .seed = 1};
	x[1] = (struct xfer){.theirs = x[0].mine, .bar = &bar, .seed = 2};
	pthread_t t[2];
	for (int k = 0; k < 2; k++)
		CHECK(pthread_create(&t[k], NULL, cross_free, &x[k]) == 0);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	pthread_barrier_destroy(&bar);
	CHECK(x[0].bad == 0 && x[1].bad == 0);
	CHECK(arr_alloc_stats_get(&st) == 0 && st.live_blocks == n0 && st.live_requested == req0);
}

/* A thread exits holding span blocks: another frees them into its arena, the
 * next thread (given the exited thread's heap, so its arena) reuses that
 * memory, and what stays free is purged by the other threads' ticks. */
static void *exit_holding(void *arg)
{
	void **v = arg;
	for (int i = 0; i < 32; i++) {
		v[i] = arr_malloc(100000);
		if (v[i])
			memset(v[i], i, 100000);
	}
	return NULL;
}

static void *reuse_one(void *arg)
{
	void **out = arg;
	*out = arr_malloc(100000);
	return NULL;
}

static void test_arena_thread_exit(void)
{
	long long delay0;
	CHECK(arr_alloc_get_option("purge_delay", &delay0) == 0);
	CHECK(arr_alloc_set_option("purge_delay", 20000) == 0);
	CHECK(arr_alloc_set_option("span_arenas", 8) == 0 && arr_alloc_set_option("span_split", 0) == 0);
	/* nothing resident left free by the tests before: the 3.2 MB below
	 * stay under the trim's 4 MiB floor, so the ticks' purge is tested */
	arr_alloc_purge();
	static void *v[32];
	pthread_t t;
	CHECK(pthread_create(&t, NULL, exit_holding, v) == 0);
	pthread_join(t, NULL);
	for (int i = 0; i < 32; i++) {
		CHECK(v[i] != NULL && ((unsigned char *)v[i])[99999] == (unsigned char)i);
		arr_free(v[i]); /* a remote free into the exited thread's arena */
	}
	void *q = NULL;
	CHECK(pthread_create(&t, NULL, reuse_one, &q) == 0);
	pthread_join(t, NULL);
	bool reused = false;
	for (int i = 0; i < 32; i++)
		reused |= SEG_OF(q) == SEG_OF(v[i]);
	CHECK(q != NULL && reused);
	arr_free(q);
	uint64_t before = purged();
	churn(100000); /* this thread's ticks purge the idle arena */
	unsigned left = 0;
	for (int i = 0; i < 32; i++)
		left += resident_pages(v[i], 100000);
	CHECK(left <= 32 * 2); /* the OS pages the blocks share with a neighbour */
	CHECK(purged() - before >= 32 * (100000 / 4096 - 2));
	CHECK(arr_alloc_set_option("purge_delay", delay0) == 0);
}

/* A malloc that would fault in fresh memory takes another arena's free
 * resident span first: thread B's block lands where thread A's was. */
static void *alloc_free_one(void *arg)
{
	void **out = arg;
	unsigned char *p = arr_malloc(200000);
	if (p)
		memset(p, 1, 200000);
	*out = p;
	return NULL;
}

static void test_arena_steal(void)
{
	long long delay0;
	CHECK(arr_alloc_get_option("purge_delay", &delay0) == 0);
	CHECK(arr_alloc_set_option("purge_delay", -1) == 0); /* nothing purged meanwhile */
	CHECK(arr_alloc_set_option("span_arenas", 8) == 0 && arr_alloc_set_option("span_split", 0) == 0);
	arr_alloc_purge(); /* every arena's free memory clean: a resident fit is rare */
	void *a = NULL, *b = NULL;
	void *pin = arr_malloc(200000); /* this thread's arena holds it */
	CHECK(pin != NULL);
	memset(pin, 3, 200000);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, alloc_free_one, &a) == 0);
	pthread_join(t, NULL);
	CHECK(a != NULL);
	memset(a, 2, 200000);
	arr_free(pin);
	/* pin's span is free and resident in this thread's arena; the next
	 * thread's (the first one's heap, so its arena) holds `a` and nothing
	 * resident that fits */
	CHECK(resident_pages_or(pin, 200000, UNMAPPED) >= 200000 / 4096 - 1);
	CHECK(pthread_create(&t, NULL, alloc_free_one, &b) == 0);
	pthread_join(t, NULL);
	CHECK(b == pin);
	arr_free(a);
	arr_free(b);
	CHECK(arr_alloc_set_option("purge_delay", delay0) == 0);
}

/* fork while another thread works in every arena: the child frees a block
 * of that thread's arena, allocates, and sums the statistics (every arena's
 * lock) without hanging. */
static _Atomic int fork_stop;
static void *_Atomic fork_block;
static void *span_worker(void *arg)
{
	(void)arg;
	void *keep = arr_malloc(50000);
	atomic_store(&fork_block, keep);
	unsigned seed = 3;
	while (!atomic_load(&fork_stop)) {
		void *p = arr_malloc(9000 + rand_r(&seed) % 200000);
		arr_free(p);
	}
	return NULL;
}

static void test_arena_fork(void)
{
	CHECK(arr_alloc_set_option("span_arenas", 8) == 0 && arr_alloc_set_option("span_split", 0) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, span_worker, NULL) == 0);
	while (atomic_load(&fork_block) == NULL)
		sched_yield();
	for (int k = 0; k < 20; k++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(20);
			arr_free(atomic_load(&fork_block));
			void *v[64];
			for (int i = 0; i < 64; i++)
				v[i] = arr_malloc(9000 + (size_t)i * 4000);
			for (int i = 0; i < 64; i++)
				arr_free(v[i]);
			struct arr_alloc_stats cs;
			(void)arr_alloc_purge();
			_exit(arr_alloc_stats_get(&cs) == 0 ? 0 : 1);
		}
		int status = 0;
		CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	atomic_store(&fork_stop, 1);
	pthread_join(t, NULL);
	arr_free(atomic_load(&fork_block));
}

int main(int argc, char **argv)
{
	/* these tests are of a thread's own heap from its first malloc: no
	 * light threads (tests/allocator/light.c has those); the purges after
	 * a fixed delay, in a process that has run many operations: not the
	 * delay that grows with its age (tests/allocator/aged.c has that) */
	arr_alloc_set_option("light", 0);
	arr_alloc_set_option("aged", 0);
	if (argc > 1 && strcmp(argv[1], "trimbet") == 0) {
		/* a process of its own: the bets it loses change later trims */
		test_trim_bet();
		if (failures)
			return 1;
		printf("allocator spanheap trimbet: all checks passed\n");
		return 0;
	}
	test_realloc_headroom(); /* first: no block cached or resized before */
	test_stats();
	test_usable();
	test_coalesce_best_fit();
	test_coarse_best_fit();
	test_calloc();
	test_decay();
	test_trim();
	test_remote_free();
	test_realloc();
	test_realloc_in_place();
	test_realloc_sparse_growth();
	test_block_cache();
	test_sparse_cache();
	test_sparse_classes();
	test_sparse_waste();
	test_arena_cross_free();
	test_arena_thread_exit();
	test_arena_steal();
	test_arena_fork();
	test_direct_route();
	test_off();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("allocator spanheap: all checks passed\n");
	return 0;
}
