/*
 * tests/allocator/light.c - light threads (allocator/heap.c "Light
 * threads"): a thread's first `light` slow-path mallocs come from the shared
 * heap while another thread holds a heap of its own.
 *
 *   footprint  N threads each make a few mallocs of several classes and keep
 *              them: the resident bytes (arr_alloc_stats) they add, light,
 *              stay below half of what they add with a heap each (light=0),
 *              each case in a fresh child process
 *   contents   those blocks hold what each thread wrote, freed by another
 *              light thread, by the main thread, and by their own thread
 *              before it exits
 *   graduate   a thread light for its first `light` mallocs (no heap of its
 *              own: its TLS heap is the empty one), then with a heap of its
 *              own, which has taken the shared heap's pages (their `heap`)
 *   release    once every light block is freed, another heap's ticks give the
 *              idle shared heap's empty pages back (no page left), and
 *              arr_alloc_purge does at once
 *   fork       40 forks while 3 light threads allocate and exchange blocks:
 *              the child frees the vanished threads' blocks, allocates from a
 *              light thread of its own and exits 0 within alarm(10)
 *
 * Linked with arr_alloc_debug (ARR_DEBUG 2): the invariant walks run,
 * arr__shared_is_valid among them.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "allocrr/alloc.h"
#include "check.h"
#include "internal.h"

#define NTHREADS 16
#define PER 12 /* blocks a thread keeps: 2 each of 6 classes */
static const size_t sizes[6] = {16, 48, 112, 320, 640, 1000};

static void *blocks[NTHREADS][PER];
static pthread_barrier_t bar;

static unsigned char pattern(int t, int i) { return (unsigned char)(t * 31 + i * 7 + 1); }

static void fill(int t)
{
	for (int i = 0; i < PER; i++) {
		size_t n = sizes[i % 6];
		blocks[t][i] = arr_malloc(n);
		CHECK(blocks[t][i] != NULL);
		if (blocks[t][i])
			memset(blocks[t][i], pattern(t, i), n);
	}
}

static bool intact(int t, int i)
{
	const unsigned char *p = blocks[t][i];
	for (size_t k = 0; k < sizes[i % 6]; k++)
		if (p[k] != pattern(t, i))
			return false;
	return true;
}

/* ---- footprint and contents ---- */

static long long keeper_light;

static void *keeper(void *arg)
{
	int t = (int)(intptr_t)arg;
	fill(t);
	CHECK((arr__tl_heap == &arr__heap_empty) == (keeper_light > PER));
	pthread_barrier_wait(&bar);
	return NULL;
}

/* In a child: NTHREADS keepers with light = `light`; exits with the
 * resident 4 KiB pages they added (at most 254; 255: a check failed). */
static void footprint_child(long long light)
{
	CHECK(arr_alloc_set_option("light", light) == 0);
	keeper_light = light;
	void *mine = arr_malloc(100); /* main holds a heap: the others may be light */
	struct arr_alloc_stats st;
	arr_alloc_stats_get(&st);
	uint64_t before = st.resident;
	pthread_barrier_init(&bar, NULL, NTHREADS + 1);
	pthread_t th[NTHREADS];
	for (int t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, keeper, (void *)(intptr_t)t);
	pthread_barrier_wait(&bar); /* all hold their blocks, none has exited */
	arr_alloc_stats_get(&st);
	uint64_t added = st.resident - before;
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	arr_free(mine);
	unsigned pages = (unsigned)(added >> 12);
	_exit(failures ? 255 : pages > 254 ? 254 : (int)pages);
}

static int footprint_of(long long light)
{
	pid_t pid = fork();
	if (pid == 0)
		footprint_child(light);
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 255);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

static void test_footprint(void)
{
	int own = footprint_of(0), light = footprint_of(64);
	printf("footprint: %d threads, %d blocks each: +%d KiB with a heap each, +%d KiB light\n", NTHREADS, PER,
	       own * 4, light * 4);
	/* a heap each: an OS page of each of 6 classes, per thread */
	CHECK(own >= NTHREADS * 6);
	CHECK(light * 2 < own);
}

/* the other light thread's blocks, freed here (a light thread's free) */
static void *swapper(void *arg)
{
	int t = (int)(intptr_t)arg;
	fill(t);
	pthread_barrier_wait(&bar);
	int o = t ^ 1;
	for (int i = 0; i < PER; i += 2) {
		CHECK(intact(o, i));
		arr_free(blocks[o][i]);
	}
	pthread_barrier_wait(&bar);
	/* its own odd blocks from 6 on, before it exits */
	for (int i = 7; i < PER; i += 2)
		arr_free(blocks[t][i]);
	CHECK(arr__tl_heap == &arr__heap_empty);
	return NULL;
}

