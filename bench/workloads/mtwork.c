/*
 * mtwork: a family of synthetic multi-thread malloc workloads, for the
 * built-in allocator's RSS matrix (bench/bench-alloc-matrix.sh).
 *
 * Usage: mtwork THREADS SHARING MIX PHASE [STEPS [WS]]
 *   THREADS  1..64
 *   SHARING  private: every block is freed by the thread that allocated it;
 *            shared: a replaced block is handed to the next thread, which
 *            frees it (cross-thread frees; with 1 thread, to itself, later);
 *            at most WS blocks wait in a thread's inbox (the sender frees
 *            its own inbox meanwhile), and threads that are done keep
 *            freeing theirs until all are
 *   MIX      small: 8..255 B;
 *            mixed: 78 % 8..127 B, 20 % 128 B..4 KiB, 2 % 4..64 KiB;
 *            large: 60 % 1..16 KiB, 35 % 16..128 KiB, 5 % 128 KiB..1 MiB
 *   PHASE    steady: the working set is filled, then one block replaced a step;
 *            wave: it grows from WS/8 to WS and shrinks back, three times
 *   STEPS    steps per thread (default 200000)
 *   WS       live blocks per thread at the top (default by mix: 32768,
 *            5000, 128 — a few MB per thread each)
 *
 * Every block is written whole when allocated, as programs do. Every
 * thread has its own fixed seed, so each thread's calls are the same on every
 * run (with shared, which thread frees a block is too: the next one). The
 * checksum printed never depends on addresses.
 *
 * Build: cc -O2 -pthread mtwork.c -o mtwork
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>

enum mix { MIX_SMALL, MIX_MIXED, MIX_LARGE };

struct worker {
	pthread_t thread;
	unsigned index;
	_Atomic(void *) inbox;  /* blocks handed over by the previous thread */
	_Atomic size_t pending; /* blocks in inbox */
	uint64_t sum;
	int failed;
};

static unsigned nthreads;
static int shared, wave;
static enum mix mix;
static uint64_t steps;
static size_t ws;
static struct worker *workers;
static _Atomic unsigned finished; /* threads done with their steps */

static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 2685821657736338717ULL;
}

static size_t pick_size(uint64_t r)
{
	unsigned c = (unsigned)(r % 100);

	r >>= 8;
	switch (mix) {
	case MIX_SMALL:
		return 8 + (size_t)(r % 248);
	case MIX_MIXED:
		if (c < 78)
			return 8 + (size_t)(r % 120);
		if (c < 98)
			return 128 + (size_t)(r % (4096 - 128));
		return 4096 + (size_t)(r % (65536 - 4096));
	default:
		if (c < 60)
			return 1024 + (size_t)(r % (16384 - 1024));
		if (c < 95)
			return 16384 + (size_t)(r % (131072 - 16384));
		return 131072 + (size_t)(r % (1048576 - 131072));
	}
}

/* A handed-over block's first word is the inbox link. */
static void *make_block(size_t size, uint64_t *sum)
{
	unsigned char *p = malloc(size);

	if (!p)
		return NULL;
	memset(p, (int)(size & 0xff), size);
	*sum += size;
	return p;
}

static void drain(struct worker *w)
{
	void *p = atomic_exchange_explicit(&w->inbox, NULL, memory_order_acquire);
	size_t n = 0;

	while (p) {
		void *next;
		memcpy(&next, p, sizeof next);
		free(p);
		p = next;
		n++;
	}
	if (n)
		atomic_fetch_sub(&w->pending, n);
}

static void release(struct worker *w, void *p)
{
	if (!shared) {
		free(p);
		return;
	}
	struct worker *to = &workers[(w->index + 1) % nthreads];
	/* Back-pressure: a receiver that lags (descheduled) holds at most a
	 * working set of handed-over blocks; meanwhile free our own inbox. */
	while (atomic_load(&to->pending) >= ws) {
		drain(w);
		sched_yield();
	}
	atomic_fetch_add(&to->pending, 1);
	void *head = atomic_load_explicit(&to->inbox, memory_order_relaxed);
	do
		memcpy(p, &head, sizeof head);
	while (!atomic_compare_exchange_weak_explicit(&to->inbox, &head, p, memory_order_release,
						      memory_order_relaxed));
}

