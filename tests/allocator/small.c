/*
 * tests/allocator/small.c - what a small heap holds: the sparse classes of
 * 1-8 KiB come from the span heap while a heap holds few of their blocks and
 * at most `sparse_threads` threads hold a heap (then from their classes'
 * pages), and a class below 256 bytes with no page of its own borrows a few
 * blocks a tick from a class at most twice the request instead of taking an
 * OS page of its own; a class's freed blocks in its older pages are used
 * again before its current page carves fresh ones; a thread that made a few
 * calls and then none stops counting as busy, and so does one that made many
 * and then none for 16 censuses' worth of the op clock. Exits non-zero if a
 * check fails.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "allocrr/alloc.h"

#include "check.h"

static long long option(const char *name)
{
	long long v = -1;
	CHECK(arr_alloc_get_option(name, &v) == 0);
	return v;
}

/* A thread that holds a heap (it allocated) until it is told to go. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started, go;

static void *holder(void *arg)
{
	void *p = arr_malloc(24);
	pthread_mutex_lock(&mu);
	started++;
	pthread_cond_broadcast(&cv);
	while (!go)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	arr_free(p);
	return arg;
}

static void holders_start(pthread_t *t, int n)
{
	for (int i = 0; i < n; i++)
		CHECK(pthread_create(&t[i], NULL, holder, NULL) == 0);
	pthread_mutex_lock(&mu);
	while (started < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void holders_stop(pthread_t *t, int n)
{
	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	started = go = 0;
}

/* The usable size tells where a block came from: 1100 bytes is class 1104,
 * or a 1280-byte block of the span heap (five 256-byte units) while the
 * class is sparse. */
static size_t usable_of(size_t size)
{
	void *p = arr_malloc(size);
	CHECK(p != NULL);
	size_t u = arr_malloc_usable_size(p);
	arr_free(p);
	return u;
}

static void test_sparse_defaults(void)
{
	CHECK(option("sparse") == 64 && option("sparse_min") == 1024 && option("sparse_threads") == 1);
	/* main alone: classes above 1 KiB are sparse */
	CHECK(usable_of(1100) == 1280);
	CHECK(usable_of(3000) == 3072);
	/* above sparse_min only */
	CHECK(arr_alloc_set_option("sparse_min", 2048) == 0);
	CHECK(usable_of(1300) == 1408);
	CHECK(arr_alloc_set_option("sparse_min", 1024) == 0);
	CHECK(arr_alloc_set_option("sparse_min", 1000) < 0 && arr_alloc_set_option("sparse_min", 9000) < 0);
	CHECK(arr_alloc_set_option("sparse_threads", -1) < 0);
}

/* Threads count from their first malloc (the census of busy threads, which
 * stops counting idle ones, does not run in these few operations). With a
 * main thread and one more (sparse_threads 1) a class takes its pages at
 * once; with sparse_threads 2 the classes stay sparse; with a third thread,
 * a class takes its pages again (its blocks from a page of its own), unless
 * sparse_threads is 0. */
static void test_sparse_threads(void)
{
	pthread_t t[2];
	holders_start(t, 1);
	/* class 1664 (no page of it or of the four above it: nothing to
	 * borrow), a 1792-byte block while sparse */
	CHECK(usable_of(1550) == 1664);
	CHECK(arr_alloc_set_option("sparse_threads", 2) == 0);
	CHECK(usable_of(1100) == 1280);
	holders_stop(t, 1);
	holders_start(t, 2);
	CHECK(usable_of(1550) == 1664);
	CHECK(arr_alloc_set_option("sparse_threads", 0) == 0);
	void *p = arr_malloc(2300); /* class 2304, span 2304 */
	CHECK(((uintptr_t)p & 255) == 0);
	void *q = arr_malloc(2300);
	CHECK(((uintptr_t)q & 255) == 0); /* two span blocks: 256-byte aligned */
	arr_free(p);
	arr_free(q);
	CHECK(arr_alloc_set_option("sparse_threads", 1) == 0);
	void *r = arr_malloc(5000); /* class 5120: dense at once */
	void *s = arr_malloc(5000);
	CHECK(arr_malloc_usable_size(r) == 5120 && arr_malloc_usable_size(s) == 5120);
	CHECK((uintptr_t)s - (uintptr_t)r == 5120 || (uintptr_t)r - (uintptr_t)s == 5120);
	arr_free(r);
	arr_free(s);
	CHECK(arr_alloc_set_option("sparse_threads", 1) == 0);
	holders_stop(t, 2);
}

/* In a fresh thread (a heap with no page yet): a 60-byte block makes a page
 * of class 64; a 40-byte request (class 48, no page) then gets a 64-byte
 * block of that page, ARR__SMALL_BORROWS (32) times in the tick, and the
 * next one a 48-byte block of its own class's page. A 20-byte request
 * (class 32) never borrows 64 (more than twice the request). */
