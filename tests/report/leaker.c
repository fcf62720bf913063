/*
 * leaker.c - a program with known answers for the report tests:
 * `leaker N` makes 2000 short-lived blocks of mixed sizes (churn), one
 * 4 MiB block allocated and freed (a spike in live bytes), then leaks N
 * blocks of 1000 bytes. A report of `leaker 2` and one of `leaker 10`
 * differ by exactly 8000 leaked bytes and 8 leaked blocks. `leaker N MS`
 * first sleeps MS milliseconds: RSS samples before the first allocation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	int leaks = argc > 1 ? atoi(argv[1]) : 0;
	if (argc > 2) {
		int ms = atoi(argv[2]);
		struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	static void *keep[64];
	for (int i = 0; i < 2000; i++) {
		size_t n = 16u << (i % 8);
		char *p = i % 3 ? malloc(n) : calloc(1, n);
		if (!p)
			return 1;
		p[0] = (char)i;
		void *q = keep[i % 64];
		keep[i % 64] = p;
		free(q);
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	char *big = malloc(4u << 20);
	if (!big)
		return 1;
	memset(big, 1, 4u << 20);
	free(big);
	for (int i = 0; i < leaks; i++) {
		char *p = malloc(1000);
		if (!p)
			return 1;
		p[0] = 1;
		/* leaked on purpose */
	}
	return 0;
}
