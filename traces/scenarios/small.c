/*
 * small.c - seed 000's small-block loop: N allocate/free pairs of 64 bytes,
 * by malloc or by calloc, one byte written in each block.
 *
 *   small malloc|calloc [N]      (default N = 100000)
 *
 * The trace holds N calls of one function and N frees, 64 * N bytes
 * requested, never more than one block live.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "malloc") && strcmp(argv[1], "calloc"))) {
		fprintf(stderr, "usage: small malloc|calloc [N]\n");
		return 2;
	}
	int use_calloc = !strcmp(argv[1], "calloc");
	long n = argc > 2 ? atol(argv[2]) : 100000;
	for (long i = 0; i < n; i++) {
		char *p = use_calloc ? calloc(1, 64) : malloc(64);
		if (!p)
			return 1;
		((volatile char *)p)[0] = 1;
		free(p);
	}
	return 0;
}