static void test_contents(void)
{
	pthread_barrier_init(&bar, NULL, NTHREADS);
	pthread_t th[NTHREADS];
	for (int t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, swapper, (void *)(intptr_t)t);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&bar);
	/* the rest, by main (a thread with a heap: remote frees to the shared heap) */
	for (int t = 0; t < NTHREADS; t++)
		for (int i = 1; i < 7; i += 2) {
			CHECK(intact(t, i));
			arr_free(blocks[t][i]);
		}
	CHECK(arr__shared_is_valid());
}

/* ---- a light thread that becomes normal ---- */

static void *graduate(void *arg)
{
	(void)arg;
	long long light = 0;
	arr_alloc_get_option("light", &light);
	void *p[200];
	int n = (int)light + 40;
	CHECK(n <= 200);
	for (int i = 0; i < n; i++) {
		/* distinct classes' first blocks: each a slow-path malloc */
		size_t sz = 16 + (size_t)(i % 40) * 16;
		p[i] = arr_malloc(sz);
		memset(p[i], i, sz);
		if (i < light) {
			CHECK(arr__tl_heap == &arr__heap_empty);
			CHECK(arr__page_of(p[i])->heap == arr__shared_heap);
		}
	}
	CHECK(arr__light_calls() == light);
	struct arr__heap *h = arr__tl_heap;
	CHECK(h != &arr__heap_empty && h != arr__shared_heap);
	/* its light blocks' pages are its heap's now */
	for (int i = 0; i < n; i++) {
		CHECK(arr__page_of(p[i])->heap == h);
		CHECK(((unsigned char *)p[i])[0] == (unsigned char)i);
	}
	for (int i = 0; i < n; i++)
		arr_free(p[i]);
	return NULL;
}

static void test_graduate(void)
{
	CHECK(arr_alloc_set_option("light", 64) == 0);
	pthread_t th;
	pthread_create(&th, NULL, graduate, NULL);
	pthread_join(th, NULL);
	CHECK(arr__shared_is_valid());
}

/* ---- the idle shared heap gives its pages back ---- */

static bool shared_has_pages(void)
{
	struct arr__heap *s = arr__shared_heap;
	if (s == NULL)
		return false;
	for (unsigned c = 0; c < ARR__NCLASSES; c++)
		if (s->pages[c] != &arr__page_empty)
			return true;
	return s->full != NULL;
}

static void *light_pair(void *arg)
{
	void **out = arg;
	out[0] = arr_malloc(200);
	out[1] = arr_malloc(600);
	CHECK(arr__tl_heap == &arr__heap_empty);
	return NULL;
}

/* a block of the sparse classes or above (sparse_min, 1 KiB): a heap of the
 * thread's own at once, light or not (the shared heap would decide its
 * sparse classes, and a replay's worker then took their pages later:
 * mtwork's 1-thread `large` working set paced +1.4 MB) */
static void *light_then_big(void *arg)
{
	void **out = arg;
	out[0] = arr_malloc(200);
	CHECK(arr__tl_heap == &arr__heap_empty);
	out[1] = arr_malloc(2000);
	CHECK(arr__tl_heap != &arr__heap_empty);
	CHECK(arr__page_of(out[0])->heap == arr__tl_heap); /* and the shared pages with it */
	return NULL;
}

static void test_release(void)
{
	void *b[2];
	pthread_t th;
	/* the graduate test's thread freed all it had: its heap waits, kept,
	 * for the next thread, which would take it instead of going light
	 * (heap.c "Kept pages"); the purge gives its pages back */
	CHECK(atomic_load(&arr__kept_heaps) == 1);
	arr_alloc_purge();
	CHECK(atomic_load(&arr__kept_heaps) == 0);
	pthread_create(&th, NULL, light_pair, b);
	pthread_join(th, NULL);
	CHECK(shared_has_pages());
	arr_free(b[0]);
	arr_free(b[1]);
	/* main's ticks (every 4096 frees): the first sees the shared heap idle
	 * since the one before, and gives its empty pages back */
	for (int i = 0; i < 4 * ARR__TICK_OPS; i++)
		arr_free(arr_malloc(64));
	CHECK(!shared_has_pages());
	/* and malloc_trim's purge at once */
	pthread_create(&th, NULL, light_pair, b);
	pthread_join(th, NULL);
	CHECK(shared_has_pages());
	arr_free(b[0]);
	arr_free(b[1]);
	arr_alloc_purge();
	CHECK(!shared_has_pages());
	CHECK(arr__shared_is_valid());
	pthread_create(&th, NULL, light_then_big, b);
	pthread_join(th, NULL);
	arr_free(b[0]);
	arr_free(b[1]);
	CHECK(arr__shared_is_valid());
}