/* The working set's target size at step s: WS in steady state; three
 * triangles between WS/8 and WS for wave. */
static size_t target(uint64_t s)
{
	if (!wave)
		return ws;
	uint64_t period = steps / 3 ? steps / 3 : 1, half = period / 2 ? period / 2 : 1;
	uint64_t x = s % period;
	size_t lo = ws / 8 ? ws / 8 : 1;
	uint64_t up = x < half ? x : period - x;
	return lo + (size_t)((ws - lo) * up / half);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t state = 0x9e3779b97f4a7c15ULL * (w->index + 1);
	void **live = calloc(ws, sizeof *live);
	size_t n = 0;

	if (!live) {
		w->failed = 1;
		return NULL;
	}
	for (uint64_t s = 0; s < steps; s++) {
		uint64_t r = next_random(&state);
		size_t t = target(s);
		if (shared)
			drain(w);
		if (n < t) {
			if (!(live[n] = make_block(pick_size(r), &w->sum))) {
				w->failed = 1;
				break;
			}
			n++;
		} else if (n > t) {
			size_t i = (size_t)(r >> 32) % n;
			release(w, live[i]);
			live[i] = live[--n];
		} else {
			size_t i = (size_t)(r >> 32) % n;
			release(w, live[i]);
			if (!(live[i] = make_block(pick_size(next_random(&state)), &w->sum))) {
				w->failed = 1;
				break;
			}
		}
	}
	while (n > 0)
		release(w, live[--n]);
	free(live);
	/* Keep freeing what the previous thread hands over until every thread
	 * is done, so a thread that finishes first does not leave its inbox
	 * growing (live memory far beyond the working sets). */
	atomic_fetch_add(&finished, 1);
	while (shared && atomic_load(&finished) < nthreads) {
		drain(w);
		sched_yield();
	}
	if (shared)
		drain(w);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 5 || argc > 7) {
		fprintf(stderr, "usage: mtwork THREADS private|shared small|mixed|large steady|wave"
				" [STEPS [WS]]\n");
		return 2;
	}
	nthreads = (unsigned)strtoul(argv[1], NULL, 10);
	shared = !strcmp(argv[2], "shared");
	mix = !strcmp(argv[3], "small") ? MIX_SMALL : !strcmp(argv[3], "mixed") ? MIX_MIXED : MIX_LARGE;
	wave = !strcmp(argv[4], "wave");
	steps = argc > 5 ? strtoull(argv[5], NULL, 10) : 200000;
	ws = argc > 6 ? strtoul(argv[6], NULL, 10) : mix == MIX_SMALL ? 32768 : mix == MIX_MIXED ? 5000 : 128;
	if (nthreads < 1 || nthreads > 64 || (!shared && strcmp(argv[2], "private")) ||
	    (mix == MIX_LARGE && strcmp(argv[3], "large")) || (!wave && strcmp(argv[4], "steady")) || steps == 0 ||
	    ws == 0) {
		fprintf(stderr, "mtwork: bad arguments (see the usage in the source)\n");
		return 2;
	}
	workers = calloc(nthreads, sizeof *workers);
	if (!workers)
		return 1;
	for (unsigned i = 0; i < nthreads; i++) {
		workers[i].index = i;
		if (pthread_create(&workers[i].thread, NULL, run, &workers[i])) {
			fprintf(stderr, "mtwork: pthread_create failed\n");
			return 1;
		}
	}
	uint64_t sum = 0;
	int failed = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		sum += workers[i].sum;
		failed |= workers[i].failed;
	}
	for (unsigned i = 0; i < nthreads; i++) /* what the last threads handed over */
		drain(&workers[i]);
	printf("mtwork: %u threads, checksum %llu\n", nthreads, (unsigned long long)sum);
	free(workers);
	return failed;
}
