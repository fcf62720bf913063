/*
 * checker.c - the fragmentation experiment of the seeds: 100,000 blocks of
 * 200 bytes and a guard block, then every other block freed (argv[1]
 * "checkerboard") or all of them ("contiguous"), then 50,000 blocks of
 * 400 bytes. Under glibc the checkerboard's holes cannot take the 400-byte
 * blocks, so the heap grows by ~20 MB; the contiguous case reuses the
 * coalesced space and does not grow.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 100000

static void *small[N], *big[N / 2];

static void pause_ms(int ms)
{
	struct timespec ts = {0, ms * 1000L * 1000L};
	nanosleep(&ts, NULL); /* lets the recorder's RSS sampler see each step */
}

int main(int argc, char **argv)
{
	int checker = argc > 1 && !strcmp(argv[1], "checkerboard");
	for (int i = 0; i < N; i++)
		if (!(small[i] = malloc(200)))
			return 1;
	void *guard = malloc(16);
	pause_ms(30);
	for (int i = 0; i < N; i++)
		if (!checker || i % 2 == 0) {
			free(small[i]);
			small[i] = NULL;
		}
	pause_ms(30);
	for (int i = 0; i < N / 2; i++)
		if (!(big[i] = malloc(400)))
			return 1;
	pause_ms(30);
	(void)guard;
	return 0;
}
