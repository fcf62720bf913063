/*
 * tests/allocator/stress.c - threads allocate blocks of random sizes, fill
 * them with a pattern derived from their address and size, and pass most of
 * them to another thread through a queue; the receiver checks the pattern
 * before freeing (a remote free). Any corruption, double hand-out or lost
 * block shows up as a pattern mismatch or a stats mismatch at the end.
 *
 * Each thread also grows a buffer by 1-100 bytes a realloc to 9-60 KB (span
 * blocks: kept within their last units without the span heap's lock, or
 * grown into a free neighbour, or moved, while the other threads free blocks
 * beside it), checking its bytes, then hands it to another thread.
 *
 * Built twice: against the prefixed API (allocator.stress) and against plain
 * malloc (stress-libc, run under LD_PRELOAD by preload.sh).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STRESS_LIBC
#define A_MALLOC malloc
#define A_CALLOC calloc
#define A_REALLOC realloc
#define A_FREE free
#define A_MEMALIGN(a, s) aligned_alloc(a, s)
#else
#include "allocrr/alloc.h"
#define A_MALLOC arr_malloc
#define A_CALLOC arr_calloc
#define A_REALLOC arr_realloc
#define A_FREE arr_free
#define A_MEMALIGN(a, s) arr_aligned_alloc(a, s)
#endif

#define NTHREADS 6
#define QCAP 1024

struct item {
	unsigned char *p;
	size_t n;
};

struct queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct item items[QCAP];
	unsigned head, tail;
	int closed;
};

static struct queue queues[NTHREADS];
static long iterations = 200000;
static _Atomic long errors;

static unsigned char pat(const unsigned char *base, size_t i, size_t n)
{
	return (unsigned char)(((uintptr_t)base >> 4) * 7 + i * 13 + n);
}

static unsigned char pat_at(uintptr_t base, size_t i, size_t n)
{
	return (unsigned char)((base >> 4) * 7 + i * 13 + n);
}

static void fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(p, i, n);
}

static void verify_free(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != pat(p, i, n)) {
			errors++;
			fprintf(stderr, "corrupt block %p size %zu at %zu\n", (void *)p, n, i);
			break;
		}
	}
	A_FREE(p);
}

/* A full queue (its reader may have finished) means we free the block ourselves. */
static void push(struct queue *q, struct item it)
{
	pthread_mutex_lock(&q->mu);
	if (q->tail - q->head == QCAP) {
		pthread_mutex_unlock(&q->mu);
		verify_free(it.p, it.n);
		return;
	}
	q->items[q->tail++ % QCAP] = it;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

/* Drain what is there without waiting; returns the number freed. */
static int drain(struct queue *q, int wait)
{
	struct item local[64];
	int n = 0;
	pthread_mutex_lock(&q->mu);
	while (wait && q->head == q->tail && !q->closed)
		pthread_cond_wait(&q->cv, &q->mu);
	while (q->head != q->tail && n < 64)
		local[n++] = q->items[q->head++ % QCAP];
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	for (int i = 0; i < n; i++)
		verify_free(local[i].p, local[i].n);
	return n;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t rand_size(uint64_t *s)
{
	uint64_t r = rnd(s) % 1000;
	if (r < 700)
		return rnd(s) % 128 + 1;
	if (r < 950)
		return rnd(s) % 4096 + 1;
	if (r < 998)
		return rnd(s) % 200000 + 1;
	return rnd(s) % (3u << 20) + 1;
}

/* The grown buffer's bytes: by position only (realloc may move it). */
static unsigned char grown_at(size_t i) { return (unsigned char)(i * 131u + 7u); }

struct grower {
	unsigned char *p;
	size_t n, goal;
};

/* One step of thread id's buffer: grown by 1-100 bytes, its bytes checked
 * around the old end (all of them when it is done); done, it goes to
 * another thread (a remote free) with the common pattern. */
static void grow_step(struct grower *g, int id, uint64_t *s)
{
	if (g->p == NULL)
		g->goal = 9000 + (size_t)(rnd(s) % 51000);
	size_t k = 1 + (size_t)(rnd(s) % 100);
	unsigned char *q = A_REALLOC(g->p, g->n + k);
	if (q == NULL) {
		errors++;
		return;
	}
	for (size_t i = g->n > 64 ? g->n - 64 : 0; i < g->n; i++)
		if (q[i] != grown_at(i)) {
			errors++;
			fprintf(stderr, "realloc growth lost contents\n");
			break;
		}
	for (size_t i = g->n; i < g->n + k; i++)
		q[i] = grown_at(i);
	g->p = q;
	g->n += k;
	if (g->n < g->goal)
		return;
	for (size_t i = 0; i < g->n; i++)
		if (g->p[i] != grown_at(i)) {
			errors++;
			fprintf(stderr, "grown buffer lost contents\n");
			break;
		}
	fill(g->p, g->n);
	int to = (id + 1 + (int)(rnd(s) % (NTHREADS - 1))) % NTHREADS;
	push(&queues[to], (struct item){g->p, g->n});
	g->p = NULL;
	g->n = 0;
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
	enum { KEEP = 256 };
	struct item keep[KEEP] = {{0}};
	struct grower g = {NULL, 0, 0};
	for (long it = 0; it < iterations; it++) {
		grow_step(&g, id, &s);
		size_t n = rand_size(&s);
		unsigned char *p;
		uint64_t kind = rnd(&s) % 16;
		if (kind == 0) {
			p = A_CALLOC(1, n);
			for (size_t i = 0; i < n; i++)
				if (p[i]) {
					errors++;
					fprintf(stderr, "calloc block not zero\n");
					break;
				}
		} else if (kind == 1) {
			p = A_MEMALIGN((size_t)64 << (rnd(&s) % 8), n);
		} else {
			p = A_MALLOC(n);
		}
		if (p == NULL) {
			errors++;
			continue;
		}
		fill(p, n);
		uint64_t where = rnd(&s) % 4;
		if (where == 0) {
			/* keep locally for a while, sometimes realloc it */
			unsigned k = (unsigned)(rnd(&s) % KEEP);
			if (keep[k].p) {
				if (rnd(&s) % 4 == 0) {
					size_t m = rand_size(&s);
					unsigned char *old = keep[k].p;
					size_t on = keep[k].n;
					size_t keepn = on < m ? on : m;
					/* check before moving: the pattern depends on the address */
					for (size_t i = 0; i < on; i++)
						if (old[i] != pat(old, i, on)) {
							errors++;
							break;
						}
					uintptr_t oldaddr = (uintptr_t)old;
					unsigned char *q = A_REALLOC(old, m);
					if (q == NULL) {
						errors++;
					} else {
						for (size_t i = 0; i < keepn; i++)
							if (q[i] != pat_at(oldaddr, i, on)) {
								errors++;
								fprintf(stderr, "realloc lost contents\n");
								break;
							}
						fill(q, m);
						keep[k].p = q;
						keep[k].n = m;
					}
				}
				verify_free(keep[k].p, keep[k].n);
			}
			keep[k].p = p;
			keep[k].n = n;
		} else {
			int to = (id + 1 + (int)(rnd(&s) % (NTHREADS - 1))) % NTHREADS;
			push(&queues[to], (struct item){p, n});
		}
		if ((it & 15) == 0)
			drain(&queues[id], 0);
	}
	for (unsigned k = 0; k < KEEP; k++)
		if (keep[k].p)
			verify_free(keep[k].p, keep[k].n);
	if (g.p != NULL) {
		fill(g.p, g.n);
		verify_free(g.p, g.n);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		iterations = atol(argv[1]);
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		pthread_mutex_init(&queues[i].mu, NULL);
		pthread_cond_init(&queues[i].cv, NULL);
	}
	/* two rounds: the second adopts the pages the first round's threads left */
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < NTHREADS; i++)
			pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
		for (int i = 0; i < NTHREADS; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < NTHREADS; i++)
			while (drain(&queues[i], 0) > 0)
				;
	}
#ifndef STRESS_LIBC
	static struct arr_alloc_stats st;
	arr_alloc_stats_get(&st);
	if (st.live_blocks != 0) {
		fprintf(stderr, "live blocks after stress: %llu\n", (unsigned long long)st.live_blocks);
		errors++;
	}
	printf("mapped %llu KiB resident %llu KiB after all frees\n", (unsigned long long)st.mapped >> 10,
	       (unsigned long long)st.resident >> 10);
#endif
	if (errors) {
		fprintf(stderr, "%ld errors\n", (long)errors);
		return 1;
	}
	printf("stress: %d threads x %ld ops x 2 rounds ok\n", NTHREADS, iterations);
	return 0;
}
