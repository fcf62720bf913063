/*
 * markthreads.c [ROUNDS] - three threads that allocate at once while
 * thread 0 marks a phase every 512 rounds, each name its own: a trace of
 * many chunks whose marks fall in many of the merge's blocks (blocks.c).
 * Thread 1 execs nothing and forks nothing; the point is the mark strings.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "allocrr/mark.h"

#define NT 3

static long rounds = 40000;

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	void *keep[8] = {0};
	for (long r = 0; r < rounds; r++) {
		if (me == 0 && r % 512 == 0) {
			char name[32];
			snprintf(name, sizeof name, "phase-%ld", r / 512);
			allocrr_mark(name);
		}
		free(keep[r & 7]);
		keep[r & 7] = malloc(16 + (size_t)((r * 7 + me * 13) % 300));
	}
	for (int k = 0; k < 8; k++)
		free(keep[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atol(argv[1]);
	pthread_t t[NT];
	for (int i = 0; i < NT; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i))
			return 1;
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	return 0;
}
