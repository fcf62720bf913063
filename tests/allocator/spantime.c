/*
 * tests/allocator/spantime.c - what the span heap (allocator/spanheap.c)
 * does to save time, through the internal API:
 *   - the trim spares spans freed recently (a working set that shrinks and
 *     grows again takes them back): 90 of 96 written 200 KB blocks freed
 *     stay resident, and go once they have been free for an eighth of the
 *     decay;
 *   - a span-heap malloc waits while its arena's lock is held (the fork
 *     handler's prepare takes every arena's), sleeps in the kernel after its
 *     spins instead of spinning on, and is woken by the unlock;
 *   - four threads mallocing, writing, checking and freeing span-heap blocks
 *     (and each other's) at once, with one arena and with eight: contents
 *     intact, live blocks back to their start, invariants hold;
 *   - a calloc'd block whose OS pages span several words of the clean
 *     bitmap, part reused (written) and part fresh, comes back all zero,
 *     and a wholly fresh one is known zero (its memset skipped);
 *   - a carve says "known zero" to a calloc only: a plain malloc of fresh
 *     memory is told false, a calloc of the same memory after a purge skips
 *     its memset again;
 *   - blocks freed left, right and in between coalesce into one free span
 *     (the free's own coalescing path), which a malloc of its length takes
 *     back whole.
 * Exits non-zero if a check fails; a lock that never wakes its sleeper is
 * killed by alarm() and reported as hung.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "allocrr/alloc.h"
#include "internal.h"

#include "check.h"

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "spantime: hung (a span-heap lock never released, or a waiter never woken)\n";
	if (write(2, msg, sizeof msg - 1) < 0) {
	}
	_exit(3);
}

/* ---- the trim's age bound ---- */

static void test_trim_age(void)
{
	enum { N = 96, KEEP = 6, SZ = 200000, INNER = SZ / 4096 - 1 };
	static unsigned char *b[N];
	long long delay;
	CHECK(arr_alloc_get_option("purge_delay", &delay) == 0 && delay > 0);
	for (unsigned i = 0; i < N; i++) {
		b[i] = arr_malloc(SZ);
		CHECK(b[i] != NULL);
		if (b[i] != NULL)
			memset(b[i], (int)i + 1, SZ);
	}
	/* 19.2 MB written, 18 MB freed: past 8 x live + 4 MiB (a trim is due),
	 * short of 32 x (not "nearly everything") */
	for (unsigned i = 0; i < N - KEEP; i++)
		arr_free(b[i]);
	unsigned res = 0;
	for (unsigned i = 0; i < N - KEEP; i++)
		res += resident_pages(b[i], SZ);
	CHECK(res >= (N - KEEP) * INNER);
	/* an eighth of the decay (three eighths here) of other operations,
	 * then a span-heap malloc and free: the trim takes them now */
	for (long long k = 0; k < 3 * delay / 8 + 8192; k++)
		arr_free(arr_malloc(64));
	arr_free(arr_malloc(SZ));
	unsigned after = 0;
	for (unsigned i = 0; i < N - KEEP; i++)
		after += resident_pages(b[i], SZ);
	if (after * 4096ull > (size_t)(N - KEEP) * INNER * 4096ull - ((size_t)8 << 20))
		fprintf(stderr, "trim age: %u of %u freed pages resident before, %u after\n", res, (N - KEEP) * INNER,
			after);
	CHECK(after * 4096ull <= (size_t)(N - KEEP) * INNER * 4096ull - ((size_t)8 << 20));
	for (unsigned i = N - KEEP; i < N; i++)
		arr_free(b[i]);
	CHECK(arr__spanheap_is_valid());
}

/* ---- a waiter sleeps, and the unlock wakes it ---- */

static _Atomic int waiter_tid, waiter_done;

static void *waiter(void *arg)
{
	(void)arg;
	atomic_store(&waiter_tid, gettid());
	char *p = arr_malloc(100000); /* the span heap: waits for the lock */
	if (p != NULL)
		memset(p, 1, 100000);
	atomic_store(&waiter_done, p != NULL ? 1 : 2);
	arr_free(p);
	return NULL;
}

/* The state letter of thread tid (/proc/self/task/TID/stat), '?' if unknown. */
static char thread_state(int tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return '?';
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *r = strrchr(buf, ')');
	return r != NULL && r[1] == ' ' ? r[2] : '?';
}

