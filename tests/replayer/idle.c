/*
 * idle.c - a main thread that allocates, starts one worker, joins it and
 * frees: in a paced parallel replay its thread waits for the worker's whole
 * run at its first checkpoint. The worker makes many small malloc/free
 * pairs of a working set, so the run lasts long enough to measure.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define STEPS 400000
#define SET 512

static void *worker(void *arg)
{
	void *set[SET] = {0};
	uint64_t x = (uintptr_t)arg | 1, sum = 0;
	for (int i = 0; i < STEPS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned k = (unsigned)(x % SET);
		free(set[k]);
		set[k] = malloc(16 + (size_t)(x >> 32) % 200);
		if (set[k] == NULL)
			return NULL;
		*(volatile char *)set[k] = (char)i;
		sum += (uintptr_t)set[k] & 0xff;
	}
	for (int k = 0; k < SET; k++)
		free(set[k]);
	return (void *)(uintptr_t)(sum | 1);
}

int main(void)
{
	void *before[64], *ret = NULL;
	for (int i = 0; i < 64; i++)
		before[i] = malloc(32 + (size_t)i);
	pthread_t t;
	if (pthread_create(&t, NULL, worker, (void *)(uintptr_t)12345) != 0 || pthread_join(t, &ret) != 0 ||
	    ret == NULL) {
		fprintf(stderr, "idle: the worker failed\n");
		return 1;
	}
	for (int i = 0; i < 64; i++)
		free(before[i]);
	return 0;
}
