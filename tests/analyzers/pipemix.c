/*
 * pipemix.c - a merge with every shape the analysis's pipe (formats/merge.c)
 * batches: 6 threads that first allocate in lock step (a barrier every
 * round: the merged trace switches thread every few events, short runs the
 * pipe copies), then in free-running bursts (long runs it hands out in
 * place), then in lock step again; marks (events with a string) from two
 * threads in both parts. Enough events for several chunks per thread, so
 * chunks finish, are held by a batch, and are reused while the analysis
 * reads. argv[1]: rounds of each lock-step part (default 3000).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "allocrr/mark.h"

#define NT 6
#define KEEP 64

static pthread_barrier_t bar;
static int rounds = 3000;

static void step(void **keep, int me, long i)
{
	size_t k = (size_t)i % KEEP;
	free(keep[k]);
	keep[k] = malloc(8 + (size_t)((i * 7 + me * 13) % 500));
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	void *keep[KEEP] = {0};
	char name[32];
	long i = 0;
	for (int part = 0; part < 3; part++) {
		int locked = part != 1;
		long n = locked ? rounds : 10L * rounds;
		for (long r = 0; r < n; r++) {
			if (locked)
				pthread_barrier_wait(&bar);
			if (me < 2 && r % 500 == 0) {
				snprintf(name, sizeof name, "p%d-t%d-r%ld", part, me, r);
				allocrr_mark(name);
			}
			step(keep, me, i++);
			if (locked)
				step(keep, me, i++);
		}
	}
	for (int k = 0; k < KEEP; k++)
		free(keep[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	pthread_t t[NT];
	pthread_barrier_init(&bar, NULL, NT);
	for (int i = 0; i < NT; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i))
			return 1;
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	return 0;
}
