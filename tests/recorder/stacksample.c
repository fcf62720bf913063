/*
 * stacksample.c - a deterministic program of about a million allocations
 * from four call sites with different size mixes and counts, for the
 * sampled stacks test: the same sites, sizes and order on every run, so a
 * `--stack-sample` recording can be compared with a full `--stacks` one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static void *keep[4096];
static unsigned nkeep;

/* Blocks mostly freed at once, a few kept a while (live bytes, temporaries). */
static void use(void *p)
{
	if (!p)
		exit(1);
	*(volatile char *)p = 1;
	if (next() % 8 == 0) {
		unsigned i = nkeep++ % 4096;
		free(keep[i]);
		keep[i] = p;
	} else {
		free(p);
	}
}

/* Many small strings: 256 to 2,048 bytes. */
__attribute__((noinline)) void site_small(void) { use(malloc(256 + next() % 1793)); }
/* Medium buffers: 4 KiB to 20 KiB. */
__attribute__((noinline)) void site_medium(void) { use(malloc(4096 + next() % 16384)); }
/* Zeroed arrays: 64 to 512 elements of 64 bytes. */
__attribute__((noinline)) void site_calloc(void) { use(calloc(64 + next() % 449, 64)); }
/* Few, large-ish: 64 KiB to 96 KiB (below glibc's mmap threshold). */
__attribute__((noinline)) void site_large(void) { use(malloc(65536 + next() % 32768)); }

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	for (long i = 0; i < n; i++) {
		unsigned r = (unsigned)(next() % 100);
		if (r < 60)
			site_small();
		else if (r < 85)
			site_medium();
		else if (r < 97)
			site_calloc();
		else
			site_large();
	}
	for (unsigned i = 0; i < 4096; i++)
		free(keep[i]);
	puts("done");
	return 0;
}
