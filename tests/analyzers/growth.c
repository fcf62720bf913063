/*
 * growth.c - many blocks live at once, so the analysis's live set doubles
 * several times past 2 MiB (where it grows in place, analyzers/core.c):
 * argv[1] blocks (default 400000) of sizes 1..97 by index, then every one
 * freed in a scrambled order except each 1000th, which leaks. Also a
 * realloc of every 7th block before the frees, so moved blocks are found
 * again after the growth. No stdio: the program's only allocations are
 * its own.
 */
#include <stdint.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 400000;
	char **p = malloc((size_t)n * sizeof *p);
	if (!p)
		return 1;
	for (long i = 0; i < n; i++)
		if (!(p[i] = malloc((size_t)(i % 97 + 1))))
			return 1;
	for (long i = 0; i < n; i += 7) {
		char *q = realloc(p[i], (size_t)(i % 97 + 1) + 200);
		if (!q)
			return 1;
		p[i] = q;
	}
	/* a permutation: i -> i * k mod n with k coprime to n */
	long k = 7919;
	while (k < n) {
		long a = n, b = k;
		while (b) {
			long r = a % b;
			a = b;
			b = r;
		}
		if (a == 1)
			break;
		k += 2;
	}
	for (long j = 0; j < n; j++) {
		long i = (long)((uint64_t)j * (uint64_t)k % (uint64_t)n);
		if (i % 1000)
			free(p[i]);
	}
	free(p);
	return 0;
}
