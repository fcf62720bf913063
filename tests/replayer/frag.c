/*
 * frag.c - the seeds' fragmentation experiment (seeds/004): 100,000 blocks
 * of 200 bytes and a guard block; free every other one (checkerboard) or
 * all of them (contiguous); then 50,000 blocks of 400 bytes, kept live.
 * Prints the heap growth of the last step as glibc sees it (mallinfo2).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100000

static void *blocks[N], *big[N / 2];

int main(int argc, char **argv)
{
	int checker = argc > 1 && !strcmp(argv[1], "checkerboard");
	for (int i = 0; i < N; i++)
		blocks[i] = malloc(200);
	void *guard = malloc(16);
	for (int i = 0; i < N; i++)
		if (!checker || i % 2 == 0)
			free(blocks[i]);
	size_t before = mallinfo2().arena;
	for (int i = 0; i < N / 2; i++)
		big[i] = malloc(400);
	size_t after = mallinfo2().arena;
	fprintf(stderr, "%s: heap grew by %zu KB\n", checker ? "checkerboard" : "contiguous", (after - before) / 1024);
	(void)guard;
	return 0;
}
