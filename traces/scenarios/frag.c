/*
 * frag.c - seed 004's fragmentation experiment: 100,000 blocks of 200
 * bytes and a small guard block after them; free every other block
 * (checkerboard) or all of them (contiguous); then 50,000 blocks of 400
 * bytes, kept live to the end.
 *
 *   frag checkerboard|contiguous
 *
 * glibc coalesces the contiguous holes into one free region that takes the
 * 400-byte blocks (the heap does not grow); the checkerboard's 208-byte
 * holes cannot hold them, so the heap grows by 50,000 x 416 B = 20,313 KiB.
 * Prints the growth of the last step as glibc sees it (mallinfo2).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100000

static void *blocks[N], *big[N / 2];

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "checkerboard") && strcmp(argv[1], "contiguous"))) {
		fprintf(stderr, "usage: frag checkerboard|contiguous\n");
		return 2;
	}
	int checker = !strcmp(argv[1], "checkerboard");
	for (int i = 0; i < N; i++)
		if (!(blocks[i] = malloc(200)))
			return 1;
	void *guard = malloc(16);
	for (int i = 0; i < N; i++)
		if (!checker || i % 2 == 0)
			free(blocks[i]);
	size_t before = mallinfo2().arena;
	for (int i = 0; i < N / 2; i++)
		if (!(big[i] = malloc(400)))
			return 1;
	printf("%s: heap grew by %zu KiB\n", argv[1], (mallinfo2().arena - before) / 1024);
	(void)guard;
	return 0;
}
