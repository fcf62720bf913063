/*
 * big.c - seeds 000/001: one large zeroed block, three ways.
 *
 *   big calloc|memset|malloc MIB [touch]
 *
 * calloc: calloc(1, MIB MiB); memset: malloc + memset(0) through a volatile
 * function pointer (so the compiler cannot fold the pair into calloc);
 * malloc: malloc alone. With "touch", one byte is then written in every
 * 4 KiB page, as a program that uses the whole buffer would. The block is
 * freed at the end: the trace holds one allocation call and one free.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *(*volatile zero_fill)(void *, int, size_t) = memset;

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: big calloc|memset|malloc MIB [touch]\n");
		return 2;
	}
	size_t size = (size_t)atol(argv[2]) << 20;
	int touch = argc > 3 && !strcmp(argv[3], "touch");
	char *p;
	if (!strcmp(argv[1], "calloc")) {
		p = calloc(1, size);
	} else {
		p = malloc(size);
		if (p && !strcmp(argv[1], "memset"))
			zero_fill(p, 0, size);
	}
	if (!p)
		return 1;
	if (touch)
		for (size_t off = 0; off < size; off += 4096)
			((volatile char *)p)[off] = 1;
	free(p);
	return 0;
}