static void test_wait_and_wake(void)
{
	atomic_store(&waiter_tid, 0);
	atomic_store(&waiter_done, 0);
	void *warm = arr_malloc(100000); /* the arena exists, its segment mapped */
	arr_free(warm);
	arr__span_fork_prepare(); /* every arena's lock held */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
	/* the waiter asleep in the kernel, not spinning: up to 10 s for the
	 * scheduler to run it that far (a busy machine), 10 ms apart */
	char st = '?';
	for (int k = 0; k < 1000; k++) {
		int tid = atomic_load(&waiter_tid);
		if (tid != 0 && (st = thread_state(tid)) == 'S')
			break;
		usleep(10000);
	}
	CHECK(st == 'S');
	if (atomic_load(&waiter_done) != 0)
		fprintf(stderr, "waiter done %d state %c (tid %d)\n", atomic_load(&waiter_done), st,
			atomic_load(&waiter_tid));
	CHECK(atomic_load(&waiter_done) == 0); /* no block while the lock is held */
	arr__span_fork_parent();
	pthread_join(t, NULL); /* main's alarm() reports a waiter never woken */
	CHECK(atomic_load(&waiter_done) == 1);
}

/* ---- threads at once ---- */

#define WORKERS 4
#define ROUNDS 20000
#define SLOTS 64

static _Atomic(uint8_t *) exchange[WORKERS];

static size_t size_of(uint64_t *seed)
{
	*seed = *seed * 6364136223846793005u + 1442695040888963407u;
	uint64_t r = *seed >> 33;
	/* 1-8 KiB sparse classes (main is not the only heap: dense after two
	 * threads, which is fine), and 9-300 KiB span blocks */
	return r % 4 == 0 ? 1024 + r % 7168 : 9000 + r % 300000;
}

static void fill(uint8_t *p, size_t n, uint8_t v)
{
	memset(p, v, 64 < n ? 64 : n);
	memset(p + n - (64 < n ? 64 : n), v, 64 < n ? 64 : n);
}

static bool intact(const uint8_t *p, size_t n, uint8_t v)
{
	size_t k = 64 < n ? 64 : n;
	for (size_t i = 0; i < k; i++)
		if (p[i] != v || p[n - 1 - i] != v)
			return false;
	return true;
}

struct slot {
	uint8_t *p;
	size_t n;
};

static _Atomic int bad;

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t seed = id + 1;
	struct slot s[SLOTS] = {{0}};
	for (unsigned r = 0; r < ROUNDS; r++) {
		struct slot *x = &s[r % SLOTS];
		if (x->p != NULL) {
			if (!intact(x->p, x->n, (uint8_t)(uintptr_t)x->p))
				atomic_store(&bad, 1);
			if (r % 5 == 0) {
				/* to the next thread's exchange slot (it frees it):
				 * frees into an arena from another thread */
				uint8_t *old = atomic_exchange(&exchange[(id + 1) % WORKERS], x->p);
				arr_free(old);
			} else {
				arr_free(x->p);
			}
		}
		x->n = size_of(&seed);
		x->p = arr_malloc(x->n);
		if (x->p == NULL) {
			atomic_store(&bad, 1);
			break;
		}
		fill(x->p, x->n, (uint8_t)(uintptr_t)x->p);
	}
	for (unsigned k = 0; k < SLOTS; k++)
		arr_free(s[k].p);
	return NULL;
}

static void test_threads(const char *what)
{
	struct arr_alloc_stats a, b;
	CHECK(arr_alloc_stats_get(&a) == 0);
	pthread_t t[WORKERS];
	for (unsigned k = 0; k < WORKERS; k++)
		CHECK(pthread_create(&t[k], NULL, worker, (void *)(uintptr_t)k) == 0);
	for (unsigned k = 0; k < WORKERS; k++)
		pthread_join(t[k], NULL);
	for (unsigned k = 0; k < WORKERS; k++)
		arr_free(atomic_exchange(&exchange[k], NULL));
	CHECK(atomic_load(&bad) == 0);
	CHECK(arr_alloc_stats_get(&b) == 0);
	if (b.live_blocks != a.live_blocks)
		fprintf(stderr, "%s: live blocks %llu -> %llu\n", what, (unsigned long long)a.live_blocks,
			(unsigned long long)b.live_blocks);
	CHECK(b.live_blocks == a.live_blocks);
	CHECK(arr__spanheap_is_valid());
}

/* ---- clean pages over several bitmap words ---- */

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

static void test_clean_words(void)
{
	/* first in the program: the span heap's segment is all fresh */
	struct arr_alloc_stats a, b;
	/* wholly fresh: 1 MiB, 256 OS pages, four words of the bitmap */
	CHECK(arr_alloc_stats_get(&a) == 0);
	uint8_t *f = arr_calloc(1, 1 << 20);
	CHECK(arr_alloc_stats_get(&b) == 0);
	CHECK(f != NULL && all_zero(f, 1 << 20));
	CHECK(b.calloc_skipped - a.calloc_skipped >= (1 << 20) - 4096);
	/* part reused: 300 KB written and freed, then a 1 MiB calloc whose
	 * best fit is the free span made of it and the fresh memory after it
	 * (the freed block coalesces with its free neighbour) */
	uint8_t *w = arr_malloc(300000);
	CHECK(w != NULL);
	memset(w, 0xa5, 300000);
	arr_free(w);
	uint8_t *c = arr_calloc(1, 1 << 20);
	CHECK(c != NULL && all_zero(c, 1 << 20));
	memset(c, 0x5a, 1 << 20);
	arr_free(c);
	/* and once more, all of it reused now */
	c = arr_calloc(1, 1 << 20);
	CHECK(c != NULL && all_zero(c, 1 << 20));
	arr_free(c);
	arr_free(f);
	CHECK(arr__spanheap_is_valid());
}

