/*
 * threshold.c - seed 001's allocate/free loop around glibc's moving mmap
 * threshold: for each size from 64 B to 16 MiB (times 4 each step, plus
 * 128 KiB and 192 KiB around the initial threshold), ROUNDS rounds of
 * calloc, one byte written per 4 KiB page, free.
 *
 *   threshold [ROUNDS]          (default 32)
 *
 * glibc maps the first block above 128 KiB with mmap; freeing it raises the
 * threshold to its size, so the next rounds of that size come from the heap
 * already resident, and calloc must clear them (no page faults, a memset).
 * With the threshold fixed (glibc.malloc.mmap_threshold=131072) every round
 * above it maps fresh pages and faults each one in again.
 */
#include <stdio.h>
#include <stdlib.h>

static const size_t sizes[] = {
	64, 256, 1024, 4096, 16384, 65536, 131072, 196608, 262144, 1 << 20, 4 << 20, 16 << 20,
};

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 32;
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
		for (long r = 0; r < rounds; r++) {
			char *p = calloc(1, sizes[s]);
			if (!p)
				return 1;
			for (size_t off = 0; off < sizes[s]; off += 4096)
				((volatile char *)p)[off] = 1;
			free(p);
		}
	return 0;
}
