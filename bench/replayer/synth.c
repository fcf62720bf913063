/*
 * synth.c - a synthetic allocation workload for the replay benchmarks:
 * N calls over a sliding live window of W blocks (malloc, some calloc and
 * realloc, frees in shuffled order), optionally on T threads.
 *   synth N [W] [T]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long calls = 1000000, window = 4096;

static void *run(void *arg)
{
	uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)arg;
	void **live = calloc((size_t)window, sizeof *live);
	for (long i = 0; i < calls;) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		long k = (long)(x % (uint64_t)window);
		if (live[k]) {
			if (x >> 60 == 0) {
				live[k] = realloc(live[k], 16 + (x >> 32) % 2048);
			} else {
				free(live[k]);
				live[k] = NULL;
			}
		} else {
			size_t n = 8 + (x >> 40) % (x >> 63 ? 256 : 4096);
			live[k] = (x >> 58 & 7) == 0 ? calloc(1, n) : malloc(n);
		}
		i++;
	}
	for (long k = 0; k < window; k++)
		free(live[k]);
	free(live);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		calls = atol(argv[1]);
	if (argc > 2)
		window = atol(argv[2]);
	int threads = argc > 3 ? atoi(argv[3]) : 1;
	calls /= threads;
	pthread_t th[64];
	for (long t = 1; t < threads && t < 64; t++)
		pthread_create(&th[t], NULL, run, (void *)t);
	run(0);
	for (long t = 1; t < threads && t < 64; t++)
		pthread_join(th[t], NULL);
	return 0;
}
