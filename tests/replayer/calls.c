/*
 * calls.c - every allocation function with known arguments, for the replay
 * fidelity test: successes, failures, realloc(NULL, n) and realloc(p, 0).
 * Built without builtin malloc knowledge so that every call is made.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;
/* volatile: keep the compiler from judging the sizes */
static volatile size_t huge = SIZE_MAX, half = SIZE_MAX / 2;

int main(void)
{
	void *a = malloc(24);
	void *b = calloc(3, 40);
	a = realloc(a, 1000);        /* grows, probably moves */
	void *c = realloc(NULL, 77); /* realloc(NULL, n) */
	void *d = NULL;
	int rc = posix_memalign(&d, 64, 300);
	void *e = aligned_alloc(128, 256);
	void *f = memalign(4096, 5000);
	void *g = valloc(123);
	void *h = pvalloc(4097);
	void *i = reallocarray(NULL, 10, 12);
	i = reallocarray(i, 20, 12);
	/* failures: each returns NULL (or an error) and must fail again */
	sink = malloc(huge);
	sink = calloc(half, 4);
	sink = reallocarray(NULL, half, 3);
	void *bad = NULL;
	rc += posix_memalign(&bad, 3, 64); /* EINVAL */
	void *keep = malloc(50);
	sink = realloc(keep, huge - 4096); /* fails, keep stays live */
	/* realloc(p, 0): glibc frees p and returns NULL */
	void *z = malloc(10);
	sink = realloc(z, 0);
	free(NULL);
	free(b);
	free(c);
	free(d);
	free(e);
	free(f);
	free(g);
	free(h);
	free(i);
	free(keep);
	free(a);
	void *big = malloc(300000); /* above the mmap threshold */
	memset(big, 1, 300000);
	free(big);
	return rc == EINVAL ? 0 : 1;
}
