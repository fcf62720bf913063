/*
 * grow.c - realloc growth in place and by copy (seed 000's realloc):
 *   1. a block at the top of the heap grows in place: realloc returns the
 *      same pointer, eight times, 1 KiB to 128 KiB... below the mmap
 *      threshold;
 *   2. a block with a live neighbour after it cannot grow in place: the
 *      realloc returns a new pointer and glibc copies the contents;
 *   3. a mapped block (above the threshold) grows by mremap.
 * The trace shows which happened by comparing each realloc's pointer with
 * what it returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *(*volatile fill)(void *, int, size_t) = memset;

int main(void)
{
	int moved = 0, in_place = 0;
	/* 1: at the top of the heap */
	char *top = malloc(1024);
	if (!top)
		return 1;
	fill(top, 'a', 1024);
	for (size_t n = 2048; n <= 65536; n *= 2) {
		char *p = realloc(top, n);
		if (!p)
			return 1;
		p == top ? in_place++ : moved++;
		top = p;
	}
	/* 2: blocked by a neighbour, eight times */
	char *blocks[8];
	for (int i = 0; i < 8; i++) {
		char *b = malloc(512), *neighbour = malloc(512);
		if (!b || !neighbour)
			return 1;
		fill(b, 'b', 512);
		char *p = realloc(b, 4096);
		if (!p)
			return 1;
		p == b ? in_place++ : moved++;
		blocks[i] = neighbour;
		free(p);
	}
	/* 3: a mapped block grows by mremap (its address may change) */
	char *m = malloc(1 << 20);
	if (!m)
		return 1;
	char *p = realloc(m, 4 << 20);
	if (!p)
		return 1;
	printf("realloc: %d in place, %d moved (the mapped one %s)\n", in_place, moved, p == m ? "stayed" : "moved");
	free(p);
	free(top);
	for (int i = 0; i < 8; i++)
		free(blocks[i]);
	return 0;
}