static void *small_borrow(void *arg)
{
	void *a = arr_malloc(60);
	CHECK(arr_malloc_usable_size(a) == 64);
	void *v[40];
	int borrowed = 0;
	for (int i = 0; i < 40; i++) {
		v[i] = arr_malloc(40);
		size_t u = arr_malloc_usable_size(v[i]);
		CHECK(u == 48 || u == 64);
		if (u == 64) {
			borrowed++;
			CHECK(i < 32);
			/* in the 64-byte class's page, next to the first block */
			CHECK(((uintptr_t)v[i] ^ (uintptr_t)a) < 65536);
		}
	}
	CHECK(borrowed == 32);
	CHECK(arr_malloc_usable_size(v[39]) == 48);
	void *b = arr_malloc(20);
	CHECK(arr_malloc_usable_size(b) == 32);
	arr_free(b);
	for (int i = 0; i < 40; i++)
		arr_free(v[i]);
	arr_free(a);
	return arg;
}

/* In a fresh thread: 1024 + 64 blocks of 60 bytes fill a page of class 64
 * (1024 blocks) and the first carve (one OS page, 64 blocks) of a second.
 * Ten blocks freed in the first page are the next ten mallocs, before the
 * second page carves more (fresh memory). */
static void *reuse_first(void *arg)
{
	enum { PAGE = 1024, N = PAGE + 64, FREED = 10 };
	static void *v[N];
	for (int i = 0; i < N; i++) {
		v[i] = arr_malloc(60);
		CHECK(v[i] != NULL && arr_malloc_usable_size(v[i]) == 64);
	}
	void *freed[FREED];
	for (int i = 0; i < FREED; i++) {
		freed[i] = v[i * 50];
		arr_free(freed[i]);
		v[i * 50] = NULL;
	}
	int reused = 0;
	void *w[FREED];
	for (int i = 0; i < FREED; i++) {
		w[i] = arr_malloc(60);
		for (int j = 0; j < FREED; j++)
			reused += w[i] == freed[j];
	}
	CHECK(reused == FREED);
	for (int i = 0; i < FREED; i++)
		arr_free(w[i]);
	for (int i = 0; i < N; i++)
		arr_free(v[i]);
	return arg;
}

/*
 * A thread that makes a few calls and then none is not busy, whichever heap
 * started first: in a parallel replay a recorded main thread's two callocs
 * may come after its worker's first malloc, so its heap is the newest and
 * the worker's start says nothing of it. Here the worker starts first, then
 * main (no heap yet in this process) makes two calls and waits in
 * pthread_join; after a few ticks of the worker (censuses at its pool
 * calls) one thread is busy and a class above 1 KiB is sparse again: 1550
 * bytes are a 1792-byte span block, not class 1664. Counted busy until 16
 * idle censuses had passed, main kept it dense for 16 ticks.
 */
static int late_main_called;

static void *late_worker(void *arg)
{
	arr_free(arr_malloc(32));
	pthread_mutex_lock(&mu);
	started = 1;
	pthread_cond_broadcast(&cv);
	while (!late_main_called)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < 4 * 4096; i++)
		arr_free(arr_malloc(32));
	CHECK(usable_of(1550) == 1792);
	return arg;
}

static void test_late_idle_heap(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, late_worker, NULL) == 0);
	pthread_mutex_lock(&mu);
	while (!started)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	void *p = arr_malloc(24); /* main's heap: the newest */
	arr_free(p);
	pthread_mutex_lock(&mu);
	late_main_called = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
	started = 0;
}

/*
 * A main thread that made many calls, then started a worker and waits,
 * stops counting after 16 censuses' worth of the op clock (16 x 1024
 * operations), not after 16 censuses: the clock is synced, and the census
 * taken, at pool calls only, here the worker's ticks (one every 4096 frees,
 * 8192 operations). After 5 ticks one thread is busy: a class above 1 KiB
 * is sparse (1550 bytes: a 1792-byte span block). Counted in censuses, main
 * stayed busy for 16 ticks.
 */
static void *ticking_worker(void *arg)
{
	for (int i = 0; i < 5 * 4096; i++)
		arr_free(arr_malloc(32));
	CHECK(usable_of(1550) == 1792);
	return arg;
}

static void test_idle_main_by_clock(void)
{
	static void *v[300];
	for (int i = 0; i < 300; i++) /* more than a start-up's few calls */
		v[i] = arr_malloc(40);
	for (int i = 0; i < 300; i++)
		arr_free(v[i]);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, ticking_worker, NULL) == 0);
	pthread_join(t, NULL);
}

int main(void)
{
	/* these tests are of a thread's own heap from its first malloc: no
	 * light threads (tests/allocator/light.c has those) */
	arr_alloc_set_option("light", 0);
	test_late_idle_heap(); /* first: main has no heap yet */
	test_idle_main_by_clock();
	test_sparse_defaults();
	test_sparse_threads();
	pthread_t t;
	CHECK(pthread_create(&t, NULL, small_borrow, NULL) == 0);
	pthread_join(t, NULL);
	CHECK(pthread_create(&t, NULL, reuse_first, NULL) == 0);
	pthread_join(t, NULL);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("allocator small: all checks passed\n");
	return 0;
}
