/*
 * zeroing.c - the seeds' calloc cases (seeds/001), recorded and replayed
 * three ways by zeroing.sh:
 *   fresh   one calloc of 256 MiB: fresh pages from the kernel, which read
 *           as zero, so calloc touches nothing;
 *   small   a loop of 64-byte callocs, each freed: a small memset a call;
 *   reused  a 64 KiB block (below the mmap threshold) written and freed,
 *           then calloc'd and freed again in a loop: every calloc clears
 *           memory that is already resident.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	volatile unsigned char sink = 0;
	if (!strcmp(mode, "fresh")) {
		unsigned char *p = calloc(1, 256u << 20);
		if (!p)
			return 1;
		sink = p[12345];
		free(p);
	} else if (!strcmp(mode, "small")) {
		for (int i = 0; i < 100000; i++) {
			unsigned char *p = calloc(1, 64);
			if (!p)
				return 1;
			sink ^= p[i % 64];
			free(p);
		}
	} else if (!strcmp(mode, "reused")) {
		unsigned char *p = malloc(64 << 10);
		if (!p)
			return 1;
		memset(p, 1, 64 << 10);
		free(p);
		for (int i = 0; i < 2000; i++) {
			p = calloc(1, 64 << 10);
			if (!p)
				return 1;
			sink ^= p[i];
			free(p);
		}
	} else {
		fprintf(stderr, "usage: zeroing fresh|small|reused\n");
		return 2;
	}
	(void)sink;
	return 0;
}