/* ---- fork while light threads allocate ---- */

static _Atomic int stop;
static void *_Atomic slots[32];

static void *churn(void *arg)
{
	uint64_t s = (uintptr_t)arg * 2654435761u + 1;
	/* at most half the `light` bound: a thread past it takes a heap */
	for (unsigned k = 0; !stop && k < 500000; k++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = (size_t)(s >> 40) % 1000 + 1; /* below sparse_min: light */
		void *p = arr_malloc(n);
		memset(p, 0xab, n < 64 ? n : 64);
		arr_free(atomic_exchange(&slots[(s >> 20) % 32], p));
	}
	CHECK(arr__tl_heap == &arr__heap_empty); /* light to the end */
	/* Exit only after the last fork: GCC 12's ASan runtime does not hold its
	 * quarantine lock across fork(), and a thread exiting (its quarantine
	 * drained under that lock) as another forks leaves the child's next
	 * thread exit spinning on it for good. */
	while (!stop)
		usleep(1000);
	return NULL;
}

static void *child_light(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) {
		void *p = arr_malloc(24 + (size_t)i * 8);
		memset(p, 1, 24);
		arr_free(p);
	}
	return arr__tl_heap == &arr__heap_empty ? (void *)1 : NULL;
}

/* The pool's and the shared heap's locks spin before they sleep (heap.c
 * locks_init), from the first malloc on and in a fork's child. */
static bool locks_adaptive(void)
{
	return arr__lock.__data.__kind == PTHREAD_MUTEX_ADAPTIVE_NP &&
	       arr__shared_lock.__data.__kind == PTHREAD_MUTEX_ADAPTIVE_NP;
}

/* light_then_big's thread exited with its blocks live (freed by main since):
 * its heap waits abandoned, and the next thread takes a heap of its own at
 * once and adopts it, not light (heap.c reap_one) */
static void *adopts(void *arg)
{
	(void)arg;
	void *p = arr_malloc(40);
	CHECK(arr__tl_heap != &arr__heap_empty && arr__light_calls() == 0);
	arr_free(p);
	return NULL;
}

static void test_adopt_not_light(void)
{
	pthread_t th;
	CHECK(atomic_load(&arr__abandoned_count) == 1);
	pthread_create(&th, NULL, adopts, NULL);
	pthread_join(th, NULL);
	CHECK(atomic_load(&arr__abandoned_count) == 0);
	arr_alloc_purge(); /* its heap kept in turn: the pages back, the next threads light */
	CHECK(atomic_load(&arr__kept_heaps) == 0);
}

static void test_fork(void)
{
	CHECK(arr_alloc_set_option("light", 1000000) == 0); /* the churners stay light */
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, churn, (void *)(intptr_t)(i + 1));
	for (int k = 0; k < 40; k++) {
		usleep(2000);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(10);
			for (int i = 0; i < 32; i++)
				arr_free(atomic_exchange(&slots[i], NULL));
			pthread_t c;
			void *light = NULL;
			if (pthread_create(&c, NULL, child_light, NULL) != 0 || pthread_join(c, &light) != 0 ||
			    light == NULL)
				_exit(3);
			void *p = arr_calloc(1, 3000);
			if (p == NULL || ((unsigned char *)p)[2999] != 0)
				_exit(4);
			arr_free(p);
			if (!locks_adaptive())
				_exit(6);
			_exit(arr__shared_is_valid() ? 0 : 5);
		}
		int status;
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fprintf(stderr, "fork %d: child status 0x%x%s\n", k, status,
				WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? " (hung)" : "");
	}
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 32; i++)
		arr_free(atomic_exchange(&slots[i], NULL));
	CHECK(arr__shared_is_valid());
	CHECK(arr_alloc_set_option("light", 64) == 0);
}

int main(void)
{
	arr_free(arr_malloc(1)); /* main holds a heap first: the others are light */
	CHECK(arr__tl_heap != &arr__heap_empty);
	CHECK(locks_adaptive());
	test_footprint();
	test_contents();
	test_graduate();
	test_release();
	test_adopt_not_light();
	test_fork();
	CHECK(arr__pool_is_valid());
	if (failures)
		fprintf(stderr, "light: %d checks failed\n", failures);
	return failures ? 1 : 0;
}
