/*
 * cases.c - small programs with exactly known analysis answers, one per
 * argv[1]. No stdio, so the only allocations are the ones written here.
 *   zero     calloc on fresh and reused memory, below and above glibc's
 *            mmap threshold, and the threshold raised by a freed mmap
 *   realloc  p = realloc(p, huge) failing and losing p; one failing and
 *            freed afterwards (not lost)
 *   fail     calloc and reallocarray whose nmemb * size overflows, a huge
 *            malloc (out of memory), posix_memalign with a bad alignment
 *   temp     1000 temporary blocks of 24 bytes; 500 pairs (40, 100) where
 *            only the 100-byte block is temporary
 *   threads  thread A allocates 100 x 64 bytes that thread B frees; B
 *            allocates 30 x 128 bytes that main frees
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* keep the compiler from pairing or dropping calls */
static void *volatile sink;

static int zero(void)
{
	/* above tcache's sizes (calloc bypasses tcache): a goes back to the
	 * top chunk, and b is carved from the same place */
	char *a = calloc(1, 4000); /* fresh */
	free(a);
	char *b = calloc(1, 4000); /* reused: a's block */
	free(b);
	char *big = calloc(1, 256u << 20); /* fresh, mmapped (above the 32 MiB cap: no raise) */
	free(big);
	char *m = malloc(1u << 20);    /* mmapped at the starting threshold */
	free(m);                       /* raises the threshold above 1 MiB */
	char *c = calloc(1, 1u << 20); /* heap now, not mmap; reused: starts where a and b were */
	free(c);
	char *d = calloc(1, 1u << 20); /* reused: c's block */
	free(d);
	return 0;
}

static int realloc_case(void)
{
	char *p = malloc(1000);
	p = realloc(p, SIZE_MAX / 2); /* fails: the 1000 bytes are lost */
	char *q = malloc(2000);
	char *r = realloc(q, SIZE_MAX / 2); /* fails, but q is kept and freed */
	sink = r;
	free(q);
	return p != NULL;
}

static int fail(void)
{
	sink = calloc(SIZE_MAX / 4, 16);            /* overflow */
	sink = reallocarray(NULL, SIZE_MAX / 2, 4); /* overflow */
	sink = malloc(SIZE_MAX / 2);                /* out of memory */
	void *p;
	int rc = posix_memalign(&p, 3, 16); /* invalid alignment */
	return rc == 0;
}

static int temp(void)
{
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(24);
		sink = p;
		free(p);
	}
	for (int i = 0; i < 500; i++) {
		char *a = malloc(40), *b = malloc(100);
		sink = a;
		free(a); /* b was allocated after a: a is not temporary */
		free(b); /* nothing allocated after b: temporary */
	}
	return 0;
}

static void *blocks[100];

static void *thread_a(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++)
		blocks[i] = malloc(64);
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++)
		free(blocks[i]);
	for (int i = 0; i < 30; i++)
		blocks[i] = malloc(128);
	return NULL;
}

static int threads(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, thread_a, NULL) || pthread_join(t, NULL))
		return 1;
	if (pthread_create(&t, NULL, thread_b, NULL) || pthread_join(t, NULL))
		return 1;
	for (int i = 0; i < 30; i++)
		free(blocks[i]);
	return 0;
}

/* More distinct sizes from 4 KiB up than the sizes analysis keeps
 * (MAX_SIZES, 65,536, in analyzers/sizes.c), below 128 KiB (its array) and
 * above (its map): 60,000 of 4096 + i, then 10,000 of 200,000 + i (the cap
 * is reached at the 5,537th: 4,464 counted as other sizes), then 1,000 new
 * ones below 128 KiB (other), then sizes seen before (kept) and one that
 * was refused (other). */
static int sizecap(void)
{
	static const size_t want[] = {4096, 4096, 4096, 200000, 200000, 209999};
	for (size_t i = 0; i < 60000; i++)
		if (!(sink = malloc(4096 + i)))
			return 1;
		else
			free(sink);
	for (size_t i = 0; i < 10000; i++)
		if (!(sink = malloc(200000 + i)))
			return 1;
		else
			free(sink);
	for (size_t i = 0; i < 1000; i++)
		if (!(sink = malloc(64096 + i)))
			return 1;
		else
			free(sink);
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		if (!(sink = malloc(want[i])))
			return 1;
		else
			free(sink);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "zero"))
		return zero();
	if (!strcmp(argv[1], "realloc"))
		return realloc_case();
	if (!strcmp(argv[1], "fail"))
		return fail();
	if (!strcmp(argv[1], "temp"))
		return temp();
	if (!strcmp(argv[1], "threads"))
		return threads();
	if (!strcmp(argv[1], "sizecap"))
		return sizecap();
	return 2;
}
