/*
 * otheralloc.c - a program for recording on top of another allocator
 * (jemalloc, mimalloc, tcmalloc preloaded or linked): T threads (argv[1])
 * run for about MS milliseconds (argv[2]), each making N mallocs of
 * 2000 + thread bytes, freeing half itself and handing the other half to the
 * next thread, which frees them. Prints the monotonic ns from main's start to
 * its end and the mallocs made, so a test can compare the trace's duration
 * with the truth.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAXT 16
#define RING 4096

struct ring {
	pthread_mutex_t m;
	void *slot[RING];
	unsigned head, tail;
};

static struct ring rings[MAXT];
static int nthreads, ms;
static long made[MAXT];

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void drain(struct ring *r)
{
	pthread_mutex_lock(&r->m);
	while (r->head != r->tail)
		free(r->slot[r->head++ % RING]);
	pthread_mutex_unlock(&r->m);
}

static void *worker(void *arg)
{
	int i = (int)(long)arg, next = (i + 1) % nthreads;
	long end = now_ns() + (long)ms * 1000000L;
	void *keep[64] = {0};
	for (long n = 0; now_ns() < end; n++) {
		void *p = malloc(2000 + (size_t)i);
		*(volatile char *)p = 1;
		made[i]++;
		if (n & 1) {
			struct ring *r = &rings[next];
			pthread_mutex_lock(&r->m);
			if (r->tail - r->head < RING) {
				r->slot[r->tail++ % RING] = p;
				p = NULL;
			}
			pthread_mutex_unlock(&r->m);
		}
		if (p) {
			free(keep[n % 64]);
			keep[n % 64] = p;
		}
		if (n % 256 == 255) {
			drain(&rings[i]);
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	long t0 = now_ns();
	nthreads = argc > 1 ? atoi(argv[1]) : 1;
	ms = argc > 2 ? atoi(argv[2]) : 300;
	if (nthreads < 1 || nthreads > MAXT)
		return 2;
	for (int i = 0; i < nthreads; i++)
		pthread_mutex_init(&rings[i].m, NULL);
	/* The main thread is worker 0: its blocks are freed by worker 1. */
	pthread_t th[MAXT];
	for (int i = 1; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	worker(0);
	for (int i = 1; i < nthreads; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < nthreads; i++)
		drain(&rings[i]);
	long total = 0;
	for (int i = 0; i < nthreads; i++)
		total += made[i];
	printf("%ld %ld\n", now_ns() - t0, total);
	return 0;
}