static void test_zeroed_only_for_calloc(void)
{
	enum { SZ = 1 << 20 };
	struct arr_alloc_stats a, b;
	struct arr__span_zeroed z = {.all = true};
	arr__span_purge_all(); /* every free span clean: what follows is fresh */
	uint8_t *p = arr__span_alloc(&arr__heap_empty, SZ, false, &z);
	CHECK(p != NULL && !z.all);
	if (p != NULL)
		arr__span_free(p);
	arr__span_purge_all();
	CHECK(arr_alloc_stats_get(&a) == 0);
	uint8_t *c = arr_calloc(1, SZ);
	CHECK(arr_alloc_stats_get(&b) == 0);
	CHECK(c != NULL && all_zero(c, SZ));
	CHECK(b.calloc_skipped - a.calloc_skipped >= SZ - 4096);
	arr_free(c);
	CHECK(arr__spanheap_is_valid());
}

/* A calloc beside a live block: the page they share is resident (the
 * neighbour wrote it), the rest of the calloc'd block fresh. Only the shared
 * page is cleared: the rest stays untouched, as glibc leaves a fresh block
 * (cleared whole, all of it became resident). */
static void test_calloc_beside_live(void)
{
	enum { NB = 20000, UNITS = (NB + 255) / 256, SZ = 512 << 10 };
	struct arr_alloc_stats a, b;
	arr__span_purge_all();
	uint8_t *n = arr_malloc(NB);
	CHECK(n != NULL);
	if (n == NULL)
		return;
	memset(n, 1, NB);
	CHECK(arr_alloc_stats_get(&a) == 0);
	uint8_t *c = arr_calloc(1, SZ);
	CHECK(arr_alloc_stats_get(&b) == 0);
	CHECK(c == n + UNITS * 256); /* carved right after it, from the same free span */
	if (c != NULL) {
		unsigned res = resident_pages(c, SZ); /* before any read maps a page */
		if (res > 2)
			fprintf(stderr, "calloc beside a live block: %u of %u pages resident\n", res, SZ / 4096);
		CHECK(res <= 2);
		CHECK(b.calloc_zeroed - a.calloc_zeroed <= 4096);
		CHECK(b.calloc_skipped - a.calloc_skipped >= SZ - 4096);
		CHECK(all_zero(c, SZ));
		arr_free(c);
	}
	arr_free(n);
	CHECK(arr__spanheap_is_valid());
}

static void test_free_coalesce(void)
{
	enum { SZ = 64 << 10 };
	uint8_t *b[5];
	arr__span_purge_all();
	/* five neighbours (best fit of fresh memory carves them in order) */
	for (unsigned i = 0; i < 5; i++) {
		b[i] = arr_malloc(SZ);
		CHECK(b[i] != NULL);
		if (b[i] == NULL)
			return;
		memset(b[i], (int)i + 1, SZ);
	}
	for (unsigned i = 1; i < 5; i++)
		CHECK(b[i] == b[i - 1] + SZ);
	arr_free(b[1]); /* no free neighbour */
	arr_free(b[3]); /* none either */
	arr_free(b[2]); /* both: one span b[1] .. b[3] */
	CHECK(arr__spanheap_is_valid());
	uint8_t *m = arr_malloc(3 * SZ);
	CHECK(m == b[1]);
	arr_free(m);
	arr_free(b[0]); /* right neighbour free */
	arr_free(b[4]); /* left neighbour free: b[0] .. b[4] */
	CHECK(arr__spanheap_is_valid());
	m = arr_malloc(5 * SZ);
	CHECK(m == b[0]);
	arr_free(m);
	CHECK(arr__spanheap_is_valid());
}

int main(int argc, char **argv)
{
	signal(SIGALRM, on_alarm);
	alarm(120);
	if (argc > 1 && !strcmp(argv[1], "threads")) {
		/* allocator.spantime-threads */
		test_threads("one arena");
		CHECK(arr_alloc_set_option("span_arenas", 8) == 0);
		CHECK(arr_alloc_set_option("span_split", 0) == 0);
		test_threads("eight arenas");
	} else {
		test_clean_words();
		test_zeroed_only_for_calloc();
		test_calloc_beside_live();
		test_free_coalesce();
		test_trim_age();
		test_wait_and_wake();
		CHECK(arr_alloc_set_option("span_arenas", 8) == 0);
		test_wait_and_wake();
	}
	if (failures)
		fprintf(stderr, "spantime: %d check(s) failed\n", failures);
	return failures != 0;
}
